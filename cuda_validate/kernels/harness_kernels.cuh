// The harness's fill, gather and scan kernels (support.cuh's, for runner/main.cu, and
// runner/extra_cases.cu's): random inputs, the sampled rows of an output gathered for the host
// check (and which rows: sample_rows), and a count of unwritten / non-finite outputs. Internal
// linkage (an unnamed namespace): each translation unit that includes this launches its own copy,
// so no relocatable device code is needed across main.cu and extra_cases.cu.
#pragma once

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

namespace iosim_cuda {
namespace {

// Uniform values in [-1, 1) from a counter hash; never zeros-only, reproducible.
__global__ void init_uniform_kernel(half* g_out, int64_t n, uint32_t seed) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint64_t x = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + seed;
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    const float u = static_cast<float>(x >> 40) * (1.f / 16777216.f);  // [0, 1)
    g_out[i] = __float2half(2.f * u - 1.f);
  }
}

// Copies the sampled rows of O (and L) into compact fp32 buffers for the host
// comparison: out_O (B*H, n_rows, d), out_L (B*H, n_rows).
__global__ void gather_rows_kernel(const half* gO, const float* gL, const int* g_rows, int n_rows,
                                   int seq, int d, int64_t n_bh, float* g_out_O, float* g_out_L) {
  const int64_t total = n_bh * n_rows * d;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int col = static_cast<int>(i % d);
    const int r = static_cast<int>((i / d) % n_rows);
    const int64_t bh = i / (static_cast<int64_t>(d) * n_rows);
    const int row = g_rows[r];
    g_out_O[i] = __half2float(gO[(bh * seq + row) * d + col]);
    if (col == 0 && gL != nullptr) g_out_L[bh * n_rows + r] = gL[bh * seq + row];
  }
}

// Counts non-finite halves; the output is poisoned with NaN before the checked
// run, so an element the kernel never wrote shows up here.
__global__ void count_nonfinite_kernel(const half* g_x, int64_t n, unsigned long long* g_count) {
  unsigned long long local = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (!isfinite(__half2float(g_x[i]))) ++local;
  if (local != 0) atomicAdd(g_count, local);
}

}  // namespace

// Query rows compared with the reference: both ends (ragged blocks, causal corner) and evenly
// spaced rows between.
inline std::vector<int> sample_rows(int seq) {
  std::set<int> rows;
  for (int r = 0; r < 4 && r < seq; ++r) {
    rows.insert(r);
    rows.insert(seq - 1 - r);
  }
  for (int k = 0; k < 24; ++k)
    rows.insert(static_cast<int>((static_cast<long long>(seq) * k + 7) / 24) % seq);
  return {rows.begin(), rows.end()};
}

}  // namespace iosim_cuda
