// What an SM spends between one CTA's end and the next CTA's start in the same slot (the CTA
// retiring and the block scheduler placing the next): the cost a kernel of many short CTAs pays
// per CTA beyond its work (the standard attention's softmax, one CTA per 0.5-16 KB row: its time
// is nearly the same on the H100 and the H200 below 4096 columns, though the H200 has 43% more
// HBM bandwidth). Two kernels, each CTA of `threads` threads with `smem` bytes of dynamic shared
// memory (which sets how many CTAs an SM holds):
// - empty: thread 0 stamps its start and end, nothing else;
// - row: every thread loads 16 bytes of its CTA's row from a buffer larger than the L2, the CTA
//   reduces a maximum over them (warp shuffles, one round through shared memory, a barrier) and
//   every thread stores 16 bytes: a softmax row pass without the arithmetic.
// Traced runs record per CTA its SM, and clock64 and %globaltimer at thread 0's first and last
// instruction; the gap of a CTA is its start less the latest end on its SM before it (once the
// SM's slots have filled). Timed runs (CUDA events, median of 5 sets of 20 launches) give the
// kernel's time at several grid sizes. Prints one JSON object per line.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "cta_stamps.cuh"

namespace {

constexpr int kSets = 5;
constexpr int kLaunches = 20;

struct Stamp {
  unsigned smid;
  unsigned pad;
  long long c0, c1;  // clock64
  long long g0, g1;  // %globaltimer, ns
};

template <bool kRow>
__global__ void dispatch_kernel(const uint4* in, uint4* out, Stamp* stamps) {
  extern __shared__ float s_red[];
  long long c0 = 0, g0 = 0;
  if (threadIdx.x == 0 && stamps != nullptr) {
    c0 = clock64();
    g0 = gtimer();
  }
  if (kRow) {
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    uint4 v = in[i];
    float m =
        __uint_as_float(v.x) + __uint_as_float(v.y) + __uint_as_float(v.z) + __uint_as_float(v.w);
    for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (threadIdx.x % 32 == 0) s_red[threadIdx.x / 32] = m;
    __syncthreads();
    m = s_red[0];
    for (unsigned w = 1; w < blockDim.x / 32; ++w) m = fmaxf(m, s_red[w]);
    v.x = __float_as_uint(m);
    out[i] = v;
  }
  if (threadIdx.x == 0 && stamps != nullptr) {
    Stamp s;
    s.smid = smid();
    s.pad = 0;
    s.c0 = c0;
    s.g0 = g0;
    s.c1 = clock64();
    s.g1 = gtimer();
    stamps[blockIdx.x] = s;
  }
}

struct Config {
  bool row;
  int threads;
  int smem;
};

void launch(const Config& c, int grid, const uint4* in, uint4* out, Stamp* stamps) {
  if (c.row) {
    dispatch_kernel<true><<<grid, c.threads, c.smem>>>(in, out, stamps);
  } else {
    dispatch_kernel<false><<<grid, c.threads, c.smem>>>(in, out, stamps);
  }
  CHECK(cudaGetLastError());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const int max_grid = sms * 16 * 128;
  const size_t max_threads_total = static_cast<size_t>(max_grid) * 256;
  uint4 *in = nullptr, *out = nullptr;
  Stamp* stamps = nullptr;
  CHECK(cudaMalloc(&in, max_threads_total * sizeof(uint4)));
  CHECK(cudaMalloc(&out, max_threads_total * sizeof(uint4)));
  CHECK(cudaMemset(in, 0, max_threads_total * sizeof(uint4)));
  CHECK(cudaMalloc(&stamps, static_cast<size_t>(max_grid) * sizeof(Stamp)));
  const int smem_max = static_cast<int>(prop.sharedMemPerBlockOptin);
  CHECK(cudaFuncSetAttribute(dispatch_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smem_max));
  CHECK(cudaFuncSetAttribute(dispatch_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smem_max));
  std::printf("{\"device\": \"%s\", \"sms\": %d}\n", prop.name, sms);

  std::vector<Config> configs;
  for (const bool row : {false, true}) {
    configs.push_back({row, 256, 1024});    // 8 per SM (threads)
    configs.push_back({row, 256, 50000});   // 4 per SM (shared memory)
    configs.push_back({row, 256, 110000});  // 2 per SM
    configs.push_back({row, 256, 200000});  // 1 per SM
    configs.push_back({row, 128, 1024});    // 16 per SM (threads)
  }
  for (const Config& c : configs) {
    int resident = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &resident, c.row ? dispatch_kernel<true> : dispatch_kernel<false>, c.threads, c.smem));
    for (const int waves : {8, 32, 128}) {
      const int grid = sms * resident * waves;
      if (grid > max_grid) continue;
      // Timed, no stamps.
      const std::vector<double> per_launch_us =
          timed_sets_us([&] { launch(c, grid, in, out, nullptr); }, kSets, kLaunches);
      // Traced once.
      launch(c, grid, in, out, stamps);
      CHECK(cudaDeviceSynchronize());
      std::vector<Stamp> s(static_cast<size_t>(grid));
      CHECK(cudaMemcpy(s.data(), stamps, s.size() * sizeof(Stamp), cudaMemcpyDeviceToHost));
      std::vector<CtaSpan> spans;
      std::vector<double> lifetimes;
      for (const Stamp& x : s) {
        spans.push_back({x.smid, x.c0, x.c1, x.g0, x.g1});
        lifetimes.push_back(static_cast<double>(x.c1 - x.c0));
      }
      const SlotGaps g = slot_gaps(spans, sms, resident);
      std::printf(
          "{\"kernel\": \"%s\", \"threads\": %d, \"smem\": %d, \"resident\": %d, \"waves\": %d, "
          "\"grid\": %d, \"time_us\": %.3f, \"time_us_sets\": [",
          c.row ? "row" : "empty", c.threads, c.smem, resident, waves, grid, median(per_launch_us));
      for (size_t i = 0; i < per_launch_us.size(); ++i) {
        std::printf("%s%.3f", i ? ", " : "", per_launch_us[i]);
      }
      std::printf(
          "], \"gap_cycles_median\": %.1f, \"gap_cycles_p10\": %.1f, \"gap_cycles_p90\": %.1f, "
          "\"lifetime_cycles_median\": %.1f, \"sm_clock_mhz\": %.1f, \"gaps\": %zu}\n",
          median(g.gaps), percentile(g.gaps, 0.1), percentile(g.gaps, 0.9), median(lifetimes),
          median(g.clocks_mhz), g.gaps.size());
      std::fflush(stdout);
    }
  }
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  CHECK(cudaFree(stamps));
  return 0;
}
