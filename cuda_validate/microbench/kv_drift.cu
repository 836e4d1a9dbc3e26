// How far the CTAs of a wave drift apart in their K/V loops (issue #47): our flash2 forward
// (kernels/flash2_fwd.cuh, the edge_l2 suite's kernel, d 128, 128 x 64 tiles, 8 warps) with its
// timing hooks defined here, so thread 0 of every CTA stamps %globaltimer at its start, at every
// kEvery-th K/V step (the top of step j, where it issues the loads of block j + 1) and at its
// end, with its SM. Which K/V blocks are live at once, and how far apart the readers of one block
// are, decide what an LRU-like L2 keeps at the edge; iosim's engine runs a wave's CTAs in step.
//
// Usage: kv_drift --batch B --heads H --seq N [--causal] --out PREFIX
// One launch warms up, a 256 MiB write evicts the L2, then the stamped launch; Nsight Compute
// profiles that one with --launch-skip 1 --launch-count 1 -k regex:flash2 (kv_drift.sh).
// Writes PREFIX.json (shape, stride, kernel time by CUDA events, GPU) and PREFIX.bin: per CTA in
// launch order (blockIdx.x fastest, then y, then z), uint32 values: SM, K/V steps, start, end,
// then one stamp per kEvery steps (ceil(steps / kEvery)); times in ns from the earliest start.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cta_stamps.cuh"

namespace kv_drift {
constexpr int kEvery = 32;              // K/V steps between stamps
__device__ unsigned long long* g_rows;  // per CTA: kHead words, then the stamps
__device__ int g_stride;                // words per CTA
constexpr int kHead = 3;                // SM << 32 | steps, start, end
}  // namespace kv_drift

#define IOSIM_FLASH2_STAMP_BEGIN(n_kv_blocks)                                                \
  unsigned long long* const stamp_row_ =                                                     \
      kv_drift::g_rows + (static_cast<size_t>(blockIdx.z) * gridDim.y * gridDim.x +          \
                          blockIdx.y * gridDim.x + blockIdx.x) *                             \
                             static_cast<size_t>(kv_drift::g_stride);                        \
  if (threadIdx.x == 0) {                                                                    \
    stamp_row_[0] = (static_cast<unsigned long long>(smid()) << 32) | unsigned(n_kv_blocks); \
    stamp_row_[1] = static_cast<unsigned long long>(gtimer());                               \
  }
#define IOSIM_FLASH2_STAMP_STEP(j)                         \
  if (threadIdx.x == 0 && (j) % kv_drift::kEvery == 0) {   \
    stamp_row_[kv_drift::kHead + (j) / kv_drift::kEvery] = \
        static_cast<unsigned long long>(gtimer());         \
  }
#define IOSIM_FLASH2_STAMP_END() \
  if (threadIdx.x == 0) stamp_row_[2] = static_cast<unsigned long long>(gtimer());

#include "../kernels/flash2_fwd.cuh"

namespace {

constexpr int kD = 128, kBQ = 128, kBKV = 64, kWarps = 8;
using Cfg = iosim_cuda::Flash2Config<kD, kBQ, kBKV, kWarps>;

__global__ void fill_kernel(half* x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = __float2half((static_cast<float>(h & 0xffff) / 65536.f - 0.5f) * 2.f);
  }
}

__global__ void evict_kernel(uint4* x, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    x[i] = make_uint4(unsigned(i), 0u, 0u, 0u);
  }
}

int arg_int(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int batch = arg_int(argc, argv, "--batch", 1);
  const int heads = arg_int(argc, argv, "--heads", 8);
  const int seq = arg_int(argc, argv, "--seq", 65536);
  bool causal = false;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--causal") == 0) causal = true;
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[i + 1];
  }
  if (out.empty() || seq % kBQ != 0) {
    std::fprintf(stderr, "usage: kv_drift --batch B --heads H --seq N [--causal] --out PREFIX\n");
    return 2;
  }
  const size_t elems = size_t{1} * batch * heads * seq * kD;
  half *q, *k, *v, *o;
  float* lse;
  CHECK(cudaMalloc(&q, elems * 2));
  CHECK(cudaMalloc(&k, elems * 2));
  CHECK(cudaMalloc(&v, elems * 2));
  CHECK(cudaMalloc(&o, elems * 2));
  CHECK(cudaMalloc(&lse, size_t{1} * batch * heads * seq * 4));
  fill_kernel<<<1024, 256>>>(q, elems, 1u);
  fill_kernel<<<1024, 256>>>(k, elems, 2u);
  fill_kernel<<<1024, 256>>>(v, elems, 3u);
  const size_t evict_n = (size_t{256} << 20) / 16;
  uint4* evict;
  CHECK(cudaMalloc(&evict, evict_n * 16));

  const int q_blocks = seq / kBQ;
  const int kv_all = seq / kBKV;
  const int stride = kv_drift::kHead + (kv_all + kv_drift::kEvery - 1) / kv_drift::kEvery;
  const size_t ctas = size_t{1} * q_blocks * batch * heads;
  unsigned long long* rows;
  CHECK(cudaMalloc(&rows, ctas * stride * 8));
  CHECK(cudaMemset(rows, 0, ctas * stride * 8));
  CHECK(cudaMemcpyToSymbol(kv_drift::g_rows, &rows, sizeof(rows)));
  CHECK(cudaMemcpyToSymbol(kv_drift::g_stride, &stride, sizeof(stride)));

  iosim_cuda::AttnParams p{};
  p.gQ = q;
  p.gK = k;
  p.gV = v;
  p.gO = o;
  p.gL = lse;
  p.batch = batch;
  p.heads = heads;
  p.seq = seq;
  p.seq_kv = seq;
  p.scale = 1.f / std::sqrt(static_cast<float>(kD));
  p.causal = causal;
  auto* kernel = &iosim_cuda::flash2_fwd_kernel<kD, kBQ, kBKV, kWarps>;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const dim3 grid(q_blocks, batch, heads);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes>>>(p);  // warm-up
  CHECK(cudaGetLastError());
  evict_kernel<<<1024, 256>>>(evict, evict_n);
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes>>>(p);  // stamped
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));

  std::vector<unsigned long long> host(ctas * stride);
  CHECK(cudaMemcpy(host.data(), rows, host.size() * 8, cudaMemcpyDeviceToHost));
  unsigned long long t_min = ~0ull;
  for (size_t c = 0; c < ctas; ++c) t_min = std::min(t_min, host[c * stride + 1]);
  std::vector<std::uint32_t> words;
  for (size_t c = 0; c < ctas; ++c) {
    const unsigned long long* r = &host[c * stride];
    const unsigned steps = static_cast<unsigned>(r[0] & 0xffffffffu);
    words.push_back(static_cast<std::uint32_t>(r[0] >> 32));
    words.push_back(steps);
    words.push_back(static_cast<std::uint32_t>(r[1] - t_min));
    words.push_back(static_cast<std::uint32_t>(r[2] - t_min));
    for (unsigned s = 0; s < (steps + kv_drift::kEvery - 1) / kv_drift::kEvery; ++s) {
      words.push_back(static_cast<std::uint32_t>(r[kv_drift::kHead + s] - t_min));
    }
  }
  FILE* f = std::fopen((out + ".bin").c_str(), "wb");
  if (f == nullptr || std::fwrite(words.data(), 4, words.size(), f) != words.size()) return 1;
  std::fclose(f);
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  f = std::fopen((out + ".json").c_str(), "w");
  if (f == nullptr) return 1;
  std::fprintf(f,
               "{\"gpu\": \"%s\", \"sms\": %d, \"l2_bytes\": %d, \"batch\": %d, \"heads\": %d, "
               "\"seq\": %d, \"head_dim\": %d, \"block_q\": %d, \"block_kv\": %d, \"warps\": %d, "
               "\"causal\": %s, \"every\": %d, \"ctas\": %zu, \"event_ms\": %.4f}\n",
               prop.name, prop.multiProcessorCount, prop.l2CacheSize, batch, heads, seq, kD, kBQ,
               kBKV, kWarps, causal ? "true" : "false", kv_drift::kEvery, ctas, ms);
  std::fclose(f);
  std::printf("%s: %zu CTAs, %.3f ms\n", out.c_str(), ctas, ms);
  return 0;
}
