// Hardware counters of one range of GPU work through CUPTI's Range Profiler
// (CUDA 13: cupti_range_profiler.h for collection, cupti_profiler_host.h for the
// metric configuration and evaluation; the metric names are ncu's). A second
// collection path beside Nsight Compute, so the harness can read counters
// without ncu, and so the two can be checked against each other
// (scripts/cupti_vs_ncu.py).
//
// How a range is collected: user range + user replay. The caller's work is
// replayed once per pass the metrics need; before each pass `before_pass` runs
// outside the range (the runner flushes L2 there, so every pass starts cold, as
// ncu's --cache-control all does), then `launch` runs between PushRange and
// PopRange. The work must therefore be idempotent (our kernels overwrite their
// outputs). Host-only; this header does not include CUPTI, so nvcc-compiled
// callers need none of its headers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace iosim_cuda {

struct RangeCounters {
  std::string range_name;
  std::vector<std::pair<std::string, double>> values;  // metric -> value, in metrics() order
  int passes = 0;                                      // replays the range needed
};

class RangeProfiler {
 public:
  // Sets up CUPTI's profiler for the current CUDA context (which must exist) and
  // builds the configuration of those `metrics` this chip offers; the others
  // are listed by unavailable(). Throws std::runtime_error naming the CUPTI call
  // that failed (e.g. insufficient privileges, unsupported device).
  explicit RangeProfiler(const std::vector<std::string>& metrics);
  ~RangeProfiler();
  RangeProfiler(const RangeProfiler&) = delete;
  RangeProfiler& operator=(const RangeProfiler&) = delete;

  // Collects one range named `name`: passes of before_pass(); [range: launch()]
  // until CUPTI has every pass, then evaluates the metrics. Throws on error.
  RangeCounters profile(const std::string& name, const std::function<void()>& before_pass,
                        const std::function<void()>& launch);

  // The metrics collected, those dropped, the chip name, the passes the set needs.
  const std::vector<std::string>& metrics() const;
  const std::vector<std::string>& unavailable() const;
  const std::string& chip() const;
  int passes_needed() const;

  // False when cuda_validate was built without CUPTI headers (then the
  // constructor throws and says so).
  static bool compiled_in();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace iosim_cuda
