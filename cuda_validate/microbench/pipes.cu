// Throughput of the pipes iosim's compute model times apart, measured on the lent GPU:
//   - tensor cores through mma.sync.m16n8k16 (fp16 in, fp32 accumulate), by warps per SM and by
//     independent accumulator chains per warp (ILP), since a CTA with few warps cannot fill them;
//   - the SFU through ex2.approx.f32;
//   - FP32 FMA.
// Each kernel runs one CTA per SM (grid = #SMs) so that rates are per SM; the clock is read with
// clock64() inside the kernel, so results are in operations per SM clock.
// Build: nvcc -O3 -arch=sm_90 -o pipes pipes.cu
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "check.cuh"

constexpr int kIters = 4096;

template <int ILP>
__global__ void mma_kernel(float* out, long long* cycles) {
  unsigned a[4] = {0x3c003c00u ^ threadIdx.x, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u};
  unsigned b[2] = {0x3c003c00u, 0x3c003c00u ^ blockIdx.x};
  float acc[ILP][4] = {};
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int k = 0; k < ILP; ++k) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(acc[k][0]), "+f"(acc[k][1]), "+f"(acc[k][2]), "+f"(acc[k][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = 0;
#pragma unroll
  for (int k = 0; k < ILP; ++k) s += acc[k][0] + acc[k][1] + acc[k][2] + acc[k][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

// The SFU (ex2.approx.f32) and the FP32 FMA pipe: 8 independent chains of Op::step a thread.
struct Ex2 {
  __device__ static void step(float& x) { asm volatile("ex2.approx.f32 %0, %0;\n" : "+f"(x)); }
};
struct Fma {
  __device__ static void step(float& x) { x = fmaf(x, 0.999f, 0.001f); }
};

template <typename Op>
__global__ void chain_kernel(float* out, long long* cycles) {
  float x[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) x[k] = 0.001f * (threadIdx.x + k);
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int k = 0; k < 8; ++k) Op::step(x[k]);
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = 0;
  for (int k = 0; k < 8; ++k) s += x[k];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

// Median over CTAs of the per-CTA cycle count.
template <typename Kernel>
double median_cycles(Kernel k, int sms, int threads, float* out, long long* cycles) {
  k<<<sms, threads>>>(out, cycles);
  CHECK(cudaGetLastError());
  k<<<sms, threads>>>(out, cycles);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  long long* h = static_cast<long long*>(std::malloc(sizeof(long long) * sms));
  CHECK(cudaMemcpy(h, cycles, sizeof(long long) * sms, cudaMemcpyDeviceToHost));
  for (int i = 0; i < sms; ++i)
    for (int j = i + 1; j < sms; ++j)
      if (h[j] < h[i]) {
        long long t = h[i];
        h[i] = h[j];
        h[j] = t;
      }
  const double m = static_cast<double>(h[sms / 2]);
  std::free(h);
  return m;
}

int main() {
  cudaDeviceProp p{};
  CHECK(cudaGetDeviceProperties(&p, 0));
  const int sms = p.multiProcessorCount;
  float* out;
  long long* cycles;
  CHECK(cudaMalloc(&out, sizeof(float) * sms * 1024));
  CHECK(cudaMalloc(&cycles, sizeof(long long) * sms));
  std::printf("{\n  \"device\": \"%s\", \"sms\": %d,\n  \"mma_sync_m16n8k16_f16_f32\": [\n", p.name,
              sms);
  const int warps_list[] = {1, 2, 4, 8, 16, 32};
  bool first = true;
  for (int w : warps_list) {
    const double c1 = median_cycles(mma_kernel<1>, sms, 32 * w, out, cycles);
    const double c2 = median_cycles(mma_kernel<2>, sms, 32 * w, out, cycles);
    const double c4 = median_cycles(mma_kernel<4>, sms, 32 * w, out, cycles);
    const double flops = 4096.0 * kIters * w;  // per SM: 2*16*8*16 FLOPs per mma per warp
    std::printf(
        "%s    {\"warps_per_sm\": %d, \"flops_per_clk_per_sm_ilp1\": %.1f, \"ilp2\": %.1f, "
        "\"ilp4\": %.1f}",
        first ? "" : ",\n", w, flops / c1, 2 * flops / c2, 4 * flops / c4);
    first = false;
  }
  // key: the JSON array's name; rate: its per-row member, printed with `digits` decimals; ops:
  // operations per thread and iteration (an FMA counts 2 FLOPs).
  auto series = [&](const char* key, const char* rate, auto kernel, double ops, int digits) {
    std::printf("\n  ],\n  \"%s\": [\n", key);
    bool first_row = true;
    for (int w : {4, 8, 16, 32}) {
      const double c = median_cycles(kernel, sms, 32 * w, out, cycles);
      std::printf("%s    {\"warps_per_sm\": %d, \"%s\": %.*f}", first_row ? "" : ",\n", w, rate,
                  digits, ops * kIters * 32 * w / c);
      first_row = false;
    }
  };
  series("ex2_approx_f32_per_clk_per_sm", "ops_per_clk", chain_kernel<Ex2>, 8.0, 2);
  series("fma_f32_flops_per_clk_per_sm", "flops_per_clk", chain_kernel<Fma>, 2.0 * 8, 1);
  std::printf("\n  ]\n}\n");
  return 0;
}
