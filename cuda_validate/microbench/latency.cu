// Latencies and load concurrency the time model needs but the profiles only hold as published
// values (hwprofiles/*.yaml, "to be replaced by a measurement"), measured on the lent GPU:
//   - ffma_chain, ex2_chain: issue-to-use latency of a dependent FP32 FMA and of MUFU.EX2;
//   - smem_chase: load-to-use latency of a shared-memory load (a pointer chase in shared memory);
//   - smem_round_trip: FlashAttention-1's O update as our kernel compiles it: ld.shared, unpack,
//     FMA, scale, pack, st.shared, then the next ld.shared (kept in order by a memory clobber),
//     cycles per round trip;
//   - shfl_chain: a dependent shfl.sync.bfly, cycles per shuffle;
//   - bar_sync: __syncthreads with 4, 8 and 32 warps in the CTA, cycles per barrier;
//   - stream: one CTA per SM streaming a DRAM-resident buffer through shared memory with
//     cp.async, as our decode kernel does (issue tile j+1, wait for tile j, work, barrier), by
//     tile size, copy stages and a synthetic per-tile compute of C cycles: ns per tile. If the
//     copy overlaps the compute, ns per tile = max(copy, compute); if the SM cannot have the
//     next tile in flight while it waits, it is their sum. The compute-free rows give the
//     bytes an SM keeps in flight (Little's law: tile bytes x stages / ns per tile x latency);
//   - cta_turnover: many CTAs that only load a 16-byte chunk, add and store it: ns per CTA and
//     SM slot, the cost of retiring a CTA and starting the next one.
// Each kernel reads clock64() (SM cycles) or globaltimer (ns) itself; results go to stdout as
// one JSON object. Build: nvcc -O3 -arch=sm_90 -o latency latency.cu
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.cuh"

constexpr int kSteps = 4096;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One warp; cycles[0] = cycles for kSteps dependent steps.
__global__ void ffma_chain(float* out, long long* cycles, float seed) {
  float x = seed + threadIdx.x;
  const long long t0 = clock64();
  for (int i = 0; i < kSteps; ++i) x = fmaf(x, 0.999f, 0.001f);
  const long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) cycles[0] = t1 - t0;
}

__global__ void ex2_chain(float* out, long long* cycles, float seed) {
  float x = seed * 1e-3f + threadIdx.x * 1e-6f;
  const long long t0 = clock64();
  for (int i = 0; i < kSteps; ++i) asm volatile("ex2.approx.f32 %0, %0;" : "+f"(x));
  const long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) cycles[0] = t1 - t0;
}

// Pointer chase in shared memory: each load's address is the previous load's value.
__global__ void smem_chase(unsigned* out, long long* cycles) {
  __shared__ unsigned next[1024];
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) next[i] = (i * 97 + 31) % 1024;
  __syncthreads();
  unsigned p = threadIdx.x;
  const long long t0 = clock64();
  for (int i = 0; i < kSteps; ++i) {
    asm volatile("ld.shared.u32 %0, [%1];"
                 : "=r"(p)
                 : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&next[p]))));
  }
  const long long t1 = clock64();
  out[threadIdx.x] = p;
  if (threadIdx.x == 0) cycles[0] = t1 - t0;
}

// flash1_fwd.cuh's O update: each round trip rewrites a different 32-bit pair (fp16x2).
__global__ void smem_round_trip(unsigned* out, long long* cycles, float keep, float inv_l) {
  __shared__ unsigned s_o[32 * 64];
  for (int i = threadIdx.x; i < 32 * 64; i += blockDim.x) s_o[i] = 0x3c003c00u;
  __syncthreads();
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(s_o)) + threadIdx.x * 4;
  const long long t0 = clock64();
  for (int i = 0; i < kSteps; ++i) {
    const unsigned addr = base + ((i * 37) % 64) * 128;
    unsigned v;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    __half2 h = *reinterpret_cast<__half2*>(&v);
    const float o0 = (keep * __low2float(h) + 0.5f) * inv_l;
    const float o1 = (keep * __high2float(h) + 0.25f) * inv_l;
    h = __floats2half2_rn(o0, o1);
    v = *reinterpret_cast<unsigned*>(&h);
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
  }
  const long long t1 = clock64();
  out[threadIdx.x] = s_o[threadIdx.x];
  if (threadIdx.x == 0) cycles[0] = t1 - t0;
}

__global__ void shfl_chain(float* out, long long* cycles, float seed) {
  float x = seed + threadIdx.x;
  const long long t0 = clock64();
  for (int i = 0; i < kSteps; ++i) x = __shfl_xor_sync(0xffffffffu, x, 1 + (i & 15));
  const long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) cycles[0] = t1 - t0;
}

__global__ void bar_sync(long long* cycles) {
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < kSteps; ++i) __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0) cycles[0] = t1 - t0;
}

__device__ __forceinline__ void cp_async_16(unsigned smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(gmem));
}

// One CTA per SM streams its own `tiles` tiles of `tile_bytes` from `src` through `stages`
// shared-memory buffers (stages - 1 tiles in flight ahead of the one in use), then spins
// `compute_cycles` per tile. ns[blockIdx.x] = time from the first issue to the last tile.
template <int kStages>
__global__ void stream(const uint4* src, int tile_bytes, int tiles, int compute_cycles,
                       unsigned long long* ns, unsigned* sink) {
  extern __shared__ uint4 s_buf[];
  const int chunks = tile_bytes / 16;
  const uint4* my = src + static_cast<size_t>(blockIdx.x) * tiles * chunks;
  const unsigned s_base = static_cast<unsigned>(__cvta_generic_to_shared(s_buf));
  auto issue = [&](int tile) {
    const int slot = tile % kStages;
    for (int c = threadIdx.x; c < chunks; c += blockDim.x)
      cp_async_16(s_base + (slot * chunks + c) * 16, my + static_cast<size_t>(tile) * chunks + c);
    asm volatile("cp.async.commit_group;");
  };
  __syncthreads();
  const unsigned long long t0 = global_ns();
  for (int t = 0; t < kStages - 1 && t < tiles; ++t) issue(t);
  unsigned acc = 0;
  for (int t = 0; t < tiles; ++t) {
    if (t + kStages - 1 < tiles)
      issue(t + kStages - 1);
    else
      asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group %0;" ::"n"(kStages - 1));
    __syncthreads();
    acc += s_buf[(t % kStages) * chunks + threadIdx.x % chunks].x;
    const long long c0 = clock64();
    while (clock64() - c0 < compute_cycles) {
    }
    __syncthreads();
  }
  const unsigned long long t1 = global_ns();
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  if (threadIdx.x == 0) ns[blockIdx.x] = t1 - t0;
}

__global__ void cta_turnover(const uint4* src, uint4* dst) {
  const uint4 v = src[blockIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) dst[blockIdx.x] = make_uint4(v.x + 1, v.y, v.z, v.w);
}

template <typename Launch>
double median_ms(Launch launch, int reps) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return t[t.size() / 2];
}

long long one_warp_cycles(void (*run)(long long*), long long* d_cycles) {
  long long h = 0;
  run(d_cycles);
  run(d_cycles);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&h, d_cycles, sizeof h, cudaMemcpyDeviceToHost));
  return h;
}

float* g_f;
unsigned* g_u;

int main() {
  cudaDeviceProp p{};
  CHECK(cudaGetDeviceProperties(&p, 0));
  const int sms = p.multiProcessorCount;
  long long* d_cycles;
  CHECK(cudaMalloc(&d_cycles, sizeof(long long) * 4));
  CHECK(cudaMalloc(&g_f, sizeof(float) * 1024));
  CHECK(cudaMalloc(&g_u, sizeof(unsigned) * 1024 * 1024));
  std::printf("{\n  \"device\": \"%s\", \"sms\": %d,\n", p.name, sms);

  const double per = 1.0 / kSteps;
  std::printf(
      "  \"ffma_chain_cycles\": %.2f,\n",
      per * one_warp_cycles([](long long* c) { ffma_chain<<<1, 32>>>(g_f, c, 1.f); }, d_cycles));
  std::printf(
      "  \"ex2_chain_cycles\": %.2f,\n",
      per * one_warp_cycles([](long long* c) { ex2_chain<<<1, 32>>>(g_f, c, 1.f); }, d_cycles));
  std::printf("  \"smem_chase_cycles\": %.2f,\n",
              per * one_warp_cycles([](long long* c) { smem_chase<<<1, 32>>>(g_u, c); }, d_cycles));
  std::printf(
      "  \"smem_round_trip_cycles\": %.2f,\n",
      per * one_warp_cycles([](long long* c) { smem_round_trip<<<1, 32>>>(g_u, c, 0.9f, 0.5f); },
                            d_cycles));
  std::printf(
      "  \"shfl_chain_cycles\": %.2f,\n",
      per * one_warp_cycles([](long long* c) { shfl_chain<<<1, 32>>>(g_f, c, 1.f); }, d_cycles));
  std::printf(
      "  \"bar_sync_cycles\": {\"warps_4\": %.2f, \"warps_8\": %.2f, \"warps_32\": %.2f},\n",
      per * one_warp_cycles([](long long* c) { bar_sync<<<1, 128>>>(c); }, d_cycles),
      per * one_warp_cycles([](long long* c) { bar_sync<<<1, 256>>>(c); }, d_cycles),
      per * one_warp_cycles([](long long* c) { bar_sync<<<1, 1024>>>(c); }, d_cycles));

  // Streaming: every CTA its own slice of a buffer 8x the L2; before the timed run a 2x-L2
  // memset evicts it (the runner's cold-L2 flush, cuda_validate/README.md).
  const size_t buf_bytes = static_cast<size_t>(p.l2CacheSize) * 8;
  const size_t flush_bytes = static_cast<size_t>(p.l2CacheSize) * 2;
  uint4* d_src;
  void* d_flush;
  unsigned long long* d_ns;
  CHECK(cudaMalloc(&d_src, buf_bytes));
  CHECK(cudaMalloc(&d_flush, flush_bytes));
  CHECK(cudaMemset(d_src, 1, buf_bytes));
  CHECK(cudaMalloc(&d_ns, sizeof(unsigned long long) * sms));
  std::printf("  \"stream\": [\n");
  bool first = true;
  const int ctas_list[] = {32, 64, sms};
  for (int ctas : ctas_list)
    for (int tile_bytes : {8192, 16384, 32768, 65536})
      for (int stages : {2, 3})
        for (int compute : {0, 1000, 2000, 4000}) {
          const int smem = tile_bytes * stages;
          const size_t per_cta = buf_bytes / sms;
          const int tiles = static_cast<int>(std::min<size_t>(per_cta / tile_bytes, 256));
          auto run = [&] {
            if (stages == 2) {
              CHECK(cudaFuncSetAttribute(stream<2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         smem));
              stream<2><<<ctas, 128, smem>>>(d_src, tile_bytes, tiles, compute, d_ns, g_u);
            } else {
              CHECK(cudaFuncSetAttribute(stream<3>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         smem));
              stream<3><<<ctas, 128, smem>>>(d_src, tile_bytes, tiles, compute, d_ns, g_u);
            }
          };
          run();  // warm-up (module load, attribute)
          CHECK(cudaGetLastError());
          CHECK(cudaMemset(d_flush, 0, flush_bytes));
          run();
          CHECK(cudaDeviceSynchronize());
          std::vector<unsigned long long> h(ctas);
          CHECK(cudaMemcpy(h.data(), d_ns, sizeof(unsigned long long) * ctas,
                           cudaMemcpyDeviceToHost));
          std::sort(h.begin(), h.end());
          const double ns_per_tile = static_cast<double>(h[ctas / 2]) / tiles;
          std::printf(
              "%s    {\"ctas\": %d, \"threads\": 128, \"tile_bytes\": %d, \"stages\": %d, "
              "\"compute_cycles\": %d, \"tiles\": %d, \"ns_per_tile\": %.1f, "
              "\"gbps_per_sm\": %.2f}",
              first ? "" : ",\n", ctas, tile_bytes, stages, compute, tiles, ns_per_tile,
              tile_bytes / ns_per_tile);
          first = false;
        }
  std::printf("\n  ],\n");

  // CTA turnover: 256-thread CTAs, 8 per SM by threads, that do almost nothing.
  const int ctas = 1 << 18;
  uint4* d_dst;
  CHECK(cudaMalloc(&d_dst, sizeof(uint4) * ctas));
  const double ms = median_ms(
      [&] {
        cta_turnover<<<ctas, 256>>>(d_src, d_dst);
        CHECK(cudaGetLastError());
      },
      10);
  std::printf(
      "  \"cta_turnover\": {\"ctas\": %d, \"threads\": 256, \"ms\": %.4f, "
      "\"ns_per_cta_per_sm\": %.1f}\n}\n",
      ctas, ms, ms * 1e6 / (static_cast<double>(ctas) / sms));
  return 0;
}
