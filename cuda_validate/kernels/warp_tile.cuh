// Per-warp pieces of one (Q block, K/V block) step, shared by flash1 and flash2.
// A warp owns kMT m-tiles of 16 query rows; S and P stay in its registers.
#pragma once

#include <cmath>

#include "common.cuh"

namespace iosim_cuda {

// The tiling of the warp-tile kernels (flash1, flash2, wg1_mma): kWarps warps own kBQ / kWarps
// query rows each, in whole 16-row m-tiles; Q and K/V tiles are swizzled in shared memory.
template <int kD, int kBQ, int kBKV, int kWarps>
struct WarpTileConfig {
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kRowsPerWarp = kBQ / kWarps;
  static constexpr int kMT = kRowsPerWarp / 16;                 // m-tiles per warp
  static constexpr int kQTileElems = kBQ * smem_pitch<kD>();    // (kBQ, kD) swizzled
  static constexpr int kKVTileElems = kBKV * smem_pitch<kD>();  // (kBKV, kD) swizzled
  static_assert(kRowsPerWarp % 16 == 0, "each warp owns whole 16-row m-tiles");
  static_assert(kBKV % 16 == 0 && kD % 64 == 0, "tile sizes");
};

// rS (kMT, kBKV/8, 4) = Q_rows K_j^T for the warp's rows, fp32.
// sQ: swizzled (BLOCK_Q, kD); sK: swizzled (kBKV, kD); q_row0 = warp's first row in sQ.
// T: the element type of Q and K (half, or __nv_bfloat16 for the wg1 kernels).
template <int kD, int kBKV, int kMT, typename T = half>
__device__ __forceinline__ void warp_qk(float (&rS)[kMT][kBKV / 8][4], const half* sQ,
                                        const half* sK, int q_row0, int lane) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kBKV / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) rS[mt][nt][e] = 0.f;

  constexpr uint32_t kRowBytes = kD * 2;
  // Q matrices: (rows 0-7, chunk 2kd), (rows 8-15, 2kd), (rows 0-7, 2kd+1), (rows 8-15, 2kd+1)
  // -> A fragment a0..a3. Lane L addresses row L % 16, chunk 2kd + L / 16.
  const uint32_t sQ_lane = smem_addr(sQ) + (q_row0 + lane % 16) * kRowBytes;
  const uint32_t q_xor = ldsm_lane_xor(lane / 16, lane);
  // K matrices: (keys 0-7, chunk 2kd), (keys 0-7, 2kd+1), (keys 8-15, 2kd), (keys 8-15, 2kd+1)
  // -> B fragments (b0, b1) of n-tiles 2np and 2np+1.
  const uint32_t sK_lane = smem_addr(sK) + (lane % 8 + (lane / 16) * 8) * kRowBytes;
  const uint32_t k_xor = ldsm_lane_xor((lane / 8) % 2, lane);
#pragma unroll
  for (int kd = 0; kd < kD / 16; ++kd) {
    // Q is re-read from shared memory each step instead of pinned in registers:
    // it keeps the register budget for O and S (FA2 does the same for d = 128).
    uint32_t rQa[kMT][4];  // (kMT, A fragment)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
      ldmatrix_x4(sQ_lane + mt * 16 * kRowBytes + (q_xor ^ (kd * 32)), rQa[mt][0], rQa[mt][1],
                  rQa[mt][2], rQa[mt][3]);
#pragma unroll
    for (int np = 0; np < kBKV / 16; ++np) {
      uint32_t b0, b1, b2, b3;
      ldmatrix_x4(sK_lane + np * 16 * kRowBytes + (k_xor ^ (kd * 32)), b0, b1, b2, b3);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        mma_16816_t<T>(rS[mt][2 * np], rQa[mt], b0, b1);
        mma_16816_t<T>(rS[mt][2 * np + 1], rQa[mt], b2, b3);
      }
    }
  }
}

// rS *= scale * log2(e) (so softmax uses exp2), and masked entries become -inf.
// Masking runs only when the block needs it (ragged last K/V block, or a block
// that crosses the causal diagonal): it is uniform across the CTA.
// kWindow: also the keys col <= row + window_offset (a sliding window's lower edge, offset =
// Nkv - N - W), in the same pass (a second pass spilled flash2's d = 128, 64 x 64 instance).
template <int kBKV, int kMT, bool kWindow = false>
__device__ __forceinline__ void warp_scale_mask(float (&rS)[kMT][kBKV / 8][4], float scale_log2,
                                                bool need_mask, int kv0, int q_row_global0,
                                                int seq_kv, int causal_offset, bool causal,
                                                int lane, int window_offset = 0) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kBKV / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float s = rS[mt][nt][e] * scale_log2;
        if (need_mask) {
          const int col = kv0 + nt * 8 + (lane % 4) * 2 + (e & 1);
          const int row = q_row_global0 + mt * 16 + lane / 4 + (e >> 1) * 8;
          if (col >= seq_kv || (causal && col > row + causal_offset)) s = -INFINITY;
          if constexpr (kWindow)
            if (col <= row + window_offset) s = -INFINITY;
        }
        rS[mt][nt][e] = s;
      }
}

// Row max of rS over the warp's 4 lanes that share a row; one value per (mt, half).
template <int kBKV, int kMT>
__device__ __forceinline__ void warp_row_max(const float (&rS)[kMT][kBKV / 8][4],
                                             float (&row_max)[kMT][2]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kBKV / 8; ++nt)
        m = fmaxf(m, fmaxf(rS[mt][nt][2 * h], rS[mt][nt][2 * h + 1]));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      row_max[mt][h] = m;
    }
}

// rS <- exp2(rS - m) in place (m in log2 units; -inf rows use 0 so no NaN appears);
// returns this lane's partial row sums.
template <int kBKV, int kMT>
__device__ __forceinline__ void warp_exp(float (&rS)[kMT][kBKV / 8][4], const float (&m)[kMT][2],
                                         float (&lane_sum)[kMT][2]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float m_use = (m[mt][h] == -INFINITY) ? 0.f : m[mt][h];
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < kBKV / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float p = fast_exp2(rS[mt][nt][2 * h + e] - m_use);
          rS[mt][nt][2 * h + e] = p;
          sum += p;
        }
      lane_sum[mt][h] = sum;
    }
}

// rO (kMT, kD/8, 4) += P V_j, with P (fp32 in rS) rounded to T (fp16 or bf16, V's type) in
// A-fragment order. sV: swizzled (kBKV, kD).
template <int kD, int kBKV, int kMT, typename T = half>
__device__ __forceinline__ void warp_pv(float (&rO)[kMT][kD / 8][4],
                                        const float (&rP)[kMT][kBKV / 8][4], const half* sV,
                                        int lane) {
  constexpr uint32_t kRowBytes = kD * 2;
  // V is (key, d) row-major, B wants (k = key, n = d) column-major: the
  // transposing ldmatrix gives it. Matrices: (keys 0-7, chunk 2dp), (keys 8-15, 2dp),
  // (keys 0-7, 2dp+1), (keys 8-15, 2dp+1) -> B fragments of d-tiles 2dp, 2dp+1.
  // Lane L addresses key L % 16, chunk 2dp + L / 16.
  const uint32_t sV_lane = smem_addr(sV) + (lane % 16) * kRowBytes;
  const uint32_t v_xor = ldsm_lane_xor(lane / 16, lane);
#pragma unroll
  for (int kk = 0; kk < kBKV / 16; ++kk) {
    uint32_t rPa[kMT][4];  // (kMT, A fragment) of keys kk*16 .. kk*16+15
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      rPa[mt][0] = pack2<T>(rP[mt][2 * kk][0], rP[mt][2 * kk][1]);
      rPa[mt][1] = pack2<T>(rP[mt][2 * kk][2], rP[mt][2 * kk][3]);
      rPa[mt][2] = pack2<T>(rP[mt][2 * kk + 1][0], rP[mt][2 * kk + 1][1]);
      rPa[mt][3] = pack2<T>(rP[mt][2 * kk + 1][2], rP[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int dp = 0; dp < kD / 16; ++dp) {
      uint32_t b0, b1, b2, b3;
      ldmatrix_x4_trans(sV_lane + kk * 16 * kRowBytes + (v_xor ^ (dp * 32)), b0, b1, b2, b3);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        mma_16816_t<T>(rO[mt][2 * dp], rPa[mt], b0, b1);
        mma_16816_t<T>(rO[mt][2 * dp + 1], rPa[mt], b2, b3);
      }
    }
  }
}

// The K/V blocks Q rows [q0, q0 + kBQ) visit: all ceil(Nkv / kBKV) of them, or under causal
// masking (bottom-right aligned) those not wholly above the diagonal for every row.
template <int kBQ, int kBKV>
__device__ __forceinline__ int kv_blocks_visited(const AttnParams& p, int q0) {
  const int all = (p.seq_kv + kBKV - 1) / kBKV;
  if (!p.causal) return all;
  const int q_last = min(q0 + kBQ, p.seq) - 1;
  return min(all, (q_last + p.seq_kv - p.seq) / kBKV + 1);
}

// The slices of the CTA's (batch, head) in a grid (query blocks, B, H) of a flash kernel's
// tensors: Q, O (N, kD), K, V (Nkv, kD), L (N).
struct HeadTensors {
  const half *gQ, *gK, *gV;
  half* gO;
  float* gL;
};
template <int kD>
__device__ __forceinline__ HeadTensors head_tensors(const AttnParams& p) {
  const int b = blockIdx.y;
  const int h = blockIdx.z;
  const int64_t bh = static_cast<int64_t>(b) * p.heads + h;
  return {p.gQ + bh * p.seq * kD, p.gK + bh * p.seq_kv * kD, p.gV + bh * p.seq_kv * kD,
          p.gO + bh * p.seq * kD, p.gL + bh * p.seq};
}

// The online softmax's start: O = 0, running max -inf, running sum 0.
template <int kD, int kMT>
__device__ __forceinline__ void warp_init_state(float (&rO)[kMT][kD / 8][4], float (&row_m)[kMT][2],
                                                float (&row_l)[kMT][2]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < kD / 8; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) rO[mt][dt][e] = 0.f;
    row_m[mt][0] = row_m[mt][1] = -INFINITY;
    row_l[mt][0] = row_l[mt][1] = 0.f;
  }
}

// One online-softmax step over rS (already scaled to log2 units and masked): the row max m,
// the lane's partial row sum l, rS <- P = exp2(rS - m) and rO rescaled by exp2(m_old - m).
template <int kD, int kBKV, int kMT>
__device__ __forceinline__ void warp_online_softmax(float (&rS)[kMT][kBKV / 8][4],
                                                    float (&row_m)[kMT][2], float (&row_l)[kMT][2],
                                                    float (&rO)[kMT][kD / 8][4]) {
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
}

// Epilogue of a flash2-style kernel: O / l rounded to T into the swizzled (BLOCK_Q, kD) tile sO
// (each warp writes only its own rows), and L = (m + log2 l) * ln 2 of rows < seq to gL.
// EMPTY_ROWS: a row may have seen no visible key (block-sparse), so l = 0 writes L = -inf.
// The caller syncs and stores sO.
template <int kD, int kMT, typename T = half, bool EMPTY_ROWS = false>
__device__ __forceinline__ void warp_write_o(const float (&rO)[kMT][kD / 8][4],
                                             const float (&row_m)[kMT][2],
                                             const float (&row_l)[kMT][2], half* sO, float* gL,
                                             int q0, int q_row0, int seq, int lane) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float l = row_l[mt][hh];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv_l = l > 0.f ? 1.f / l : 0.f;
      const int row = q_row0 + mt * 16 + lane / 4 + hh * 8;  // row in the tile
#pragma unroll
      for (int dt = 0; dt < kD / 8; ++dt) {
        const uint32_t v = pack2<T>(rO[mt][dt][2 * hh] * inv_l, rO[mt][dt][2 * hh + 1] * inv_l);
        *reinterpret_cast<uint32_t*>(sO + swz<kD>(row, dt) + (lane % 4) * 2) = v;
      }
      if (lane % 4 == 0 && q0 + row < seq) {
        if constexpr (EMPTY_ROWS)
          gL[q0 + row] = l > 0.f ? (row_m[mt][hh] + log2f(l)) * kLn2 : -INFINITY;
        else
          gL[q0 + row] = (row_m[mt][hh] + log2f(l)) * kLn2;
      }
    }
}

// acc (kMT, kD/8, C fragment) * mult -> fp16 rows [row0, row0 + 16 kMT) of a swizzled
// (rows, kD) shared tile (two_pass_bwd.cuh's dK, dV and dQ before their 16-byte stores).
template <int kD, int kMT>
__device__ __forceinline__ void warp_acc_to_smem(half* s_tile, const float (&acc)[kMT][kD / 8][4],
                                                 float mult, int row0, int lane) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int row = row0 + mt * 16 + lane / 4 + hh * 8;
#pragma unroll
      for (int dt = 0; dt < kD / 8; ++dt)
        *reinterpret_cast<uint32_t*>(s_tile + swz<kD>(row, dt) + (lane % 4) * 2) =
            pack_half2(acc[mt][dt][2 * hh] * mult, acc[mt][dt][2 * hh + 1] * mult);
    }
}

}  // namespace iosim_cuda
