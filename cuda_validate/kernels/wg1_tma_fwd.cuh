// wg1_tma_fwd: a query-stationary (FlashAttention-2 loop order) forward of the kind a compiler
// such as Triton emits for Hopper (issue #27 item 5a), sm_90a only:
//   - grid (ceil(N / kBQ), B, H), blockIdx.x fastest, as flash2_fwd.cuh: a CTA loads its Q tile
//     once, streams K_j / V_j, keeps the online softmax and O in registers, writes O (T) and
//     L = log-sum-exp (fp32, natural log) once;
//   - ONE warpgroup (128 threads) and no warp specialization: one elected thread of it issues the
//     TMA tensor copies (cp.async.bulk.tensor.2d, 128-byte swizzle, completing on an mbarrier per
//     stage and operand) of K/V block j + kStages - 1 at the start of step j, into the ring stage
//     that step j - 1 read; the same 128 threads then wait for block j and compute. No producer
//     warpgroup, no setmaxnreg, no persistent grid;
//   - wgmma: S = Q K^T with both operands in shared memory (SS, m64 n=kBKV k16), O += P V with P
//     from registers (RS, m64 n=kD k16, V read MN-major through the transpose bit). kBQ = 128 is
//     two m64 row groups, both issued by the one warpgroup (S and O of each in registers);
//   - causal: bottom-right aligned (query i sees key j iff j <= i + Nkv - N), blocks wholly above
//     the diagonal are skipped and only blocks crossing it (or the ragged last block) are masked.
// Layouts: Q, O (B, H, N, d), K, V (B, H, Nkv, d) row-major, fp16 or bf16 (T); the TMA maps view
// them as (B*H*N, d) and (B*H*Nkv, d). Rows of a ragged last K/V block that belong to the next
// head are read but masked; rows past the tensor read as zeros. In shared memory every tile is
// the 128-byte-swizzled column-block image of hopper_async.cuh.
#pragma once

#include <cuda_bf16.h>

#include <type_traits>

#include "../microbench/wgmma_ops.cuh"
#include "hopper_async.cuh"
#include "warp_tile.cuh"

namespace iosim_cuda {

template <int kD, int kBQ, int kBKV, int kStages>
struct Wg1TmaConfig {
  static constexpr int kThreads = 128;
  static constexpr int kRowGroups = kBQ / 64;  // m64 wgmma row groups
  static constexpr int kQBytes = kBQ * kD * 2;
  static constexpr int kKVBytes = kBKV * kD * 2;
  // 1024 bytes of slack to align the tiles to the swizzle atom.
  static constexpr int kSmemBytes = 1024 + kQBytes + 2 * kStages * kKVBytes;
  static_assert(kBQ == 64 || kBQ == 128, "block_q 64 or 128");
  static_assert(kBKV == 64 || kBKV == 128, "block_kv 64 or 128");
  static_assert(kD == 64 || kD == 128, "d 64 or 128");
  static_assert(kStages >= 2 && kStages <= 6, "2..6 stages");
};

// wgmma forms by element type (bf16 or fp16) and N.
template <bool kBf16, int kN>
__device__ __forceinline__ void wg1_qk_wgmma(float (&s)[kN / 2], uint64_t da, uint64_t db,
                                             int scale_d) {
  if constexpr (kBf16 && kN == 64)
    wgmma_ss_bf16_n64(s, da, db, scale_d);
  else if constexpr (kBf16)
    wgmma_ss_bf16_n128(s, da, db, scale_d);
  else if constexpr (kN == 64)
    wgmma_ss_f16_n64(s, da, db, scale_d);
  else
    wgmma_ss_f16_n128(s, da, db, scale_d);
}
template <bool kBf16, int kN>
__device__ __forceinline__ void wg1_pv_wgmma(float (&o)[kN / 2], const uint32_t (&a)[4],
                                             uint64_t db) {
  if constexpr (kBf16 && kN == 64)
    wgmma_rs_tb_bf16_n64(o, a, db, 1);
  else if constexpr (kBf16)
    wgmma_rs_tb_bf16_n128(o, a, db, 1);
  else if constexpr (kN == 64)
    wgmma_rs_tb_f16_n64(o, a, db, 1);
  else
    wgmma_rs_tb_f16_n128(o, a, db, 1);
}

// The online softmax's start: O = 0, running max -inf, running sum 0.
template <int kD, int kRG>
__device__ __forceinline__ void wg_init_state(float (&o)[kRG][kD / 2], float (&m)[kRG][2],
                                              float (&l)[kRG][2]) {
#pragma unroll
  for (int rg = 0; rg < kRG; ++rg) {
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) o[rg][i] = 0.f;
    m[rg][0] = m[rg][1] = -INFINITY;
    l[rg][0] = l[rg][1] = 0.f;
  }
}

// P's A fragments (T) of the k16 steps of P V: step ks = S columns 16 ks .. 16 ks + 15 =
// registers 8 ks .. 8 ks + 7.
template <typename T, int kBKV>
__device__ __forceinline__ void wg_pack_p(const float (&s)[kBKV / 2],
                                          uint32_t (&pa)[kBKV / 16][4]) {
#pragma unroll
  for (int ks = 0; ks < kBKV / 16; ++ks)
#pragma unroll
    for (int r = 0; r < 4; ++r) pa[ks][r] = pack2<T>(s[8 * ks + 2 * r], s[8 * ks + 2 * r + 1]);
}

// S = Q K^T of every row group, waited for; Q (column blocks of q_col_block bytes) at s_q,
// K (kBKV keys x kD, K-major column blocks of kBKV x 128 bytes) at s_k. The fences keep the
// compiler from moving accesses of s across the wgmma.
template <bool kBf16, int kD, int kBKV, int kRG>
__device__ __forceinline__ void wg_qk(float (&s)[kRG][kBKV / 2], uint32_t s_q, int q_col_block,
                                      uint32_t s_k) {
  using namespace iosim_hopper;
#pragma unroll
  for (int rg = 0; rg < kRG; ++rg) reg_fence(s[rg]);
  wgmma_fence();
#pragma unroll
  for (int rg = 0; rg < kRG; ++rg)
#pragma unroll
    for (int ks = 0; ks < kD / 16; ++ks) {
      const uint32_t col = (ks % 4) * 32;  // k16 step within a 128-byte row
      wg1_qk_wgmma<kBf16, kBKV>(s[rg],
                                desc_kmajor(s_q + (ks / 4) * q_col_block + rg * 64 * 128 + col),
                                desc_kmajor(s_k + (ks / 4) * (kBKV * 128) + col), ks > 0);
    }
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int rg = 0; rg < kRG; ++rg) reg_fence(s[rg]);
}

// O += P V of every row group, waited for; V (kBKV keys x kD, MN-major column blocks of kBKV x 128
// bytes) at s_v. The fences keep the compiler from moving accesses of o and pa across the wgmma.
template <bool kBf16, int kD, int kBKV, int kRG>
__device__ __forceinline__ void wg_pv(float (&o)[kRG][kD / 2], uint32_t (&pa)[kRG][kBKV / 16][4],
                                      uint32_t s_v) {
  using namespace iosim_hopper;
#pragma unroll
  for (int rg = 0; rg < kRG; ++rg) {
    reg_fence(o[rg]);
    reg_fence(pa[rg]);
  }
  wgmma_fence();
#pragma unroll
  for (int rg = 0; rg < kRG; ++rg)
#pragma unroll
    for (int ks = 0; ks < kBKV / 16; ++ks)
      wg1_pv_wgmma<kBf16, kD>(o[rg], pa[rg][ks], desc_mnmajor(s_v + ks * 16 * 128, kBKV * 128, 0));
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int rg = 0; rg < kRG; ++rg) {
    reg_fence(o[rg]);
    reg_fence(pa[rg]);
  }
}

// One online-softmax step over a row group's S (scaled to log2 units and masked; register i is
// row 16 warp + g + 8 ((i / 2) % 2), column 8 (i / 4) + 2 t + i % 2, the m64nN wgmma D
// fragment): the running max m of the thread's two rows and its partial sums l, s <- P =
// exp2(s - m) and O rescaled by exp2(m_old - m).
template <int kBKV, int kD>
__device__ __forceinline__ void wg_online_softmax(float (&s)[kBKV / 2], float (&m)[2],
                                                  float (&l)[2], float (&o)[kD / 2]) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float mx = -INFINITY;
#pragma unroll
    for (int c = 0; c < kBKV / 8; ++c)
      mx = fmaxf(mx, fmaxf(s[4 * c + 2 * hh], s[4 * c + 2 * hh + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m[hh], mx);
    const float m_use = (m_new == -INFINITY) ? 0.f : m_new;  // no NaN from -inf - -inf
    const float alpha = fast_exp2(m[hh] - m_use);
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < kBKV / 8; ++c)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float pv = fast_exp2(s[4 * c + 2 * hh + e] - m_use);
        s[4 * c + 2 * hh + e] = pv;
        sum += pv;
      }
    l[hh] = l[hh] * alpha + sum;
    m[hh] = m_new;
#pragma unroll
    for (int c = 0; c < kD / 8; ++c) {
      o[4 * c + 2 * hh] *= alpha;
      o[4 * c + 2 * hh + 1] *= alpha;
    }
  }
}

template <typename T, int kD, int kBQ, int kBKV, int kStages>
__global__ void __launch_bounds__(128, 1)
    wg1_tma_fwd_kernel(const __grid_constant__ CUtensorMap tm_q,
                       const __grid_constant__ CUtensorMap tm_k,
                       const __grid_constant__ CUtensorMap tm_v, const AttnParams p) {
  using namespace iosim_hopper;
  using Cfg = Wg1TmaConfig<kD, kBQ, kBKV, kStages>;
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  constexpr int kRG = Cfg::kRowGroups;
  constexpr int kQColBlock = kBQ * 128;    // bytes of one 64-column block of the Q tile
  constexpr int kKVColBlock = kBKV * 128;  // ... of a K or V tile

  extern __shared__ __align__(1024) unsigned char wg1_tma_smem[];
  __shared__ __align__(8) uint64_t bars[2 * kStages + 1];
  const uint32_t base = (smem_u32(wg1_tma_smem) + 1023) & ~1023u;
  const uint32_t s_q = base;
  auto s_k = [&](int st) { return base + Cfg::kQBytes + st * Cfg::kKVBytes; };
  auto s_v = [&](int st) { return base + Cfg::kQBytes + (kStages + st) * Cfg::kKVBytes; };
  const uint32_t b0 = smem_u32(bars);
  auto k_full = [&](int st) { return b0 + 8 * st; };
  auto v_full = [&](int st) { return b0 + 8 * (kStages + st); };
  const uint32_t q_full = b0 + 8 * (2 * kStages);

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int q0 = blockIdx.x * kBQ;
  const int bh = blockIdx.y * p.heads + blockIdx.z;
  const int q_row_base = bh * p.seq;      // first row of this head in the (B*H*N, d) view
  const int kv_row_base = bh * p.seq_kv;  // ... in the (B*H*Nkv, d) view

  const int causal_offset = p.seq_kv - p.seq;
  const int n_kv = kv_blocks_visited<kBQ, kBKV>(p, q0);

  if (tid == 0) {
    for (int st = 0; st < kStages; ++st) {
      mbar_init(k_full(st), 1);
      mbar_init(v_full(st), 1);
    }
    mbar_init(q_full, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  // The elected thread's copies of K/V block j into stage j % kStages.
  auto issue_kv = [&](int j) {
    const int st = j % kStages;
    mbar_expect_tx(k_full(st), Cfg::kKVBytes);
#pragma unroll
    for (int cb = 0; cb < kD / 64; ++cb)
      tma_load_2d(s_k(st) + cb * kKVColBlock, &tm_k, cb * 64, kv_row_base + j * kBKV, k_full(st));
    mbar_expect_tx(v_full(st), Cfg::kKVBytes);
#pragma unroll
    for (int cb = 0; cb < kD / 64; ++cb)
      tma_load_2d(s_v(st) + cb * kKVColBlock, &tm_v, cb * 64, kv_row_base + j * kBKV, v_full(st));
  };
  if (tid == 0) {
    mbar_expect_tx(q_full, Cfg::kQBytes);
#pragma unroll
    for (int cb = 0; cb < kD / 64; ++cb)
      tma_load_2d(s_q + cb * kQColBlock, &tm_q, cb * 64, q_row_base + q0, q_full);
    for (int j = 0; j < kStages - 1 && j < n_kv; ++j) issue_kv(j);
  }

  const float scale_log2 = p.scale * kLog2e;
  float o[kRG][kD / 2];
  float m[kRG][2], l[kRG][2];
  wg_init_state<kD, kRG>(o, m, l);
  mbar_wait(q_full, 0);
  __syncwarp();  // the wait loop may exit lane by lane; wgmma needs a converged warp

  for (int j = 0; j < n_kv; ++j) {
    const int st = j % kStages;
    const unsigned ph = (j / kStages) & 1;
    // Every warp's wgmmas of step j-1 have completed (wait_group 0): its stage may be refilled.
    if (j > 0) __syncthreads();
    if (tid == 0 && j + kStages - 1 < n_kv) issue_kv(j + kStages - 1);
    __syncwarp();

    // S = Q K_j^T for each row group.
    float s[kRG][kBKV / 2];
    mbar_wait(k_full(st), ph);
    __syncwarp();
    wg_qk<kBf16, kD, kBKV, kRG>(s, s_q, kQColBlock, s_k(st));

    // Online softmax. Accumulator register i of a row group: row 16 warp + g + 8 ((i / 2) % 2),
    // column 8 (i / 4) + 2 t + i % 2 (the m64nN wgmma D fragment).
    const int kv0 = j * kBKV;
    const bool need_mask =
        (kv0 + kBKV > p.seq_kv) || (p.causal && kv0 + kBKV - 1 > q0 + causal_offset);
    uint32_t pa[kRG][kBKV / 16][4];  // P as the A fragments of the k16 steps of P V
#pragma unroll
    for (int rg = 0; rg < kRG; ++rg) {
      const int row0 = q0 + rg * 64 + 16 * warp + g;
#pragma unroll
      for (int i = 0; i < kBKV / 2; ++i) {
        float x = s[rg][i] * scale_log2;
        if (need_mask) {
          const int col = kv0 + 8 * (i / 4) + 2 * t + (i % 2);
          const int row = row0 + 8 * ((i / 2) % 2);
          if (col >= p.seq_kv || (p.causal && col > row + causal_offset)) x = -INFINITY;
        }
        s[rg][i] = x;
      }
      wg_online_softmax<kBKV, kD>(s[rg], m[rg], l[rg], o[rg]);
      wg_pack_p<T, kBKV>(s[rg], pa[rg]);
    }

    // O += P V_j.
    mbar_wait(v_full(st), ph);
    __syncwarp();
    wg_pv<kBf16, kD, kBKV, kRG>(o, pa, s_v(st));
  }

  // Epilogue: O / l as T into the Q tile's swizzled image (no wgmma reads it any more), then
  // 16-byte coalesced stores of whole rows; L = (m + log2 l) ln 2.
  __syncthreads();
  unsigned char* sO = wg1_tma_smem + (base - smem_u32(wg1_tma_smem));
#pragma unroll
  for (int rg = 0; rg < kRG; ++rg)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float lr = l[rg][hh];
      lr += __shfl_xor_sync(0xffffffffu, lr, 1);
      lr += __shfl_xor_sync(0xffffffffu, lr, 2);
      const float inv_l = lr > 0.f ? 1.f / lr : 0.f;
      const int r = rg * 64 + 16 * warp + g + 8 * hh;  // row in the tile
#pragma unroll
      for (int c = 0; c < kD / 8; ++c) {  // 16-byte chunk c of the row: columns 8c .. 8c + 7
        const uint32_t v =
            pack2<T>(o[rg][4 * c + 2 * hh] * inv_l, o[rg][4 * c + 2 * hh + 1] * inv_l);
        const int off = (c / 8) * kQColBlock + r * 128 + (((c % 8) ^ (r % 8)) << 4) + 4 * t;
        *reinterpret_cast<uint32_t*>(sO + off) = v;
      }
      if (t == 0 && q0 + r < p.seq)
        p.gL[static_cast<int64_t>(q_row_base) + q0 + r] = (m[rg][hh] + log2f(lr)) * kLn2;
    }
  __syncthreads();
  constexpr int kChunks = kBQ * kD / 8;
  half* gO = p.gO + static_cast<int64_t>(q_row_base) * kD;
#pragma unroll
  for (int it = 0; it < kChunks / 128; ++it) {
    const int i = it * 128 + tid;
    const int r = i / (kD / 8), c = i % (kD / 8);
    if (q0 + r < p.seq) {
      const uint4 v = *reinterpret_cast<const uint4*>(sO + (c / 8) * kQColBlock + r * 128 +
                                                      (((c % 8) ^ (r % 8)) << 4));
      *reinterpret_cast<uint4*>(gO + static_cast<int64_t>(q0 + r) * kD + c * 8) = v;
    }
  }
}

}  // namespace iosim_cuda
