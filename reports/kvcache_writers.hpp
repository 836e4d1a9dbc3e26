#pragma once
// Writers of `iosim kvcache` results: they only format what the KV-cache simulation produced.
#include <nlohmann/json.hpp>
#include <string>

#include "api/kvcache_flags.hpp"  // KvCacheRun

namespace iosim {

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
