// Hopper's bulk copy engine (the TMA unit's non-tensor form, cp.async.bulk, plain sm_90), measured
// on the lent GPU:
//   - latency: one thread issues one global->shared bulk copy of S bytes completing on an
//     mbarrier (mbarrier.arrive.expect_tx, then cp.async.bulk ... mbarrier::complete_tx::bytes)
//     and spins on the barrier's phase; cycles from issue to the phase flip, median of 64 copies,
//     for S = 128 B .. 64 KB, with the source in L2 (the same 64 KB read again) and in DRAM (each
//     copy from a fresh place in a 2 GB buffer);
//   - throughput: one CTA per SM, one thread keeps Q copies of S bytes in flight (Q stages of
//     shared memory, one mbarrier each: wait for stage s, reissue it), or 2 or 4 threads (lane 0
//     of separate warps) Q copies each in their own rings, each CTA streaming its own
//     slice of a buffer: from DRAM (2 GB read once) or from L2 (each CTA re-reading a 256 KB
//     window; 132 x 256 KB = 33 MB, which fits the 50 MB (H100) or 60 MB (H200) L2). Reported as
//     bytes per SM clock and GB/s over all SMs.
// The data is checked: after each throughput run every CTA sums the 4-byte words of its (first
// issuer's) last stage and the host compares with the sum it expects.
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o tma tma.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <vector>

#include "../kernels/hopper_async.cuh"
#include "check.cuh"

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

using iosim_hopper::bulk_copy;
using iosim_hopper::mbar_expect_tx;  // this thread's arrival, announcing `bytes` of copies
using iosim_hopper::mbar_init;
using iosim_hopper::mbar_wait;

// One thread. cycles[i] = cycles of copy i (issue to phase flip). stride_bytes: distance between
// the sources of consecutive copies (0: the same bytes each time, L2-resident after the first).
__global__ void latency_kernel(const uint8_t* src, unsigned bytes, size_t stride_bytes, int copies,
                               long long* cycles, unsigned* sink) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bar_storage;
  const uint32_t bar = static_cast<uint32_t>(__cvta_generic_to_shared(&bar_storage));
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  mbar_init(bar, 1);
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  unsigned acc = 0;
  for (int i = 0; i < copies; ++i) {
    const long long t0 = clock64();
    mbar_expect_tx(bar, bytes);
    bulk_copy(dst, src + stride_bytes * static_cast<size_t>(i), bytes, bar);
    mbar_wait(bar, static_cast<unsigned>(i & 1));
    const long long t1 = clock64();
    cycles[i] = t1 - t0;
    acc += reinterpret_cast<const unsigned*>(smem)[i % (bytes / 4)];
  }
  *sink = acc;
}

// One CTA per SM, `issuers` issuing threads (lane 0 of warps 0 .. issuers-1). CTA b streams
// `total_bytes` from src + b * slice_bytes; issuer w takes the w-th of `issuers` equal parts,
// wrapping within its own part of the window, with its own ring of `stages` buffers and
// barriers. With several issuers the copies in flight per SM are issuers x stages: if that
// raises the rate over one issuer's, one thread's issue loop, not the copy engine, was the limit.
__global__ void stream_kernel(const uint8_t* src, size_t slice_bytes, size_t window_bytes,
                              size_t total_bytes, unsigned bytes, int stages, int issuers,
                              long long* cycles, unsigned long long* ns, unsigned* sums) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[64];
  const int warp = threadIdx.x / 32;
  const bool issuer = threadIdx.x % 32 == 0 && warp < issuers;
  const size_t part_window = window_bytes / issuers;
  const uint8_t* base = src + slice_bytes * blockIdx.x + part_window * (issuer ? warp : 0);
  const uint32_t s0 =
      static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + (issuer ? warp : 0) * stages * bytes;
  const uint32_t b0 = static_cast<uint32_t>(__cvta_generic_to_shared(bars)) +
                      8 * (issuer ? warp : 0) * stages;
  const long long n = static_cast<long long>(total_bytes / issuers / bytes);
  if (issuer) {
    for (int s = 0; s < stages; ++s) mbar_init(b0 + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  long long t0 = 0;
  unsigned long long g0 = 0;
  if (threadIdx.x == 0) {
    t0 = clock64();
    g0 = global_ns();
  }
  if (issuer) {
    // No division in the loop: the measurements of 2026-11-23 computed the offset and stage
    // with 64-bit % and /, which capped the issue rate at one copy per ~640 cycles.
    size_t next_off = 0;  // source offset of the next copy to issue, within the part
    const long long first = stages < n ? stages : n;
    for (long long i = 0; i < first; ++i) {
      const int s = static_cast<int>(i);
      mbar_expect_tx(b0 + 8 * s, bytes);
      bulk_copy(s0 + s * bytes, base + next_off, bytes, b0 + 8 * s);
      next_off += bytes;
      if (next_off >= part_window) next_off -= part_window;
    }
    int s = 0;
    unsigned parity = 0;
    for (long long i = 0; i < n; ++i) {
      mbar_wait(b0 + 8 * s, parity);
      if (i + stages < n) {
        mbar_expect_tx(b0 + 8 * s, bytes);
        bulk_copy(s0 + s * bytes, base + next_off, bytes, b0 + 8 * s);
        next_off += bytes;
        if (next_off >= part_window) next_off -= part_window;
      }
      if (++s == stages) {
        s = 0;
        parity ^= 1u;
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    cycles[blockIdx.x] = clock64() - t0;
    ns[blockIdx.x] = global_ns() - g0;
  }
  // Checksum of issuer 0's last copy (in its ring slot (n - 1) % stages; the copy engine's
  // writes are visible to the block after the issuer's wait and the barrier above).
  const int s = static_cast<int>((n - 1) % stages);
  const unsigned* w = reinterpret_cast<const unsigned*>(smem + s * bytes);
  unsigned sum = 0;
  for (unsigned i = threadIdx.x; i < bytes / 4; i += blockDim.x) sum += w[i];
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (threadIdx.x % 32 == 0) atomicAdd(&sums[blockIdx.x], sum);
}

__global__ void fill_kernel(unsigned* p, size_t words) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<unsigned>(i * 2654435761u);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  cudaDeviceProp p{};
  CHECK(cudaGetDeviceProperties(&p, 0));
  const int sms = p.multiProcessorCount;
  // tma [CTAS]: the throughput part on CTAS SMs (default: all), e.g. 1 for one SM's own port.
  const int ctas = argc > 1 ? std::min(sms, std::max(1, std::atoi(argv[1]))) : sms;
  const size_t buf_bytes = size_t{2} << 30;
  uint8_t* buf;
  CHECK(cudaMalloc(&buf, buf_bytes));
  fill_kernel<<<1024, 256>>>(reinterpret_cast<unsigned*>(buf), buf_bytes / 4);
  CHECK(cudaGetLastError());
  long long* d_cycles;
  unsigned long long* d_ns;
  unsigned *d_sink, *d_sums;
  CHECK(cudaMalloc(&d_cycles, sizeof(long long) * 1024));
  CHECK(cudaMalloc(&d_ns, sizeof(unsigned long long) * 1024));
  CHECK(cudaMalloc(&d_sink, sizeof(unsigned)));
  CHECK(cudaMalloc(&d_sums, sizeof(unsigned) * 1024));
  const int max_smem = 200 * 1024;
  CHECK(cudaFuncSetAttribute(latency_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             max_smem));
  CHECK(cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             max_smem));
  std::printf("{\n  \"device\": \"%s\", \"sms\": %d, \"l2_bytes\": %d,\n", p.name, sms,
              p.l2CacheSize);
  std::printf("  \"latency_cycles\": [\n");
  const int copies = 64;
  bool first = true;
  for (unsigned bytes : {128u, 1024u, 4096u, 16384u, 65536u}) {
    for (int dram = 0; dram < 2; ++dram) {
      // DRAM: 16 MB apart, so no copy finds its lines in L2 (the first touches of a 1 GB walk).
      const size_t stride = dram ? (size_t{16} << 20) : 0;
      std::vector<double> c;
      for (int rep = 0; rep < 2; ++rep) {  // rep 0 warms the L2-resident case
        latency_kernel<<<1, 1, bytes>>>(buf + (dram ? 4096 * rep : 0), bytes, stride, copies,
                                         d_cycles, d_sink);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
      }
      std::vector<long long> h(copies);
      CHECK(cudaMemcpy(h.data(), d_cycles, sizeof(long long) * copies, cudaMemcpyDeviceToHost));
      for (int i = 1; i < copies; ++i) c.push_back(static_cast<double>(h[i]));  // skip the first
      std::sort(c.begin(), c.end());
      std::printf("%s    {\"bytes\": %u, \"source\": \"%s\", \"median_cycles\": %.0f, "
                  "\"min_cycles\": %.0f, \"max_cycles\": %.0f}",
                  first ? "" : ",\n", bytes, dram ? "dram" : "l2", median(c), c.front(),
                  c.back());
      first = false;
    }
  }
  std::printf("\n  ],\n  \"stream\": [\n");
  first = true;
  const size_t slice = buf_bytes / sms / 65536 * 65536;
  struct Config {
    int issuers;
    unsigned bytes;
    int stages;
  };
  std::vector<Config> configs;
  for (unsigned bytes : {1024u, 2048u, 4096u, 8192u, 16384u, 32768u})
    for (int stages : {1, 2, 4, 8, 12, 16}) configs.push_back({1, bytes, stages});
  // Several issuing threads: is the one-thread floor (about 244 cycles per copy at 1-4 KB in the
  // run of 2026-11-23 14:34) the thread's loop or the copy engine?
  for (int issuers : {2, 4})
    for (unsigned bytes : {1024u, 4096u, 16384u})
      for (int stages : {2, 4, 8}) configs.push_back({issuers, bytes, stages});
  for (int dram = 1; dram >= 0; --dram) {
    const size_t window = dram ? slice : size_t{256} << 10;
    const size_t total = dram ? slice : size_t{16} << 20;
    for (const Config& cf : configs) {
      const unsigned bytes = cf.bytes;
      const int stages = cf.stages, issuers = cf.issuers;
      {
        if (static_cast<size_t>(bytes) * stages * issuers > static_cast<size_t>(max_smem) ||
            total % (static_cast<size_t>(bytes) * issuers) != 0 ||
            (window / issuers) % bytes != 0)
          continue;
        std::vector<double> bpc, gbs, mhz;
        for (int rep = 0; rep < 3; ++rep) {
          CHECK(cudaMemset(d_sums, 0, sizeof(unsigned) * sms));
          cudaEvent_t e0, e1;
          CHECK(cudaEventCreate(&e0));
          CHECK(cudaEventCreate(&e1));
          CHECK(cudaEventRecord(e0));
          stream_kernel<<<ctas, 128, bytes * stages * issuers>>>(
              buf, slice, window, total, bytes, stages, issuers, d_cycles, d_ns, d_sums);
          CHECK(cudaGetLastError());
          CHECK(cudaEventRecord(e1));
          CHECK(cudaEventSynchronize(e1));
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, e0, e1));
          CHECK(cudaEventDestroy(e0));
          CHECK(cudaEventDestroy(e1));
          std::vector<long long> cyc(ctas);
          std::vector<unsigned long long> nsv(ctas);
          std::vector<unsigned> sums(ctas);
          CHECK(cudaMemcpy(cyc.data(), d_cycles, sizeof(long long) * ctas,
                           cudaMemcpyDeviceToHost));
          CHECK(cudaMemcpy(nsv.data(), d_ns, sizeof(unsigned long long) * ctas,
                           cudaMemcpyDeviceToHost));
          CHECK(cudaMemcpy(sums.data(), d_sums, sizeof(unsigned) * ctas, cudaMemcpyDeviceToHost));
          // Expected checksum of issuer 0's last copy in CTA b: the words fill_kernel wrote there.
          for (int b = 0; b < ctas; ++b) {
            const size_t last = total / issuers / bytes - 1;
            const size_t off = slice * b + (last * bytes) % (window / issuers);
            unsigned want = 0;
            for (size_t w = off / 4; w < (off + bytes) / 4; ++w)
              want += static_cast<unsigned>(w * 2654435761u);
            if (want != sums[b]) {
              std::fprintf(stderr, "checksum mismatch: CTA %d bytes %u stages %d\n", b, bytes,
                           stages);
              return 1;
            }
          }
          std::vector<double> c(cyc.begin(), cyc.end()), clk;
          for (int b = 0; b < ctas; ++b)
            clk.push_back(1e3 * static_cast<double>(cyc[b]) / static_cast<double>(nsv[b]));
          bpc.push_back(static_cast<double>(total) / median(c));
          gbs.push_back(static_cast<double>(total) * ctas / (ms * 1e-3) / 1e9);
          mhz.push_back(median(clk));
        }
        std::printf("%s    {\"source\": \"%s\", \"bytes_per_copy\": %u, \"issuers\": %d, "
                    "\"copies_in_flight_per_issuer\": %d, \"copies_in_flight\": %d, "
                    "\"bytes_per_clk_per_sm\": %.2f, \"gb_per_s_all_sms_event_timed\": %.1f, "
                    "\"sm_clock_mhz\": %.0f, \"bytes_per_cta\": %zu, \"ctas\": %d, \"checksums\": \"ok\"}",
                    first ? "" : ",\n", dram ? "dram" : "l2", bytes, issuers, stages,
                    issuers * stages, median(bpc),
                    median(gbs), median(mhz), total, ctas);
        std::fflush(stdout);
        first = false;
      }
    }
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
