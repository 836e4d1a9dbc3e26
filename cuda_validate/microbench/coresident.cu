// How far the softmax of one warpgroup runs under the wgmma of other warpgroups on the same SM
// (issue #27: the co-resident overlap of single-warpgroup wgmma CTAs), sm_90a only.
//
// The kernel is the compute loop of kernels/wg1_tma_fwd.cuh (one warpgroup per CTA: S = Q K^T by
// wgmma SS, wait, online softmax of S in registers, P packed as the A fragments, O += P V by
// wgmma RS, wait) over Q, K and V tiles that stay in shared memory: no TMA, no barrier but the
// kernel's per-step __syncthreads, no global memory in the loop. So what it times is the SM's
// pipes alone. Three modes of the same loop:
//   full     the loop as the attention kernel runs it;
//   gemm     the two wgmma products and the packing of S into P, no softmax (tensor side alone);
//   softmax  the softmax and packing, no wgmma (S is refreshed by one FFMA per element instead);
// each with W = 1..4 CTAs resident on every SM (grid W x #SMs; dynamic shared memory padded so
// that no more than W fit; CTAs per SM that registers allow are reported, and W beyond them is
// skipped). Every CTA reads clock64 around its loop of `iters` steps; the line printed per
// (tile, mode, W) holds the median, min and max SM cycles per step over the CTAs.
// What it answers: with W CTAs on an SM, is a step W x (its time alone) (no overlap), or
// max(W x tensor, W x softmax, alone) (each pipe's work hidden under the others'), or between?
// Data are small fp16 values; the results are not checked (the loop's wgmma forms, descriptors
// and fragment layouts are the ones wg1_tma_fwd's output checks pass with).
// Build (sm_90a only): nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a coresident.cu
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "../kernels/common.cuh"
#include "../kernels/wg1_tma_fwd.cuh"
#include "check.cuh"
#include "coresident_harness.cuh"

namespace {

using namespace iosim_cuda;
using namespace iosim_hopper;
using namespace coresident_harness;

template <int kD, int kBQ, int kBKV, int kMode, int kMinBlocks>
__global__ void __launch_bounds__(128, kMinBlocks)
    coresident_kernel(int iters, long long* cycles, float* sink) {
  constexpr int kRG = kBQ / 64;
  constexpr int kQColBlock = kBQ * 128;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t pad = (1024 - (raw & 1023)) & 1023;
  const uint32_t s_q = raw + pad, s_k = s_q + kBQ * kD * 2, s_v = s_k + kBKV * kD * 2;
  __half* tiles = reinterpret_cast<__half*>(smem_raw + pad);
  const int n_halves = (kBQ + 2 * kBKV) * kD;
  for (int i = threadIdx.x; i < n_halves; i += blockDim.x)
    tiles[i] = __float2half(0.01f * static_cast<float>((i * 7 + blockIdx.x) % 13) - 0.06f);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  (void)warp;
  (void)g;
  (void)t;
  const float scale_log2 = 0.125f * kLog2e;
  float o[kRG][kD / 2];
  float m[kRG][2], l[kRG][2];
  wg_init_state<kD, kRG>(o, m, l);
  __syncthreads();
  const long long t0 = clock64();
  for (int j = 0; j < iters; ++j) {
    if (j > 0) __syncthreads();  // as the kernel's per-step barrier before refilling a stage
    float s[kRG][kBKV / 2];      // S of this step only, as in the kernel
    if constexpr (kMode != kSoftmax) {
      wg_qk<false, kD, kBKV, kRG>(s, s_q, kQColBlock, s_k);
    } else {
#pragma unroll
      for (int rg = 0; rg < kRG; ++rg)
#pragma unroll
        for (int i = 0; i < kBKV / 2; ++i) s[rg][i] = fmaf(o[rg][i % (kD / 2)], 0.5f, 0.25f);
    }
    uint32_t pa[kRG][kBKV / 16][4];
#pragma unroll
    for (int rg = 0; rg < kRG; ++rg) {
      if constexpr (kMode != kGemm) {
#pragma unroll
        for (int i = 0; i < kBKV / 2; ++i) s[rg][i] *= scale_log2;
        wg_online_softmax<kBKV, kD>(s[rg], m[rg], l[rg], o[rg]);
      }
      wg_pack_p<__half, kBKV>(s[rg], pa[rg]);
    }
    if constexpr (kMode != kSoftmax) {
      wg_pv<false, kD, kBKV, kRG>(o, pa, s_v);
    } else {
      // P is consumed as the product would: one add per packed pair into O.
#pragma unroll
      for (int rg = 0; rg < kRG; ++rg)
#pragma unroll
        for (int i = 0; i < kD / 2; ++i)
          o[rg][i] += __uint_as_float(pa[rg][(i / 8) % (kBKV / 16)][i % 4] & 0x3f800000u);
    }
  }
  const long long t1 = clock64();
  float acc = 0.f;
#pragma unroll
  for (int rg = 0; rg < kRG; ++rg) {
    acc += l[rg][0] + l[rg][1];
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) acc += o[rg][i];
  }
  if (acc == 1234.5f) sink[blockIdx.x] = acc;  // keeps the work; practically never stores
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

// W CTAs per SM, the kernel compiled for W (__launch_bounds__(128, W): ptxas fits its registers
// to W CTAs, as a kernel's author does when tuning occupancy).
template <int kD, int kBQ, int kBKV, int kMode, int w>
void run_w(Env& env, int iters) {
  // Left out where S and O alone (plus ~24 registers of addresses and softmax state) would not
  // fit the registers W CTAs get: ptxas refuses such a budget.
  constexpr int kLive = (kBQ / 64) * (kD / 2 + kBKV / 2) + 24;
  if constexpr (kLive > 65536 / (128 * w)) {
    return;
  } else {
    auto kernel = coresident_kernel<kD, kBQ, kBKV, kMode, w>;
    const int need = 1024 + (kBQ + 2 * kBKV) * kD * 2;
    cudaFuncAttributes attr{};
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    int smem = 0;
    const std::vector<double> cpi = cycles_per_step(kernel, 128, need, w, env, iters, &smem);
    if (cpi.empty()) return;
    std::printf(
        "%s{\"d\": %d, \"block_q\": %d, \"block_kv\": %d, \"mode\": \"%s\", "
        "\"ctas_per_sm\": %d, \"registers_per_thread\": %d, \"local_bytes\": %d, "
        "\"smem_bytes_per_cta\": %d, "
        "\"iters\": %d, \"cycles_per_step_median\": %.1f, \"cycles_per_step_min\": %.1f, "
        "\"cycles_per_step_max\": %.1f}",
        env.first ? "" : ",\n", kD, kBQ, kBKV, mode_name(kMode), w, attr.numRegs,
        static_cast<int>(attr.localSizeBytes), smem, iters, median(cpi),
        *std::min_element(cpi.begin(), cpi.end()), *std::max_element(cpi.begin(), cpi.end()));
    std::fflush(stdout);
    env.first = false;
  }
}

template <int kD, int kBQ, int kBKV, int kMode>
void run(Env& env, int iters) {
  run_w<kD, kBQ, kBKV, kMode, 1>(env, iters);
  run_w<kD, kBQ, kBKV, kMode, 2>(env, iters);
  run_w<kD, kBQ, kBKV, kMode, 3>(env, iters);
  run_w<kD, kBQ, kBKV, kMode, 4>(env, iters);
}

template <int kD, int kBQ, int kBKV>
void run_modes(Env& env) {
  const int iters = 2048;
  run<kD, kBQ, kBKV, kFull>(env, iters);
  run<kD, kBQ, kBKV, kGemm>(env, iters);
  run<kD, kBQ, kBKV, kSoftmax>(env, iters);
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  Env env = open_env(4, &prop);
  std::printf("{\"device\": \"%s\", \"sms\": %d, \"results\": [\n", prop.name, env.sms);
  run_modes<64, 128, 64>(env);
  run_modes<64, 64, 64>(env);
  run_modes<64, 64, 128>(env);
  run_modes<64, 128, 128>(env);
  run_modes<128, 128, 64>(env);
  run_modes<128, 64, 64>(env);
  run_modes<128, 64, 128>(env);
  std::printf("\n]}\n");
  close_env(env);
  return 0;
}
