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
#include "../kernels/hopper_async.cuh"
#include "power_common.cuh"

using iosim_hopper::bulk_copy;
using iosim_hopper::mbar_expect_tx;
using iosim_hopper::mbar_init;
using iosim_hopper::mbar_wait;

enum class Dt { f16, e4m3, mma };  // mma: fp16 mma.sync m16n8k16, B through ldmatrix
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
constexpr int kMmaIters = 16;  // mma mode: ldmatrix.x4 + 2 mma.sync m16n8k16 per iteration, per batch
constexpr size_t kHbmBytes = size_t{4} << 30;
constexpr size_t kL2WindowBytes = 128 * 1024;

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
  const SmemTiles tiles = stage_tiles<kTileBytes>(smem_raw, g_tiles);
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
      const uint32_t ring = tiles.addr + kTileBytes;
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
        mbar_expect_tx(bar0 + 8 * s, kCopyBytes);
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
  const uint64_t desc_a = smem_desc(tiles.addr + wg * kATileBytes);
  const uint64_t desc_b = smem_desc(tiles.addr + kWG * kATileBytes);
  float acc[kN / 2];
  // mma.sync mode: A fragments held in registers (as FlashAttention-2 holds Q), B from the tiles
  // through ldmatrix.x4 (two n8 fragments), one ldmatrix per two mma, 8 accumulator sets.
  const int lane = threadIdx.x & 31;
  uint32_t a_frag[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    a_frag[i] =
        reinterpret_cast<const uint32_t*>(tiles.ptr)[(threadIdx.x * 4 + i) % (kTileBytes / 4)];
  const uint32_t b_row_addr = tiles.addr + (lane % 32) * kRowBytes;
  float x[8], y[8];
  const float fa = work_init(acc, x, y), fb = 0.25f;

  const Stamp start = stamp();
  unsigned long long next_sample = start.ns;
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
      wgmma_batch<T == Dt::e4m3>(acc, desc_a, desc_b);
    }
    if constexpr (T != Dt::mma) asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    spin_work(p, x, y, fa, fb, loops);
    ++iters;
    if (threadIdx.x == 0) {
      const unsigned long long g = take_sample(next_sample, ns_count, samples);
      if (g - start.ns >= p.duration_ns) s_stop = 1;
    }
    compute_sync();
    const int stop = s_stop;
    compute_sync();
    if (stop) break;
  }
  const Stamp end = finish_work(acc, x, y, sink);
  __syncthreads();
  if (threadIdx.x == 0) {
    res[blockIdx.x].cycles = end.clk - start.clk;
    res[blockIdx.x].ns = end.ns - start.ns;
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

struct Dev : DevBuffers<Result> {
  uint4* tiles[3] = {nullptr, nullptr, nullptr};
  uint8_t* buf = nullptr;
  double cal_cycles_per_batch[3] = {0, 0, 0};
};

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

Launch<Result> launch(Dev& d, Dt t, const Params& p) {
  const int di = dt_index(t);
  CHECK(cudaMemset(d.res, 0, sizeof(Result) * d.sms));
  return timed_launch(d, [&] {
    if (t == Dt::f16)
      power_kernel<Dt::f16><<<d.sms, kThreads, kSmemBytes>>>(d.tiles[di], p, d.res, d.samples,
                                                              d.n_samples, d.sink);
    else if (t == Dt::mma)
      power_kernel<Dt::mma><<<d.sms, kThreads, kSmemBytes>>>(d.tiles[di], p, d.res, d.samples,
                                                              d.n_samples, d.sink);
    else
      power_kernel<Dt::e4m3><<<d.sms, kThreads, kSmemBytes>>>(d.tiles[di], p, d.res, d.samples,
                                                               d.n_samples, d.sink);
  });
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
  d.cal_cycles_per_batch[di] = cycles_per_batch(launch(d, t, p));
}

void run_point(Dev& d, const Point& pt, double seconds, bool first) {
  const int di = dt_index(pt.dt);
  if (d.cal_cycles_per_batch[di] == 0) calibrate(d, pt.dt);
  const double tensor_cycles = d.cal_cycles_per_batch[di] * kBatches;
  Params p = base_params(d);
  p.spin_kind = pt.spin;
  p.duration_ns = static_cast<unsigned long long>(seconds * 1e9);
  set_duty(p, tensor_cycles, pt.duty);
  p.traffic = pt.traffic;
  p.cycles_per_copy = pt.rate > 0 ? kCopyBytes / pt.rate : 0.0;
  if (pt.traffic == kHbm) {
    p.slice_bytes = (kHbmBytes / d.sms) / kCopyBytes * kCopyBytes;
  } else {
    p.slice_bytes = kL2WindowBytes;
  }
  const Launch<Result> l = launch(d, pt.dt, p);
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
              spin_name(pt.spin), tr, pt.rate, seconds, p.batches, p.spin_cycles,
              d.cal_cycles_per_batch[di], median(mhz),
              *std::min_element(mhz.begin(), mhz.end()), *std::max_element(mhz.begin(), mhz.end()),
              fpc_med, fpc_med / peak_flop_per_clk(pt.dt), total_flop / (max_ns * 1e-9) / 1e12,
              median(bpc), total_bytes / max_ns, ffma_per_s, fadd_per_s, mufu_per_s, l.t_start_ms,
              l.t_end_ms);
  print_samples_end(l);
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
  if (!parse_spin(f[2], pt.spin)) return false;
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
  if (!parse_command_line(argc, argv, seconds, points, parse_point,
                          "dtype/duty/spin/traffic/rate, e.g. f16/0.5/idle/l2/16",
                          "traffic_power [--seconds S] f16|e4m3/DUTY/idle|fma|softmax/"
                          "none|hbm|l2/BYTES_PER_CLK ..."))
    return 2;
  Dev d;
  const cudaDeviceProp prop = d.query();
  for (int di = 0; di < 3; ++di)  // 2: mma mode, fp16 tiles as 0
    d.tiles[di] = random_tile(di == 1, kWG * 64 + kN, kTileBytes);
  CHECK(cudaMalloc(&d.buf, kHbmBytes));
  fill_kernel<<<1024, 256>>>(reinterpret_cast<unsigned*>(d.buf), kHbmBytes / 4);
  CHECK(cudaGetLastError());
  d.alloc();
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
  run_points(points, [&](const Point& pt, bool first) { run_point(d, pt, seconds, first); });
  return 0;
}
