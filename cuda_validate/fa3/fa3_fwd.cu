// A FlashAttention-3-style forward kernel of our own (issue #13, item 4), sm_90a only, fp16 in,
// fp32 accumulate, fp16 O and fp32 L (natural-log logsumexp) out. It exists to isolate the Hopper
// mechanisms that iosim's `--algo flash3` schedule models, one switch each:
//   - warp specialization: one producer warpgroup (one thread of it issues copies; the warpgroup
//     gives registers away with setmaxnreg) and two consumer warpgroups of 64 query rows each
//     (block_q = 128), block_kv = 128, a ring of STAGES K/V buffers in shared memory with full
//     (copy done) and empty (consumers done) mbarriers per stage;
//   - the copy engine: COPY = tma: the producer thread issues TMA tensor copies
//     (cp.async.bulk.tensor.2d, 128-byte swizzle) completing on the full barriers;
//     COPY = cpasync: the producer warpgroup's 128 threads copy K/V with 16-byte cp.async into
//     the same swizzled layout, wait for their copies (cp.async.wait_group), fence them for the
//     async proxy and arrive on the full barriers (Ampere's copy path under the same
//     warp-specialized pipeline: TMA vs not);
//   - wgmma: S = Q K^T from shared memory (SS, m64n128k16), O += P V with P from registers (RS,
//     m64nDk16, V read MN-major through the transpose bit);
//   - PINGPONG: two named barriers hand the "GEMM turn" between the consumer warpgroups so that
//     one's softmax runs while the other's GEMMs are issued (off: both issue whenever ready);
//   - IWO (intra-warpgroup overlap, FlashAttention-3's Algorithm 2): iteration j issues
//     S_j = Q K_j^T and O += P_{j-1} V_{j-1} together and runs softmax(S_j) while P V runs
//     (off: S_j, wait, softmax, P_j V_j, wait);
//   - persistent grid: min(tiles, SMs) CTAs take tiles (q block, batch x head) in the order
//     tile = blockIdx.x + k * gridDim.x, query blocks of a head first (iosim's flash3 order);
//     with grid = tiles each CTA takes one tile (non-persistent).
//   - CAUSAL (top-left = bottom-right, N = Nkv): key blocks past the diagonal are skipped, the
//     diagonal block is masked.
// Layouts: Q, K, V, O are [B, H, N, D] row-major fp16; L is [B, H, N] fp32. In shared memory each
// 128-row tile is D/64 column blocks of (128 rows x 128 bytes) with the 128-byte swizzle (16-byte
// chunk c of row r at chunk c ^ (r % 8)), 1024-byte aligned: TMA's SWIZZLE_128B box image and the
// K-major layout the wgmma descriptors of ../microbench/wgmma_smem.cuh describe.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "../kernels/hopper_async.cuh"
#include "../microbench/wgmma_ops.cuh"

#ifndef FA3_PIN_SOFTMAX
#define FA3_PIN_SOFTMAX 0
#endif

namespace fa3 {

using namespace iosim_hopper;  // mbarriers, TMA, wgmma fences and descriptors

constexpr int kBlockQ = 128;
constexpr int kBlockKV = 128;
constexpr int kThreads = 384;  // producer warpgroup + 2 consumer warpgroups
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;  // 128 * 40 + 256 * 232 = 65536 - 1024 (168 x 384 at launch)

enum class Copy { tma, cpasync };

struct Params {
  const __half* q;
  const __half* k;
  const __half* v;
  __half* o;
  float* lse;
  int bh;  // batch * heads
  int n;   // sequence length (queries = keys)
  int q_blocks;
  int tiles;
  float scale_log2;  // softmax scale * log2(e)
  int vdesc_swap;    // 1: swap LBO/SBO of V's MN-major descriptor (a fallback the driver tries)
  long long* clk;    // per CTA: clock64 cycles and %globaltimer ns from start to end (or null)
};

// ---- copy, barrier and register-budget primitives only this kernel uses (PTX) ----
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int D>
struct Smem {
  static constexpr int kTileBytes = 128 * D * 2;  // 128 rows x D fp16
  static constexpr int kColBlockBytes = 128 * 128;
};

template <int D, int STAGES>
constexpr int smem_bytes() {
  return 1024 /*alignment slack*/ + Smem<D>::kTileBytes * (1 + 2 * STAGES);
}

// The m64nDk16 GEMM O += P V over the 8 k-steps of a 128-key block.
template <int D>
__device__ __forceinline__ void gemm_pv(float (&o)[D / 2], const uint32_t (&p)[kBlockKV / 16][4],
                                        uint32_t v_addr, int swap) {
#pragma unroll
  for (int ks = 0; ks < kBlockKV / 16; ++ks) {
    const uint64_t db = desc_mnmajor(v_addr + ks * 16 * 128, Smem<D>::kColBlockBytes, swap);
    if constexpr (D == 64)
      wgmma_rs_tb_f16_n64(o, p[ks], db, 1);
    else
      wgmma_rs_tb_f16_n128(o, p[ks], db, 1);
  }
}

// S = Q_w K^T (m64n128k16 x D/16 k-steps), Q_w this warpgroup's 64 rows.
template <int D>
__device__ __forceinline__ void gemm_qk(float (&s)[kBlockKV / 2], uint32_t q_addr,
                                        uint32_t k_addr) {
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    const uint32_t off = (ks / 4) * Smem<D>::kColBlockBytes + (ks % 4) * 32;
    wgmma_ss_f16_n128(s, desc_kmajor(q_addr + off), desc_kmajor(k_addr + off), ks > 0);
  }
}

// The "GEMM turn" of ping-pong: named barrier 1 + w is warpgroup w's turn.
template <bool PINGPONG>
__device__ __forceinline__ void turn_begin(int wg) {
  if constexpr (PINGPONG) named_bar_sync(1 + wg, 256);
}
template <bool PINGPONG>
__device__ __forceinline__ void turn_end(int wg) {
  if constexpr (PINGPONG) named_bar_arrive(1 + (wg ^ 1), 256);
}

// One GEMM group in warpgroup cw's turn, committed and waited for. fence: reg_fence on the
// registers the group reads and writes, before the issue and after the wait, so that the compiler
// moves no access of them across the asynchronous wgmma.
template <bool PINGPONG, typename Issue, typename Fence>
__device__ __forceinline__ void gemm_in_turn(int cw, Issue issue, Fence fence) {
  fence();
  turn_begin<PINGPONG>(cw);
  wgmma_fence();
  issue();
  wgmma_commit();
  turn_end<PINGPONG>(cw);
  wgmma_wait<0>();
  fence();
}

// Online softmax over one S block: rows r0 = 16 * warp + lane / 4 (h = 0) and r0 + 8 (h = 1);
// S register 4c + 2h + e is column 8c + 2t + e. factor takes S to scaled log2 units (fp8: times
// the block's Q and K scales). Updates m (scaled log2 units) and the thread's partial l, leaves
// P = exp2(x - m + P_OFFSET_LOG2) in s (fp8 shifts P into e4m3's range: kFp8POffsetLog2),
// returns the rescale factors of O in alpha.
template <bool CAUSAL, int P_OFFSET_LOG2>
__device__ __forceinline__ void softmax_block(float (&s)[kBlockKV / 2], float (&m)[2],
                                              float (&l)[2], float (&alpha)[2], float factor,
                                              bool diagonal, int row0, int t) {
  if constexpr (CAUSAL) {
    if (diagonal) {
#pragma unroll
      for (int i = 0; i < kBlockKV / 2; ++i) {
        const int col = 8 * (i / 4) + 2 * t + (i % 2);
        const int row = row0 + 8 * ((i / 2) % 2);
        if (col > row) s[i] = -INFINITY;
      }
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = -INFINITY;
#pragma unroll
    for (int c = 0; c < kBlockKV / 8; ++c)
      mx = fmaxf(mx, fmaxf(s[4 * c + 2 * h], s[4 * c + 2 * h + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m[h], mx * factor);
    alpha[h] = exp2f(m[h] - m_new);
    m[h] = m_new;
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < kBlockKV / 8; ++c)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float p;
        if constexpr (P_OFFSET_LOG2 == 0)
          p = exp2f(fmaf(s[4 * c + 2 * h + e], factor, -m_new));
        else
          p = exp2f(fmaf(s[4 * c + 2 * h + e], factor, P_OFFSET_LOG2 - m_new));
        s[4 * c + 2 * h + e] = p;
        sum += p;
      }
    l[h] = l[h] * alpha[h] + sum;
  }
}

template <int D>
__device__ __forceinline__ void rescale_o(float (&o)[D / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] *= alpha[(i / 2) % 2];
}

// P's A fragments: k-step ks = S columns 16ks..16ks+15 = S registers 8ks..8ks+7.
__device__ __forceinline__ void convert_p(const float (&s)[kBlockKV / 2],
                                          uint32_t (&p)[kBlockKV / 16][4]) {
#pragma unroll
  for (int ks = 0; ks < kBlockKV / 16; ++ks)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      __half2 h = __floats2half2_rn(s[8 * ks + 2 * j], s[8 * ks + 2 * j + 1]);
      p[ks][j] = *reinterpret_cast<uint32_t*>(&h);
    }
}

__device__ __forceinline__ int kv_blocks_of(int q_block, int n, bool causal) {
  const int all = n / kBlockKV;
  return causal ? min(all, (q_block + 1) * kBlockQ / kBlockKV) : all;
}

template <int D, int STAGES, Copy COPY, bool PINGPONG, bool IWO, bool CAUSAL>
__global__ void __launch_bounds__(kThreads, 1)
    fa3_fwd_kernel(const __grid_constant__ CUtensorMap tm_q,
                   const __grid_constant__ CUtensorMap tm_k,
                   const __grid_constant__ CUtensorMap tm_v, const Params prm) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t bars[4 * STAGES + 2];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;
  constexpr int kTile = Smem<D>::kTileBytes;
  const uint32_t s_q = base;
  auto s_k = [&](int st) { return base + kTile * (1 + st); };
  auto s_v = [&](int st) { return base + kTile * (1 + STAGES + st); };
  const uint32_t b0 = smem_u32(bars);
  auto k_full = [&](int st) { return b0 + 8 * st; };
  auto v_full = [&](int st) { return b0 + 8 * (STAGES + st); };
  auto kv_empty = [&](int st) { return b0 + 8 * (2 * STAGES + st); };
  const uint32_t q_full = b0 + 8 * (4 * STAGES);
  const uint32_t q_empty = b0 + 8 * (4 * STAGES + 1);
  const int wg = threadIdx.x / 128;  // 0: producer, 1-2: consumers
  const int tid = threadIdx.x % 128;
  long long clk0 = 0;
  unsigned long long ns0 = 0;
  if (threadIdx.x == 128) {
    clk0 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns0));
  }
  constexpr unsigned kFullCount = COPY == Copy::tma ? 1 : 128;
  if (threadIdx.x == 0) {
    for (int st = 0; st < STAGES; ++st) {
      mbar_init(k_full(st), kFullCount);
      mbar_init(v_full(st), kFullCount);
      mbar_init(kv_empty(st), 8);  // one arrival per consumer warp
    }
    mbar_init(q_full, kFullCount);
    mbar_init(q_empty, 8);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // ---------------- producer ----------------
    setmaxnreg_dec<kProducerRegs>();
    int it = 0;  // K/V blocks issued so far (all tiles)
    int tile_i = 0;
    for (int tile = blockIdx.x; tile < prm.tiles; tile += gridDim.x, ++tile_i) {
      const int qb = tile % prm.q_blocks, bh = tile / prm.q_blocks;
      const int row0 = bh * prm.n;  // first row of this head in the [B*H*N, D] view
      const int nkv = kv_blocks_of(qb, prm.n, CAUSAL);
      if constexpr (COPY == Copy::tma) {
        if (tid == 0) {
          if (tile_i > 0) mbar_wait(q_empty, (tile_i - 1) & 1);
          mbar_expect_tx(q_full, kTile);
          for (int cb = 0; cb < D / 64; ++cb)
            tma_load_2d(s_q + cb * Smem<D>::kColBlockBytes, &tm_q, cb * 64, row0 + qb * kBlockQ,
                        q_full);
          for (int j = 0; j < nkv; ++j, ++it) {
            const int st = it % STAGES;
            if (it >= STAGES) mbar_wait(kv_empty(st), ((it / STAGES) - 1) & 1);
            mbar_expect_tx(k_full(st), kTile);
            for (int cb = 0; cb < D / 64; ++cb)
              tma_load_2d(s_k(st) + cb * Smem<D>::kColBlockBytes, &tm_k, cb * 64,
                          row0 + j * kBlockKV, k_full(st));
            mbar_expect_tx(v_full(st), kTile);
            for (int cb = 0; cb < D / 64; ++cb)
              tma_load_2d(s_v(st) + cb * Smem<D>::kColBlockBytes, &tm_v, cb * 64,
                          row0 + j * kBlockKV, v_full(st));
          }
        }
      } else {
        // 128 threads, 16-byte chunks into the swizzled image: chunk (r, c) of column block cb
        // at cb * 16384 + r * 128 + ((c ^ (r % 8)) * 16).
        auto copy_tile = [&](uint32_t dst, const __half* src) {
          constexpr int kChunks = 128 * D / 8;
#pragma unroll 4
          for (int i = tid; i < kChunks; i += 128) {
            const int r = i / (D / 8), cc = i % (D / 8), cb = cc / 8, c = cc % 8;
            cp_async_16(dst + cb * Smem<D>::kColBlockBytes + r * 128 + ((c ^ (r & 7)) << 4),
                        src + static_cast<size_t>(r) * D + cc * 8);
          }
        };
        // Each thread waits for its own copies, orders them for the async proxy (wgmma reads
        // through it) and arrives: one tile's copies in flight at a time, as an Ampere kernel.
        auto publish = [&](uint32_t bar) {
          asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
          mbar_arrive(bar);
        };
        if (tile_i > 0) mbar_wait(q_empty, (tile_i - 1) & 1);
        copy_tile(s_q, prm.q + (static_cast<size_t>(row0) + qb * kBlockQ) * D);
        cp_async_commit();
        cp_async_wait<0>();
        publish(q_full);
        for (int j = 0; j < nkv; ++j, ++it) {
          const int st = it % STAGES;
          if (it >= STAGES) mbar_wait(kv_empty(st), ((it / STAGES) - 1) & 1);
          copy_tile(s_k(st), prm.k + (static_cast<size_t>(row0) + j * kBlockKV) * D);
          cp_async_commit();
          copy_tile(s_v(st), prm.v + (static_cast<size_t>(row0) + j * kBlockKV) * D);
          cp_async_commit();
          cp_async_wait<1>();
          publish(k_full(st));
          cp_async_wait<0>();
          publish(v_full(st));
        }
      }
    }
    return;
  }

  // ---------------- consumers ----------------
  setmaxnreg_inc<kConsumerRegs>();
  const int cw = wg - 1;  // consumer warpgroup 0 or 1: query rows 64 cw .. 64 cw + 63
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const uint32_t q_addr = s_q + cw * 64 * 128;
#if FA3_PIN_SOFTMAX
  __shared__ float pin_slots[256];
  const uint32_t pin_addr = smem_u32(&pin_slots[threadIdx.x - 128]);
#endif
  if constexpr (PINGPONG) {
    if (cw == 1) named_bar_arrive(1, 256);  // warpgroup 0 takes the first turn
  }
  int it = 0;
  int tile_i = 0;
  for (int tile = blockIdx.x; tile < prm.tiles; tile += gridDim.x, ++tile_i) {
    const int qb = tile % prm.q_blocks, bh = tile / prm.q_blocks;
    const int nkv = kv_blocks_of(qb, prm.n, CAUSAL);
    const int row_in_tile0 = cw * 64 + 16 * warp + g;  // this thread's first row in the q block
    const int qrow0 = qb * kBlockQ + row_in_tile0;     // ... in the sequence
    float o[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
    float s[kBlockKV / 2];
    uint32_t p[kBlockKV / 16][4];
    mbar_wait(q_full, tile_i & 1);
    // The diagonal block (causal) is the last one: key rows j * 128 + col vs query row.
    auto diag = [&](int j) { return CAUSAL && j == nkv - 1; };
    const int kv_row_shift = qb * kBlockQ - (nkv - 1) * kBlockKV;  // 0 with block_q == block_kv

    if constexpr (!IWO) {
      for (int j = 0; j < nkv; ++j, ++it) {
        const int st = it % STAGES;
        const unsigned ph = (it / STAGES) & 1;
        mbar_wait(k_full(st), ph);
        gemm_in_turn<PINGPONG>(
            cw, [&] { gemm_qk<D>(s, q_addr, s_k(st)); }, [&] { reg_fence(s); });
        if (j == nkv - 1 && lane == 0) mbar_arrive(q_empty);
        softmax_block<CAUSAL, 0>(s, m, l, alpha, prm.scale_log2, diag(j),
                                 row_in_tile0 + kv_row_shift, t);
        rescale_o<D>(o, alpha);
        convert_p(s, p);
        mbar_wait(v_full(st), ph);
        gemm_in_turn<PINGPONG>(
            cw, [&] { gemm_pv<D>(o, p, s_v(st), prm.vdesc_swap); },
            [&] {
              reg_fence(o);
              reg_fence(p);
            });
        if (lane == 0) mbar_arrive(kv_empty(st));
      }
    } else {
      // Prologue: S_0 and its softmax.
      int st = it % STAGES;
      unsigned ph = (it / STAGES) & 1;
      mbar_wait(k_full(st), ph);
      gemm_in_turn<PINGPONG>(
          cw, [&] { gemm_qk<D>(s, q_addr, s_k(st)); }, [&] { reg_fence(s); });
      if (nkv == 1 && lane == 0) mbar_arrive(q_empty);
      softmax_block<CAUSAL, 0>(s, m, l, alpha, prm.scale_log2, diag(0), row_in_tile0 + kv_row_shift,
                               t);
      convert_p(s, p);  // O is still zero: no rescale
      for (int j = 1; j < nkv; ++j) {
        const int st_prev = st;
        const unsigned ph_prev = ph;
        ++it;
        st = it % STAGES;
        ph = (it / STAGES) & 1;
        mbar_wait(k_full(st), ph);
        mbar_wait(v_full(st_prev), ph_prev);
        reg_fence(s);
        reg_fence(o);
        reg_fence(p);
        turn_begin<PINGPONG>(cw);
        wgmma_fence();
        gemm_qk<D>(s, q_addr, s_k(st));
        wgmma_commit();
        gemm_pv<D>(o, p, s_v(st_prev), prm.vdesc_swap);
        wgmma_commit();
        turn_end<PINGPONG>(cw);
        wgmma_wait<1>();  // S_j done, P_{j-1} V_{j-1} may still run
        reg_fence(s);
        if (j == nkv - 1 && lane == 0) mbar_arrive(q_empty);
        softmax_block<CAUSAL, 0>(s, m, l, alpha, prm.scale_log2, diag(j),
                                 row_in_tile0 + kv_row_shift, t);
        // The softmax must run while P_{j-1} V_{j-1} does: without these fences the compiler
        // is free to sink the exponentials below the wait (nothing orders plain arithmetic
        // against a volatile asm), which it did in the first H100 run (fa3_own_2026-11-23
        // NOTES.md: kernel v1).
        reg_fence(s);
        reg_fence(m);
        reg_fence(l);
        reg_fence(alpha);
#if FA3_PIN_SOFTMAX
        // ptxas schedules SASS on its own and may still sink the exponentials below the
        // wait: a shared-memory store of the row sums (which need every exponential) before
        // the wait is a dependency it keeps in place (FA3_PIN_SOFTMAX=1 builds; run_fa3.sh
        // counts MUFU.EX2 between the two waits in each build's SASS).
        asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(pin_addr), "f"(l[0] + l[1]) : "memory");
#endif
        wgmma_wait<0>();
        reg_fence(o);
        reg_fence(p);
        if (lane == 0) mbar_arrive(kv_empty(st_prev));
        rescale_o<D>(o, alpha);
        convert_p(s, p);
      }
      // Epilogue: P_{n-1} V_{n-1}.
      mbar_wait(v_full(st), ph);
      gemm_in_turn<PINGPONG>(
          cw, [&] { gemm_pv<D>(o, p, s_v(st), prm.vdesc_swap); },
          [&] {
            reg_fence(o);
            reg_fence(p);
          });
      if (lane == 0) mbar_arrive(kv_empty(st));
      ++it;
    }

    // Write O = acc / l and L = ln(sum exp(s * scale)) = m ln 2 + ln l.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
    const size_t orow = static_cast<size_t>(bh) * prm.n + qrow0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float inv = 1.f / l[h];
      __half* dst = prm.o + (orow + 8 * h) * D;
#pragma unroll
      for (int c = 0; c < D / 8; ++c) {
        const __half2 v = __floats2half2_rn(o[4 * c + 2 * h] * inv, o[4 * c + 2 * h + 1] * inv);
        *reinterpret_cast<__half2*>(dst + 8 * c + 2 * t) = v;
      }
      if (t == 0) prm.lse[orow + 8 * h] = m[h] * 0.69314718055994530942f + logf(l[h]);
    }
  }
  if constexpr (PINGPONG) {
    if (cw == 0) named_bar_sync(1, 256);  // takes warpgroup 1's last hand-over
  }
  if (threadIdx.x == 128 && prm.clk) {
    unsigned long long ns1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns1));
    prm.clk[2 * blockIdx.x] = clock64() - clk0;
    prm.clk[2 * blockIdx.x + 1] = static_cast<long long>(ns1 - ns0);
  }
}

// ======================= FP8 (e4m3) forward, d = 128 (FlashAttention-3's FP8 path) ===========
// Q, K, V in e4m3 with one float scale per 128-row tile of each (block quantization: the value
// is e4m3 x scale; scale = amax / 448 of the tile), O fp16, L fp32. wgmma's e4m3 forms
// (m64nNk32) need both shared-memory operands K-major, so V, stored [B, H, N, D] like Q and K,
// is transposed in shared memory after its TMA load, as FlashAttention-3 does: the producer
// warpgroup (all 128 threads) reads the loaded 128 keys x 128 bytes tile and writes V^T
// (128 d-rows x 128 key bytes, 128-byte swizzle) into a second buffer, fences it for the async
// proxy and arrives on that stage's Vt-full barrier (count 128). P goes to the PV GEMM as e4m3
// from registers (RS); a thread's S accumulators hold keys {2t, 2t+1, 8+2t, 9+2t} (+16, +32k) of
// its rows, the A fragment of m64nNk32 wants four consecutive k per register, so the transpose
// writes V^T's keys in the matching order (k position 4t + i holds key 2t + {0, 1, 8, 9}[i]):
// no register shuffle. P is exponentiated 2^8 higher (exp2(x - m + 8), FlashAttention-3's
// max_offset) so that it uses e4m3's range; the row sum is kept in fp32 from the same values.
// Scales: S = q_scale x k_scale_j x (Q8 K8^T) enters the softmax's exponent factor; V's scale
// changes per key block, so O is kept in units of the current block's v_scale and the online
// rescale of O multiplies by alpha x v_scale_{j-1} / v_scale_j (exact in fp32, one factor).
constexpr int kFp8D = 128;
constexpr int kFp8ProducerRegs = 56;
constexpr int kFp8ConsumerRegs = 224;  // 128 * 56 + 256 * 224 = 64512 <= 65536
constexpr int kFp8POffsetLog2 = 8;

struct ParamsFp8 {
  const float* q_scale;  // [bh][n / 128]
  const float* k_scale;
  const float* v_scale;
  __half* o;
  float* lse;
  int bh, n, q_blocks, tiles;
  float scale_log2;
  int p_layout;  // 0: A regs (g, k 4t..), (g+8, k 4t..), (g, k 16+4t..), (g+8, ..); 1: a1 <-> a2
  long long* clk;
};

constexpr int kFp8Tile = 128 * 128;  // bytes of a 128 x 128 e4m3 tile

template <int STAGES>
constexpr int smem_bytes_fp8() {
  return 1024 + kFp8Tile * (1 + 3 * STAGES);  // Q, K, V as loaded, V^T
}

// V^T of one 128-key block: producer thread tid (0..127). Unit (ks, half, t, c4): keys
// 32ks + 16half + 2t + {0, 1, 8, 9} x d columns 4c4..4c4+3 -> d rows 4c4..+3, k positions
// 32ks + 16half + 4t .. +3. Lanes span (t, c4 & 1, half, ks & 1) so the 4-byte stores of a warp
// hit 32 different banks (the loads 4-way); warps and the 8 iterations span the rest.
__device__ __forceinline__ void transpose_v_fp8(uint32_t src, uint32_t dst, int tid) {
  const int lane = tid % 32, warp = tid / 32;
  const int t = lane & 3, c4lo = (lane >> 2) & 1, half = (lane >> 3) & 1, kslo = lane >> 4;
#pragma unroll 2  // fully unrolled, the producer spills under its setmaxnreg limit
  for (int i = 0; i < 8; ++i) {
    const int c4 = 2 * (4 * warp + (i & 3)) + c4lo;
    const int ks = 2 * (i >> 2) + kslo;
    const int key0 = 32 * ks + 16 * half + 2 * t;
    uint32_t w[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = key0 + (e & 1) + 8 * (e >> 1);
      const int col = 4 * c4;
      const uint32_t a = src + key * 128 + ((((col >> 4) ^ (key & 7))) << 4) + (col & 15);
      asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(w[e]) : "r"(a));
    }
    const uint32_t t0 = __byte_perm(w[0], w[1], 0x5140), t1 = __byte_perm(w[0], w[1], 0x7362);
    const uint32_t t2 = __byte_perm(w[2], w[3], 0x5140), t3 = __byte_perm(w[2], w[3], 0x7362);
    const uint32_t out[4] = {__byte_perm(t0, t2, 0x5410), __byte_perm(t0, t2, 0x7632),
                             __byte_perm(t1, t3, 0x5410), __byte_perm(t1, t3, 0x7632)};
    const int kp = 32 * ks + 16 * half + 4 * t;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = 4 * c4 + e;
      const uint32_t a = dst + row * 128 + ((((kp >> 4) ^ (row & 7))) << 4) + (kp & 15);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(out[e]) : "memory");
    }
  }
}

// S = Q_w K^T, e4m3: m64n128k32 x 4 k-steps (32 bytes each within the 128-byte rows).
__device__ __forceinline__ void gemm_qk_fp8(float (&s)[kBlockKV / 2], uint32_t q_addr,
                                            uint32_t k_addr) {
#pragma unroll
  for (int ks = 0; ks < kFp8D / 32; ++ks)
    wgmma_ss_e4m3_n128(s, desc_kmajor(q_addr + ks * 32), desc_kmajor(k_addr + ks * 32), ks > 0);
}

// O += P V: m64n128k32 RS x 4 k-steps, B = V^T K-major (128 d-rows x 128 key bytes).
__device__ __forceinline__ void gemm_pv_fp8(float (&o)[kFp8D / 2],
                                            const uint32_t (&p)[kBlockKV / 32][4],
                                            uint32_t vt_addr) {
#pragma unroll
  for (int ks = 0; ks < kBlockKV / 32; ++ks)
    wgmma_rs_e4m3_n128(o, p[ks], desc_kmajor(vt_addr + ks * 32), 1);
}

__device__ __forceinline__ uint32_t pack_e4m3x4(float a, float b, float c, float d) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);
}

// P's e4m3 A fragments: k-step ks = S columns 32ks..32ks+31 = S registers 16ks..16ks+15;
// register 4c + 2h + e is row g + 8h, column 8c + 2t + e.
__device__ __forceinline__ void convert_p_fp8(const float (&s)[kBlockKV / 2],
                                              uint32_t (&p)[kBlockKV / 32][4], int layout) {
#pragma unroll
  for (int ks = 0; ks < kBlockKV / 32; ++ks) {
    const float* x = s + 16 * ks;
    const uint32_t r0lo = pack_e4m3x4(x[0], x[1], x[4], x[5]);
    const uint32_t r1lo = pack_e4m3x4(x[2], x[3], x[6], x[7]);
    const uint32_t r0hi = pack_e4m3x4(x[8], x[9], x[12], x[13]);
    const uint32_t r1hi = pack_e4m3x4(x[10], x[11], x[14], x[15]);
    p[ks][0] = r0lo;
    p[ks][1] = layout ? r0hi : r1lo;
    p[ks][2] = layout ? r1lo : r0hi;
    p[ks][3] = r1hi;
  }
}

template <int STAGES, bool PINGPONG, bool IWO, bool CAUSAL>
__global__ void __launch_bounds__(kThreads, 1)
    fa3_fwd_fp8_kernel(const __grid_constant__ CUtensorMap tm_q,
                       const __grid_constant__ CUtensorMap tm_k,
                       const __grid_constant__ CUtensorMap tm_v, const ParamsFp8 prm) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t bars[5 * STAGES + 2];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;
  const uint32_t s_q = base;
  auto s_k = [&](int st) { return base + kFp8Tile * (1 + st); };
  auto s_v = [&](int st) { return base + kFp8Tile * (1 + STAGES + st); };
  auto s_vt = [&](int st) { return base + kFp8Tile * (1 + 2 * STAGES + st); };
  const uint32_t b0 = smem_u32(bars);
  auto k_full = [&](int st) { return b0 + 8 * st; };
  auto v_full = [&](int st) { return b0 + 8 * (STAGES + st); };  // V as loaded (TMA)
  auto kv_empty = [&](int st) { return b0 + 8 * (2 * STAGES + st); };
  auto vt_full = [&](int st) { return b0 + 8 * (3 * STAGES + st); };  // V^T written
  const uint32_t q_full = b0 + 8 * (5 * STAGES);
  const uint32_t q_empty = b0 + 8 * (5 * STAGES + 1);
  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  const int kvb = prm.n / kBlockKV;  // key blocks per head (scale index stride)
  long long clk0 = 0;
  unsigned long long ns0 = 0;
  if (threadIdx.x == 128) {
    clk0 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns0));
  }
  if (threadIdx.x == 0) {
    for (int st = 0; st < STAGES; ++st) {
      mbar_init(k_full(st), 1);
      mbar_init(v_full(st), 1);
      mbar_init(kv_empty(st), 8);
      mbar_init(vt_full(st), 128);
    }
    mbar_init(q_full, 1);
    mbar_init(q_empty, 8);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // ---------------- producer: TMA (thread 0) + V transpose (all 128) ----------------
    setmaxnreg_dec<kFp8ProducerRegs>();
    int it = 0;
    int tile_i = 0;
    for (int tile = blockIdx.x; tile < prm.tiles; tile += gridDim.x, ++tile_i) {
      const int qb = tile % prm.q_blocks, bh = tile / prm.q_blocks;
      const int row0 = bh * prm.n;
      const int nkv = kv_blocks_of(qb, prm.n, CAUSAL);
      if (tid == 0) {
        if (tile_i > 0) mbar_wait(q_empty, (tile_i - 1) & 1);
        mbar_expect_tx(q_full, kFp8Tile);
        tma_load_2d(s_q, &tm_q, 0, row0 + qb * kBlockQ, q_full);
      }
      for (int j = 0; j < nkv; ++j, ++it) {
        const int st = it % STAGES;
        const unsigned ph = (it / STAGES) & 1;
        if (tid == 0) {
          // K(st) and V^T(st) free (consumers done); the raw V(st) buffer was last read by this
          // warpgroup's transpose, which ended at the named barrier below.
          if (it >= STAGES) mbar_wait(kv_empty(st), ph ^ 1);
          mbar_expect_tx(k_full(st), kFp8Tile);
          tma_load_2d(s_k(st), &tm_k, 0, row0 + j * kBlockKV, k_full(st));
          mbar_expect_tx(v_full(st), kFp8Tile);
          tma_load_2d(s_v(st), &tm_v, 0, row0 + j * kBlockKV, v_full(st));
        }
        mbar_wait(v_full(st), ph);
        transpose_v_fp8(s_v(st), s_vt(st), tid);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        mbar_arrive(vt_full(st));
        named_bar_sync(3, 128);  // every thread's reads of V(st) done before its next load
      }
    }
    return;
  }

  // ---------------- consumers ----------------
  setmaxnreg_inc<kFp8ConsumerRegs>();
  const int cw = wg - 1;
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const uint32_t q_addr = s_q + cw * 64 * 128;
  if constexpr (PINGPONG) {
    if (cw == 1) named_bar_arrive(1, 256);
  }
  int it = 0;
  int tile_i = 0;
  for (int tile = blockIdx.x; tile < prm.tiles; tile += gridDim.x, ++tile_i) {
    const int qb = tile % prm.q_blocks, bh = tile / prm.q_blocks;
    const int nkv = kv_blocks_of(qb, prm.n, CAUSAL);
    const int row_in_tile0 = cw * 64 + 16 * warp + g;
    const int qrow0 = qb * kBlockQ + row_in_tile0;
    const float qf = prm.scale_log2 * __ldg(prm.q_scale + bh * prm.q_blocks + qb);
    const int sc0 = bh * kvb;  // this head's first key-block scale (pointers from prm: no regs)
    float o[kFp8D / 2];
#pragma unroll
    for (int i = 0; i < kFp8D / 2; ++i) o[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2] = {1.f, 1.f};
    float s[kBlockKV / 2];
    uint32_t p[kBlockKV / 32][4];
    mbar_wait(q_full, tile_i & 1);
    auto diag = [&](int j) { return CAUSAL && j == nkv - 1; };
    const int kv_row_shift = qb * kBlockQ - (nkv - 1) * kBlockKV;
    float v_prev = 1.f;  // v_scale of the block O is in units of
    auto rescale = [&](float vs) {
      const float r = v_prev / vs;
      const float a0 = alpha[0] * r, a1 = alpha[1] * r;
#pragma unroll
      for (int i = 0; i < kFp8D / 2; ++i) o[i] *= ((i / 2) % 2) ? a1 : a0;
      v_prev = vs;
    };

    if constexpr (!IWO) {
      for (int j = 0; j < nkv; ++j, ++it) {
        const int st = it % STAGES;
        const unsigned ph = (it / STAGES) & 1;
        const float kf = qf * __ldg(prm.k_scale + sc0 + j), vs = __ldg(prm.v_scale + sc0 + j);
        mbar_wait(k_full(st), ph);
        gemm_in_turn<PINGPONG>(
            cw, [&] { gemm_qk_fp8(s, q_addr, s_k(st)); }, [&] { reg_fence(s); });
        if (j == nkv - 1 && lane == 0) mbar_arrive(q_empty);
        softmax_block<CAUSAL, kFp8POffsetLog2>(s, m, l, alpha, kf, diag(j),
                                               row_in_tile0 + kv_row_shift, t);
        if (j > 0)
          rescale(vs);
        else
          v_prev = vs;
        convert_p_fp8(s, p, prm.p_layout);
        mbar_wait(vt_full(st), ph);
        gemm_in_turn<PINGPONG>(
            cw, [&] { gemm_pv_fp8(o, p, s_vt(st)); },
            [&] {
              reg_fence(o);
              reg_fence(p);
            });
        if (lane == 0) mbar_arrive(kv_empty(st));
      }
    } else {
      int st = it % STAGES;
      unsigned ph = (it / STAGES) & 1;
      mbar_wait(k_full(st), ph);
      gemm_in_turn<PINGPONG>(
          cw, [&] { gemm_qk_fp8(s, q_addr, s_k(st)); }, [&] { reg_fence(s); });
      if (nkv == 1 && lane == 0) mbar_arrive(q_empty);
      softmax_block<CAUSAL, kFp8POffsetLog2>(s, m, l, alpha, qf * __ldg(prm.k_scale + sc0), diag(0),
                                             row_in_tile0 + kv_row_shift, t);
      v_prev = __ldg(prm.v_scale + sc0);
      convert_p_fp8(s, p, prm.p_layout);
      for (int j = 1; j < nkv; ++j) {
        const int st_prev = st;
        const unsigned ph_prev = ph;
        ++it;
        st = it % STAGES;
        ph = (it / STAGES) & 1;
        const float kf = qf * __ldg(prm.k_scale + sc0 + j), vs = __ldg(prm.v_scale + sc0 + j);
        mbar_wait(k_full(st), ph);
        mbar_wait(vt_full(st_prev), ph_prev);
        reg_fence(s);
        reg_fence(o);
        reg_fence(p);
        turn_begin<PINGPONG>(cw);
        wgmma_fence();
        gemm_qk_fp8(s, q_addr, s_k(st));
        wgmma_commit();
        gemm_pv_fp8(o, p, s_vt(st_prev));
        wgmma_commit();
        turn_end<PINGPONG>(cw);
        wgmma_wait<1>();
        reg_fence(s);
        if (j == nkv - 1 && lane == 0) mbar_arrive(q_empty);
        softmax_block<CAUSAL, kFp8POffsetLog2>(s, m, l, alpha, kf, diag(j),
                                               row_in_tile0 + kv_row_shift, t);
        reg_fence(s);
        reg_fence(m);
        reg_fence(l);
        reg_fence(alpha);
        wgmma_wait<0>();
        reg_fence(o);
        reg_fence(p);
        if (lane == 0) mbar_arrive(kv_empty(st_prev));
        rescale(vs);
        convert_p_fp8(s, p, prm.p_layout);
      }
      mbar_wait(vt_full(st), ph);
      gemm_in_turn<PINGPONG>(
          cw, [&] { gemm_pv_fp8(o, p, s_vt(st)); },
          [&] {
            reg_fence(o);
            reg_fence(p);
          });
      if (lane == 0) mbar_arrive(kv_empty(st));
      ++it;
    }

    // O = acc x v_scale / l, L = (m - 8) ln 2 + ln l.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
    const size_t orow = static_cast<size_t>(bh) * prm.n + qrow0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float inv = v_prev / l[h];
      __half* dst = prm.o + (orow + 8 * h) * kFp8D;
#pragma unroll
      for (int c = 0; c < kFp8D / 8; ++c) {
        const __half2 v = __floats2half2_rn(o[4 * c + 2 * h] * inv, o[4 * c + 2 * h + 1] * inv);
        *reinterpret_cast<__half2*>(dst + 8 * c + 2 * t) = v;
      }
      if (t == 0)
        prm.lse[orow + 8 * h] = (m[h] - kFp8POffsetLog2) * 0.69314718055994530942f + logf(l[h]);
    }
  }
  if constexpr (PINGPONG) {
    if (cw == 0) named_bar_sync(1, 256);
  }
  if (threadIdx.x == 128 && prm.clk) {
    unsigned long long ns1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns1));
    prm.clk[2 * blockIdx.x] = clock64() - clk0;
    prm.clk[2 * blockIdx.x + 1] = static_cast<long long>(ns1 - ns0);
  }
}

}  // namespace fa3

// ======================================== host ========================================
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../microbench/check.cuh"  // CHECK(x)

namespace {

using fa3::Copy;

struct Case {
  int d, n, b, h;
  bool pingpong, iwo, causal, persistent;
  Copy copy;
  bool fp8 = false;  // e4m3 Q, K, V with per-tile scales (fa3_fwd_fp8_kernel, d = 128, TMA)
  std::string id() const {
    char buf[160];
    std::snprintf(buf, sizeof buf, "fa3own_b%d_h%d_n%d_d%d_%s_pp%d_iwo%d_%s%s%s", b, h, n, d,
                  copy == Copy::tma ? "tma" : "cpasync", pingpong, iwo,
                  persistent ? "persistent" : "grid", causal ? "_causal" : "", fp8 ? "_fp8" : "");
    return buf;
  }
};

__global__ void fill_kernel(__half* p, size_t count, uint32_t seed, float amp) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 0x9E3779B1u ^ seed * 0x85EBCA77u ^
                 static_cast<uint32_t>(i >> 32) * 0xC2B2AE3Du;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 13;
    p[i] = __float2half(amp * (static_cast<float>(x & 0xFFFFFF) / 8388608.f - 1.f));
  }
}

// [rows, d] fp16, boxes of 64 columns x 128 rows, 128-byte swizzle.
CUtensorMap make_map(const __half* p, size_t rows, int d) {
  CUtensorMap m;
  const CUresult r =
      iosim_hopper::make_tensor_map_2d(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, p, rows, d, 64, 128);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", static_cast<int>(r));
    std::exit(1);
  }
  return m;
}

// [rows, 128] e4m3 (bytes), boxes of 128 columns x 128 rows, 128-byte swizzle.
CUtensorMap make_map_fp8(const uint8_t* p, size_t rows) {
  CUtensorMap m;
  const CUresult r = iosim_hopper::make_tensor_map_2d(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, p, rows,
                                                      128, 128, 128);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled (fp8) failed: %d\n", static_cast<int>(r));
    std::exit(1);
  }
  return m;
}

constexpr int kStages = 2;

struct LaunchInfo {
  int grid = 0, smem = 0, regs = 0;
};

template <int D, Copy C, bool PP, bool IWO, bool CAUSAL>
LaunchInfo launch_t(const CUtensorMap& mq, const CUtensorMap& mk, const CUtensorMap& mv,
                    const fa3::Params& prm, bool persistent, int sms, bool query_only) {
  auto kern = fa3::fa3_fwd_kernel<D, kStages, C, PP, IWO, CAUSAL>;
  constexpr int smem = fa3::smem_bytes<D, kStages>();
  static bool configured = false;
  static cudaFuncAttributes fa{};
  if (!configured) {
    CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaFuncGetAttributes(&fa, kern));
    configured = true;
  }
  LaunchInfo li;
  li.grid = persistent ? std::min(prm.tiles, sms) : prm.tiles;
  li.smem = smem;
  li.regs = fa.numRegs;
  if (!query_only) kern<<<li.grid, fa3::kThreads, smem>>>(mq, mk, mv, prm);
  return li;
}

template <int D>
LaunchInfo launch_d(const Case& c, const CUtensorMap& mq, const CUtensorMap& mk,
                    const CUtensorMap& mv, const fa3::Params& prm, int sms, bool query_only) {
  const bool pe = c.persistent;
  if (c.copy == Copy::cpasync) {
    if (c.pingpong && c.iwo && !c.causal)
      return launch_t<D, Copy::cpasync, true, true, false>(mq, mk, mv, prm, pe, sms, query_only);
    if (!c.pingpong && c.iwo && !c.causal)
      return launch_t<D, Copy::cpasync, false, true, false>(mq, mk, mv, prm, pe, sms, query_only);
    std::fprintf(stderr, "cp.async variant not built: %s\n", c.id().c_str());
    std::exit(2);
  }
#define FA3_CASE(PP, IWO, CA)                             \
  if (c.pingpong == PP && c.iwo == IWO && c.causal == CA) \
    return launch_t<D, Copy::tma, PP, IWO, CA>(mq, mk, mv, prm, pe, sms, query_only);
  FA3_CASE(false, false, false)
  FA3_CASE(false, true, false)
  FA3_CASE(true, false, false)
  FA3_CASE(true, true, false)
  FA3_CASE(false, true, true)
  FA3_CASE(true, true, true)
#undef FA3_CASE
  std::fprintf(stderr, "variant not built: %s\n", c.id().c_str());
  std::exit(2);
}

LaunchInfo launch(const Case& c, const CUtensorMap& mq, const CUtensorMap& mk,
                  const CUtensorMap& mv, const fa3::Params& prm, int sms, bool query_only = false) {
  return c.d == 64 ? launch_d<64>(c, mq, mk, mv, prm, sms, query_only)
                   : launch_d<128>(c, mq, mk, mv, prm, sms, query_only);
}

template <bool PP, bool IWO, bool CAUSAL>
LaunchInfo launch_fp8_t(const CUtensorMap& mq, const CUtensorMap& mk, const CUtensorMap& mv,
                        const fa3::ParamsFp8& prm, bool persistent, int sms, bool query_only) {
  auto kern = fa3::fa3_fwd_fp8_kernel<kStages, PP, IWO, CAUSAL>;
  constexpr int smem = fa3::smem_bytes_fp8<kStages>();
  static bool configured = false;
  static cudaFuncAttributes fa{};
  if (!configured) {
    CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaFuncGetAttributes(&fa, kern));
    configured = true;
  }
  LaunchInfo li;
  li.grid = persistent ? std::min(prm.tiles, sms) : prm.tiles;
  li.smem = smem;
  li.regs = fa.numRegs;
  if (!query_only) kern<<<li.grid, fa3::kThreads, smem>>>(mq, mk, mv, prm);
  return li;
}

LaunchInfo launch_fp8(const Case& c, const CUtensorMap& mq, const CUtensorMap& mk,
                      const CUtensorMap& mv, const fa3::ParamsFp8& prm, int sms,
                      bool query_only = false) {
  const bool pe = c.persistent;
  if (c.d != 128 || c.copy != Copy::tma) {
    std::fprintf(stderr, "fp8 variant not built: %s\n", c.id().c_str());
    std::exit(2);
  }
#define FA3_CASE(PP, IWO, CA)                             \
  if (c.pingpong == PP && c.iwo == IWO && c.causal == CA) \
    return launch_fp8_t<PP, IWO, CA>(mq, mk, mv, prm, pe, sms, query_only);
  FA3_CASE(false, false, false)
  FA3_CASE(false, true, false)
  FA3_CASE(true, false, false)
  FA3_CASE(true, true, false)
  FA3_CASE(false, true, true)
  FA3_CASE(true, true, true)
#undef FA3_CASE
  std::fprintf(stderr, "fp8 variant not built: %s\n", c.id().c_str());
  std::exit(2);
}

// Block quantization of [rows, 128] values: per 128-row tile scale = amax / 448 (1 if all zero),
// byte = e4m3(x / scale) (round to nearest even, saturating); deq = the value the kernel sees.
void quantize_e4m3(const std::vector<float>& x, size_t rows, std::vector<uint8_t>& q8,
                   std::vector<float>& scales, std::vector<float>& deq) {
  constexpr int kCols = 128, kRows = 128;
  q8.resize(x.size());
  deq.resize(x.size());
  scales.resize(rows / kRows);
  // Threads over tiles (the host conversion is slow: 10^8 values at N = 8k).
  const size_t tiles = rows / kRows;
  const int nth =
      static_cast<int>(std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
  std::vector<std::thread> th;
  for (int w = 0; w < nth; ++w)
    th.emplace_back([&, w]() {
      for (size_t tb = w; tb < tiles; tb += nth) {
        const size_t o0 = tb * kRows * kCols;
        float amax = 0.f;
        for (size_t i = 0; i < size_t{kRows} * kCols; ++i)
          amax = std::max(amax, std::fabs(x[o0 + i]));
        const float sc = amax > 0.f ? amax / 448.f : 1.f;
        scales[tb] = sc;
        for (size_t i = 0; i < size_t{kRows} * kCols; ++i) {
          const __nv_fp8_storage_t b =
              __nv_cvt_float_to_fp8(x[o0 + i] / sc, __NV_SATFINITE, __NV_E4M3);
          q8[o0 + i] = b;
          const __half_raw hr = __nv_cvt_fp8_to_halfraw(b, __NV_E4M3);
          deq[o0 + i] = __half2float(__half(hr)) * sc;
        }
      }
    });
  for (auto& x : th) x.join();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

float h2f(uint16_t h) {
  __half_raw r;
  r.x = h;
  return __half2float(__half(r));
}

struct CheckResult {
  double max_abs = 0, max_ref = 0, rel_l2 = 0, lse_max_abs = 0;
  long long nonfinite = 0;
  int rows_per_head = 0;
  bool passed = false;
};

// FP8 pass criteria, set before any device run: a wrong fragment or V^T order gives errors of
// order 1; e4m3's 3 mantissa bits (relative spacing 1/8 to 1/16) on Q, K, V and P give a few
// per cent in O. Checked against the float64 reference of the dequantized inputs (the kernel's
// own arithmetic: P's rounding and the fp32 accumulation); the error against the unquantized
// inputs (quantization included) is reported beside it.
constexpr double kFp8TolRelL2 = 0.1;
constexpr double kFp8TolLse = 0.05;

// float64 reference on sampled rows of every (batch, head).
CheckResult check_case(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                       const std::vector<float>& v, const std::vector<uint16_t>& o,
                       const std::vector<float>& lse) {
  CheckResult r;
  const int n = c.n, d = c.d, bh = c.b * c.h;
  std::vector<int> rows = {0, 1, 63, 64, 127, 128, n / 2 + 3, n - 65, n - 2, n - 1};
  r.rows_per_head = static_cast<int>(rows.size());
  for (size_t i = 0; i < o.size(); ++i)
    if (!std::isfinite(h2f(o[i]))) ++r.nonfinite;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const int nth = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<double> t_max(nth, 0), t_ref(nth, 0), t_e2(nth, 0), t_r2(nth, 0), t_lse(nth, 0);
  std::vector<std::thread> th;
  for (int w = 0; w < nth; ++w)
    th.emplace_back([&, w]() {
      std::vector<double> s(n), acc(d);
      for (int head = w; head < bh; head += nth)
        for (int row : rows) {
          const size_t qoff = (static_cast<size_t>(head) * n + row) * d;
          const int nk = c.causal ? row + 1 : n;
          double mx = -1e300;
          for (int j = 0; j < nk; ++j) {
            const size_t koff = (static_cast<size_t>(head) * n + j) * d;
            double dot = 0;
            for (int x = 0; x < d; ++x) dot += double(q[qoff + x]) * double(k[koff + x]);
            s[j] = dot * scale;
            mx = std::max(mx, s[j]);
          }
          double sum = 0;
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int j = 0; j < nk; ++j) {
            const double p = std::exp(s[j] - mx);
            sum += p;
            const size_t voff = (static_cast<size_t>(head) * n + j) * d;
            for (int x = 0; x < d; ++x) acc[x] += p * double(v[voff + x]);
          }
          for (int x = 0; x < d; ++x) {
            const double ref = acc[x] / sum, got = h2f(o[qoff + x]);
            const double e = std::fabs(got - ref);
            t_max[w] = std::max(t_max[w], std::isfinite(e) ? e : 1e30);
            t_ref[w] = std::max(t_ref[w], std::fabs(ref));
            t_e2[w] += (got - ref) * (got - ref);
            t_r2[w] += ref * ref;
          }
          const double lref = mx + std::log(sum);
          const double le = std::fabs(double(lse[static_cast<size_t>(head) * n + row]) - lref);
          t_lse[w] = std::max(t_lse[w], std::isfinite(le) ? le : 1e30);
        }
    });
  for (auto& x : th) x.join();
  double e2 = 0, r2 = 0;
  for (int w = 0; w < nth; ++w) {
    r.max_abs = std::max(r.max_abs, t_max[w]);
    r.max_ref = std::max(r.max_ref, t_ref[w]);
    r.lse_max_abs = std::max(r.lse_max_abs, t_lse[w]);
    e2 += t_e2[w];
    r2 += t_r2[w];
  }
  r.rel_l2 = std::sqrt(e2 / std::max(r2, 1e-300));
  r.passed =
      c.fp8 ? r.nonfinite == 0 && r.rel_l2 <= kFp8TolRelL2 && r.lse_max_abs <= kFp8TolLse
            : r.nonfinite == 0 && r.max_abs <= 4e-3 && r.rel_l2 <= 2e-3 && r.lse_max_abs <= 2e-3;
  return r;
}

struct Args {
  std::string set = "main";
  bool check = true, profile = false;
  int reps = 15;
  int vdesc_swap = -1;  // -1: try 0, and 1 if 0 fails the check
  int p_layout = -1;    // fp8 P fragment order: -1: try 0, and 1 if 0 fails the check
  std::string only;
};

// Sets: main (fp16, 90 cases), fp8 (30 cases, d = 128), all (main then fp8 per problem),
// smoke (all at N = 1024).
std::vector<Case> cases_of(const std::string& set) {
  std::vector<Case> out;
  if (set != "main" && set != "fp8" && set != "all" && set != "smoke") {
    std::fprintf(stderr, "unknown set %s (main, fp8, all, smoke)\n", set.c_str());
    std::exit(2);
  }
  const std::vector<int> ns =
      set == "smoke" ? std::vector<int>{1024} : std::vector<int>{1024, 2048, 4096, 8192, 16384};
  const bool f16 = set != "fp8", f8 = set != "main";
  for (int d : {64, 128})
    for (int n : ns) {
      const int b = n >= 16384 ? 1 : 4, h = 16;
      // The four mechanism variants (TMA, persistent), then TMA vs cp.async, persistent vs
      // not, causal, each on FlashAttention-3's arrangement (ping-pong + intra-warpgroup overlap).
      if (f16) {
        for (int pp = 0; pp < 2; ++pp)
          for (int iwo = 0; iwo < 2; ++iwo)
            out.push_back({d, n, b, h, pp == 1, iwo == 1, false, true, Copy::tma});
        out.push_back({d, n, b, h, true, true, false, true, Copy::cpasync});
        out.push_back({d, n, b, h, false, true, false, true, Copy::cpasync});
        out.push_back({d, n, b, h, true, true, false, false, Copy::tma});
        out.push_back({d, n, b, h, true, true, true, true, Copy::tma});
        out.push_back({d, n, b, h, false, true, true, true, Copy::tma});
      }
      // FP8 (d = 128): the four (ping-pong, IWO) combinations and causal with ping-pong on/off
      // (IWO), TMA, persistent; after the problem's fp16 cases (the same inputs, quantized).
      if (f8 && d == 128) {
        for (int pp = 0; pp < 2; ++pp)
          for (int iwo = 0; iwo < 2; ++iwo)
            out.push_back({d, n, b, h, pp == 1, iwo == 1, false, true, Copy::tma, true});
        out.push_back({d, n, b, h, true, true, true, true, Copy::tma, true});
        out.push_back({d, n, b, h, false, true, true, true, Copy::tma, true});
      }
    }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", s.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (s == "--set")
      a.set = next();
    else if (s == "--no-check")
      a.check = false;
    else if (s == "--profile")
      a.profile = true;
    else if (s == "--reps")
      a.reps = std::atoi(next().c_str());
    else if (s == "--vdesc-swap")
      a.vdesc_swap = std::atoi(next().c_str());
    else if (s == "--p-layout")
      a.p_layout = std::atoi(next().c_str());
    else if (s == "--only")
      a.only = next();
    else {
      std::fprintf(stderr, "unknown argument %s\n", s.c_str());
      return 2;
    }
  }
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  long long* d_clk;
  const int max_tiles = 16384 / fa3::kBlockQ * 64;  // the largest grid of cases_of()
  CHECK(cudaMalloc(&d_clk, sizeof(long long) * 2 * max_tiles));
  std::vector<Case> cases = cases_of(a.set);
  if (!a.only.empty()) {
    std::vector<Case> keep;
    for (const Case& c : cases)
      if (c.id().find(a.only) != std::string::npos) keep.push_back(c);
    cases = keep;
  }
  int vswap = a.vdesc_swap < 0 ? 0 : a.vdesc_swap;
  // Problems in order; inputs regenerated when the problem changes.
  int cur_d = 0, cur_n = 0, cur_b = 0, cur_h = 0;
  __half *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float* lse = nullptr;
  std::vector<float> hq, hk, hv;
  CUtensorMap mq{}, mk{}, mv{};
  // FP8 inputs of the current problem (made on its first fp8 case from the fp16 inputs).
  bool have_fp8 = false;
  uint8_t *q8 = nullptr, *k8 = nullptr, *v8 = nullptr;
  float *qs = nullptr, *ks = nullptr, *vs = nullptr;
  std::vector<float> dq, dk, dv;  // dequantized (what the fp8 kernel computes with)
  CUtensorMap m8q{}, m8k{}, m8v{};
  int p_layout = a.p_layout < 0 ? 0 : a.p_layout;
  bool any_failed = false;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    const size_t elems = static_cast<size_t>(c.b) * c.h * c.n * c.d;
    const size_t rows = static_cast<size_t>(c.b) * c.h * c.n;
    if (c.d != cur_d || c.n != cur_n || c.b != cur_b || c.h != cur_h) {
      cudaFree(q);
      cudaFree(k);
      cudaFree(v);
      cudaFree(o);
      cudaFree(lse);
      cudaFree(q8);
      cudaFree(k8);
      cudaFree(v8);
      cudaFree(qs);
      cudaFree(ks);
      cudaFree(vs);
      q8 = k8 = v8 = nullptr;
      qs = ks = vs = nullptr;
      have_fp8 = false;
      CHECK(cudaMalloc(&q, elems * 2));
      CHECK(cudaMalloc(&k, elems * 2));
      CHECK(cudaMalloc(&v, elems * 2));
      CHECK(cudaMalloc(&o, elems * 2));
      CHECK(cudaMalloc(&lse, rows * 4));
      // q in [-4, 4), k and v in [-1, 1): scaled scores with a standard deviation of about 1.3.
      fill_kernel<<<1024, 256>>>(q, elems, 1u + c.d + c.n, 4.f);
      fill_kernel<<<1024, 256>>>(k, elems, 7u + c.d + c.n, 1.f);
      fill_kernel<<<1024, 256>>>(v, elems, 13u + c.d + c.n, 1.f);
      CHECK(cudaDeviceSynchronize());
      if (a.check) {
        std::vector<uint16_t> tmp(elems);
        auto fetch = [&](std::vector<float>& dst, const __half* src) {
          CHECK(cudaMemcpy(tmp.data(), src, elems * 2, cudaMemcpyDeviceToHost));
          dst.resize(elems);
          for (size_t i = 0; i < elems; ++i) dst[i] = h2f(tmp[i]);
        };
        fetch(hq, q);
        fetch(hk, k);
        fetch(hv, v);
      }
      mq = make_map(q, rows, c.d);
      mk = make_map(k, rows, c.d);
      mv = make_map(v, rows, c.d);
      cur_d = c.d;
      cur_n = c.n;
      cur_b = c.b;
      cur_h = c.h;
    }
    if (c.fp8 && !have_fp8) {
      std::vector<uint16_t> tmp(elems);
      std::vector<float> x(elems), sc;
      std::vector<uint8_t> b8;
      auto make = [&](const __half* src, uint8_t*& dst8, float*& dsts, std::vector<float>& deq) {
        CHECK(cudaMemcpy(tmp.data(), src, elems * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < elems; ++i) x[i] = h2f(tmp[i]);
        quantize_e4m3(x, rows, b8, sc, deq);
        CHECK(cudaMalloc(&dst8, elems));
        CHECK(cudaMalloc(&dsts, sc.size() * 4));
        CHECK(cudaMemcpy(dst8, b8.data(), elems, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dsts, sc.data(), sc.size() * 4, cudaMemcpyHostToDevice));
      };
      make(q, q8, qs, dq);
      make(k, k8, ks, dk);
      make(v, v8, vs, dv);
      m8q = make_map_fp8(q8, rows);
      m8k = make_map_fp8(k8, rows);
      m8v = make_map_fp8(v8, rows);
      have_fp8 = true;
    }
    fa3::Params prm{q,     k,
                    v,     o,
                    lse,   c.b * c.h,
                    c.n,   c.n / fa3::kBlockQ,
                    0,     static_cast<float>(1.4426950408889634 / std::sqrt(double(c.d))),
                    vswap, d_clk};
    prm.tiles = prm.q_blocks * prm.bh;
    fa3::ParamsFp8 p8{
        qs, ks, vs, o, lse, prm.bh, c.n, prm.q_blocks, prm.tiles, prm.scale_log2, p_layout, d_clk};
    auto run = [&](bool query_only) {
      return c.fp8 ? launch_fp8(c, m8q, m8k, m8v, p8, sms, query_only)
                   : launch(c, mq, mk, mv, prm, sms, query_only);
    };
    const LaunchInfo li = run(true);
    if (a.profile) {  // one launch per case, in order (ncu pairs its rows by order)
      std::fprintf(stderr, "profile %zu %s\n", ci, c.id().c_str());
      CHECK(cudaProfilerStart());
      run(false);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaProfilerStop());
      std::printf("{\"id\": \"%s\", \"profiled\": true, \"grid\": %d, \"smem_bytes\": %d}\n",
                  c.id().c_str(), li.grid, li.smem);
      continue;
    }
    CheckResult cr, cr_unq;  // fp8: cr against the dequantized inputs, cr_unq the fp16 ones
    bool checked = false;
    if (a.check) {
      for (int attempt = 0; attempt < 2; ++attempt) {
        CHECK(cudaMemset(o, 0xFF, elems * 2));  // NaN
        CHECK(cudaMemset(lse, 0xFF, rows * 4));
        run(false);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::vector<uint16_t> ho(elems);
        std::vector<float> hl(rows);
        CHECK(cudaMemcpy(ho.data(), o, elems * 2, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hl.data(), lse, rows * 4, cudaMemcpyDeviceToHost));
        checked = true;
        if (c.fp8) {
          cr = check_case(c, dq, dk, dv, ho, hl);
          cr_unq = check_case(c, hq, hk, hv, ho, hl);
          if (cr.passed || a.p_layout >= 0 || attempt == 1) break;
          std::fprintf(stderr, "%s: check failed with p_layout=%d (rel_l2 %.3g), trying %d\n",
                       c.id().c_str(), p_layout, cr.rel_l2, 1 - p_layout);
          p_layout = 1 - p_layout;
          p8.p_layout = p_layout;
          continue;
        }
        cr = check_case(c, hq, hk, hv, ho, hl);
        if (cr.passed || a.vdesc_swap >= 0 || attempt == 1) break;
        std::fprintf(stderr, "%s: check failed with vdesc_swap=%d (max_abs %.3g), trying %d\n",
                     c.id().c_str(), vswap, cr.max_abs, 1 - vswap);
        vswap = 1 - vswap;
        prm.vdesc_swap = vswap;
      }
      if (!cr.passed) {
        any_failed = true;
        std::fprintf(stderr, "CHECK FAILED %s max_abs %.4g rel_l2 %.4g lse %.4g nonfinite %lld\n",
                     c.id().c_str(), cr.max_abs, cr.rel_l2, cr.lse_max_abs, cr.nonfinite);
      }
    }
    // Timing: 2 warm-up launches, then reps launches each between its own events.
    std::vector<double> ms;
    for (int w = 0; w < 2; ++w) run(false);
    CHECK(cudaGetLastError());
    std::vector<cudaEvent_t> ev(2 * a.reps);
    for (auto& e : ev) CHECK(cudaEventCreate(&e));
    for (int r = 0; r < a.reps; ++r) {
      CHECK(cudaEventRecord(ev[2 * r]));
      run(false);
      CHECK(cudaEventRecord(ev[2 * r + 1]));
    }
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int r = 0; r < a.reps; ++r) {
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, ev[2 * r], ev[2 * r + 1]));
      ms.push_back(t);
    }
    for (auto& e : ev) CHECK(cudaEventDestroy(e));
    // The SM clock during the last timed launch: clock64 cycles per %globaltimer ns of each CTA
    // (first consumer thread, start to end), median over the CTAs.
    std::vector<long long> clk(2 * li.grid);
    CHECK(cudaMemcpy(clk.data(), d_clk, sizeof(long long) * 2 * li.grid, cudaMemcpyDeviceToHost));
    std::vector<double> mhz;
    for (int i = 0; i < li.grid; ++i)
      if (clk[2 * i + 1] > 0) mhz.push_back(1e3 * double(clk[2 * i]) / double(clk[2 * i + 1]));
    if (mhz.empty()) mhz.push_back(0);
    const double med = median(ms);
    const double flops = 4.0 * c.b * c.h * double(c.n) * c.n * c.d * (c.causal ? 0.5 : 1.0);
    std::printf(
        "{\"id\": \"%s\", \"d\": %d, \"n\": %d, \"b\": %d, \"h\": %d, \"pingpong\": %d, "
        "\"iwo\": %d, \"causal\": %d, \"persistent\": %d, \"copy\": \"%s\", \"block_q\": %d, "
        "\"block_kv\": %d, \"stages\": %d, \"threads\": %d, \"grid\": %d, \"smem_bytes\": %d, "
        "\"registers_at_launch\": %d, \"vdesc_swap\": %d, \"reps\": %d, \"median_ms\": %.6f, "
        "\"min_ms\": %.6f, \"max_ms\": %.6f, \"tflops_median\": %.2f, "
        "\"sm_mhz_clock64_per_globaltimer\": %.0f, \"dtype\": \"%s\", \"p_layout\": %d",
        c.id().c_str(), c.d, c.n, c.b, c.h, c.pingpong, c.iwo, c.causal, c.persistent,
        c.copy == Copy::tma ? "tma" : "cp.async", fa3::kBlockQ, fa3::kBlockKV, kStages,
        fa3::kThreads, li.grid, li.smem, li.regs, vswap, a.reps, med,
        *std::min_element(ms.begin(), ms.end()), *std::max_element(ms.begin(), ms.end()),
        flops / (med * 1e-3) / 1e12, median(mhz), c.fp8 ? "fp8" : "fp16", c.fp8 ? p_layout : -1);
    if (checked && c.fp8)
      std::printf(
          ", \"check\": {\"max_abs_error\": %.3e, \"max_abs_reference\": %.3e, "
          "\"rel_l2_error\": %.3e, \"lse_max_abs_error\": %.3e, \"nonfinite_outputs\": %lld, "
          "\"rows_checked_per_head\": %d, \"tolerance_rel_l2\": %g, \"tolerance_lse\": %g, "
          "\"reference\": \"float64 on the host from the dequantized e4m3 inputs (the kernel's "
          "arithmetic: P in e4m3, fp32 accumulation)\", \"passed\": %s, "
          "\"vs_unquantized\": {\"max_abs_error\": %.3e, \"rel_l2_error\": %.3e, "
          "\"lse_max_abs_error\": %.3e, \"reference\": \"float64 from the fp16 inputs before "
          "quantization (quantization error included)\"}, \"quantization\": \"e4m3, one scale "
          "(amax / 448) per 128 rows x 128 columns tile of Q, K, V\"}",
          cr.max_abs, cr.max_ref, cr.rel_l2, cr.lse_max_abs, cr.nonfinite, cr.rows_per_head,
          kFp8TolRelL2, kFp8TolLse, cr.passed ? "true" : "false", cr_unq.max_abs, cr_unq.rel_l2,
          cr_unq.lse_max_abs);
    else if (checked)
      std::printf(
          ", \"check\": {\"max_abs_error\": %.3e, \"max_abs_reference\": %.3e, "
          "\"rel_l2_error\": %.3e, \"lse_max_abs_error\": %.3e, \"nonfinite_outputs\": %lld, "
          "\"rows_checked_per_head\": %d, \"tolerance_max_abs\": 4e-3, \"tolerance_rel_l2\": "
          "2e-3, \"tolerance_lse\": 2e-3, \"reference\": \"float64 on the host\", \"passed\": %s}",
          cr.max_abs, cr.max_ref, cr.rel_l2, cr.lse_max_abs, cr.nonfinite, cr.rows_per_head,
          cr.passed ? "true" : "false");
    std::printf(", \"times_ms\": [");
    for (size_t i = 0; i < ms.size(); ++i) std::printf("%s%.5f", i ? ", " : "", ms[i]);
    std::printf("]}\n");
    std::fflush(stdout);
  }
  return any_failed ? 1 : 0;
}
