// Where a CTA of the standard attention's row softmax (cuda_validate/kernels/standard_attn.cuh,
// softmax_rows_kernel: one CTA of 256 threads per row) spends its time: the same kernel with
// thread 0 stamping clock64 at its start, after its share of the first pass (the row's loads and
// its running maximum), after the maximum's CTA-wide reduction, after the sum of exponentials
// and its reduction, and at its end (the normalized row stored), with its SM. Issue #32/#29:
// iosim predicts this kernel 33-58% fast on the H200 below 8192 columns, and its time is nearly
// the H100's there although the H200 has 43% more HBM bandwidth. Rows of 512 to 8192 columns,
// as many rows as the measured cases (B4 H16 N rows up to 4096 columns, B1 H16 8192 rows at
// 8192). Timed runs (CUDA events, median of 5 sets of 10 launches) beside each traced one.
// Prints one JSON object per line: per phase the median and 10th/90th percentile in cycles over
// the CTAs, the gap from the latest end on the SM to each start once its slots are full, and
// the SM clock the stamps saw.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "cta_stamps.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kPhases = 5;  // stamps: start, loaded, max reduced, sum reduced, end

struct Stamp {
  unsigned smid;
  unsigned pad;
  long long c[kPhases];
  long long g0, g1;
};

__global__ void __launch_bounds__(kThreads)
    softmax_phases_kernel(const half* gS, half* gP, int seq_kv, Stamp* stamps) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  half* sRow = reinterpret_cast<half*>(smem_raw);
  __shared__ float s_red[kThreads / 32];
  long long c[kPhases] = {};
  long long g0 = 0;
  const bool stamp = threadIdx.x == 0 && stamps != nullptr;
  if (stamp) {
    c[0] = clock64();
    g0 = gtimer();
  }
  const int64_t row = blockIdx.x;
  const half* gSrow = gS + row * seq_kv;
  half* gProw = gP + row * seq_kv;
  const int n_chunks = seq_kv / 8;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  float m = -INFINITY;
  for (int ch = threadIdx.x; ch < n_chunks; ch += kThreads) {
    const uint4 v = *reinterpret_cast<const uint4*>(gSrow + ch * 8);
    *reinterpret_cast<uint4*>(sRow + ch * 8) = v;
    const half* e = reinterpret_cast<const half*>(&v);
#pragma unroll
    for (int k = 0; k < 8; ++k) m = fmaxf(m, __half2float(e[k]));
  }
  if (stamp) c[1] = clock64() + (m > 1e30f ? 1 : 0);  // (m read: after the loads)
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) s_red[warp] = m;
  __syncthreads();
  m = s_red[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, s_red[w]);
  __syncthreads();
  if (stamp) c[2] = clock64() + (m > 1e30f ? 1 : 0);

  float sum = 0.f;
  for (int ch = threadIdx.x; ch < n_chunks; ch += kThreads) {
    const uint4 v = *reinterpret_cast<const uint4*>(sRow + ch * 8);
    const half* e = reinterpret_cast<const half*>(&v);
#pragma unroll
    for (int k = 0; k < 8; ++k) sum += __expf(__half2float(e[k]) - m);
  }
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) s_red[warp] = sum;
  __syncthreads();
  sum = 0.f;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) sum += s_red[w];
  const float inv_sum = 1.f / sum;
  if (stamp) c[3] = clock64() + (inv_sum > 1e30f ? 1 : 0);

  for (int ch = threadIdx.x; ch < n_chunks; ch += kThreads) {
    uint4 v = *reinterpret_cast<const uint4*>(sRow + ch * 8);
    half* e = reinterpret_cast<half*>(&v);
#pragma unroll
    for (int k = 0; k < 8; ++k) e[k] = __float2half(__expf(__half2float(e[k]) - m) * inv_sum);
    *reinterpret_cast<uint4*>(gProw + ch * 8) = v;
  }
  if (stamp) {
    Stamp s;
    s.smid = smid();
    s.pad = 0;
    c[4] = clock64();
    for (int i = 0; i < kPhases; ++i) s.c[i] = c[i];
    s.g0 = g0;
    s.g1 = gtimer();
    stamps[blockIdx.x] = s;
  }
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const size_t max_elems = static_cast<size_t>(64) * 4096 * 4096;  // B4 H16 N4096 rows
  half *s = nullptr, *p = nullptr;
  CHECK(cudaMalloc(&s, max_elems * sizeof(half)));
  CHECK(cudaMalloc(&p, max_elems * sizeof(half)));
  CHECK(cudaMemset(s, 0, max_elems * sizeof(half)));
  Stamp* stamps = nullptr;
  CHECK(cudaMalloc(&stamps, static_cast<size_t>(64) * 4096 * sizeof(Stamp)));
  CHECK(cudaFuncSetAttribute(softmax_phases_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             16384));
  std::printf("{\"device\": \"%s\", \"sms\": %d}\n", prop.name, sms);
  struct Shape {
    int rows, cols;
  };
  const Shape shapes[] = {
      {64 * 512, 512}, {64 * 1024, 1024}, {64 * 2048, 2048}, {64 * 4096, 4096}, {16 * 8192, 8192}};
  for (const Shape& sh : shapes) {
    const int smem = sh.cols * 2;
    int resident = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, softmax_phases_kernel, kThreads,
                                                        smem));
    const std::vector<double> sets = timed_sets_us(
        [&] { softmax_phases_kernel<<<sh.rows, kThreads, smem>>>(s, p, sh.cols, nullptr); }, 5, 10);
    softmax_phases_kernel<<<sh.rows, kThreads, smem>>>(s, p, sh.cols, stamps);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<Stamp> st(static_cast<size_t>(sh.rows));
    CHECK(cudaMemcpy(st.data(), stamps, st.size() * sizeof(Stamp), cudaMemcpyDeviceToHost));
    std::vector<double> phase[kPhases - 1], life;
    std::vector<CtaSpan> spans;
    for (const Stamp& x : st) {
      for (int i = 0; i + 1 < kPhases; ++i)
        phase[i].push_back(static_cast<double>(x.c[i + 1] - x.c[i]));
      life.push_back(static_cast<double>(x.c[kPhases - 1] - x.c[0]));
      spans.push_back({x.smid, x.c[0], x.c[kPhases - 1], x.g0, x.g1});
    }
    const SlotGaps g = slot_gaps(spans, sms, resident);
    std::printf("{\"rows\": %d, \"cols\": %d, \"resident\": %d, \"time_us\": %.3f, ", sh.rows,
                sh.cols, resident, percentile(sets, 0.5));
    const char* names[kPhases - 1] = {"load_and_max", "max_reduce", "sum_pass_and_reduce",
                                      "write_pass"};
    for (int i = 0; i + 1 < kPhases; ++i) {
      std::printf("\"%s\": [%.0f, %.0f, %.0f], ", names[i], percentile(phase[i], 0.1),
                  percentile(phase[i], 0.5), percentile(phase[i], 0.9));
    }
    std::printf(
        "\"lifetime\": [%.0f, %.0f, %.0f], \"gap\": [%.0f, %.0f, %.0f], "
        "\"sm_clock_mhz\": %.1f}\n",
        percentile(life, 0.1), percentile(life, 0.5), percentile(life, 0.9),
        percentile(g.gaps, 0.1), percentile(g.gaps, 0.5), percentile(g.gaps, 0.9),
        percentile(g.clocks_mhz, 0.5));
    std::fflush(stdout);
  }
  CHECK(cudaFree(s));
  CHECK(cudaFree(p));
  CHECK(cudaFree(stamps));
  return 0;
}
