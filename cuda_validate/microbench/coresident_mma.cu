// How far the work of one mma.sync CTA runs under that of other CTAs on the same SM (issue #46:
// the co-resident overlap of wg1_mma_fwd's CTAs, which coresident.cu measured for wgmma only).
//
// The kernel is the compute loop of kernels/wg1_mma_fwd.cuh (kWarps warps, each owning
// kBQ / kWarps query rows: S = Q K^T by ldmatrix + mma.sync m16n8k16, the scale, the online
// softmax in registers, P rounded to fp16 as the A fragments, O += P V by ldmatrix.trans +
// mma.sync), the same per-warp pieces (kernels/warp_tile.cuh), over Q, K and V tiles that stay in
// shared memory: no cp.async, no global memory in the loop, the kernel's per-step __syncthreads
// kept. So what it times is the SM's pipes and the warps' chains alone. Three modes of the loop:
//   full     the loop as the attention kernel runs it (an unmasked step);
//   gemm     the two products and the packing of S into P, no scale and no softmax;
//   softmax  the scale, softmax and packing, no mma (S refreshed by one FFMA per element from O,
//            P consumed by one add per element of O instead of the product);
// and two modes with the kernel's K/V ring (issue #46: what the kernels pay per step beyond this
// loop), their own kernel so that the three above compile as before:
//   ring       full's step, K and V coming through a 2-stage shared-memory ring filled by cp.async
//              exactly as wg1_mma_fwd (kStages = 2) fills it: each step waits for its group
//              (cp.async.wait_group 0), __syncthreads, issues the next step's K and V tiles
//              (load_tile_async, one commit), then computes on its stage. The tiles cycle
//              through kRingTiles (64) K and V tiles of one global buffer (at most 4 MB, shared
//              by every CTA): after the first pass they hit the L2, so the ring's cost is the
//              SM's side (issue, wait, barrier, the copies' shared-memory writes and L2 port),
//              not the HBM's;
//   ring_gemm  gemm's step with the same ring;
// and a third pass, `spill`: ring's step at W = 1 and 2 compiled for W + 1 .. W + 4 CTAs per SM
// (__launch_bounds__), so that ptxas spills the same loop by as much as the bound forces (rows
// with "launch_bound_ctas"; against the W-bound ring rows: what spills alone cost at a fixed W);
// the first two passes with W = 1..5 CTAs resident on every SM (grid W x #SMs; dynamic shared memory padded so
// that no more than W fit; __launch_bounds__(threads, W) as coresident.cu: the registers
// reported per row, and local bytes where ptxas spilled to fit W; W beyond what registers allow
// is skipped). Every CTA reads clock64 around its loop of `iters` steps; the line printed per
// (tile, warps, mode, W) holds the median, min and max SM cycles per step over the CTAs.
// One tile per binary (its instantiations compile in parallel): -DCR_D, -DCR_BQ, -DCR_BKV,
// -DCR_WARPS. Data are small fp16 values; results are not checked (the pieces are the ones
// wg1_mma_fwd's output checks pass with).
// Build (coresident_mma.sh builds and runs every tile of the sweep):
//   nvcc -O3 -std=c++17 -arch=sm_90 -DCR_D=64 -DCR_BQ=128 -DCR_BKV=32 -DCR_WARPS=8
//   coresident_mma.cu
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../kernels/common.cuh"
#include "../kernels/warp_tile.cuh"
#include "check.cuh"
#include "coresident_harness.cuh"

#ifndef CR_D
#define CR_D 64
#endif
#ifndef CR_BQ
#define CR_BQ 64
#endif
#ifndef CR_BKV
#define CR_BKV 64
#endif
#ifndef CR_WARPS
#define CR_WARPS 4
#endif

namespace {

using namespace iosim_cuda;
using namespace coresident_harness;

template <int kD, int kBQ, int kBKV, int kWarps, int kMode, int kMinBlocks>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks)
    coresident_mma_kernel(int iters, long long* cycles, float* sink) {
  using Cfg = WarpTileConfig<kD, kBQ, kBKV, kWarps>;
  constexpr int kMT = Cfg::kMT;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  half* sQ = reinterpret_cast<half*>(smem_raw);
  half* sK = sQ + Cfg::kQTileElems;
  half* sV = sK + Cfg::kKVTileElems;
  const int n_halves = Cfg::kQTileElems + 2 * Cfg::kKVTileElems;
  for (int i = threadIdx.x; i < n_halves; i += blockDim.x)
    sQ[i] = __float2half(0.01f * static_cast<float>((i * 7 + blockIdx.x) % 13) - 0.06f);
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int q_row0 = warp * Cfg::kRowsPerWarp;
  const float scale_log2 = 0.125f * kLog2e;
  float rO[kMT][kD / 8][4];
  float row_m[kMT][2], row_l[kMT][2];
  warp_init_state<kD, kMT>(rO, row_m, row_l);
  __syncthreads();
  const long long t0 = clock64();
  for (int j = 0; j < iters; ++j) {
    if (j > 0) __syncthreads();  // as the kernel's per-step barrier before refilling a stage
    float rS[kMT][kBKV / 8][4];
    if constexpr (kMode != kSoftmax) {
      warp_qk<kD, kBKV, kMT, half>(rS, sQ, sK, q_row0, lane);
    } else {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kBKV / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) rS[mt][nt][e] = fmaf(rO[mt][nt % (kD / 8)][e], 0.5f, 0.25f);
    }
    if constexpr (kMode != kGemm) {
      warp_scale_mask<kBKV, kMT>(rS, scale_log2, false, 0, 0, 1 << 30, 0, false, lane);
      warp_online_softmax<kD, kBKV, kMT>(rS, row_m, row_l, rO);
    }
    if constexpr (kMode != kSoftmax) {
      warp_pv<kD, kBKV, kMT, half>(rO, rS, sV, lane);
    } else {
      // P packed as warp_pv packs it, consumed by one add per element of O.
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int dt = 0; dt < kD / 8; ++dt) {
          const int nt = dt % (kBKV / 8);
          const uint32_t p0 = pack2<half>(rS[mt][nt][0], rS[mt][nt][1]);
          const uint32_t p1 = pack2<half>(rS[mt][nt][2], rS[mt][nt][3]);
          rO[mt][dt][0] += __uint_as_float(p0 & 0x3f800000u);
          rO[mt][dt][1] += __uint_as_float(p0 & 0x3f000000u);
          rO[mt][dt][2] += __uint_as_float(p1 & 0x3f800000u);
          rO[mt][dt][3] += __uint_as_float(p1 & 0x3f000000u);
        }
    }
  }
  const long long t1 = clock64();
  float acc = 0.f;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    acc += row_l[mt][0] + row_l[mt][1];
#pragma unroll
    for (int dt = 0; dt < kD / 8; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc += rO[mt][dt][e];
  }
  if (acc == 1234.5f) sink[blockIdx.x] = acc;  // keeps the work; practically never stores
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

constexpr int kRing = 3, kRingGemm = 4;  // past the harness's modes: this file's own
inline const char* row_mode_name(int m) {
  return m == kRing ? "ring" : m == kRingGemm ? "ring_gemm" : mode_name(m);
}
constexpr int kRingTiles = 64;
// The ring's K tiles, then its V tiles: (kRingTiles * block_kv, d) each, row-major as the
// kernels' K and V; filled once by fill_ring.
__device__ half g_ring[2 * kRingTiles * CR_BKV * CR_D];

__global__ void fill_ring() {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 2 * kRingTiles * CR_BKV * CR_D;
       i += gridDim.x * blockDim.x)
    g_ring[i] = __float2half(0.01f * static_cast<float>((i * 7) % 13) - 0.06f);
}

// coresident_mma_kernel's full (kRing) or gemm (kRingGemm) step with wg1_mma_fwd's K/V ring
// (kStages = 2): sQ, then two stages of sK, then two of sV.
template <int kD, int kBQ, int kBKV, int kWarps, int kMode, int kMinBlocks>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks)
    coresident_mma_ring_kernel(int iters, long long* cycles, float* sink) {
  using Cfg = WarpTileConfig<kD, kBQ, kBKV, kWarps>;
  constexpr int kStages = 2;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kMT = Cfg::kMT;
  constexpr int kKVT = Cfg::kKVTileElems;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  half* sQ = reinterpret_cast<half*>(smem_raw);
  half* sK = sQ + Cfg::kQTileElems;
  half* sV = sK + kStages * kKVT;
  for (int i = threadIdx.x; i < Cfg::kQTileElems; i += blockDim.x)
    sQ[i] = __float2half(0.01f * static_cast<float>((i * 7 + blockIdx.x) % 13) - 0.06f);

  const half* gK = g_ring;
  const half* gV = g_ring + kRingTiles * kKVT;
  // CTAs start at different tiles of the ring, as a kernel's CTAs read different heads' K/V.
  const int first = static_cast<int>(blockIdx.x) % kRingTiles;
  auto load_kv = [&](int j) {  // wg1_mma_fwd's load_kv, block j of the ring
    if (j < iters) {
      const int st = j % kStages;
      const int row0 = ((first + j) % kRingTiles) * kBKV;
      load_tile_async<kBKV, kD, kThreads>(sK + st * kKVT, gK, row0, kRingTiles * kBKV);
      load_tile_async<kBKV, kD, kThreads>(sV + st * kKVT, gV, row0, kRingTiles * kBKV);
    }
    cp_async_commit();  // possibly empty: one group per block index
  };
  load_kv(0);
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int q_row0 = warp * Cfg::kRowsPerWarp;
  const float scale_log2 = 0.125f * kLog2e;
  float rO[kMT][kD / 8][4];
  float row_m[kMT][2], row_l[kMT][2];
  warp_init_state<kD, kMT>(rO, row_m, row_l);
  __syncthreads();
  const long long t0 = clock64();
  for (int j = 0; j < iters; ++j) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // block j visible to all; every warp is done with step j-1's stage
    load_kv(j + kStages - 1);
    const int stage = j % kStages;
    const half* sKj = sK + stage * kKVT;
    const half* sVj = sV + stage * kKVT;
    float rS[kMT][kBKV / 8][4];
    warp_qk<kD, kBKV, kMT, half>(rS, sQ, sKj, q_row0, lane);
    if constexpr (kMode == kRing) {
      warp_scale_mask<kBKV, kMT>(rS, scale_log2, false, 0, 0, 1 << 30, 0, false, lane);
      warp_online_softmax<kD, kBKV, kMT>(rS, row_m, row_l, rO);
    }
    warp_pv<kD, kBKV, kMT, half>(rO, rS, sVj, lane);
  }
  const long long t1 = clock64();
  cp_async_wait<0>();  // only empty groups can be pending here
  float acc = 0.f;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    acc += row_l[mt][0] + row_l[mt][1];
#pragma unroll
    for (int dt = 0; dt < kD / 8; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc += rO[mt][dt][e];
  }
  if (acc == 1234.5f) sink[blockIdx.x] = acc;  // keeps the work; practically never stores
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

// W CTAs per SM, the kernel compiled for kBound CTAs per SM (__launch_bounds__(threads,
// kBound)): kBound = W as the kernels are built; kBound > W (the `spill` pass) squeezes the
// registers so that ptxas spills the same loop, at the same W, by as much as the bound forces.
template <int kD, int kBQ, int kBKV, int kWarps, int kMode, int w, int kBound = w>
void run_w(Env& env, int iters) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kMT = kBQ / kWarps / 16;
  // Left out where O and S alone (plus ~24 registers of addresses and softmax state) would not
  // fit the registers kBound CTAs get (the spill pass: by more than half again): ptxas refuses
  // such a budget, or spills the accumulators themselves.
  constexpr int kLive = kMT * (kD / 2 + kBKV / 2) + 24;
  constexpr int kAllowed = 65536 / (kThreads * kBound) * (kBound == w ? 2 : 3) / 2;
  if constexpr (kLive > kAllowed || kThreads * kBound > 2048) {
    return;
  } else {
    constexpr bool kRingMode = kMode == kRing || kMode == kRingGemm;
    auto kernel = [] {  // only the one kernel of the mode instantiated
      if constexpr (kRingMode)
        return coresident_mma_ring_kernel<kD, kBQ, kBKV, kWarps, kMode, kBound>;
      else
        return coresident_mma_kernel<kD, kBQ, kBKV, kWarps, kMode, kBound>;
    }();
    const int need = (kBQ + (kRingMode ? 4 : 2) * kBKV) * kD * 2;
    cudaFuncAttributes attr{};
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    int smem = 0;
    const std::vector<double> cpi = cycles_per_step(kernel, kThreads, need, w, env, iters, &smem);
    if (cpi.empty()) return;
    std::printf(
        "{\"d\": %d, \"block_q\": %d, \"block_kv\": %d, \"warps\": %d, \"mode\": \"%s\", "
        "\"ctas_per_sm\": %d, \"registers_per_thread\": %d, \"local_bytes\": %d, "
        "\"smem_bytes_per_cta\": %d, \"iters\": %d, \"cycles_per_step_median\": %.1f, "
        "\"cycles_per_step_min\": %.1f, \"cycles_per_step_max\": %.1f%s}\n",
        kD, kBQ, kBKV, kWarps, row_mode_name(kMode), w, attr.numRegs,
        static_cast<int>(attr.localSizeBytes), smem, iters, median(cpi),
        *std::min_element(cpi.begin(), cpi.end()), *std::max_element(cpi.begin(), cpi.end()),
        kBound == w ? "" : (", \"launch_bound_ctas\": " + std::to_string(kBound)).c_str());
    std::fflush(stdout);
  }
}

template <int kMode>
void run(Env& env, int iters) {
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kMode, 1>(env, iters);
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kMode, 2>(env, iters);
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kMode, 3>(env, iters);
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kMode, 4>(env, iters);
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kMode, 5>(env, iters);
}

// The ring loop at W = 1 and 2, compiled for W + 1 .. W + 4 CTAs per SM: the same step with the
// registers squeezed, so that its rows against the W-bound rows of the `ring` pass give what the
// spills alone cost at a fixed W (issue #46: the tile sweep's spilling configurations run far
// slower than their loop predicts, most at one CTA per SM).
void run_spill(Env& env, int iters) {
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kRing, 1, 2>(env, iters);
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kRing, 1, 3>(env, iters);
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kRing, 1, 4>(env, iters);
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kRing, 1, 5>(env, iters);
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kRing, 2, 3>(env, iters);
  run_w<CR_D, CR_BQ, CR_BKV, CR_WARPS, kRing, 2, 4>(env, iters);
}

}  // namespace

// No argument: full, gemm, softmax; `ring`: ring, ring_gemm (coresident_mma.sh runs every tile's
// first, then every tile's second, so the first rows are measured as before the ring existed);
// `spill`: the ring loop with squeezed registers (run_spill), a third pass.
int main(int argc, char** argv) {
  const bool ring = argc > 1 && std::strcmp(argv[1], "ring") == 0;
  const bool spill = argc > 1 && std::strcmp(argv[1], "spill") == 0;
  cudaDeviceProp prop{};
  Env env = open_env(5, &prop);
  const int iters = 2048;
  if (spill) {
    fill_ring<<<env.sms, 256>>>();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    run_spill(env, iters);
  } else if (!ring) {
    run<kFull>(env, iters);
    run<kGemm>(env, iters);
    run<kSoftmax>(env, iters);
  } else {
    fill_ring<<<env.sms, 256>>>();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    run<kRing>(env, iters);
    run<kRingGemm>(env, iters);
  }
  close_env(env);
  return 0;
}
