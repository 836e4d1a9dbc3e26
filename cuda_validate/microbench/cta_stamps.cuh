// What the microbenchmarks that stamp their CTAs share (cta_dispatch.cu, softmax_phases.cu;
// cta_reduction.cu uses the percentile): the SM id and the global timer read in a kernel, timed
// launches, and from the stamps the gap before each CTA once its SM's slots are full and the SM
// clock the stamps saw.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "check.cuh"

__device__ __forceinline__ long long gtimer() {
  long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// Microseconds per call of `launch` (which launches one kernel), per set: `sets` sets of
// `launches` calls timed with CUDA events, after one set that warms up.
template <typename Launch>
std::vector<double> timed_sets_us(Launch&& launch, int sets, int launches) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<double> out;
  for (int set = -1; set < sets; ++set) {
    CHECK(cudaEventRecord(a));
    for (int i = 0; i < launches; ++i) launch();
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (set >= 0) out.push_back(ms * 1e3 / launches);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return out;
}

// The q-quantile of v (the element at q x (n - 1), rounded down); 0 for none.
inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

// One CTA as its thread 0 stamped it: SM, clock64 and %globaltimer (ns) at its start and end.
struct CtaSpan {
  unsigned smid;
  long long c0, c1, g0, g1;
};

// Per CTA past the first `resident` of its SM, its start less the latest end on its SM before it
// (the slot it took); per SM, clock64 cycles over %globaltimer from its first start to its last
// end, in MHz.
struct SlotGaps {
  std::vector<double> gaps, clocks_mhz;
};

inline SlotGaps slot_gaps(const std::vector<CtaSpan>& spans, int sms, int resident) {
  std::vector<std::vector<const CtaSpan*>> by_sm(static_cast<std::size_t>(sms));
  for (const CtaSpan& x : spans) {
    if (x.smid < static_cast<unsigned>(sms)) by_sm[x.smid].push_back(&x);
  }
  SlotGaps out;
  for (auto& v : by_sm) {
    if (v.empty()) continue;
    std::sort(v.begin(), v.end(), [](const CtaSpan* p, const CtaSpan* q) { return p->c0 < q->c0; });
    std::vector<long long> ends;  // of CTAs started so far, sorted
    long long c_lo = v.front()->c0, c_hi = 0, g_lo = v.front()->g0, g_hi = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i >= static_cast<std::size_t>(resident)) {
        auto it = std::upper_bound(ends.begin(), ends.end(), v[i]->c0);
        if (it != ends.begin()) out.gaps.push_back(static_cast<double>(v[i]->c0 - *(it - 1)));
      }
      ends.insert(std::upper_bound(ends.begin(), ends.end(), v[i]->c1), v[i]->c1);
      c_lo = std::min(c_lo, v[i]->c0);
      c_hi = std::max(c_hi, v[i]->c1);
      g_lo = std::min(g_lo, v[i]->g0);
      g_hi = std::max(g_hi, v[i]->g1);
    }
    if (g_hi > g_lo) {
      out.clocks_mhz.push_back(static_cast<double>(c_hi - c_lo) / static_cast<double>(g_hi - g_lo) *
                               1e3);
    }
  }
  return out;
}
