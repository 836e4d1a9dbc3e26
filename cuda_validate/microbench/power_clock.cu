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
#include "power_common.cuh"

enum class Dt { f16, e4m3 };

constexpr int kN = 256;
constexpr int kWG = 2;
constexpr int kTileBytes = kWG * kATileBytes + kN * kRowBytes;
constexpr int kSmemBytes = 120 * 1024;  // > half of an SM's 228 KB: one CTA per SM

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
  const SmemTiles tiles = stage_tiles<kTileBytes>(smem_raw, g_tiles);
  if (threadIdx.x == 0) s_stop = 0;
  __syncthreads();

  const int wg = threadIdx.x / 128;
  const uint64_t desc_a = smem_desc(tiles.addr + wg * kATileBytes);
  const uint64_t desc_b = smem_desc(tiles.addr + kWG * kATileBytes);
  float acc[kN / 2];
  float x[8], y[8];
  const float fa = work_init(acc, x, y), fb = 0.25f;

  const Stamp start = stamp();
  unsigned long long next_sample = start.ns;
  int ns_count = 0;
  long long iters = 0;
  NoCount no_count;
  for (;;) {
    for (int b = 0; b < p.batches; ++b) {
      wgmma_batch<T == Dt::e4m3>(acc, desc_a, desc_b);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    spin_work(p, x, y, fa, fb, no_count);
    ++iters;
    if (threadIdx.x == 0) {
      const unsigned long long g = take_sample(next_sample, ns_count, samples);
      s_stop = g - start.ns >= p.duration_ns;
    }
    __syncthreads();
    const int stop = s_stop;
    __syncthreads();
    if (stop) break;
  }
  const Stamp end = finish_work(acc, x, y, sink);
  if (threadIdx.x == 0) {
    res[blockIdx.x] = Result{end.clk - start.clk, end.ns - start.ns, iters};
    if (blockIdx.x == 0) *n_samples = ns_count;
  }
}

struct Point {
  Dt dt;
  double duty;
  Spin spin;
  std::string spec;
};

struct Dev : DevBuffers<Result> {
  uint4* tiles[2] = {nullptr, nullptr};
  double cal_cycles_per_batch[2] = {0, 0};
};

double flop_per_batch(Dt t) {  // per CTA
  return 2.0 * 64 * kN * (t == Dt::e4m3 ? 32 : 16) * kKSteps * kWG;
}
double peak_flop_per_clk(Dt t) { return t == Dt::e4m3 ? 8192.0 : 4096.0; }

Launch<Result> launch(Dev& d, Dt t, const Params& p) {
  const int di = t == Dt::e4m3 ? 1 : 0;
  return timed_launch(d, [&] {
    if (t == Dt::f16)
      power_kernel<Dt::f16><<<d.sms, kWG * 128, kSmemBytes>>>(d.tiles[di], p, d.res, d.samples,
                                                               d.n_samples, d.sink);
    else
      power_kernel<Dt::e4m3><<<d.sms, kWG * 128, kSmemBytes>>>(d.tiles[di], p, d.res, d.samples,
                                                                d.n_samples, d.sink);
  });
}

// Calibration: a 300 ms launch at full duty gives tensor cycles per batch (CTA median).
void calibrate(Dev& d, Dt t) {
  const int di = t == Dt::e4m3 ? 1 : 0;
  Params p{kBatches, kIdle, 0, 300000000ull};
  d.cal_cycles_per_batch[di] = cycles_per_batch(launch(d, t, p));
}

void run_point(Dev& d, const Point& pt, double seconds, bool first) {
  const int di = pt.dt == Dt::e4m3 ? 1 : 0;
  if (d.cal_cycles_per_batch[di] == 0) calibrate(d, pt.dt);
  const double tensor_cycles = d.cal_cycles_per_batch[di] * kBatches;
  Params p{};
  p.spin_kind = pt.spin;
  p.duration_ns = static_cast<unsigned long long>(seconds * 1e9);
  set_duty(p, tensor_cycles, pt.duty);
  const Launch<Result> l = launch(d, pt.dt, p);
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
              spin_name(pt.spin), seconds, p.batches, p.spin_cycles,
              d.cal_cycles_per_batch[di], median(mhz),
              *std::min_element(mhz.begin(), mhz.end()), *std::max_element(mhz.begin(), mhz.end()),
              fpc_med, fpc_med / peak_flop_per_clk(pt.dt), total_flop / (max_ns * 1e-9) / 1e12,
              min_it, max_it, l.t_start_ms, l.t_end_ms);
  print_samples_end(l);
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
  return parse_spin(spin, pt.spin);
}

int main(int argc, char** argv) {
  double seconds = 6.0;
  std::vector<Point> points;
  if (!parse_command_line(argc, argv, seconds, points, parse_point,
                          "dtype/duty/spin, e.g. f16/0.5/idle",
                          "power_clock [--seconds S] f16|e4m3/DUTY/idle|fma|softmax ..."))
    return 2;
  Dev d;
  const cudaDeviceProp prop = d.query();
  // Tiles: random fp16 / e4m3 values, swizzled (layout as in wgmma.cu).
  for (int di = 0; di < 2; ++di) d.tiles[di] = random_tile(di == 1, kWG * 64 + kN, kTileBytes);
  d.alloc();
  CHECK(cudaFuncSetAttribute(power_kernel<Dt::f16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes));
  CHECK(cudaFuncSetAttribute(power_kernel<Dt::e4m3>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes));
  std::printf("{\"device\": \"%s\", \"sms\": %d, \"batches_per_iter\": %d, \"wgmma\": "
              "\"m64n256 SS, 2 warpgroups/CTA, 4 k-steps per batch\", \"points\": [\n",
              prop.name, d.sms, kBatches);
  std::fflush(stdout);
  run_points(points, [&](const Point& pt, bool first) { run_point(d, pt, seconds, first); });
  return 0;
}
