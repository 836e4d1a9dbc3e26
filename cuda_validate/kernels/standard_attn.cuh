// The unfused ("standard") attention's own kernels. The two products
// S = scale * Q K^T and O = P V run in cuBLAS (see runner/standard.cu); what is
// here is what frameworks launch between them: an optional causal mask over S
// (read S, write S) and a row softmax (read S, write P). S and P are fp16
// (B, H, N, Nkv) in global memory, so each costs one full pass of HBM traffic.
#pragma once

#include <cmath>

#include "common.cuh"

namespace iosim_cuda {

constexpr int kSoftmaxThreads = 256;

// S[b,h,i,j] = -inf where key j is above the bottom-right diagonal. One thread
// per 8 consecutive halves (16-byte load and store). Requires Nkv % 8 == 0.
__global__ void causal_mask_kernel(half* gS, int64_t n_chunks, int seq, int seq_kv) {
  const int64_t chunk = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (chunk >= n_chunks) return;
  const int chunks_per_row = seq_kv / 8;
  const int64_t row_flat = chunk / chunks_per_row;  // over (B, H, N)
  const int row = static_cast<int>(row_flat % seq);
  const int col0 = static_cast<int>(chunk % chunks_per_row) * 8;
  const int last_visible = row + (seq_kv - seq);
  uint4 v = *reinterpret_cast<const uint4*>(gS + chunk * 8);  // (8) halves
  half* e = reinterpret_cast<half*>(&v);
#pragma unroll
  for (int k = 0; k < 8; ++k)
    if (col0 + k > last_visible) e[k] = __float2half(-INFINITY);
  *reinterpret_cast<uint4*>(gS + chunk * 8) = v;
}

// P[row, :] = softmax(S[row, :]). One CTA per row (grid = B*H*N). The row is
// read from global memory once into shared memory (Nkv halves), so S is read
// once and P written once; max and sum come from the shared copy.
__global__ void __launch_bounds__(kSoftmaxThreads)
    softmax_rows_kernel(const half* gS, half* gP, int seq_kv) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  half* sRow = reinterpret_cast<half*>(smem_raw);  // (Nkv)
  __shared__ float s_red[kSoftmaxThreads / 32];

  const int64_t row = blockIdx.x;
  const half* gSrow = gS + row * seq_kv;
  half* gProw = gP + row * seq_kv;
  const int n_chunks = seq_kv / 8;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  float m = -INFINITY;
  for (int c = threadIdx.x; c < n_chunks; c += kSoftmaxThreads) {
    const uint4 v = *reinterpret_cast<const uint4*>(gSrow + c * 8);
    *reinterpret_cast<uint4*>(sRow + c * 8) = v;
    const half* e = reinterpret_cast<const half*>(&v);
#pragma unroll
    for (int k = 0; k < 8; ++k) m = fmaxf(m, __half2float(e[k]));
  }
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) s_red[warp] = m;
  __syncthreads();
  m = s_red[0];
#pragma unroll
  for (int w = 1; w < kSoftmaxThreads / 32; ++w) m = fmaxf(m, s_red[w]);
  __syncthreads();  // s_red is reused for the sum

  float sum = 0.f;
  for (int c = threadIdx.x; c < n_chunks; c += kSoftmaxThreads) {
    const uint4 v = *reinterpret_cast<const uint4*>(sRow + c * 8);
    const half* e = reinterpret_cast<const half*>(&v);
#pragma unroll
    for (int k = 0; k < 8; ++k) sum += __expf(__half2float(e[k]) - m);
  }
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) s_red[warp] = sum;
  __syncthreads();
  sum = 0.f;
#pragma unroll
  for (int w = 0; w < kSoftmaxThreads / 32; ++w) sum += s_red[w];
  const float inv_sum = 1.f / sum;

  for (int c = threadIdx.x; c < n_chunks; c += kSoftmaxThreads) {
    uint4 v = *reinterpret_cast<const uint4*>(sRow + c * 8);
    half* e = reinterpret_cast<half*>(&v);
#pragma unroll
    for (int k = 0; k < 8; ++k) e[k] = __float2half(__expf(__half2float(e[k]) - m) * inv_sum);
    *reinterpret_cast<uint4*>(gProw + c * 8) = v;
  }
}

}  // namespace iosim_cuda
