// Attention backward in two passes and no atomics (issue #27 item 5b): "two_pass" in
// iosim's kernel description.
//
// Inputs Q, O, dO (B, H, N, d) and K, V (B, H, Nkv, d) fp16; L (B, H, N) fp32, the
// log-sum-exp (natural log) of each query row from the forward (flash2_fwd.cuh).
//   bwd_pre_kernel:  D = rowsum(dO * O), fp32 (B, H, N).
//   two_pass_bwd_kernel, grid (max(Tr, Tc), B, H),
//   Tr = ceil(N / BLOCK_Q), Tc = ceil(Nkv / BLOCK_KV):
//     pass 1 (x < Tc): key block x. K_x, V_x stay in shared memory; Q_i, dO_i, L_i, D_i
//       stream through two cp.async stages for every query block i that sees the key
//       block. Per i: S^T = K_x Q_i^T, P^T = exp(scale S^T - L), dV += P^T dO_i,
//       dP^T = V_x dO_i^T, dS^T = P^T (dP^T - D), dK += dS^T Q_i. dK (scaled) and dV
//       are written once, fp16.
//     pass 2 (x < Tr): query block x. Q_x, dO_x, L_x, D_x stay in shared memory; K_j, V_j
//       stream through two stages for every visible key block j. Per j: S = Q_x K_j^T,
//       P, dP = dO_x V_j^T, dS = P (dP - D), dQ += dS K_j. dQ (scaled) is written once.
//   S, P, dP and dS never leave registers; dK, dV (pass 1) and dQ (pass 2) accumulate in
//   registers (fp32) and no gradient goes through global memory before its final store.
//
// Causal (bottom-right aligned, query i sees key j iff j <= i + Nkv - N): blocks wholly
// above the diagonal are skipped in both passes, blocks that cross it are masked.
//
// Warps: kWarps (4), each owning kBKV / (16 kWarps) key m-tiles in pass 1 and
// kBQ / (16 kWarps) query m-tiles in pass 2. The columns of each score tile are
// processed a chunk at a time (scores and dP of one chunk are live together), so the
// registers hold the accumulators plus 2 * 16 * chunk floats per warp m-tile: the
// row operand of QK^T (K_x or Q_x rows) is re-read from shared memory for each chunk.
#pragma once

#include "warp_tile.cuh"

namespace iosim_cuda {

struct BwdParams {
  const half* gQ;   // (B, H, N, d)
  const half* gK;   // (B, H, Nkv, d)
  const half* gV;   // (B, H, Nkv, d)
  const half* gO;   // (B, H, N, d)
  const half* gdO;  // (B, H, N, d)
  const float* gL;  // (B, H, N) log-sum-exp, natural log
  float* gD;        // (B, H, N) rowsum(dO * O), written by bwd_pre_kernel
  half* gdQ;        // (B, H, N, d)
  half* gdK;        // (B, H, Nkv, d)
  half* gdV;        // (B, H, Nkv, d)
  int batch;
  int heads;
  int seq;     // N (a multiple of 4: L and D tiles are copied 16 bytes at a time)
  int seq_kv;  // Nkv
  float scale;
  bool causal;
};

constexpr int kBwdPreThreads = 256;

// D = rowsum(dO * O): kD / 8 lanes per row, 16 bytes of each operand per lane.
// Grid ceil(B H N kD / 8 / kBwdPreThreads).
template <int kD>
__global__ void __launch_bounds__(kBwdPreThreads) bwd_pre_kernel(const BwdParams p) {
  constexpr int kLanesPerRow = kD / 8;
  static_assert(32 % kLanesPerRow == 0, "a row's lanes sit in one warp");
  const int64_t rows = static_cast<int64_t>(p.batch) * p.heads * p.seq;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kBwdPreThreads + threadIdx.x;
  const int64_t row = t / kLanesPerRow;
  const int part = static_cast<int>(t % kLanesPerRow);
  float acc = 0.f;
  if (row < rows) {
    const uint4 a = *reinterpret_cast<const uint4*>(p.gdO + row * kD + part * 8);
    const uint4 o = *reinterpret_cast<const uint4*>(p.gO + row * kD + part * 8);
    const __half2* ha = reinterpret_cast<const __half2*>(&a);
    const __half2* ho = reinterpret_cast<const __half2*>(&o);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 fa = __half22float2(ha[k]);
      const float2 fo = __half22float2(ho[k]);
      acc += fa.x * fo.x + fa.y * fo.y;
    }
  }
#pragma unroll
  for (int off = kLanesPerRow / 2; off > 0; off >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (row < rows && part == 0) p.gD[row] = acc;
}

template <int kD, int kBQ, int kBKV, int kWarps>
struct TwoPassBwdConfig {
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kStages = 2;
  static constexpr int kMTk = kBKV / (16 * kWarps);  // pass 1: key m-tiles per warp
  static constexpr int kMTq = kBQ / (16 * kWarps);   // pass 2: query m-tiles per warp
  // Score columns per step, both passes: with 32, d = 64 block_kv = 128 and d = 128
  // spill at 255 registers (nvcc 13.0).
  static constexpr int kChunk = 16;
  static constexpr int kQT = kBQ * smem_pitch<kD>();    // (kBQ, kD) swizzled
  static constexpr int kKVT = kBKV * smem_pitch<kD>();  // (kBKV, kD) swizzled
  // Pass 1: K_x, V_x + (Q, dO) x kStages; pass 2: Q_x, dO_x + (K, V) x kStages (halves).
  static constexpr int kHalves1 = 2 * kKVT + 2 * kStages * kQT;
  static constexpr int kHalves2 = 2 * kQT + 2 * kStages * kKVT;
  static constexpr int kHalves = kHalves1 > kHalves2 ? kHalves1 : kHalves2;
  // Then (L, D) of a query block, fp32, kStages of them (pass 2 uses the first).
  static constexpr int kSmemBytes = kHalves * 2 + kStages * 2 * kBQ * 4;
  static_assert(kMTk >= 1 && kMTq >= 1 && kBKV % (16 * kWarps) == 0 && kBQ % (16 * kWarps) == 0,
                "each warp owns whole 16-row m-tiles in both passes");
  static_assert(kBQ % kChunk == 0 && kBKV % kChunk == 0 && kD % 64 == 0, "tile sizes");
  static_assert(2 * kBQ / 4 <= kThreads, "one 16-byte L/D chunk per thread");
};

// L and D of query rows [q0, q0 + kBQ) into sLD (L: kBQ floats, then D: kBQ floats);
// rows past n are zero-filled (n % 4 == 0).
template <int kBQ>
__device__ __forceinline__ void load_ld_async(float* sLD, const float* gL, const float* gD, int q0,
                                              int n) {
  constexpr int kChunks = kBQ / 4;
  const int t = static_cast<int>(threadIdx.x);
  if (t < 2 * kChunks) {
    const int which = t / kChunks;
    const int c = t % kChunks;
    const bool valid = q0 + 4 * c < n;
    const float* g = (which ? gD : gL) + (valid ? q0 + 4 * c : 0);
    cp_async_16(smem_addr(sLD + which * kBQ + 4 * c), g, valid);
  }
}

// Two tiles of the same rows [row0, row0 + kRows) of two (n, kD) tensors (Q and dO, or
// K and V) into two swizzled shared tiles.
template <int kRows, int kD, int kThreads>
__device__ __forceinline__ void load_tile_pair_async(half* s_a, half* s_b, const half* g_a,
                                                     const half* g_b, int row0, int n) {
  load_tile_async<kRows, kD, kThreads>(s_a, g_a, row0, n);
  load_tile_async<kRows, kD, kThreads>(s_b, g_b, row0, n);
}

// A step of the two-stage pipeline: the caller has issued the next tile's copies into the
// other stage (next_issued) or there is none; commit them and wait for the current tile only,
// then a barrier.
__device__ __forceinline__ void cp_async_stage_ready(bool next_issued) {
  if (next_issued) {
    cp_async_commit();
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();
}

// Elementwise pieces of a (warp rows, kChunk) score tile held as C fragments. The query
// is the row (kQRows, pass 2) or the column (pass 1, S^T); sL / sD hold the query
// block's L, D and l0 is the index of the tile's first query in them. row_g0 / col_g0:
// global index of the warp's first row / the chunk's first column.
template <bool kQRows>
struct BwdTileIndex {
  int l0, row_g0, col_g0, lane;
  __device__ __forceinline__ int row(int mt, int e) const {
    return mt * 16 + lane / 4 + (e >> 1) * 8;
  }
  __device__ __forceinline__ int col(int nt, int e) const {
    return nt * 8 + (lane % 4) * 2 + (e & 1);
  }
  __device__ __forceinline__ int ld(int mt, int nt, int e) const {
    return l0 + (kQRows ? row(mt, e) : col(nt, e));
  }
  __device__ __forceinline__ bool masked(int mt, int nt, int e, int seq, int seq_kv,
                                         int causal_offset, bool causal) const {
    const int r = row_g0 + row(mt, e), c = col_g0 + col(nt, e);
    const int q = kQRows ? r : c, k = kQRows ? c : r;
    return q >= seq || k >= seq_kv || (causal && k > q + causal_offset);
  }
};

// rS (raw Q K^T or K Q^T) <- P = exp(scale S - L), 0 where masked.
template <bool kQRows, int kChunk, int kMT>
__device__ __forceinline__ void bwd_probs(float (&rS)[kMT][kChunk / 8][4], const float* sL,
                                          const BwdTileIndex<kQRows>& ix, const BwdParams& p,
                                          bool need_mask) {
  const float scale_log2 = p.scale * kLog2e;
  const int causal_offset = p.seq_kv - p.seq;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kChunk / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float pr = fast_exp2(rS[mt][nt][e] * scale_log2 - sL[ix.ld(mt, nt, e)] * kLog2e);
        if (need_mask && ix.masked(mt, nt, e, p.seq, p.seq_kv, causal_offset, p.causal)) pr = 0.f;
        rS[mt][nt][e] = pr;
      }
}

// rdP <- dS = P (dP - D).
template <bool kQRows, int kChunk, int kMT>
__device__ __forceinline__ void bwd_dscores(float (&rdP)[kMT][kChunk / 8][4],
                                            const float (&rP)[kMT][kChunk / 8][4], const float* sD,
                                            const BwdTileIndex<kQRows>& ix) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kChunk / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        rdP[mt][nt][e] = rP[mt][nt][e] * (rdP[mt][nt][e] - sD[ix.ld(mt, nt, e)]);
}

template <int kD, int kMT>
__device__ __forceinline__ void zero_acc(float (&acc)[kMT][kD / 8][4]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int dt = 0; dt < kD / 8; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][dt][e] = 0.f;
}

// Pass 1: dK_x, dV_x of key block x.
template <int kD, int kBQ, int kBKV, int kWarps>
__device__ __forceinline__ void two_pass_bwd_dkdv(const BwdParams& p, unsigned char* smem, int x,
                                                  int64_t bh) {
  using Cfg = TwoPassBwdConfig<kD, kBQ, kBKV, kWarps>;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kMT = Cfg::kMTk;
  constexpr int kC = Cfg::kChunk;
  constexpr int kQT = Cfg::kQT;
  half* sK = reinterpret_cast<half*>(smem);                        // (kBKV, kD); dK at the end
  half* sV = sK + Cfg::kKVT;                                       // (kBKV, kD); dV at the end
  half* sQ = sV + Cfg::kKVT;                                       // (2, kBQ, kD)
  half* sdO = sQ + 2 * kQT;                                        // (2, kBQ, kD)
  float* sLD = reinterpret_cast<float*>(smem + Cfg::kHalves * 2);  // (2, 2, kBQ)

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int k0 = x * kBKV;
  const int k_row0 = warp * kMT * 16;  // warp's first row in the K/V tile
  const half* gQ = p.gQ + bh * p.seq * kD;
  const half* gdO = p.gdO + bh * p.seq * kD;
  const float* gL = p.gL + bh * p.seq;
  const float* gD = p.gD + bh * p.seq;
  const int causal_offset = p.seq_kv - p.seq;
  const int n_q_blocks = (p.seq + kBQ - 1) / kBQ;
  // Query blocks wholly above the diagonal (every query before k0 - offset) are skipped.
  const int i0 = p.causal ? max(0, k0 - causal_offset) / kBQ : 0;

  load_tile_pair_async<kBKV, kD, kThreads>(sK, sV, p.gK + bh * p.seq_kv * kD,
                                           p.gV + bh * p.seq_kv * kD, k0, p.seq_kv);
  if (i0 < n_q_blocks) {
    load_tile_pair_async<kBQ, kD, kThreads>(sQ, sdO, gQ, gdO, i0 * kBQ, p.seq);
    load_ld_async<kBQ>(sLD, gL, gD, i0 * kBQ, p.seq);
  }
  cp_async_commit();

  float rdK[kMT][kD / 8][4], rdV[kMT][kD / 8][4];
  zero_acc<kD, kMT>(rdK);
  zero_acc<kD, kMT>(rdV);

  for (int i = i0; i < n_q_blocks; ++i) {
    const int stage = (i - i0) & 1;
    const bool next = i + 1 < n_q_blocks;
    if (next) {  // stage^1 was last read in step i-1, which ended with a barrier
      const int nx = stage ^ 1;
      load_tile_pair_async<kBQ, kD, kThreads>(sQ + nx * kQT, sdO + nx * kQT, gQ, gdO, (i + 1) * kBQ,
                                              p.seq);
      load_ld_async<kBQ>(sLD + nx * 2 * kBQ, gL, gD, (i + 1) * kBQ, p.seq);
    }
    cp_async_stage_ready(next);

    const int q0 = i * kBQ;
    const half* sQi = sQ + stage * kQT;
    const half* sdOi = sdO + stage * kQT;
    const float* sLi = sLD + stage * 2 * kBQ;
    const bool need_mask = (q0 + kBQ > p.seq) || (p.causal && k0 + kBKV - 1 > q0 + causal_offset);
#pragma unroll 1
    for (int c = 0; c < kBQ / kC; ++c) {
      const BwdTileIndex<false> ix{c * kC, k0 + k_row0, q0 + c * kC, lane};
      float rP[kMT][kC / 8][4];  // P^T: (keys, queries of the chunk)
      warp_qk<kD, kC, kMT>(rP, sK, sQi + c * kC * kD, k_row0, lane);
      bwd_probs<false, kC, kMT>(rP, sLi, ix, p, need_mask);
      warp_pv<kD, kC, kMT>(rdV, rP, sdOi + c * kC * kD, lane);  // dV += P^T dO
      float rdS[kMT][kC / 8][4];
      warp_qk<kD, kC, kMT>(rdS, sV, sdOi + c * kC * kD, k_row0, lane);  // dP^T = V dO^T
      bwd_dscores<false, kC, kMT>(rdS, rP, sLi + kBQ, ix);
      warp_pv<kD, kC, kMT>(rdK, rdS, sQi + c * kC * kD, lane);  // dK += dS^T Q
    }
    __syncthreads();  // stage is refilled in step i+1
  }

  // K_x and V_x are no longer read (the loop ended with a barrier, or never ran and
  // nothing read them): the fp16 results take their place, then 16-byte stores.
  cp_async_wait<0>();
  __syncthreads();
  warp_acc_to_smem<kD, kMT>(sK, rdK, p.scale, k_row0, lane);
  warp_acc_to_smem<kD, kMT>(sV, rdV, 1.f, k_row0, lane);
  __syncthreads();
  store_tile<kBKV, kD, kThreads>(p.gdK + bh * p.seq_kv * kD, sK, k0, p.seq_kv);
  store_tile<kBKV, kD, kThreads>(p.gdV + bh * p.seq_kv * kD, sV, k0, p.seq_kv);
}

// Pass 2: dQ_x of query block x.
template <int kD, int kBQ, int kBKV, int kWarps>
__device__ __forceinline__ void two_pass_bwd_dq(const BwdParams& p, unsigned char* smem, int x,
                                                int64_t bh) {
  using Cfg = TwoPassBwdConfig<kD, kBQ, kBKV, kWarps>;
  const int q0 = x * kBQ;
  const int lane = threadIdx.x % 32;
  const int q_row0 = (threadIdx.x / 32) * Cfg::kMTq * 16;  // warp's first row in the Q tile
  const int n_kv_all = (p.seq_kv + kBKV - 1) / kBKV;
  constexpr int kThreads = Cfg::kThreads, kMT = Cfg::kMTq, kC = Cfg::kChunk, kKVT = Cfg::kKVT;
  half* sQ = reinterpret_cast<half*>(smem);                        // (kBQ, kD); dQ at the end
  half* sdO = sQ + Cfg::kQT;                                       // (kBQ, kD)
  half* sK = sdO + Cfg::kQT;                                       // (2, kBKV, kD)
  half* sV = sK + 2 * kKVT;                                        // (2, kBKV, kD)
  float* sLD = reinterpret_cast<float*>(smem + Cfg::kHalves * 2);  // (2, kBQ): L, D
  const half* gK = p.gK + bh * p.seq_kv * kD;
  const half* gV = p.gV + bh * p.seq_kv * kD;
  const int causal_offset = p.seq_kv - p.seq;
  // Causal: up to the block of the last key the block's last query sees.
  const int n_kv_blocks =
      p.causal ? min(n_kv_all, (min(q0 + kBQ, p.seq) - 1 + causal_offset) / kBKV + 1) : n_kv_all;

  load_tile_async<kBQ, kD, kThreads>(sQ, p.gQ + bh * p.seq * kD, q0, p.seq);
  load_tile_async<kBQ, kD, kThreads>(sdO, p.gdO + bh * p.seq * kD, q0, p.seq);
  load_ld_async<kBQ>(sLD, p.gL + bh * p.seq, p.gD + bh * p.seq, q0, p.seq);
  if (n_kv_blocks > 0) load_tile_pair_async<kBKV, kD, kThreads>(sK, sV, gK, gV, 0, p.seq_kv);
  cp_async_commit();

  float rdQ[kMT][kD / 8][4];
  zero_acc<kD, kMT>(rdQ);

  for (int j = 0; j < n_kv_blocks; ++j) {
    const int stage = j & 1;
    const bool next = j + 1 < n_kv_blocks;
    if (next)
      load_tile_pair_async<kBKV, kD, kThreads>(sK + (stage ^ 1) * kKVT, sV + (stage ^ 1) * kKVT, gK,
                                               gV, (j + 1) * kBKV, p.seq_kv);
    cp_async_stage_ready(next);

    const int kv0 = j * kBKV;
    const half* sKj = sK + stage * kKVT;
    const half* sVj = sV + stage * kKVT;
    const bool need_mask = (kv0 + kBKV > p.seq_kv) || (q0 + kBQ > p.seq) ||
                           (p.causal && kv0 + kBKV - 1 > q0 + causal_offset);
#pragma unroll 1
    for (int c = 0; c < kBKV / kC; ++c) {
      const BwdTileIndex<true> ix{q_row0, q0 + q_row0, kv0 + c * kC, lane};
      float rP[kMT][kC / 8][4];
      warp_qk<kD, kC, kMT>(rP, sQ, sKj + c * kC * kD, q_row0, lane);
      bwd_probs<true, kC, kMT>(rP, sLD, ix, p, need_mask);
      float rdS[kMT][kC / 8][4];
      warp_qk<kD, kC, kMT>(rdS, sdO, sVj + c * kC * kD, q_row0, lane);  // dP = dO V^T
      bwd_dscores<true, kC, kMT>(rdS, rP, sLD + kBQ, ix);
      warp_pv<kD, kC, kMT>(rdQ, rdS, sKj + c * kC * kD, lane);  // dQ += dS K
    }
    __syncthreads();
  }

  cp_async_wait<0>();
  __syncthreads();
  warp_acc_to_smem<kD, kMT>(sQ, rdQ, p.scale, q_row0, lane);
  __syncthreads();
  store_tile<kBQ, kD, kThreads>(p.gdQ + bh * p.seq * kD, sQ, q0, p.seq);
}

template <int kD, int kBQ, int kBKV, int kWarps>
__global__ void __launch_bounds__(kWarps * 32) two_pass_bwd_kernel(const BwdParams p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int x = blockIdx.x;
  const int64_t bh = static_cast<int64_t>(blockIdx.y) * p.heads + blockIdx.z;
  if (x * kBKV < p.seq_kv) two_pass_bwd_dkdv<kD, kBQ, kBKV, kWarps>(p, smem_raw, x, bh);
  if (x * kBQ < p.seq) {
    __syncthreads();  // pass 1's stores read shared memory that pass 2 refills
    two_pass_bwd_dq<kD, kBQ, kBKV, kWarps>(p, smem_raw, x, bh);
  }
}

}  // namespace iosim_cuda
