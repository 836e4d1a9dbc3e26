#pragma once
// Writers of `iosim kvcache` results: they only format what the KV-cache simulation produced.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvcache/simulator.hpp"
#include "kvcache/workload.hpp"

namespace iosim {

/// One `iosim kvcache` invocation: where the budget came from, the stream, one result per policy
/// (all on the same stream).
struct KvCacheRun {
  std::string profile;             // "" when the budget was given directly
  std::int64_t hbm_bytes = 0;      // the profile's HBM capacity (0 without a profile)
  std::int64_t weights_bytes = 0;  // subtracted from it
  std::int64_t budget_bytes = 0;
  std::string dtype;
  kvcache::StreamSpec spec;  // distributions, samples, sharing, limits, seed
  bool from_trace = false;
  kvcache::StreamStats stream;
  std::vector<kvcache::KvCacheResult> results;
};

/// Everything: model, budget, stream, and per policy the overall numbers and the time series.
nlohmann::json kvcache_to_json(const KvCacheRun& run);

/// A side-by-side table of the policies' overall numbers; with `series`, each policy's time series
/// follows.
std::string kvcache_table(const KvCacheRun& run, bool series);

/// CSV, one row per policy of the overall numbers (header first).
std::string kvcache_summary_csv(const KvCacheRun& run);

/// CSV, one row per policy and time-series window (header first).
std::string kvcache_series_csv(const KvCacheRun& run);

}  // namespace iosim
