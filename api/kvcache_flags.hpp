#pragma once
// The flags of `iosim kvcache` and the run they describe, shared by the CLI (cli/kvcache.cpp,
// cli/flag_options.hpp) and the Python package (python/iosim_module.cpp), so that both check and
// default them alike.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kvcache/simulator.hpp"
#include "kvcache/workload.hpp"

namespace iosim {

struct KvCacheFlags {
  std::string profile = "h100-sxm5-80gb";
  std::string model;  // --model: a built-in model or a model YAML file (empty: not given)
  double weights_bytes = 0, kv_budget_bytes = 0;
  std::int64_t layers = 0, kv_heads = 0, head_dim = 0;
  std::int64_t latent_dim = 0;  // --latent-dim: a latent cache (0: not given)
  std::string dtype = "fp16";
  std::string kv_dtype;  // --kv-dtype: --dtype by run's name for it (empty: not given)
  std::string policy = "both";
  std::int64_t block_tokens = 16;
  std::int64_t requests = 1000;
  std::string prompt_len = "lognormal:5,1", output_len = "lognormal:5.5,0.9";
  std::string arrivals = "burst";
  std::string trace;
  std::int64_t max_prompt_tokens = 2048, max_output_tokens = 2048;
  int samples = 1;
  std::int64_t shared_prefix_tokens = 0, prompt_groups = 1;
  std::int64_t max_running = 0;
  double watermark = 0.01;
  std::uint64_t seed = 1;
  int series_points = 100;
};

/// One flag of `iosim kvcache`'s simulation (not of its output: --format, --series).
struct KvCacheFlag {
  using Field = std::variant<std::string KvCacheFlags::*, double KvCacheFlags::*,
                             std::int64_t KvCacheFlags::*, int KvCacheFlags::*,
                             std::uint64_t KvCacheFlags::*>;
  std::string name;  // "--kv-heads"
  std::string help;
  Field field;
  bool required = false;
  bool show_default = true;  // in --help (never for a required flag); off where the default
                             // means "not given"
};

/// The flags, in --help's order.
const std::vector<KvCacheFlag>& kvcache_flags();

/// One `iosim kvcache` invocation: where the budget came from, the stream, one result per policy
/// (all on the same stream). reports/kvcache_writers.hpp writes it.
struct KvCacheRun {
  std::string profile;             // "" when the budget was given directly
  std::int64_t hbm_bytes = 0;      // the profile's HBM capacity (0 without a profile)
  std::int64_t weights_bytes = 0;  // subtracted from it
  std::int64_t budget_bytes = 0;
  std::string dtype;
  std::string model;               // --model's name ("" without it)
  std::vector<std::string> notes;  // what the run leaves out (a model's sliding window)
  kvcache::StreamSpec spec;        // distributions, samples, sharing, limits, seed
  bool from_trace = false;
  kvcache::StreamStats stream;
  std::vector<kvcache::KvCacheResult> results;
};

/// Checks the flags, draws or reads the request stream and simulates each policy on it. `given`
/// holds the names of the flags the user gave ("--trace"), whatever their values: some exclude
/// others. Throws ConfigError naming a bad flag.
KvCacheRun run_kvcache(const KvCacheFlags& f, const std::set<std::string>& given);

/// The fixed range its command checks integer flag `flag` against ("--seq" -> [1, 16777216]), or
/// none where the bound depends on other flags or the GPU. The CLI and the Python package name it
/// when a value is past what the flag's field holds (int64's range is no flag's).
std::optional<std::pair<std::int64_t, std::int64_t>> kvcache_flag_range(const std::string& flag);

}  // namespace iosim
