// FlashAttention-2 forward (Dao 2023, Algorithm 1 of the FA2 paper): outer loop
// over Q row blocks (one CTA each), inner loop over K/V blocks.
//
// Grid dim3(ceil(N / BLOCK_Q), B, H): blockIdx.x (the Q block) varies fastest,
// so CTAs that run at the same time share (b, h) and re-read the same K/V from
// L2. iosim's L2 model relies on that launch order.
//
// Per CTA: Q_i (BLOCK_Q, D) is loaded once; K_j, V_j (BLOCK_KV, D) stream
// through two shared-memory stages with cp.async (tile j+1 is in flight while
// tile j is used); S = Q_i K_j^T and P stay in registers; the running max m,
// sum l and the output O live in registers; O (fp16) and L = m + log(l) (fp32)
// are written once at the end.
//
// kWindow (a causal sliding window of p.window keys, iosim's --window): the CTA starts at the
// K/V block holding its first row's first visible key, skipping every block wholly below the
// window of all its rows, and masks the edge blocks that some row's window cuts, as the causal
// diagonal's blocks are masked: iosim's query-stationary dataflow under --window. A template
// flag, so the windowless instantiation (the committed flash2 data's kernel) compiles as before.
#pragma once

#include "warp_tile.cuh"

// Timing hooks, empty unless a microbenchmark defines them before including this file
// (microbench/kv_drift.cu stamps each CTA's start, end and every few K/V steps, to see how far
// the CTAs of a wave drift apart in their K/V loops). No validated build defines them, so the
// kernels the suites measure compile to the same code.
#ifndef IOSIM_FLASH2_STAMP_BEGIN
#define IOSIM_FLASH2_STAMP_BEGIN(n_kv_blocks)
#define IOSIM_FLASH2_STAMP_STEP(j)
#define IOSIM_FLASH2_STAMP_END()
#endif

namespace iosim_cuda {

template <int kD, int kBQ, int kBKV, int kWarps>
struct Flash2Config : WarpTileConfig<kD, kBQ, kBKV, kWarps> {
  using Base = WarpTileConfig<kD, kBQ, kBKV, kWarps>;
  static constexpr int kStages = 2;
  // sQ + sK, sV (kStages tiles each), fp16.
  static constexpr int kSmemBytes = (Base::kQTileElems + 2 * kStages * Base::kKVTileElems) * 2;
};

template <int kD, int kBQ, int kBKV, int kWarps, bool kWindow = false>
__global__ void __launch_bounds__(kWarps * 32) flash2_fwd_kernel(const AttnParams p) {
  using Cfg = Flash2Config<kD, kBQ, kBKV, kWarps>;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kMT = Cfg::kMT;
  constexpr int kQT = Cfg::kQTileElems;
  constexpr int kKVT = Cfg::kKVTileElems;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  half* sQ = reinterpret_cast<half*>(smem_raw);  // (kBQ, kD); reused for O at the end
  half* sK = sQ + kQT;                           // (2, kBKV, kD)
  half* sV = sK + 2 * kKVT;                      // (2, kBKV, kD)

  const int q_block = blockIdx.x;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int q0 = q_block * kBQ;

  const auto [gQ, gK, gV, gO, gL] = head_tensors<kD>(p);

  const int causal_offset = p.seq_kv - p.seq;
  const int n_kv_blocks_all = (p.seq_kv + kBKV - 1) / kBKV;
  int n_kv_blocks = n_kv_blocks_all;
  if (p.causal) {
    // Blocks wholly above the diagonal for every row of this Q block are skipped.
    const int q_last = min(q0 + kBQ, p.seq) - 1;
    n_kv_blocks = min(n_kv_blocks_all, (q_last + causal_offset) / kBKV + 1);
  }
  // First K/V block: that of the first row's first visible key (every later row's window starts
  // further right). Rows whose window has not started in a block see -inf there (m stays -inf,
  // exp gives 0), as under the causal mask.
  int j_first = 0;
  if constexpr (kWindow) j_first = max(0, q0 + causal_offset - p.window + 1) / kBKV;
  IOSIM_FLASH2_STAMP_BEGIN(n_kv_blocks - j_first);

  load_tile_async<kBQ, kD, kThreads>(sQ, gQ, q0, p.seq);
  load_tile_async<kBKV, kD, kThreads>(sK + (j_first & 1) * kKVT, gK, j_first * kBKV, p.seq_kv);
  load_tile_async<kBKV, kD, kThreads>(sV + (j_first & 1) * kKVT, gV, j_first * kBKV, p.seq_kv);
  cp_async_commit();

  const float scale_log2 = p.scale * kLog2e;
  const int q_row0 = warp * Cfg::kRowsPerWarp;  // warp's first row in the Q tile
  float rO[kMT][kD / 8][4];                     // (kMT, kD/8, C fragment), fp32
  float row_m[kMT][2];                          // running max, log2 units
  float row_l[kMT][2];                          // running sum, this lane's part
  warp_init_state<kD, kMT>(rO, row_m, row_l);

  for (int j = j_first; j < n_kv_blocks; ++j) {
    IOSIM_FLASH2_STAMP_STEP(j - j_first);
    const int stage = j & 1;
    if (j + 1 < n_kv_blocks) {
      // Stage (j+1)&1 was last read in step j-1, which ended with a barrier.
      load_tile_async<kBKV, kD, kThreads>(sK + (stage ^ 1) * kKVT, gK, (j + 1) * kBKV, p.seq_kv);
      load_tile_async<kBKV, kD, kThreads>(sV + (stage ^ 1) * kKVT, gV, (j + 1) * kBKV, p.seq_kv);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    const half* sKj = sK + stage * kKVT;  // (kBKV, kD)
    const half* sVj = sV + stage * kKVT;  // (kBKV, kD)
    float rS[kMT][kBKV / 8][4];           // (kMT, kBKV/8, C fragment)
    warp_qk<kD, kBKV, kMT>(rS, sQ, sKj, q_row0, lane);

    const int kv0 = j * kBKV;
    bool need_mask = (kv0 + kBKV > p.seq_kv) || (p.causal && kv0 + kBKV - 1 > q0 + causal_offset);
    // The window's edge: a block whose first key lies below the last row's window (the row with
    // the rightmost window start) is masked; blocks inside every row's window are not.
    if constexpr (kWindow) need_mask = need_mask || kv0 <= q0 + kBQ - 1 + causal_offset - p.window;
    warp_scale_mask<kBKV, kMT, kWindow>(rS, scale_log2, need_mask, kv0, q0 + q_row0, p.seq_kv,
                                        causal_offset, p.causal, lane, causal_offset - p.window);

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
        // alpha rescales what was accumulated under the old max.
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
    __syncthreads();  // stage j&1 is refilled in step j+1
  }

  // Epilogue: O / l -> fp16 in sQ (each warp overwrites only the rows it alone
  // read), then 16-byte coalesced stores; L = (m + log2 l) * ln 2.
  warp_write_o<kD, kMT>(rO, row_m, row_l, sQ, gL, q0, q_row0, p.seq, lane);
  __syncthreads();
  store_tile<kBQ, kD, kThreads>(gO, sQ, q0, p.seq);
  IOSIM_FLASH2_STAMP_END();
}

}  // namespace iosim_cuda
