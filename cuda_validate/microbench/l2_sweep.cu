// How does the L2 replace lines when a kernel sweeps a footprint around its capacity again and
// again? iosim models each L2 partition as a 16-way LRU cache, which on a cyclic sweep larger than
// it keeps nothing (every line is evicted just before its reuse); flash1 sits on that cliff
// (cuda_validate/measurements/CALIBRATION.md). This kernel reads a W-byte buffer `reps` times in the same
// grid-stride order; run it under Nsight Compute (--cache-control all, a few metrics: one replay
// pass) and the DRAM reads give the hit rate of the repeated sweeps:
//   hit rate = 1 - (dram_read - W) / ((reps - 1) * W).
// Two mappings: "same" (each 16-byte chunk is read by the same thread every sweep, so by the
// same SM: the line lives in that SM's L2 partition and its home) and "shift" (sweep r reads
// chunk i from CTA (c + r) mod grid: over the sweeps a line is read from several SMs, so from
// both partitions, as K/V tiles are in the flash kernels).
// Each launch prints one JSON line (index, mapping, footprint bytes, reps) in launch order.
// Build: nvcc -O3 -arch=sm_90 -o l2_sweep l2_sweep.cu
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "check.cuh"

__global__ void sweep_kernel(const int4* __restrict__ buf, long long n, int reps, int shift,
                             int* __restrict__ sink) {
  int acc = 0;
  const long long threads = static_cast<long long>(gridDim.x) * blockDim.x;
  for (int r = 0; r < reps; ++r) {
    const long long cta = (blockIdx.x + static_cast<long long>(shift) * r) % gridDim.x;
    for (long long i = cta * blockDim.x + threadIdx.x; i < n; i += threads) {
      const int4 v = __ldcg(buf + i);
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  acc = __reduce_xor_sync(0xffffffffu, acc);
  if (threadIdx.x == 0) atomicXor(sink + blockIdx.x, acc);
}

int main() {
  cudaDeviceProp p{};
  CHECK(cudaGetDeviceProperties(&p, 0));
  const int ctas = p.multiProcessorCount;  // one CTA per SM: the mapping decides the SM
  const long long l2 = p.l2CacheSize;
  const int reps = 5;
  const double fractions[] = {0.25, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
                              1.1,  1.2, 1.35, 1.5, 1.75, 2.0, 3.0};
  char* buf = nullptr;
  int* sink = nullptr;
  CHECK(cudaMalloc(&buf, 3 * l2 + 4096));
  CHECK(cudaMalloc(&sink, sizeof(int) * ctas));
  CHECK(cudaMemset(buf, 1, 3 * l2 + 4096));
  CHECK(cudaMemset(sink, 0, sizeof(int) * ctas));
  CHECK(cudaDeviceSynchronize());
  std::fprintf(stderr, "device %s, L2 %lld bytes, %d CTAs x 1024 threads, %d sweeps\n", p.name, l2,
               ctas, reps);
  int index = 0;
  for (int shift : {0, 1}) {
    for (double f : fractions) {
      const long long bytes = static_cast<long long>(f * static_cast<double>(l2)) / 4096 * 4096;
      sweep_kernel<<<ctas, 1024>>>(reinterpret_cast<const int4*>(buf), bytes / 16, reps, shift,
                                   sink);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      std::printf(
          "{\"index\": %d, \"mapping\": \"%s\", \"footprint_bytes\": %lld, \"l2_bytes\": %lld, "
          "\"reps\": %d}\n",
          index++, shift ? "shift" : "same", bytes, l2, reps);
    }
  }
  CHECK(cudaFree(buf));
  CHECK(cudaFree(sink));
  return 0;
}
