// wg1_mma_fwd: the FlashAttention-2 forward of flash2_fwd.cuh (same loop order, grid, per-warp
// pieces from warp_tile.cuh and epilogue) with a deeper K/V pipeline: a ring of kStages
// (2..6) shared-memory stages filled by cp.async, kWarps warps (4 by default: one warpgroup's
// worth; the tile sweep of cuda_validate/tile_sweep also runs 8) issuing mma.sync m16n8k16 with
// ldmatrix operands, fp16 or bf16 (T) inputs and output, fp32 L.
// issue #27 item 5c; wg1_tma_fwd.cuh is the wgmma + TMA kernel of the same loop order.
//
// Step j: wait until K_j/V_j have landed (cp.async groups: Q + K_0/V_0, then one per K/V block,
// an empty one past the last so that the count stays uniform), barrier, refill the stage read in
// step j-1 with block j + kStages - 1, then S = Q K_j^T, online softmax, O += P V_j.
#pragma once

#include "warp_tile.cuh"

namespace iosim_cuda {

template <int kD, int kBQ, int kBKV, int kStages, int kWarps = 4>
struct Wg1MmaConfig : WarpTileConfig<kD, kBQ, kBKV, kWarps> {
  using Base = WarpTileConfig<kD, kBQ, kBKV, kWarps>;
  // sQ + sK, sV (kStages tiles each), 16-bit elements.
  static constexpr int kSmemBytes = (Base::kQTileElems + 2 * kStages * Base::kKVTileElems) * 2;
  static_assert(kStages >= 2 && kStages <= 6, "2..6 stages");
};

template <typename T, int kD, int kBQ, int kBKV, int kStages, int kWarps = 4>
__global__ void __launch_bounds__(kWarps * 32) wg1_mma_fwd_kernel(const AttnParams p) {
  using Cfg = Wg1MmaConfig<kD, kBQ, kBKV, kStages, kWarps>;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kMT = Cfg::kMT;
  constexpr int kQT = Cfg::kQTileElems;
  constexpr int kKVT = Cfg::kKVTileElems;

  // 16-bit tiles: the copy and ldmatrix paths move bytes, so T's tiles are handled as half.
  extern __shared__ __align__(128) unsigned char wg1_mma_smem[];
  half* sQ = reinterpret_cast<half*>(wg1_mma_smem);  // (kBQ, kD); reused for O at the end
  half* sK = sQ + kQT;                               // (kStages, kBKV, kD)
  half* sV = sK + kStages * kKVT;                    // (kStages, kBKV, kD)

  const int q_block = blockIdx.x;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int q0 = q_block * kBQ;

  // A struct, not structured bindings: C++17 lambdas (the copy below) cannot capture those.
  const HeadTensors g = head_tensors<kD>(p);

  const int causal_offset = p.seq_kv - p.seq;
  const int n_kv_blocks_all = (p.seq_kv + kBKV - 1) / kBKV;
  int n_kv_blocks = n_kv_blocks_all;
  if (p.causal) {
    const int q_last = min(q0 + kBQ, p.seq) - 1;
    n_kv_blocks = min(n_kv_blocks_all, (q_last + causal_offset) / kBKV + 1);
  }

  auto load_kv = [&](int j) {
    if (j < n_kv_blocks) {
      const int st = j % kStages;
      load_tile_async<kBKV, kD, kThreads>(sK + st * kKVT, g.gK, j * kBKV, p.seq_kv);
      load_tile_async<kBKV, kD, kThreads>(sV + st * kKVT, g.gV, j * kBKV, p.seq_kv);
    }
    cp_async_commit();  // possibly empty: one group per block index
  };
  load_tile_async<kBQ, kD, kThreads>(sQ, g.gQ, q0, p.seq);
  load_kv(0);  // group 0: Q, K_0, V_0
#pragma unroll
  for (int j = 1; j < kStages - 1; ++j) load_kv(j);

  const float scale_log2 = p.scale * kLog2e;
  const int q_row0 = warp * Cfg::kRowsPerWarp;
  float rO[kMT][kD / 8][4];
  float row_m[kMT][2];
  float row_l[kMT][2];
  warp_init_state<kD, kMT>(rO, row_m, row_l);

  for (int j = 0; j < n_kv_blocks; ++j) {
    // Groups committed so far: j + kStages - 1; block j's is the (j+1)-th.
    cp_async_wait<kStages - 2>();
    __syncthreads();  // block j visible to all; every warp is done with step j-1's stage
    load_kv(j + kStages - 1);

    const int stage = j % kStages;
    const half* sKj = sK + stage * kKVT;
    const half* sVj = sV + stage * kKVT;
    float rS[kMT][kBKV / 8][4];
    warp_qk<kD, kBKV, kMT, T>(rS, sQ, sKj, q_row0, lane);

    const int kv0 = j * kBKV;
    const bool need_mask =
        (kv0 + kBKV > p.seq_kv) || (p.causal && kv0 + kBKV - 1 > q0 + causal_offset);
    warp_scale_mask<kBKV, kMT>(rS, scale_log2, need_mask, kv0, q0 + q_row0, p.seq_kv, causal_offset,
                               p.causal, lane);
    warp_online_softmax<kD, kBKV, kMT>(rS, row_m, row_l, rO);
    warp_pv<kD, kBKV, kMT, T>(rO, rS, sVj, lane);
  }
  cp_async_wait<0>();  // only empty groups can be pending here

  warp_write_o<kD, kMT, T>(rO, row_m, row_l, sQ, g.gL, q0, q_row0, p.seq, lane);
  __syncthreads();
  store_tile<kBQ, kD, kThreads>(g.gO, sQ, q0, p.seq);
}

}  // namespace iosim_cuda
