// What the two co-resident microbenchmarks share (coresident.cu: wg1_tma_fwd's wgmma loop;
// coresident_mma.cu: wg1_mma_fwd's mma.sync loop): the three modes of their loop, the device's
// SMs and shared memory, and one measurement: a kernel launched with exactly w CTAs on every SM
// (its dynamic shared memory padded so that no more fit), the SM cycles per step of each CTA.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "check.cuh"

namespace coresident_harness {

enum Mode { kFull = 0, kGemm = 1, kSoftmax = 2 };
inline const char* mode_name(int m) {
  return m == kFull ? "full" : m == kGemm ? "gemm" : "softmax";
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Env {
  int sms = 0;
  int smem_per_sm = 0;
  int reserved = 0;
  long long* cycles = nullptr;
  float* sink = nullptr;
  bool first = true;  // no row printed yet (coresident.cu's rows are one JSON array)
};

// The current device's SMs and shared memory, and room for the cycles of max_w CTAs per SM.
inline Env open_env(int max_w, cudaDeviceProp* prop) {
  Env env;
  int dev = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaGetDeviceProperties(prop, dev));
  env.sms = prop->multiProcessorCount;
  env.smem_per_sm = static_cast<int>(prop->sharedMemPerMultiprocessor);
  env.reserved = static_cast<int>(prop->reservedSharedMemPerBlock);
  CHECK(cudaMalloc(&env.cycles, sizeof(long long) * max_w * env.sms));
  CHECK(cudaMalloc(&env.sink, sizeof(float) * max_w * env.sms));
  return env;
}

inline void close_env(Env& env) {
  CHECK(cudaFree(env.cycles));
  CHECK(cudaFree(env.sink));
}

// Runs `kernel(iters, cycles, sink)` on w CTAs of `threads` threads per SM, at least `need` bytes
// of dynamic shared memory each (w of them fit the SM, w + 1 do not), the first launch a warm-up.
// Returns each CTA's cycles per step, and the shared memory it got in *smem; empty where shared
// memory or registers allow fewer than w CTAs.
template <typename Kernel>
std::vector<double> cycles_per_step(Kernel kernel, int threads, int need, int w, const Env& env,
                                    int iters, int* smem) {
  *smem = std::max(need, env.smem_per_sm / w - env.reserved - 64);
  if (*smem > 232448) return {};
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, *smem));
  int occ = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, threads, *smem));
  if (occ != w) return {};  // registers (or the tiles) allow fewer than w
  const int grid = w * env.sms;
  for (int rep = 0; rep < 2; ++rep) {  // the first launch warms up; the second is kept
    kernel<<<grid, threads, *smem>>>(iters, env.cycles, env.sink);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  }
  std::vector<long long> cyc(grid);
  CHECK(cudaMemcpy(cyc.data(), env.cycles, sizeof(long long) * grid, cudaMemcpyDeviceToHost));
  std::vector<double> cpi;
  for (long long c : cyc) cpi.push_back(static_cast<double>(c) / iters);
  return cpi;
}

}  // namespace coresident_harness
