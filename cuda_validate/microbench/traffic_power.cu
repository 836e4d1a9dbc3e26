// Board power and SM clock under HBM and L2 traffic, alone and beside tensor work (sm_90a): the
// kernel of power_clock.cu (one persistent CTA per SM, two warpgroups issuing m64n256 wgmma
// batches at a requested tensor duty, then a spin of idle / FFMA / FFMA+exp2 work) plus one copy
// warp whose lane 0 streams bulk copies (cp.async.bulk global->shared, the TMA unit's 1-D form,
// completing on mbarriers; 16 KB per copy, 4 in flight) at a paced rate:
//   traffic none  no copies;
//   traffic hbm   each CTA streams its own slice of a 4 GiB buffer (the L2 never hits);
//   traffic l2    each CTA re-reads its own 128 KB window (17 MB in all: it stays in the 50 MB L2,
//                 even held twice by the two partitions).
// rate = bytes per SM cycle per SM: the copy warp issues copy i no earlier than i x 16384 / rate
// cycles after its start (0: as fast as the copies complete). The achieved rate is reported.
// The spin loops are counted (thread 0 of each CTA), so FFMA / MUFU instruction rates are known:
// per loop and thread, fma = 32 FFMA; softmax = 32 FFMA + 16 FADD + 8 MUFU.EX2.
// dtype mma: instead of wgmma, each compute warp issues fp16 mma.sync m16n8k16 (fp32 accumulate,
// 8 accumulator sets) with A held in registers and B loaded by one ldmatrix.x4 per two mma, the
// way FlashAttention-2's kernels feed the tensor cores; duty against 2719 FLOP/clk/SM.
// Usage: traffic_power [--seconds S] POINT...  POINT = dtype/duty/spin/traffic/rate,
//   e.g. f16/0/idle/hbm/0 or f16/0.75/softmax/l2/24
// Build (sm_90a only): nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a traffic_power.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
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

enum class Dt { f16, e4m3, mma };  // mma: fp16 mma.sync m16n8k16, B through ldmatrix
enum Spin { kIdle = 0, kFma = 1, kSoftmax = 2 };
enum Traffic { kNone = 0, kHbm = 1, kL2 = 2 };

constexpr int kN = 256;
constexpr int kWG = 2;
constexpr int kComputeThreads = kWG * 128;
constexpr int kThreads = kComputeThreads + 32;  // + the copy warp
constexpr int kTileBytes = kWG * kATileBytes + kN * kRowBytes;  // 48 KB, 1024-aligned
constexpr int kCopyBytes = 16384;
constexpr int kStages = 4;
constexpr int kSmemBytes = 120 * 1024;  // > half of an SM's 228 KB: one CTA per SM
static_assert(kTileBytes + kStages * kCopyBytes + 1024 <= kSmemBytes, "ring does not fit");
constexpr int kMaxSamples = 256;
constexpr int kMmaIters = 16;  // mma mode: ldmatrix.x4 + 2 mma.sync m16n8k16 per iteration, per batch
constexpr unsigned long long kSampleNs = 100000000ull;
constexpr size_t kHbmBytes = size_t{4} << 30;
constexpr size_t kL2WindowBytes = 128 * 1024;

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ void mbar_init(uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint32_t bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, unsigned bytes,
                                          uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}
// Barrier 1 joins the two compute warpgroups only (the copy warp runs its own loop).
__device__ __forceinline__ void compute_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kComputeThreads) : "memory");
}

struct Params {
  int batches;            // wgmma batches per iteration (0: no tensor work)
  int spin_kind;          // Spin
  long long spin_cycles;  // SM cycles of non-tensor work per iteration
  unsigned long long duration_ns;
  int traffic;             // Traffic
  double cycles_per_copy;  // pacing of the copy warp (0: unpaced)
  const uint8_t* src;      // traffic source
  size_t slice_bytes;      // per CTA: its own slice (hbm) or window (l2)
};

struct Result {
  long long cycles;
  unsigned long long ns;
  long long iters;
  long long spin_loops;  // thread 0's spin-loop iterations
  long long copies;      // bulk copies completed
  long long copy_cycles;
};

template <Dt T>
__global__ void __launch_bounds__(kThreads, 1)
    power_kernel(const uint4* g_tiles, Params p, Result* res, unsigned long long* samples,
                 int* n_samples, float* sink) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int s_stop;
  __shared__ __align__(8) uint64_t s_bars[kStages];
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t pad = (1024 - (raw_addr & 1023)) & 1023;
  uint8_t* s_tiles = smem_raw + pad;
  for (int i = threadIdx.x; i < kTileBytes / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(s_tiles)[i] = g_tiles[i];
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  const uint32_t bar0 = static_cast<uint32_t>(__cvta_generic_to_shared(s_bars));
  if (threadIdx.x == 0) {
    s_stop = 0;
    for (int s = 0; s < kStages; ++s) mbar_init(bar0 + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (threadIdx.x >= kComputeThreads) {  // the copy warp
    long long n = 0, c0 = clock64();
    if (threadIdx.x == kComputeThreads && p.traffic != kNone) {
      const uint32_t ring = raw_addr + pad + kTileBytes;
      const uint8_t* base = p.src + p.slice_bytes * blockIdx.x;
      size_t off = 0;
      c0 = clock64();
      while (!s_stop) {
        const int s = static_cast<int>(n & (kStages - 1));
        if (n >= kStages) mbar_wait(bar0 + 8 * s, static_cast<unsigned>(((n - kStages) / kStages) & 1));
        if (p.cycles_per_copy > 0) {
          const long long due = static_cast<long long>(static_cast<double>(n) * p.cycles_per_copy);
          while (clock64() - c0 < due && !s_stop) {
          }
        }
        mbar_expect(bar0 + 8 * s, kCopyBytes);
        bulk_copy(ring + s * kCopyBytes, base + off, kCopyBytes, bar0 + 8 * s);
        off += kCopyBytes;
        if (off >= p.slice_bytes) off = 0;
        ++n;
      }
      for (long long j = (n > kStages ? n - kStages : 0); j < n; ++j)
        mbar_wait(bar0 + 8 * static_cast<int>(j & (kStages - 1)),
                  static_cast<unsigned>((j / kStages) & 1));
    }
    __syncthreads();
    if (threadIdx.x == kComputeThreads) {
      res[blockIdx.x].copies = n;
      res[blockIdx.x].copy_cycles = clock64() - c0;
    }
    return;
  }

  const int wg = threadIdx.x / 128;
  const uint64_t desc_a = smem_desc(raw_addr + pad + wg * kATileBytes);
  const uint64_t desc_b = smem_desc(raw_addr + pad + kWG * kATileBytes);
  float acc[kN / 2];
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f;
  // mma.sync mode: A fragments held in registers (as FlashAttention-2 holds Q), B from the tiles
  // through ldmatrix.x4 (two n8 fragments), one ldmatrix per two mma, 8 accumulator sets.
  const int lane = threadIdx.x & 31;
  uint32_t a_frag[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    a_frag[i] = reinterpret_cast<const uint32_t*>(s_tiles)[(threadIdx.x * 4 + i) % (kTileBytes / 4)];
  const uint32_t b_row_addr = raw_addr + pad + (lane % 32) * kRowBytes;
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
  long long iters = 0, loops = 0;
  for (;;) {
    for (int b = 0; b < p.batches; ++b) {
      if constexpr (T == Dt::mma) {
#pragma unroll
        for (int it = 0; it < kMmaIters; ++it) {
          uint32_t b0, b1, b2, b3;
          const uint32_t addr = b_row_addr + (((it + lane) & 7) << 4);
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                       : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
                       : "r"(addr));
          float* c0 = acc + 4 * ((2 * it) % 8);
          float* c1 = acc + 4 * ((2 * it + 1) % 8);
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
              "{%8,%9}, {%0,%1,%2,%3};\n"
              : "+f"(c0[0]), "+f"(c0[1]), "+f"(c0[2]), "+f"(c0[3])
              : "r"(a_frag[0]), "r"(a_frag[1]), "r"(a_frag[2]), "r"(a_frag[3]), "r"(b0), "r"(b1));
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
              "{%8,%9}, {%0,%1,%2,%3};\n"
              : "+f"(c1[0]), "+f"(c1[1]), "+f"(c1[2]), "+f"(c1[3])
              : "r"(a_frag[0]), "r"(a_frag[1]), "r"(a_frag[2]), "r"(a_frag[3]), "r"(b2), "r"(b3));
        }
        continue;
      }
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
    if constexpr (T != Dt::mma) asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
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
    ++iters;
    if (threadIdx.x == 0) {
      const unsigned long long g = global_ns();
      if (blockIdx.x == 0 && g >= next_sample && ns_count < kMaxSamples) {
        samples[2 * ns_count] = g;
        samples[2 * ns_count + 1] = static_cast<unsigned long long>(clock64());
        ++ns_count;
        next_sample += kSampleNs;
      }
      if (g - g0 >= p.duration_ns) s_stop = 1;
    }
    compute_sync();
    const int stop = s_stop;
    compute_sync();
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
  __syncthreads();
  if (threadIdx.x == 0) {
    res[blockIdx.x].cycles = t1 - t0;
    res[blockIdx.x].ns = g1 - g0;
    res[blockIdx.x].iters = iters;
    res[blockIdx.x].spin_loops = loops;
    if (blockIdx.x == 0) *n_samples = ns_count;
  }
}

struct Point {
  Dt dt;
  double duty;
  Spin spin;
  Traffic traffic;
  double rate;  // bytes per SM cycle per SM, 0 = unpaced
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
  uint4* tiles[3] = {nullptr, nullptr, nullptr};
  uint8_t* buf = nullptr;
  Result* res = nullptr;
  unsigned long long* samples = nullptr;
  int* n_samples = nullptr;
  float* sink = nullptr;
  double cal_cycles_per_batch[3] = {0, 0, 0};
};

constexpr int kBatches = 16;  // per iteration at duty > 0

double flop_per_batch(Dt t) {  // per CTA
  if (t == Dt::mma) return 2.0 * 16 * 8 * 16 * 2 * kMmaIters * (kComputeThreads / 32);
  return 2.0 * 64 * kN * (t == Dt::e4m3 ? 32 : 16) * kKSteps * kWG;
}
// mma.sync: 2719 FLOP/clk/SM, the saturated rate measured by pipes.cu (pipes_2026-11-22.json).
double peak_flop_per_clk(Dt t) {
  return t == Dt::e4m3 ? 8192.0 : t == Dt::mma ? 2719.0 : 4096.0;
}
int dt_index(Dt t) { return t == Dt::e4m3 ? 1 : t == Dt::mma ? 2 : 0; }
const char* dt_name(Dt t) { return t == Dt::e4m3 ? "e4m3" : t == Dt::mma ? "mma_f16" : "f16"; }

struct Launch {
  std::vector<Result> res;
  std::vector<unsigned long long> samples;
  double t_start_ms = 0, t_end_ms = 0;
};

Launch launch(Dev& d, Dt t, const Params& p) {
  Launch l;
  const int di = dt_index(t);
  CHECK(cudaMemset(d.res, 0, sizeof(Result) * d.sms));
  l.t_start_ms = now_epoch_ms();
  if (t == Dt::f16)
    power_kernel<Dt::f16><<<d.sms, kThreads, kSmemBytes>>>(d.tiles[di], p, d.res, d.samples,
                                                            d.n_samples, d.sink);
  else if (t == Dt::mma)
    power_kernel<Dt::mma><<<d.sms, kThreads, kSmemBytes>>>(d.tiles[di], p, d.res, d.samples,
                                                            d.n_samples, d.sink);
  else
    power_kernel<Dt::e4m3><<<d.sms, kThreads, kSmemBytes>>>(d.tiles[di], p, d.res, d.samples,
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

Params base_params(const Dev& d) {
  Params p{};
  p.traffic = kNone;
  p.src = d.buf;
  p.slice_bytes = kL2WindowBytes;
  return p;
}

// Calibration: a 300 ms launch at full duty, no traffic, gives tensor cycles per batch.
void calibrate(Dev& d, Dt t) {
  const int di = dt_index(t);
  Params p = base_params(d);
  p.batches = kBatches;
  p.spin_kind = kIdle;
  p.duration_ns = 300000000ull;
  Launch l = launch(d, t, p);
  std::vector<double> cpb;
  for (const Result& r : l.res)
    cpb.push_back(static_cast<double>(r.cycles) / static_cast<double>(r.iters * kBatches));
  d.cal_cycles_per_batch[di] = median(cpb);
}

void run_point(Dev& d, const Point& pt, double seconds, bool first) {
  const int di = dt_index(pt.dt);
  if (d.cal_cycles_per_batch[di] == 0) calibrate(d, pt.dt);
  const double tensor_cycles = d.cal_cycles_per_batch[di] * kBatches;
  Params p = base_params(d);
  p.spin_kind = pt.spin;
  p.duration_ns = static_cast<unsigned long long>(seconds * 1e9);
  if (pt.duty <= 0) {
    p.batches = 0;
    p.spin_cycles = static_cast<long long>(tensor_cycles);
  } else {
    p.batches = kBatches;
    p.spin_cycles = static_cast<long long>(tensor_cycles * (1.0 - pt.duty) / pt.duty);
  }
  p.traffic = pt.traffic;
  p.cycles_per_copy = pt.rate > 0 ? kCopyBytes / pt.rate : 0.0;
  if (pt.traffic == kHbm) {
    p.slice_bytes = (kHbmBytes / d.sms) / kCopyBytes * kCopyBytes;
  } else {
    p.slice_bytes = kL2WindowBytes;
  }
  Launch l = launch(d, pt.dt, p);
  std::vector<double> mhz, fpc, bpc, loops_per_ns;
  double total_flop = 0, max_ns = 0, total_bytes = 0;
  for (const Result& r : l.res) {
    mhz.push_back(1e3 * static_cast<double>(r.cycles) / static_cast<double>(r.ns));
    const double f = flop_per_batch(pt.dt) * static_cast<double>(r.iters) * p.batches;
    fpc.push_back(f / static_cast<double>(r.cycles));
    total_flop += f;
    const double b = static_cast<double>(r.copies) * kCopyBytes;
    total_bytes += b;
    bpc.push_back(r.copy_cycles > 0 ? b / static_cast<double>(r.copy_cycles) : 0.0);
    loops_per_ns.push_back(static_cast<double>(r.spin_loops) / static_cast<double>(r.ns));
    max_ns = std::max(max_ns, static_cast<double>(r.ns));
  }
  const double fpc_med = median(fpc);
  const char* tr = pt.traffic == kHbm ? "hbm" : pt.traffic == kL2 ? "l2" : "none";
  // Per loop and thread: fma 32 FFMA; softmax 32 FFMA + 16 FADD + 8 MUFU.EX2.
  const double threads = static_cast<double>(kComputeThreads) * d.sms;
  const double lps = median(loops_per_ns) * 1e9;  // per thread per second
  const double ffma_per_s = pt.spin == kIdle ? 0.0 : 32.0 * lps * threads;
  const double fadd_per_s = pt.spin == kSoftmax ? 16.0 * lps * threads : 0.0;
  const double mufu_per_s = pt.spin == kSoftmax ? 8.0 * lps * threads : 0.0;
  std::printf("%s{\"point\": \"%s\", \"dtype\": \"%s\", \"duty_requested\": %.3f, \"spin\": \"%s\", "
              "\"traffic\": \"%s\", \"rate_requested_bytes_per_clk_per_sm\": %.2f, "
              "\"seconds\": %.1f, \"batches_per_iter\": %d, \"spin_cycles_per_iter\": %lld, "
              "\"calibrated_tensor_cycles_per_batch\": %.2f, "
              "\"sm_clock_mhz_clock64_vs_globaltimer_median\": %.1f, "
              "\"sm_clock_mhz_min\": %.1f, \"sm_clock_mhz_max\": %.1f, "
              "\"flop_per_clk_per_sm\": %.1f, \"duty_measured\": %.4f, \"tflops\": %.2f, "
              "\"traffic_bytes_per_clk_per_sm\": %.3f, \"traffic_gbps\": %.1f, "
              "\"thread_ffma_per_s\": %.4e, \"thread_fadd_per_s\": %.4e, \"thread_mufu_per_s\": %.4e, "
              "\"host_start_epoch_ms\": %.1f, \"host_end_epoch_ms\": %.1f, "
              "\"cta0_samples_ns_clk\": [",
              first ? "" : "\n", pt.spec.c_str(), dt_name(pt.dt), pt.duty,
              pt.spin == kIdle ? "idle" : pt.spin == kFma ? "fma" : "softmax", tr, pt.rate, seconds,
              p.batches, p.spin_cycles, d.cal_cycles_per_batch[di], median(mhz),
              *std::min_element(mhz.begin(), mhz.end()), *std::max_element(mhz.begin(), mhz.end()),
              fpc_med, fpc_med / peak_flop_per_clk(pt.dt), total_flop / (max_ns * 1e-9) / 1e12,
              median(bpc), total_bytes / max_ns, ffma_per_s, fadd_per_s, mufu_per_s, l.t_start_ms,
              l.t_end_ms);
  for (size_t i = 0; i + 1 < l.samples.size(); i += 2)
    std::printf("%s[%llu, %llu]", i ? ", " : "", l.samples[i] - l.samples[0],
                l.samples[i + 1] - l.samples[1]);
  std::printf("]}");
  std::fflush(stdout);
}

bool parse_point(const char* s, Point& pt) {
  pt.spec = s;
  std::vector<std::string> f;
  std::string str(s), cur;
  for (char c : str) {
    if (c == '/') {
      f.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  f.push_back(cur);
  if (f.size() != 5) return false;
  if (f[0] == "f16") pt.dt = Dt::f16;
  else if (f[0] == "e4m3") pt.dt = Dt::e4m3;
  else if (f[0] == "mma") pt.dt = Dt::mma;
  else return false;
  pt.duty = std::atof(f[1].c_str());
  if (pt.duty < 0 || pt.duty > 1) return false;
  if (f[2] == "idle") pt.spin = kIdle;
  else if (f[2] == "fma") pt.spin = kFma;
  else if (f[2] == "softmax") pt.spin = kSoftmax;
  else return false;
  if (f[3] == "none") pt.traffic = kNone;
  else if (f[3] == "hbm") pt.traffic = kHbm;
  else if (f[3] == "l2") pt.traffic = kL2;
  else return false;
  pt.rate = std::atof(f[4].c_str());
  return pt.rate >= 0;
}

__global__ void fill_kernel(unsigned* p, size_t words) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<unsigned>(i * 2654435761u);  // toggling data, as real inputs
}

int main(int argc, char** argv) {
  double seconds = 5.0;
  std::vector<Point> points;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
      continue;
    }
    Point pt;
    if (!parse_point(argv[i], pt)) {
      std::fprintf(stderr,
                   "bad point '%s' (want dtype/duty/spin/traffic/rate, e.g. f16/0.5/idle/l2/16)\n",
                   argv[i]);
      return 2;
    }
    points.push_back(pt);
  }
  if (points.empty()) {
    std::fprintf(stderr, "usage: traffic_power [--seconds S] f16|e4m3/DUTY/idle|fma|softmax/"
                         "none|hbm|l2/BYTES_PER_CLK ...\n");
    return 2;
  }
  Dev d;
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  d.sms = prop.multiProcessorCount;
  for (int di = 0; di < 3; ++di) {  // 2: mma mode, fp16 tiles as 0
    std::vector<uint8_t> host(kTileBytes);
    const int rows = kWG * 64 + kN;
    for (int r = 0; r < rows; ++r)
      for (int byte = 0; byte < kRowBytes; byte += (di == 1 ? 1 : 2)) {
        const uint32_t h = rng();
        if (di != 1) {  // fp16: sign, exponent 11..15 (2^-4 .. <2), random mantissa
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
  CHECK(cudaMalloc(&d.buf, kHbmBytes));
  fill_kernel<<<1024, 256>>>(reinterpret_cast<unsigned*>(d.buf), kHbmBytes / 4);
  CHECK(cudaGetLastError());
  CHECK(cudaMalloc(&d.res, sizeof(Result) * d.sms));
  CHECK(cudaMalloc(&d.samples, sizeof(unsigned long long) * 2 * kMaxSamples));
  CHECK(cudaMalloc(&d.n_samples, sizeof(int)));
  CHECK(cudaMalloc(&d.sink, sizeof(float) * d.sms));
  CHECK(cudaFuncSetAttribute(power_kernel<Dt::f16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes));
  CHECK(cudaFuncSetAttribute(power_kernel<Dt::e4m3>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes));
  CHECK(cudaFuncSetAttribute(power_kernel<Dt::mma>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes));
  CHECK(cudaDeviceSynchronize());
  std::printf("{\"device\": \"%s\", \"sms\": %d, \"batches_per_iter\": %d, \"wgmma\": "
              "\"m64n256 SS, 2 warpgroups/CTA, 4 k-steps per batch\", \"copy_bytes\": %d, "
              "\"copies_in_flight\": %d, \"hbm_buffer_bytes\": %zu, \"l2_window_bytes_per_cta\": %zu, "
              "\"points\": [\n",
              prop.name, d.sms, kBatches, kCopyBytes, kStages, kHbmBytes, kL2WindowBytes);
  std::fflush(stdout);
  bool first = true;
  for (const Point& pt : points) {
    run_point(d, pt, seconds, first);
    std::printf(",");
    first = false;
  }
  std::printf("\n{}]}\n");
  return 0;
}
