// Block-sparse FlashAttention forward (Dao et al. 2022, section 3.3): the flash2
// kernel (flash2_fwd.cuh) over the nonzero blocks of a block mask. Zero blocks are
// skipped entirely: no loads, no FLOPs.
//
// The mask arrives as a CSR list (runner/block_pattern.hpp): query block i computes
// key blocks g_cols[g_row_ptr[i] .. g_row_ptr[i + 1]), ascending. A CTA reads its two
// row_ptr entries and its column indices from global memory (4 bytes per nonzero
// block; iosim does not model these few sectors).
//
// Grid, launch order, tiles, pipeline and epilogue are flash2's (same Flash2Config):
// dim3(ceil(N / BLOCK_Q), B, H), Q_i loaded once, K_j/V_j through two cp.async
// stages (the next nonzero block in flight while one is used), S/P/O in registers,
// O (fp16) and L written once. A query block with no nonzero block loads nothing and
// writes O = 0 and L = -inf (the log of an empty sum), as iosim's schedule stores them.
// A copy of flash2's loop rather than a flag on it, so the measured flash2 kernel
// stays the one the committed flash2 data was taken with.
#pragma once

#include "flash2_fwd.cuh"

namespace iosim_cuda {

struct BlockSparseParams {
  AttnParams attn;
  const int* g_row_ptr;  // (Tr + 1)
  const int* g_cols;     // (nonzero blocks)
};

template <int kD, int kBQ, int kBKV, int kWarps>
__global__ void __launch_bounds__(kWarps * 32) block_sparse_fwd_kernel(const BlockSparseParams bp) {
  using Cfg = Flash2Config<kD, kBQ, kBKV, kWarps>;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kMT = Cfg::kMT;
  constexpr int kQT = Cfg::kQTileElems;
  constexpr int kKVT = Cfg::kKVTileElems;
  const AttnParams& p = bp.attn;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  half* sQ = reinterpret_cast<half*>(smem_raw);  // (kBQ, kD); reused for O at the end
  half* sK = sQ + kQT;                           // (2, kBKV, kD)
  half* sV = sK + 2 * kKVT;                      // (2, kBKV, kD)

  const int q_block = blockIdx.x;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int q0 = q_block * kBQ;

  const auto [gQ, gK, gV, gO, gL] = head_tensors<kD>(p);

  const int k_begin = __ldg(bp.g_row_ptr + q_block);
  const int n_blocks = __ldg(bp.g_row_ptr + q_block + 1) - k_begin;
  const int* cols = bp.g_cols + k_begin;

  if (n_blocks == 0) {
    // Nothing to attend to: O = 0 (16-byte stores), L = -inf.
    constexpr int kChunksPerRow = kD / 8;
    for (int idx = threadIdx.x; idx < kBQ * kChunksPerRow; idx += kThreads) {
      const int row = idx / kChunksPerRow;
      if (q0 + row < p.seq)
        *reinterpret_cast<uint4*>(gO + static_cast<int64_t>(q0 + row) * kD +
                                  (idx % kChunksPerRow) * 8) = make_uint4(0, 0, 0, 0);
    }
    for (int row = threadIdx.x; row < kBQ; row += kThreads)
      if (q0 + row < p.seq) gL[q0 + row] = -INFINITY;
    return;
  }

  const int causal_offset = p.seq_kv - p.seq;
  int j_cur = __ldg(cols);
  load_tile_async<kBQ, kD, kThreads>(sQ, gQ, q0, p.seq);
  load_tile_async<kBKV, kD, kThreads>(sK, gK, j_cur * kBKV, p.seq_kv);
  load_tile_async<kBKV, kD, kThreads>(sV, gV, j_cur * kBKV, p.seq_kv);
  cp_async_commit();
  // The index of the block after next is read one step ahead, so no load waits on it.
  int j_next = n_blocks > 1 ? __ldg(cols + 1) : 0;

  const float scale_log2 = p.scale * kLog2e;
  const int q_row0 = warp * Cfg::kRowsPerWarp;  // warp's first row in the Q tile
  float rO[kMT][kD / 8][4];                     // (kMT, kD/8, C fragment), fp32
  float row_m[kMT][2];                          // running max, log2 units
  float row_l[kMT][2];                          // running sum, this lane's part
  warp_init_state<kD, kMT>(rO, row_m, row_l);

  for (int k = 0; k < n_blocks; ++k) {
    const int stage = k & 1;
    if (k + 1 < n_blocks) {
      // Stage (k+1)&1 was last read in step k-1, which ended with a barrier.
      load_tile_async<kBKV, kD, kThreads>(sK + (stage ^ 1) * kKVT, gK, j_next * kBKV, p.seq_kv);
      load_tile_async<kBKV, kD, kThreads>(sV + (stage ^ 1) * kKVT, gV, j_next * kBKV, p.seq_kv);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const int j = j_cur;
    j_cur = j_next;
    if (k + 2 < n_blocks) j_next = __ldg(cols + k + 2);

    const half* sKj = sK + stage * kKVT;  // (kBKV, kD)
    const half* sVj = sV + stage * kKVT;  // (kBKV, kD)
    float rS[kMT][kBKV / 8][4];           // (kMT, kBKV/8, C fragment)
    warp_qk<kD, kBKV, kMT>(rS, sQ, sKj, q_row0, lane);

    const int kv0 = j * kBKV;
    const bool need_mask =
        (kv0 + kBKV > p.seq_kv) || (p.causal && kv0 + kBKV - 1 > q0 + causal_offset);
    warp_scale_mask<kBKV, kMT>(rS, scale_log2, need_mask, kv0, q0 + q_row0, p.seq_kv, causal_offset,
                               p.causal, lane);

    float blk_max[kMT][2];
    warp_row_max<kBKV, kMT>(rS, blk_max);
    float m_new[kMT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) m_new[mt][hh] = fmaxf(row_m[mt][hh], blk_max[mt][hh]);
    float lane_sum[kMT][2];
    warp_exp<kBKV, kMT>(rS, m_new, lane_sum);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const float m_use = (m_new[mt][hh] == -INFINITY) ? 0.f : m_new[mt][hh];
        const float alpha = fast_exp2(row_m[mt][hh] - m_use);
        row_l[mt][hh] = row_l[mt][hh] * alpha + lane_sum[mt][hh];
        row_m[mt][hh] = m_new[mt][hh];
#pragma unroll
        for (int dt = 0; dt < kD / 8; ++dt) {
          rO[mt][dt][2 * hh] *= alpha;
          rO[mt][dt][2 * hh + 1] *= alpha;
        }
      }
    warp_pv<kD, kBKV, kMT>(rO, rS, sVj, lane);
    __syncthreads();  // stage k&1 is refilled in step k+1
  }

  // Epilogue as flash2's. A row whose computed blocks hold no visible key (causal
  // inside a kept block) ends with l = 0: O = 0, L = -inf.
  warp_write_o<kD, kMT, half, true>(rO, row_m, row_l, sQ, gL, q0, q_row0, p.seq, lane);
  __syncthreads();
  store_tile<kBQ, kD, kThreads>(gO, sQ, q0, p.seq);
}

}  // namespace iosim_cuda
