// What the L2 keeps when many SMs re-read one buffer (issue #47): the pattern of an attention
// kernel's K/V, which every CTA of a head streams. l2_sweep.cu gave each 16-byte chunk one
// reader; here the reader set is chosen by SM id, and every reader may read the whole buffer.
//
// A CTA learns its SM (%smid) and the first CTA to arrive on an SM becomes that SM's worker
// (an atomic per SM); the others exit. Which SMs work is the launch's "set":
//   all   every SM                     one    SM 0 alone
//   low   SMs 0 .. n/2 - 1             even   SMs with an even id
// and how they read is its "mapping":
//   shared  every worker reads the whole W-byte buffer `reps` times, in the same order
//   own     worker k of K reads every K-th 16 KiB block of the buffer, `reps` times
//   pair    as shared, but the footprint is two halves 128 MiB apart, read side by side: the
//           K and V tiles of attention, whose tensors sit a power of two apart (does the
//           address hash put such pairs in the same sets?)
//   layout  ("layout" launches) as shared, but the footprint is 4 KiB pages at the addresses a
//           table gives: contiguous, scattered (a random permutation of pages over 4x the
//           footprint), or strided (every 2nd or every 16th page). If the GPU's gradual knee at
//           half the L2 came from how its address hash spreads a footprint over the sets, it
//           would move with the layout; a replacement policy's signature would not.
// Each launch prints one JSON line; Nsight Compute (--cache-control all: a cold L2 per launch)
// gives its DRAM reads, from which the hit rate of sweeps 2..reps is
//   1 - (dram_read - W) / ((reps - 1) W).
// With "shared" the first reader of a line fetches it and the others find it, so what the sweeps
// after the first miss is what the L2 could not keep of W between two sweeps: a knee near the
// capacity means a line is held once, near half of it means it is held in both partitions.
//
// Scan ("scan" launches, one kernel each, cold L2): every SM's worker reads its share of a hot
// set X twice, then of a buffer Y of S bytes once, then of X again, the phases separated by a
// barrier of all workers. DRAM reads - X - S is what X lost to S bytes of streaming: an LRU keeps
// X whole while X + S fits and nothing after; a policy that inserts new lines at low priority
// (scan resistant) keeps X past that; random replacement loses it gradually. (One kernel, since
// Nsight Compute saves and restores memory around every profiled launch, which evicts the L2
// between launches even with --cache-control none: measured, every launch after the first
// missed in full.)
// Build: nvcc -O3 -arch=sm_90 -o l2_policy l2_policy.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "check.cuh"

namespace {

constexpr int kBlockChunks = 1024;  // 16 KiB blocks of the "own" mapping (1024 int4)

enum Set { kAll = 0, kOne = 1, kLow = 2, kEven = 3 };
const char* const kSetNames[] = {"all", "one", "low", "even"};

__device__ unsigned smid() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

__device__ bool in_set(int set, unsigned sm, unsigned sms) {
  switch (set) {
    case kAll:
      return true;
    case kOne:
      return sm == 0;
    case kLow:
      return sm < sms / 2;
    default:
      return sm % 2 == 0;
  }
}

// Reads worker `rank`'s 16 KiB blocks (every `workers`-th) of `chunks` int4 from `buf`.
__device__ int read_own(const int4* __restrict__ buf, long long chunks, unsigned rank,
                        unsigned workers) {
  int acc = 0;
  const long long blocks = (chunks + kBlockChunks - 1) / kBlockChunks;
  for (long long b = rank; b < blocks; b += workers) {
    for (long long i = b * kBlockChunks + threadIdx.x; i < chunks && i < (b + 1) * kBlockChunks;
         i += blockDim.x) {
      const int4 v = __ldcg(buf + i);
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  return acc;
}

// claim[sm] = 0 before the launch; rank counts the workers (0 before the launch).
__global__ void policy_kernel(const int4* __restrict__ buf, long long chunks, int reps, int set,
                              int shared, long long pair, unsigned sms, unsigned* claim,
                              unsigned* rank_counter, unsigned workers, int* __restrict__ sink) {
  __shared__ unsigned rank;
  const unsigned sm = smid();
  if (threadIdx.x == 0) {
    rank = ~0u;
    if (in_set(set, sm, sms) && atomicCAS(claim + sm, 0u, 1u) == 0u) {
      rank = atomicAdd(rank_counter, 1u);
    }
  }
  __syncthreads();
  if (rank == ~0u) return;
  int acc = 0;
  for (int r = 0; r < reps; ++r) {
    if (pair > 0) {
      for (long long i = threadIdx.x; i < chunks / 2; i += blockDim.x) {
        const int4 v = __ldcg(buf + i);
        const int4 u = __ldcg(buf + pair + i);
        acc ^= v.x ^ v.y ^ u.z ^ u.w;
      }
    } else if (shared) {
      for (long long i = threadIdx.x; i < chunks; i += blockDim.x) {
        const int4 v = __ldcg(buf + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
      }
    } else {
      acc ^= read_own(buf, chunks, rank, workers);
    }
  }
  acc = __reduce_xor_sync(0xffffffffu, acc);
  if (threadIdx.x % 32 == 0) atomicXor(sink + sm, acc);
}

// Every worker reads the `pages` 4 KiB pages buf + 4096 * page[p], in order, `reps` times.
__global__ void layout_kernel(const int4* __restrict__ buf, const int* __restrict__ page,
                              long long pages, int reps, unsigned* claim,
                              int* __restrict__ sink) {
  __shared__ bool worker;
  const unsigned sm = smid();
  if (threadIdx.x == 0) worker = atomicCAS(claim + sm, 0u, 1u) == 0u;
  __syncthreads();
  if (!worker) return;
  constexpr long long kPageChunks = 256;  // 4 KiB of int4
  int acc = 0;
  for (int r = 0; r < reps; ++r) {
    for (long long i = threadIdx.x; i < pages * kPageChunks; i += blockDim.x) {
      const int4 v = __ldcg(buf + __ldg(page + i / kPageChunks) * kPageChunks + i % kPageChunks);
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  acc = __reduce_xor_sync(0xffffffffu, acc);
  if (threadIdx.x % 32 == 0) atomicXor(sink + sm, acc);
}

// All `workers` workers arrive; gives up after ~2 s (an SM that never got a CTA) and flags it.
__device__ void barrier(unsigned* count, unsigned target, int* failed) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(count, 1u);
    const long long start = clock64();
    while (atomicAdd(count, 0u) < target) {
      if (clock64() - start > 4000000000ll) {
        atomicExch(failed, 1);
        break;
      }
    }
  }
  __syncthreads();
}

// One worker per SM (claim as policy_kernel): X twice, Y once, X again, with barriers between.
__global__ void scan_kernel(const int4* __restrict__ x, long long x_chunks,
                            const int4* __restrict__ y, long long y_chunks, unsigned sms,
                            unsigned* claim, unsigned* rank_counter, unsigned* arrive, int* failed,
                            int* __restrict__ sink) {
  __shared__ unsigned rank;
  const unsigned sm = smid();
  if (threadIdx.x == 0) {
    rank = ~0u;
    if (atomicCAS(claim + sm, 0u, 1u) == 0u) rank = atomicAdd(rank_counter, 1u);
  }
  __syncthreads();
  if (rank == ~0u) return;
  int acc = read_own(x, x_chunks, rank, sms);
  barrier(arrive, sms, failed);
  acc ^= read_own(x, x_chunks, rank, sms);
  barrier(arrive, 2 * sms, failed);
  acc ^= read_own(y, y_chunks, rank, sms);
  barrier(arrive, 3 * sms, failed);
  acc ^= read_own(x, x_chunks, rank, sms);
  acc = __reduce_xor_sync(0xffffffffu, acc);
  if (threadIdx.x % 32 == 0) atomicXor(sink + sm, acc);
}

struct Bench {
  cudaDeviceProp p{};
  char* buf = nullptr;
  unsigned* claim = nullptr;
  unsigned* counter = nullptr;
  int* sink = nullptr;
  long long l2 = 0;
  long long max_bytes = 0;
  int index = 0;

  unsigned workers_of(int set) const {
    const unsigned n = static_cast<unsigned>(p.multiProcessorCount);
    return set == kAll ? n : set == kOne ? 1 : n / 2;
  }

  // One launch: `set` SMs read [offset, offset + bytes) `reps` times. Enough CTAs that every
  // SM receives at least one (2 of 1024 threads fit per SM; the extra ones exit at once).
  void launch(const char* kind, int set, int shared, long long offset, long long bytes, int reps,
              long long pair_bytes = 0) {
    const unsigned sms = static_cast<unsigned>(p.multiProcessorCount);
    CHECK(cudaMemset(claim, 0, sizeof(unsigned) * 1024));
    CHECK(cudaMemset(counter, 0, sizeof(unsigned)));
    policy_kernel<<<8 * sms, 1024>>>(reinterpret_cast<const int4*>(buf + offset), bytes / 16, reps,
                                     set, shared, pair_bytes / 16, sms, claim, counter,
                                     workers_of(set), sink);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    unsigned workers = 0;
    CHECK(cudaMemcpy(&workers, counter, sizeof(unsigned), cudaMemcpyDeviceToHost));
    std::printf(
        "{\"index\": %d, \"kind\": \"%s\", \"set\": \"%s\", \"mapping\": \"%s\", "
        "\"offset_bytes\": %lld, \"footprint_bytes\": %lld, \"l2_bytes\": %lld, \"reps\": %d, "
        "\"workers\": %u}\n",
        index++, kind, kSetNames[set],
        pair_bytes > 0 ? "pair"
        : shared       ? "shared"
                       : "own",
        offset, bytes, l2, reps, workers);
    std::fflush(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const bool scan_only = argc > 1 && std::strcmp(argv[1], "scan") == 0;
  const bool sweeps_only = argc > 1 && std::strcmp(argv[1], "sweeps") == 0;
  const bool layout_only = argc > 1 && std::strcmp(argv[1], "layout") == 0;
  Bench b;
  CHECK(cudaGetDeviceProperties(&b.p, 0));
  b.l2 = b.p.l2CacheSize;
  b.max_bytes = 16 * b.l2;  // the widest layout: every 16th page of 0.7 of the L2
  CHECK(cudaMalloc(&b.buf, b.max_bytes + 4096));
  CHECK(cudaMalloc(&b.claim, sizeof(unsigned) * 1024));
  CHECK(cudaMalloc(&b.counter, sizeof(unsigned)));
  CHECK(cudaMalloc(&b.sink, sizeof(int) * 1024));
  CHECK(cudaMemset(b.buf, 1, b.max_bytes + 4096));
  CHECK(cudaMemset(b.sink, 0, sizeof(int) * 1024));
  CHECK(cudaDeviceSynchronize());
  std::fprintf(stderr, "device %s, L2 %lld bytes, %d SMs\n", b.p.name, b.l2,
               b.p.multiProcessorCount);
  auto bytes_of = [&](double f) {
    return static_cast<long long>(f * static_cast<double>(b.l2)) / 16384 * 16384;
  };
  if (layout_only) {
    // The shared mapping's knee at fine steps, per layout of the footprint's 4 KiB pages.
    const double fractions[] = {0.40, 0.44, 0.47, 0.50, 0.53, 0.56, 0.60, 0.65, 0.70};
    const char* const layouts[] = {"contiguous", "scattered", "stride2", "stride16"};
    int* page = nullptr;
    const long long max_pages = b.l2 / 4096;
    CHECK(cudaMalloc(&page, sizeof(int) * max_pages));
    std::vector<int> host(static_cast<std::size_t>(max_pages));
    std::mt19937 rng(12345);
    for (const char* layout : layouts) {
      for (double f : fractions) {
        const long long pages = bytes_of(f) / 4096;
        if (std::strcmp(layout, "scattered") == 0) {
          std::vector<int> all(static_cast<std::size_t>(4 * pages));
          std::iota(all.begin(), all.end(), 0);
          std::shuffle(all.begin(), all.end(), rng);
          std::copy(all.begin(), all.begin() + pages, host.begin());
        } else {
          const int stride = std::strcmp(layout, "stride2") == 0    ? 2
                             : std::strcmp(layout, "stride16") == 0 ? 16
                                                                    : 1;
          for (long long i = 0; i < pages; ++i) host[static_cast<std::size_t>(i)] = stride * i;
        }
        CHECK(cudaMemcpy(page, host.data(), sizeof(int) * pages, cudaMemcpyHostToDevice));
        CHECK(cudaMemset(b.claim, 0, sizeof(unsigned) * 1024));
        const unsigned sms = static_cast<unsigned>(b.p.multiProcessorCount);
        layout_kernel<<<8 * sms, 1024>>>(reinterpret_cast<const int4*>(b.buf), page, pages, 4,
                                         b.claim, b.sink);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::printf(
            "{\"index\": %d, \"kind\": \"layout\", \"set\": \"all\", \"mapping\": \"shared\", "
            "\"layout\": \"%s\", \"footprint_bytes\": %lld, \"l2_bytes\": %lld, \"reps\": 4}\n",
            b.index++, layout, pages * 4096, b.l2);
        std::fflush(stdout);
      }
    }
    CHECK(cudaFree(page));
  }
  if (!scan_only && !layout_only) {
    // Repeated sweeps: footprint W from 0.2 to 1.5 of the L2, per reader set and mapping.
    const double fractions[] = {0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5};
    struct Case {
      int set, shared, reps;
    };
    const Case cases[] = {{kAll, 1, 4}, {kOne, 1, 3}, {kLow, 1, 4}, {kEven, 1, 4}, {kAll, 0, 4}};
    for (const Case& c : cases) {
      for (double f : fractions) b.launch("sweep", c.set, c.shared, 0, bytes_of(f), c.reps);
    }
    for (double f : fractions) b.launch("sweep", kAll, 1, 0, bytes_of(f), 4, 128ll << 20);
  }
  if (!sweeps_only && !layout_only) {
    // Scan resistance: X = 0.25 of the L2 at offset 0, Y after it; a flush (1.5x the L2 read
    // once, past Y) before each triple.
    const long long x = bytes_of(0.25);
    const double streams[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 1.0, 1.5, 2.0, 3.0};
    unsigned* arrive = nullptr;
    int* failed = nullptr;
    CHECK(cudaMalloc(&arrive, sizeof(unsigned)));
    CHECK(cudaMalloc(&failed, sizeof(int)));
    const unsigned sms = static_cast<unsigned>(b.p.multiProcessorCount);
    for (double s : streams) {
      const long long y = bytes_of(s);
      CHECK(cudaMemset(b.claim, 0, sizeof(unsigned) * 1024));
      CHECK(cudaMemset(b.counter, 0, sizeof(unsigned)));
      CHECK(cudaMemset(arrive, 0, sizeof(unsigned)));
      CHECK(cudaMemset(failed, 0, sizeof(int)));
      scan_kernel<<<8 * sms, 1024>>>(reinterpret_cast<const int4*>(b.buf), x / 16,
                                     reinterpret_cast<const int4*>(b.buf + x), y / 16, sms, b.claim,
                                     b.counter, arrive, failed, b.sink);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      int h_failed = 0;
      unsigned workers = 0;
      CHECK(cudaMemcpy(&h_failed, failed, sizeof(int), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(&workers, b.counter, sizeof(unsigned), cudaMemcpyDeviceToHost));
      std::printf(
          "{\"index\": %d, \"kind\": \"scan\", \"set\": \"all\", \"mapping\": \"own\", "
          "\"hot_bytes\": %lld, \"stream_bytes\": %lld, \"footprint_bytes\": %lld, "
          "\"l2_bytes\": %lld, \"reps\": 1, \"workers\": %u, \"barrier_failed\": %d}\n",
          b.index++, x, y, x + y, b.l2, workers, h_failed);
      std::fflush(stdout);
    }
    CHECK(cudaFree(arrive));
    CHECK(cudaFree(failed));
  }
  CHECK(cudaFree(b.buf));
  CHECK(cudaFree(b.claim));
  CHECK(cudaFree(b.counter));
  CHECK(cudaFree(b.sink));
  return 0;
}
