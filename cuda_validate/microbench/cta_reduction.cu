// What a CTA-wide reduction costs on the SM, phase by phase: the standard attention softmax's row
// maximum and row sum (cuda_validate/kernels/standard_attn.cuh, softmax_phases.cu) are each a warp
// shuffle tree, a shared-memory exchange between two barriers, and a read of every warp's partial.
// tile_costs.hpp's softmax_rows charges them as 7 shared-memory round trips and 13 dependent FP32
// operations (~260 cycles); softmax_phases_2026-11-28 measured 474-506 cycles for the maximum at
// 512 columns. Each variant below runs `kIters` dependent reductions in a loop (each iteration's
// input is the last one's result), thread 0 stamps clock64 around the loop, and one JSON line per
// variant, threads per CTA and CTAs per SM gives the median and spread over the CTAs of cycles per
// iteration. Every SM holds the same number of CTAs (grid = SMs x CTAs per SM, dynamic shared
// memory sized so that no more fit).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "cta_stamps.cuh"

namespace {

constexpr int kIters = 2048;

enum Variant : int {
  kShuffle = 0,       // 5 dependent shfl_xor + fmaxf (one warp's tree)
  kBarrier = 1,       // __syncthreads with a dependent FP32 op between
  kSmemExchange = 2,  // lane 0 stores, barrier, every thread reads one partial, barrier
  kBlockMax = 3,      // the softmax's maximum: shuffle tree, exchange, fmaxf over the partials
  kBlockSum = 4,  // the softmax's sum: shuffle tree, exchange, sum of the partials (one barrier)
  kVariants = 5
};
const char* kNames[kVariants] = {"shuffle_tree", "barrier", "smem_exchange", "block_max",
                                 "block_sum"};

__device__ __forceinline__ float warp_max(float m) {
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  return m;
}

__global__ void reduce_kernel(int variant, float seed, long long* cycles) {
  extern __shared__ float s_red[];  // one partial per warp (the rest only limits residency)
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  float v = seed + static_cast<float>(threadIdx.x) * 1e-3f;
  __syncthreads();
  const long long c0 = clock64();
  for (int i = 0; i < kIters; ++i) {
    if (variant == kShuffle) {
      v = warp_max(v) * 0.999f;
    } else if (variant == kBarrier) {
      v = v * 0.999f + 1e-3f;
      __syncthreads();
    } else if (variant == kSmemExchange) {
      if (lane == 0) s_red[warp] = v;
      __syncthreads();
      v = s_red[(warp + 1) % warps] * 0.999f;
      __syncthreads();
    } else if (variant == kBlockMax) {
      float m = warp_max(v);
      if (lane == 0) s_red[warp] = m;
      __syncthreads();
      m = s_red[0];
      for (int w = 1; w < warps; ++w) m = fmaxf(m, s_red[w]);
      __syncthreads();
      v = m * 0.999f;
    } else {
      float s = v;
      for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (lane == 0) s_red[warp] = s;
      __syncthreads();
      s = 0.f;
      for (int w = 0; w < warps; ++w) s += s_red[w];
      __syncthreads();  // the next iteration's store must not overwrite a partial still read
      v = s * 1e-3f;
    }
  }
  const long long c1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = (c1 - c0) + (v > 1e30f ? 1 : 0);
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  CHECK(cudaFuncSetAttribute(reduce_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(prop.sharedMemPerBlockOptin)));
  long long* d_cycles = nullptr;
  CHECK(cudaMalloc(&d_cycles, sizeof(long long) * sms * 16));
  for (int threads : {128, 256, 512, 1024}) {
    for (int per_sm : {1, 2, 4, 8}) {
      if (threads * per_sm > prop.maxThreadsPerMultiProcessor) continue;
      // Shared memory that lets exactly per_sm CTAs share an SM (1 KiB of it is reserved a CTA).
      const size_t smem = prop.sharedMemPerMultiprocessor / per_sm - 1024;
      const int grid = sms * per_sm;
      for (int variant = 0; variant < kVariants; ++variant) {
        reduce_kernel<<<grid, threads, smem>>>(variant, 1.0f, d_cycles);  // warm-up
        reduce_kernel<<<grid, threads, smem>>>(variant, 1.0f, d_cycles);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::vector<long long> c(grid);
        CHECK(cudaMemcpy(c.data(), d_cycles, sizeof(long long) * grid, cudaMemcpyDeviceToHost));
        std::vector<double> per_iter;
        for (long long x : c) per_iter.push_back(static_cast<double>(x) / kIters);
        std::printf(
            "{\"variant\": \"%s\", \"threads\": %d, \"ctas_per_sm\": %d, \"iterations\": %d, "
            "\"cycles_per_iter_p10\": %.1f, \"cycles_per_iter_median\": %.1f, "
            "\"cycles_per_iter_p90\": %.1f}\n",
            kNames[variant], threads, per_sm, kIters, percentile(per_iter, 0.1),
            percentile(per_iter, 0.5), percentile(per_iter, 0.9));
      }
    }
  }
  CHECK(cudaFree(d_cycles));
  return 0;
}
