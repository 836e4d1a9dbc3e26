// What power_clock.cu and traffic_power.cu share. On the device: the tiles staged in shared
// memory, the wgmma batch, the spin work beside it, CTA 0's (globaltimer, clock64) samples and the
// kept result. On the host: the random swizzled fp16 / e4m3 tiles, the device buffers, the launch
// bookkeeping (results and samples copied back, host wall-clock stamps), the calibration of
// tensor cycles per batch, the duty -> spin sizing, the command line and the output's points.
// All device helpers are forceinline: power_clock's kernels compile to the same cubin as before.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check.cuh"
#include "wgmma_ops.cuh"
#include "wgmma_smem.cuh"

enum Spin { kIdle = 0, kFma = 1, kSoftmax = 2 };

constexpr int kMaxSamples = 256;
constexpr unsigned long long kSampleNs = 100000000ull;
constexpr int kBatches = 16;  // per iteration at duty > 0

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// p.spin_cycles SM cycles (if > 0) of p.spin_kind work: idle reads clock64 only; fma runs 8
// independent FFMA chains (4 steps each per loop); softmax adds one MUFU.EX2 and one FADD per
// chain per loop. Each loop does ++loops (a long long to count them, or NoCount).
struct NoCount {
  __device__ __forceinline__ void operator++() {}
};
template <class P, class Count>
__device__ __forceinline__ void spin_work(const P& p, float (&x)[8], float (&y)[8], float fa,
                                          float fb, Count& loops) {
  if (p.spin_cycles > 0) {
    const long long s0 = clock64();
    if (p.spin_kind == kIdle) {
      while (clock64() - s0 < p.spin_cycles) {
      }
    } else if (p.spin_kind == kFma) {
      do {
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int c = 0; c < 8; ++c) x[c] = fmaf(x[c], fa, fb);
        ++loops;
      } while (clock64() - s0 < p.spin_cycles);
    } else {
      do {
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int c = 0; c < 8; ++c) x[c] = fmaf(x[c], fa, fb);
#pragma unroll
        for (int c = 0; c < 8; ++c) y[c] += ex2(x[c] - 1.f);
        ++loops;
      } while (clock64() - s0 < p.spin_cycles);
    }
  }
}

// Copies the kBytes of tiles to the first 1024-byte boundary of dynamic shared memory (the whole
// CTA; the caller synchronizes) and makes them visible to the async proxy; returns where they are.
struct SmemTiles {
  uint8_t* ptr;   // generic
  uint32_t addr;  // shared window
};
template <int kBytes>
__device__ __forceinline__ SmemTiles stage_tiles(uint8_t* smem_raw, const uint4* g_tiles) {
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t pad = (1024 - (raw_addr & 1023)) & 1023;
  uint8_t* s_tiles = smem_raw + pad;
  for (int i = threadIdx.x; i < kBytes / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(s_tiles)[i] = g_tiles[i];
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  return SmemTiles{s_tiles, raw_addr + pad};
}

// One batch of a warpgroup's wgmma work: kKSteps m64n256 k-steps (fp16 k16 or e4m3 k32) from the
// swizzled A and B tiles into the fp32 accumulators, one commit group, and wait_group 1.
template <bool kE4m3>
__device__ __forceinline__ void wgmma_batch(float (&acc)[128], uint64_t desc_a, uint64_t desc_b) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int ks = 0; ks < kKSteps; ++ks) {
    if constexpr (!kE4m3)
      wgmma_ss_f16_n256(acc, desc_a + 2 * ks, desc_b + 2 * ks, 1);
    else
      wgmma_ss_e4m3_n256(acc, desc_a + 2 * ks, desc_b + 2 * ks, 1);
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
}

// Zero accumulators; the spin chains' start values (x differs by chain and thread, y sums the
// exp2 results); returns the chains' multiplier (it differs by CTA).
__device__ __forceinline__ float work_init(float (&acc)[128], float (&x)[8], float (&y)[8]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    x[c] = 0.1f * static_cast<float>(c) + 1e-3f * static_cast<float>(threadIdx.x);
    y[c] = 0.f;
  }
  return 0.5f + 1e-7f * static_cast<float>(blockIdx.x);
}

// clock64 and %globaltimer, read in that order.
struct Stamp {
  long long clk;
  unsigned long long ns;
};
__device__ __forceinline__ Stamp stamp() {
  const long long t = clock64();
  const unsigned long long g = global_ns();
  return Stamp{t, g};
}

// The end stamp of the timed loop, then the work kept: a sum of the tensor and spin results,
// stored (practically never) if it happens to equal 1234.5.
__device__ __forceinline__ Stamp finish_work(const float (&acc)[128], const float (&x)[8],
                                             const float (&y)[8], float* sink) {
  const Stamp end = stamp();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 128; ++i) s += acc[i];
#pragma unroll
  for (int c = 0; c < 8; ++c) s += x[c] + y[c];
  if (s == 1234.5f) sink[blockIdx.x] = s;
  return end;
}

// Reads %globaltimer and returns it; CTA 0 (caller: thread 0) records it with clock64 every
// kSampleNs, kMaxSamples times at the most.
__device__ __forceinline__ unsigned long long take_sample(unsigned long long& next_sample,
                                                          int& ns_count,
                                                          unsigned long long* samples) {
  const unsigned long long g = global_ns();
  if (blockIdx.x == 0 && g >= next_sample && ns_count < kMaxSamples) {
    samples[2 * ns_count] = g;
    samples[2 * ns_count + 1] = static_cast<unsigned long long>(clock64());
    ++ns_count;
    next_sample += kSampleNs;
  }
  return g;
}

// ---- host ----

inline double now_epoch_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

inline uint32_t rng_state = 12345u;
inline uint32_t rng() {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return rng_state;
}

// A device tile of `bytes` bytes, `rows` swizzled rows (layout as in wgmma.cu) of random fp16
// (|x| in [2^-4, 2)) or e4m3 (|x| in [2^-3, 2)) values with random signs and mantissas.
inline uint4* random_tile(bool e4m3, int rows, int bytes) {
  std::vector<uint8_t> host(static_cast<size_t>(bytes));
  for (int r = 0; r < rows; ++r)
    for (int byte = 0; byte < kRowBytes; byte += (e4m3 ? 1 : 2)) {
      const uint32_t h = rng();
      if (!e4m3) {  // fp16: sign, exponent 11..15 (2^-4 .. <2), random mantissa
        const uint32_t v = ((h & 1u) << 15) | ((11u + (h >> 1) % 5u) << 10) | ((h >> 8) & 0x3FFu);
        host[swizzled(r, byte)] = static_cast<uint8_t>(v & 0xFF);
        host[swizzled(r, byte + 1)] = static_cast<uint8_t>(v >> 8);
      } else {  // e4m3: sign, exponent 4..7 (2^-3 .. <2 with bias 7), random mantissa
        const uint32_t v = ((h & 1u) << 7) | ((4u + (h >> 1) % 4u) << 3) | ((h >> 8) & 7u);
        host[swizzled(r, byte)] = static_cast<uint8_t>(v);
      }
    }
  uint4* d = nullptr;
  CHECK(cudaMalloc(&d, bytes));
  CHECK(cudaMemcpy(d, host.data(), bytes, cudaMemcpyHostToDevice));
  return d;
}

// The device buffers both benchmarks' kernels write: per-CTA results, CTA 0's samples and their
// count, and the sink that keeps the work.
template <class R>
struct DevBuffers {
  int sms = 0;
  R* res = nullptr;
  unsigned long long* samples = nullptr;
  int* n_samples = nullptr;
  float* sink = nullptr;

  // Device 0's properties; sets sms.
  cudaDeviceProp query() {
    cudaDeviceProp prop{};
    CHECK(cudaGetDeviceProperties(&prop, 0));
    sms = prop.multiProcessorCount;
    return prop;
  }
  void alloc() {
    CHECK(cudaMalloc(&res, sizeof(R) * sms));
    CHECK(cudaMalloc(&samples, sizeof(unsigned long long) * 2 * kMaxSamples));
    CHECK(cudaMalloc(&n_samples, sizeof(int)));
    CHECK(cudaMalloc(&sink, sizeof(float) * sms));
  }
};

template <class R>
struct Launch {
  std::vector<R> res;
  std::vector<unsigned long long> samples;
  double t_start_ms = 0, t_end_ms = 0;
};

// Runs `start` (which launches the kernel) between the host wall-clock stamps, waits, and copies
// the results and samples back.
template <class R, class F>
Launch<R> timed_launch(const DevBuffers<R>& d, F start) {
  Launch<R> l;
  l.t_start_ms = now_epoch_ms();
  start();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  l.t_end_ms = now_epoch_ms();
  l.res.resize(d.sms);
  CHECK(cudaMemcpy(l.res.data(), d.res, sizeof(R) * d.sms, cudaMemcpyDeviceToHost));
  int n = 0;
  CHECK(cudaMemcpy(&n, d.n_samples, sizeof(int), cudaMemcpyDeviceToHost));
  l.samples.resize(2 * static_cast<size_t>(n));
  if (n > 0)
    CHECK(cudaMemcpy(l.samples.data(), d.samples, sizeof(unsigned long long) * 2 * n,
                     cudaMemcpyDeviceToHost));
  return l;
}

// Tensor cycles per batch from a full-duty launch: the CTA median.
template <class R>
double cycles_per_batch(const Launch<R>& l) {
  std::vector<double> cpb;
  for (const R& r : l.res)
    cpb.push_back(static_cast<double>(r.cycles) / static_cast<double>(r.iters * kBatches));
  return median(cpb);
}

// Batches and spin cycles per iteration so that tensor / (tensor + spin) cycles = duty (duty 0:
// no batches, a spin as long as the full-duty tensor part).
template <class P>
void set_duty(P& p, double tensor_cycles, double duty) {
  if (duty <= 0) {
    p.batches = 0;
    p.spin_cycles = static_cast<long long>(tensor_cycles);
  } else {
    p.batches = kBatches;
    p.spin_cycles = static_cast<long long>(tensor_cycles * (1.0 - duty) / duty);
  }
}

inline bool parse_spin(const std::string& s, Spin& spin) {
  if (s == "idle")
    spin = kIdle;
  else if (s == "fma")
    spin = kFma;
  else if (s == "softmax")
    spin = kSoftmax;
  else
    return false;
  return true;
}
inline const char* spin_name(Spin s) {
  return s == kIdle ? "idle" : s == kFma ? "fma" : "softmax";
}

// The samples array and the end of a point's JSON line.
template <class R>
void print_samples_end(const Launch<R>& l) {
  for (size_t i = 0; i + 1 < l.samples.size(); i += 2)
    std::printf("%s[%llu, %llu]", i ? ", " : "", l.samples[i] - l.samples[0],
                l.samples[i + 1] - l.samples[1]);
  std::printf("]}");
  std::fflush(stdout);
}

// [--seconds S] POINT...: false (after the message) on a bad point or none.
template <class Pt, class Parse>
bool parse_command_line(int argc, char** argv, double& seconds, std::vector<Pt>& points,
                        Parse parse, const char* want, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
      continue;
    }
    Pt pt;
    if (!parse(argv[i], pt)) {
      std::fprintf(stderr, "bad point '%s' (want %s)\n", argv[i], want);
      return false;
    }
    points.push_back(pt);
  }
  if (points.empty()) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return false;
  }
  return true;
}

// The points array of the output: one JSON line a point, each followed by a comma so that the
// output stays parseable line by line if the run is cut short, closed by an empty object.
template <class Pt, class Run>
void run_points(const std::vector<Pt>& points, Run run) {
  bool first = true;
  for (const Pt& pt : points) {
    run(pt, first);
    std::printf(",");
    first = false;
  }
  std::printf("\n{}]}\n");
}
