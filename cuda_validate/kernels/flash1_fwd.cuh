// FlashAttention-1 forward, the loop order of Algorithm 1 in Dao et al. 2022:
// one CTA per (b, h) (grid B*H, blockIdx.x = b*H + h); outer loop over K/V
// blocks j (K_j, V_j loaded once into shared memory), inner loop over Q blocks
// i. Each inner step loads Q_i and, for j > 0, the partial O_i (fp16) and the
// row statistics l_i, m_i (fp32) from global memory, updates them with block
// j, and stores O_i (normalized), l_i and m_i back. That per-step round trip
// of O, l, m through global memory is the traffic FA2's loop order removes.
//
// Q_i and O_i go through two shared-memory stages with cp.async: step i+1's
// tiles are in flight during step i. Across j there is no prefetch: O_0 of
// step j+1 must be read after it was stored in step j.
#pragma once

#include "warp_tile.cuh"

namespace iosim_cuda {

template <int kD, int kBQ, int kBKV, int kWarps>
struct Flash1Config : WarpTileConfig<kD, kBQ, kBKV, kWarps> {
  using Base = WarpTileConfig<kD, kBQ, kBKV, kWarps>;
  static constexpr int kStages = 2;  // for the Q_i / O_i stream
  // sK, sV (one tile each) + sQ, sO (kStages tiles each), fp16.
  static constexpr int kSmemBytes = (2 * Base::kKVTileElems + 2 * kStages * Base::kQTileElems) * 2;
};

template <int kD, int kBQ, int kBKV, int kWarps>
__global__ void __launch_bounds__(kWarps * 32) flash1_fwd_kernel(const AttnParams p) {
  using Cfg = Flash1Config<kD, kBQ, kBKV, kWarps>;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kMT = Cfg::kMT;
  constexpr int kQT = Cfg::kQTileElems;
  constexpr int kKVT = Cfg::kKVTileElems;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  half* sK = reinterpret_cast<half*>(smem_raw);  // (kBKV, kD)
  half* sV = sK + kKVT;                          // (kBKV, kD)
  half* sQ = sV + kKVT;                          // (2, kBQ, kD)
  half* sO = sQ + 2 * kQT;                       // (2, kBQ, kD)

  const int64_t bh = blockIdx.x;  // = b * H + h
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  const half* gQ = p.gQ + bh * p.seq * kD;     // (N, kD)
  const half* gK = p.gK + bh * p.seq_kv * kD;  // (Nkv, kD)
  const half* gV = p.gV + bh * p.seq_kv * kD;  // (Nkv, kD)
  half* gO = p.gO + bh * p.seq * kD;           // (N, kD)
  float* gm = p.gm + bh * p.seq;               // (N), natural-log units
  float* gl = p.gl + bh * p.seq;               // (N)

  const int causal_offset = p.seq_kv - p.seq;
  const int n_kv_blocks = (p.seq_kv + kBKV - 1) / kBKV;
  const int n_q_blocks = (p.seq + kBQ - 1) / kBQ;
  const float scale_log2 = p.scale * kLog2e;
  const int q_row0 = warp * Cfg::kRowsPerWarp;

  for (int j = 0; j < n_kv_blocks; ++j) {
    const int kv0 = j * kBKV;
    // Causal: Q blocks whose rows all lie above block j's first key are skipped
    // (row r sees block j iff kv0 <= r + causal_offset). Every row sees key 0,
    // so step j = 0 initializes all rows.
    const int i_first = p.causal ? max(0, kv0 - causal_offset) / kBQ : 0;
    const bool has_prev = j > 0;

    load_tile_async<kBKV, kD, kThreads>(sK, gK, kv0, p.seq_kv);
    load_tile_async<kBKV, kD, kThreads>(sV, gV, kv0, p.seq_kv);
    load_tile_async<kBQ, kD, kThreads>(sQ, gQ, i_first * kBQ, p.seq);
    if (has_prev) load_tile_async<kBQ, kD, kThreads>(sO, gO, i_first * kBQ, p.seq);
    cp_async_commit();

    for (int i = i_first; i < n_q_blocks; ++i) {
      const int stage = (i - i_first) & 1;
      if (i + 1 < n_q_blocks) {
        load_tile_async<kBQ, kD, kThreads>(sQ + (stage ^ 1) * kQT, gQ, (i + 1) * kBQ, p.seq);
        if (has_prev)
          load_tile_async<kBQ, kD, kThreads>(sO + (stage ^ 1) * kQT, gO, (i + 1) * kBQ, p.seq);
        cp_async_commit();
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();

      const int q0 = i * kBQ;
      half* sQi = sQ + stage * kQT;  // (kBQ, kD)
      half* sOi = sO + stage * kQT;  // (kBQ, kD)

      // Row statistics from the previous steps (global -> registers).
      float m_old[kMT][2], l_old[kMT][2];  // log2 units / sums
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int row = q0 + q_row0 + mt * 16 + lane / 4 + hh * 8;
          const bool have = has_prev && row < p.seq;
          m_old[mt][hh] = have ? gm[row] * kLog2e : -INFINITY;
          l_old[mt][hh] = have ? gl[row] : 0.f;
        }

      float rS[kMT][kBKV / 8][4];  // (kMT, kBKV/8, C fragment)
      warp_qk<kD, kBKV, kMT>(rS, sQi, sK, q_row0, lane);
      const bool need_mask =
          (kv0 + kBKV > p.seq_kv) || (p.causal && kv0 + kBKV - 1 > q0 + causal_offset);
      warp_scale_mask<kBKV, kMT>(rS, scale_log2, need_mask, kv0, q0 + q_row0, p.seq_kv,
                                 causal_offset, p.causal, lane);
      float blk_max[kMT][2], m_new[kMT][2], lane_sum[kMT][2];
      warp_row_max<kBKV, kMT>(rS, blk_max);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) m_new[mt][hh] = fmaxf(m_old[mt][hh], blk_max[mt][hh]);
      warp_exp<kBKV, kMT>(rS, m_new, lane_sum);

      float rAcc[kMT][kD / 8][4];  // (kMT, kD/8, C fragment): P V_j
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int dt = 0; dt < kD / 8; ++dt)
#pragma unroll
          for (int e = 0; e < 4; ++e) rAcc[mt][dt][e] = 0.f;
      warp_pv<kD, kBKV, kMT>(rAcc, rS, sV, lane);

      // O_new = (l_old * alpha * O_old + P V_j) / l_new, written back over O_old in
      // shared memory (each lane rewrites exactly the elements it read).
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          float sum = lane_sum[mt][hh];
          sum += __shfl_xor_sync(0xffffffffu, sum, 1);
          sum += __shfl_xor_sync(0xffffffffu, sum, 2);
          const float m_use = (m_new[mt][hh] == -INFINITY) ? 0.f : m_new[mt][hh];
          const float alpha = fast_exp2(m_old[mt][hh] - m_use);
          const float l_new = l_old[mt][hh] * alpha + sum;
          const float inv_l = l_new > 0.f ? 1.f / l_new : 0.f;
          const float keep = l_old[mt][hh] * alpha;
          const int row = q_row0 + mt * 16 + lane / 4 + hh * 8;  // row in the tile
#pragma unroll
          for (int dt = 0; dt < kD / 8; ++dt) {
            uint32_t* s_ptr = reinterpret_cast<uint32_t*>(sOi + swz<kD>(row, dt) + (lane % 4) * 2);
            float o0 = 0.f, o1 = 0.f;
            if (has_prev) {
              const __half2 old = *reinterpret_cast<const __half2*>(s_ptr);
              o0 = __low2float(old);
              o1 = __high2float(old);
            }
            *s_ptr = pack_half2((keep * o0 + rAcc[mt][dt][2 * hh]) * inv_l,
                                (keep * o1 + rAcc[mt][dt][2 * hh + 1]) * inv_l);
          }
          if (lane % 4 == 0 && q0 + row < p.seq) {
            gm[q0 + row] = m_new[mt][hh] * kLn2;
            gl[q0 + row] = l_new;
          }
        }
      __syncthreads();
      store_tile<kBQ, kD, kThreads>(gO, sOi, q0, p.seq);
      __syncthreads();  // this stage is refilled by the prefetch of step i+2
    }
  }
}

}  // namespace iosim_cuda
