// Sustained SM clock vs tensor-core duty cycle (sm_90a): a persistent kernel, one CTA of two
// warpgroups on every SM, runs for a fixed wall time per point. Each iteration issues `batches`
// wgmma batches (per warpgroup: 4 k-steps of m64n256k16 fp16 or m64n256k32 fp8 e4m3, fp32
// accumulators, A and B from 128-byte-swizzled shared memory, one commit group per batch,
// wgmma.wait_group 1 as in wgmma.cu), waits for them (wait_group 0), then spins for `spin` SM
// cycles (clock64) doing one of:
//   idle     nothing but reading clock64;
//   fma      8 independent FFMA chains per thread (FP32 pipe busy);
//   softmax  the same FFMAs plus one MUFU.EX2 and one FADD per chain per chunk (exp2 work as in
//            an attention softmax).
// The spin is sized from a short calibration launch at full duty (cycles per iteration of the
// tensor part), so that tensor cycles / (tensor + spin cycles) = the requested duty. The measured
// duty is the achieved wgmma FLOP per SM cycle over the peak (4096 fp16, 8192 fp8 per SM clock).
// Per point it prints one JSON line: clock64 cycles and %globaltimer ns per CTA (their ratio is
// the SM clock the kernel ran at), CTA 0's (globaltimer, clock64) samples every 100 ms, achieved
// FLOP/s, and the host wall-clock (epoch ms) start and end of the launch so that nvidia-smi
// samples can be matched (scripts/power_clock_summary.py).
// Inputs are random fp16 (|x| in [2^-4, 2)) or e4m3 (|x| in [2^-3, 2)) with random signs and
// mantissas: the tensor cores' power depends on the data toggling, so no zeros or small integers.
// Usage: power_clock [--seconds S] POINT...   POINT = dtype/duty/spin, e.g. f16/0.5/idle
// Build (sm_90a only): nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a power_clock.cu
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

enum class Dt { f16, e4m3 };
enum Spin { kIdle = 0, kFma = 1, kSoftmax = 2 };

constexpr int kN = 256;
constexpr int kWG = 2;
constexpr int kTileBytes = kWG * kATileBytes + kN * kRowBytes;
constexpr int kSmemBytes = 120 * 1024;  // > half of an SM's 228 KB: one CTA per SM
constexpr int kMaxSamples = 256;
constexpr unsigned long long kSampleNs = 100000000ull;

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

struct Params {
  int batches;             // wgmma batches per iteration (0: no tensor work)
  int spin_kind;           // Spin
  long long spin_cycles;   // SM cycles of non-tensor work per iteration
  unsigned long long duration_ns;
};

struct Result {
  long long cycles;
  unsigned long long ns;
  long long iters;
};

template <Dt T>
__global__ void __launch_bounds__(kWG * 128, 1)
    power_kernel(const uint4* g_tiles, Params p, Result* res, unsigned long long* samples,
                 int* n_samples, float* sink) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ int s_stop;
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t pad = (1024 - (raw_addr & 1023)) & 1023;
  uint8_t* s_tiles = smem_raw + pad;
  for (int i = threadIdx.x; i < kTileBytes / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(s_tiles)[i] = g_tiles[i];
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  if (threadIdx.x == 0) s_stop = 0;
  __syncthreads();

  const int wg = threadIdx.x / 128;
  const uint64_t desc_a = smem_desc(raw_addr + pad + wg * kATileBytes);
  const uint64_t desc_b = smem_desc(raw_addr + pad + kWG * kATileBytes);
  float acc[kN / 2];
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f;
  float x[8], y[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    x[c] = 0.1f * static_cast<float>(c) + 1e-3f * static_cast<float>(threadIdx.x);
    y[c] = 0.f;
  }
  const float fa = 0.5f + 1e-7f * static_cast<float>(blockIdx.x), fb = 0.25f;

  const long long t0 = clock64();
  const unsigned long long g0 = global_ns();
  unsigned long long next_sample = g0;
  int ns_count = 0;
  long long iters = 0;
  for (;;) {
    for (int b = 0; b < p.batches; ++b) {
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        if constexpr (T == Dt::f16)
          wgmma_ss_f16_n256(acc, desc_a + 2 * ks, desc_b + 2 * ks, 1);
        else
          wgmma_ss_e4m3_n256(acc, desc_a + 2 * ks, desc_b + 2 * ks, 1);
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
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
        } while (clock64() - s0 < p.spin_cycles);
      } else {
        do {
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int c = 0; c < 8; ++c) x[c] = fmaf(x[c], fa, fb);
#pragma unroll
          for (int c = 0; c < 8; ++c) y[c] += ex2(x[c] - 1.f);
        } while (clock64() - s0 < p.spin_cycles);
      }
    }
    ++iters;
    if (threadIdx.x == 0) {
      const unsigned long long g = global_ns();
      if (blockIdx.x == 0 && g >= next_sample && ns_count < kMaxSamples) {
        samples[2 * ns_count] = g;
        samples[2 * ns_count + 1] = static_cast<unsigned long long>(clock64());
        ++ns_count;
        next_sample += kSampleNs;
      }
      s_stop = g - g0 >= p.duration_ns;
    }
    __syncthreads();
    const int stop = s_stop;
    __syncthreads();
    if (stop) break;
  }
  const long long t1 = clock64();
  const unsigned long long g1 = global_ns();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) s += acc[i];
#pragma unroll
  for (int c = 0; c < 8; ++c) s += x[c] + y[c];
  if (s == 1234.5f) sink[blockIdx.x] = s;  // keeps the work; practically never stores
  if (threadIdx.x == 0) {
    res[blockIdx.x] = Result{t1 - t0, g1 - g0, iters};
    if (blockIdx.x == 0) *n_samples = ns_count;
  }
}

struct Point {
  Dt dt;
  double duty;
  Spin spin;
  std::string spec;
};

double now_epoch_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

uint32_t rng_state = 12345u;
uint32_t rng() {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return rng_state;
}

struct Dev {
  int sms = 0;
  uint4* tiles[2] = {nullptr, nullptr};
  Result* res = nullptr;
  unsigned long long* samples = nullptr;
  int* n_samples = nullptr;
  float* sink = nullptr;
  double cal_cycles_per_batch[2] = {0, 0};
};

constexpr int kBatches = 16;  // per iteration at duty > 0

double flop_per_batch(Dt t) {  // per CTA
  return 2.0 * 64 * kN * (t == Dt::e4m3 ? 32 : 16) * kKSteps * kWG;
}
double peak_flop_per_clk(Dt t) { return t == Dt::e4m3 ? 8192.0 : 4096.0; }

struct Launch {
  std::vector<Result> res;
  std::vector<unsigned long long> samples;
  double t_start_ms = 0, t_end_ms = 0;
};

Launch launch(Dev& d, Dt t, const Params& p) {
  Launch l;
  const int di = t == Dt::e4m3 ? 1 : 0;
  l.t_start_ms = now_epoch_ms();
  if (t == Dt::f16)
    power_kernel<Dt::f16><<<d.sms, kWG * 128, kSmemBytes>>>(d.tiles[di], p, d.res, d.samples,
                                                             d.n_samples, d.sink);
  else
    power_kernel<Dt::e4m3><<<d.sms, kWG * 128, kSmemBytes>>>(d.tiles[di], p, d.res, d.samples,
                                                              d.n_samples, d.sink);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  l.t_end_ms = now_epoch_ms();
  l.res.resize(d.sms);
  CHECK(cudaMemcpy(l.res.data(), d.res, sizeof(Result) * d.sms, cudaMemcpyDeviceToHost));
  int n = 0;
  CHECK(cudaMemcpy(&n, d.n_samples, sizeof(int), cudaMemcpyDeviceToHost));
  l.samples.resize(2 * static_cast<size_t>(n));
  if (n > 0)
    CHECK(cudaMemcpy(l.samples.data(), d.samples, sizeof(unsigned long long) * 2 * n,
                     cudaMemcpyDeviceToHost));
  return l;
}

// Calibration: a 300 ms launch at full duty gives tensor cycles per batch (CTA median).
void calibrate(Dev& d, Dt t) {
  const int di = t == Dt::e4m3 ? 1 : 0;
  Params p{kBatches, kIdle, 0, 300000000ull};
  Launch l = launch(d, t, p);
  std::vector<double> cpb;
  for (const Result& r : l.res)
    cpb.push_back(static_cast<double>(r.cycles) / static_cast<double>(r.iters * kBatches));
  d.cal_cycles_per_batch[di] = median(cpb);
}

void run_point(Dev& d, const Point& pt, double seconds, bool first) {
  const int di = pt.dt == Dt::e4m3 ? 1 : 0;
  if (d.cal_cycles_per_batch[di] == 0) calibrate(d, pt.dt);
  const double tensor_cycles = d.cal_cycles_per_batch[di] * kBatches;
  Params p{};
  p.spin_kind = pt.spin;
  p.duration_ns = static_cast<unsigned long long>(seconds * 1e9);
  if (pt.duty <= 0) {
    p.batches = 0;
    p.spin_cycles = static_cast<long long>(tensor_cycles);
  } else {
    p.batches = kBatches;
    p.spin_cycles = static_cast<long long>(tensor_cycles * (1.0 - pt.duty) / pt.duty);
  }
  Launch l = launch(d, pt.dt, p);
  std::vector<double> mhz, fpc;
  double total_flop = 0, max_ns = 0;
  long long min_it = l.res[0].iters, max_it = l.res[0].iters;
  for (const Result& r : l.res) {
    mhz.push_back(1e3 * static_cast<double>(r.cycles) / static_cast<double>(r.ns));
    const double f = flop_per_batch(pt.dt) * static_cast<double>(r.iters) * p.batches;
    fpc.push_back(f / static_cast<double>(r.cycles));
    total_flop += f;
    max_ns = std::max(max_ns, static_cast<double>(r.ns));
    min_it = std::min(min_it, r.iters);
    max_it = std::max(max_it, r.iters);
  }
  const double fpc_med = median(fpc);
  std::printf("%s{\"point\": \"%s\", \"dtype\": \"%s\", \"duty_requested\": %.3f, \"spin\": \"%s\", "
              "\"seconds\": %.1f, \"batches_per_iter\": %d, \"spin_cycles_per_iter\": %lld, "
              "\"calibrated_tensor_cycles_per_batch\": %.2f, "
              "\"sm_clock_mhz_clock64_vs_globaltimer_median\": %.1f, "
              "\"sm_clock_mhz_min\": %.1f, \"sm_clock_mhz_max\": %.1f, "
              "\"flop_per_clk_per_sm\": %.1f, \"duty_measured\": %.4f, \"tflops\": %.2f, "
              "\"iters_per_cta_min\": %lld, \"iters_per_cta_max\": %lld, "
              "\"host_start_epoch_ms\": %.1f, \"host_end_epoch_ms\": %.1f, "
              "\"cta0_samples_ns_clk\": [",
              first ? "" : "\n", pt.spec.c_str(), pt.dt == Dt::e4m3 ? "e4m3" : "f16", pt.duty,
              pt.spin == kIdle ? "idle" : pt.spin == kFma ? "fma" : "softmax", seconds, p.batches,
              p.spin_cycles, d.cal_cycles_per_batch[di], median(mhz),
              *std::min_element(mhz.begin(), mhz.end()), *std::max_element(mhz.begin(), mhz.end()),
              fpc_med, fpc_med / peak_flop_per_clk(pt.dt), total_flop / (max_ns * 1e-9) / 1e12,
              min_it, max_it, l.t_start_ms, l.t_end_ms);
  for (size_t i = 0; i + 1 < l.samples.size(); i += 2)
    std::printf("%s[%llu, %llu]", i ? ", " : "", l.samples[i] - l.samples[0],
                l.samples[i + 1] - l.samples[1]);
  std::printf("]}");
  std::fflush(stdout);
}

bool parse_point(const char* s, Point& pt) {
  pt.spec = s;
  const std::string str(s);
  const size_t a = str.find('/'), b = str.find('/', a + 1);
  if (a == std::string::npos || b == std::string::npos) return false;
  const std::string dt = str.substr(0, a), duty = str.substr(a + 1, b - a - 1),
                    spin = str.substr(b + 1);
  if (dt == "f16") pt.dt = Dt::f16; else if (dt == "e4m3") pt.dt = Dt::e4m3; else return false;
  pt.duty = std::atof(duty.c_str());
  if (pt.duty < 0 || pt.duty > 1) return false;
  if (spin == "idle") pt.spin = kIdle;
  else if (spin == "fma") pt.spin = kFma;
  else if (spin == "softmax") pt.spin = kSoftmax;
  else return false;
  return true;
}

int main(int argc, char** argv) {
  double seconds = 6.0;
  std::vector<Point> points;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
      continue;
    }
    Point pt;
    if (!parse_point(argv[i], pt)) {
      std::fprintf(stderr, "bad point '%s' (want dtype/duty/spin, e.g. f16/0.5/idle)\n", argv[i]);
      return 2;
    }
    points.push_back(pt);
  }
  if (points.empty()) {
    std::fprintf(stderr, "usage: power_clock [--seconds S] f16|e4m3/DUTY/idle|fma|softmax ...\n");
    return 2;
  }
  Dev d;
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  d.sms = prop.multiProcessorCount;
  // Tiles: random fp16 / e4m3 values, swizzled (layout as in wgmma.cu).
  for (int di = 0; di < 2; ++di) {
    std::vector<uint8_t> host(kTileBytes);
    const int rows = kWG * 64 + kN;
    for (int r = 0; r < rows; ++r)
      for (int byte = 0; byte < kRowBytes; byte += (di ? 1 : 2)) {
        const uint32_t h = rng();
        if (di == 0) {  // fp16: sign, exponent 11..15 (2^-4 .. <2), random mantissa
          const uint32_t v = ((h & 1u) << 15) | ((11u + (h >> 1) % 5u) << 10) | ((h >> 8) & 0x3FFu);
          host[swizzled(r, byte)] = static_cast<uint8_t>(v & 0xFF);
          host[swizzled(r, byte + 1)] = static_cast<uint8_t>(v >> 8);
        } else {  // e4m3: sign, exponent 4..7 (2^-3 .. <2 with bias 7), random mantissa
          const uint32_t v = ((h & 1u) << 7) | ((4u + (h >> 1) % 4u) << 3) | ((h >> 8) & 7u);
          host[swizzled(r, byte)] = static_cast<uint8_t>(v);
        }
      }
    CHECK(cudaMalloc(&d.tiles[di], kTileBytes));
    CHECK(cudaMemcpy(d.tiles[di], host.data(), kTileBytes, cudaMemcpyHostToDevice));
  }
  CHECK(cudaMalloc(&d.res, sizeof(Result) * d.sms));
  CHECK(cudaMalloc(&d.samples, sizeof(unsigned long long) * 2 * kMaxSamples));
  CHECK(cudaMalloc(&d.n_samples, sizeof(int)));
  CHECK(cudaMalloc(&d.sink, sizeof(float) * d.sms));
  CHECK(cudaFuncSetAttribute(power_kernel<Dt::f16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes));
  CHECK(cudaFuncSetAttribute(power_kernel<Dt::e4m3>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes));
  std::printf("{\"device\": \"%s\", \"sms\": %d, \"batches_per_iter\": %d, \"wgmma\": "
              "\"m64n256 SS, 2 warpgroups/CTA, 4 k-steps per batch\", \"points\": [\n",
              prop.name, d.sms, kBatches);
  std::fflush(stdout);
  bool first = true;
  for (const Point& pt : points) {
    run_point(d, pt, seconds, first);
    std::printf(",");  // keeps the output parseable line by line if the run is cut short
    first = false;
  }
  std::printf("\n{}]}\n");
  return 0;
}
