// The tile sweep's configurations (issue #46: ranking as a measured quantity), fp16, in parts
// that compile in parallel (CMakeLists.txt builds each part list as its own translation unit).
// A configuration is kept when its shared memory fits the 227 KB a Hopper CTA may opt into;
// spilling ones are kept on purpose (what spills cost is one of the things the sweep measures),
// so these parts build without -warn-spills.
//   wg1_tma_fwd X(d, block_q, block_kv, stages): one warpgroup, wgmma, TMA ring; block_q and
//     block_kv 64 or 128, stages 2..5; smem 1024 + (block_q + 2 stages block_kv) d 2.
//   wg1_mma_fwd X(d, block_q, block_kv, stages, warps): mma.sync, cp.async ring; (block_q, warps)
//     (64, 4), (128, 4), (128, 8); block_kv 32, 64, 128; stages 2..4;
//     smem (block_q + 2 stages block_kv) d 2.
#pragma once

#define IOSIM_SWEEP_TMA_KV(X, D, BQ, BKV) \
  X(D, BQ, BKV, 2) X(D, BQ, BKV, 3) X(D, BQ, BKV, 4) X(D, BQ, BKV, 5)
#define IOSIM_SWEEP_TMA_D64_Q64(X) \
  IOSIM_SWEEP_TMA_KV(X, 64, 64, 64) IOSIM_SWEEP_TMA_KV(X, 64, 64, 128)
#define IOSIM_SWEEP_TMA_D64_Q128(X) \
  IOSIM_SWEEP_TMA_KV(X, 64, 128, 64) IOSIM_SWEEP_TMA_KV(X, 64, 128, 128)
#define IOSIM_SWEEP_TMA_D128_Q64(X) \
  IOSIM_SWEEP_TMA_KV(X, 128, 64, 64) X(128, 64, 128, 2) X(128, 64, 128, 3)
#define IOSIM_SWEEP_TMA_D128_Q128(X) \
  IOSIM_SWEEP_TMA_KV(X, 128, 128, 64) X(128, 128, 128, 2) X(128, 128, 128, 3)

#define IOSIM_SWEEP_MMA_KV(X, D, BQ, BKV, W) \
  X(D, BQ, BKV, 2, W) X(D, BQ, BKV, 3, W) X(D, BQ, BKV, 4, W)
#define IOSIM_SWEEP_MMA_ALL(X, D, BQ, W) \
  IOSIM_SWEEP_MMA_KV(X, D, BQ, 32, W)    \
  IOSIM_SWEEP_MMA_KV(X, D, BQ, 64, W) IOSIM_SWEEP_MMA_KV(X, D, BQ, 128, W)
#define IOSIM_SWEEP_MMA_D64_Q64W4(X) IOSIM_SWEEP_MMA_ALL(X, 64, 64, 4)
#define IOSIM_SWEEP_MMA_D64_Q128W4(X) IOSIM_SWEEP_MMA_ALL(X, 64, 128, 4)
#define IOSIM_SWEEP_MMA_D64_Q128W8(X) IOSIM_SWEEP_MMA_ALL(X, 64, 128, 8)
#define IOSIM_SWEEP_MMA_D128_Q64W4(X) IOSIM_SWEEP_MMA_ALL(X, 128, 64, 4)
// d 128, 128 x 128: 4 stages would need 288 KB.
#define IOSIM_SWEEP_MMA_D128_Q128(X, W)  \
  IOSIM_SWEEP_MMA_KV(X, 128, 128, 32, W) \
  IOSIM_SWEEP_MMA_KV(X, 128, 128, 64, W) X(128, 128, 128, 2, W) X(128, 128, 128, 3, W)
#define IOSIM_SWEEP_MMA_D128_Q128W4(X) IOSIM_SWEEP_MMA_D128_Q128(X, 4)
#define IOSIM_SWEEP_MMA_D128_Q128W8(X) IOSIM_SWEEP_MMA_D128_Q128(X, 8)
