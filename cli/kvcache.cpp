// `iosim kvcache`: a serving KV cache under a memory budget, contiguous vs paged allocation, on one
// request stream.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/format_flag.hpp"
#include "kvcache/simulator.hpp"
#include "kvcache/workload.hpp"
#include "reports/kvcache_writers.hpp"
#include "sim/dtype.hpp"
#include "sim/errors.hpp"
#include "sim/profile.hpp"

namespace iosim::cli {
namespace {

struct KvFlags {
  std::string profile = "h100-sxm5-80gb";
  double weights_bytes = 0, kv_budget_bytes = 0;
  std::int64_t layers = 0, kv_heads = 0, head_dim = 0;
  std::string dtype = "fp16";
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
  bool series = false;
  FormatFlag format{{"table", "json", "csv"}};
};

// Bytes given as a number that may be written 16e9; whole bytes, not negative.
std::int64_t to_bytes(double v, const char* flag) {
  if (!std::isfinite(v) || v < 0 || v > 1e18 || v != std::floor(v)) {
    throw ConfigError(fmt::format("{} {} must be a whole number of bytes in [0, 1e18]", flag, v));
  }
  return static_cast<std::int64_t>(v);
}

// KV caches are also kept in 8-bit formats, so fp8 is accepted here beside the attention dtypes.
std::int64_t kv_dtype_bytes(const std::string& s) {
  if (s == "fp8") return 1;
  if (s != "fp16" && s != "bf16" && s != "fp32") {
    throw ConfigError(
        fmt::format("--dtype '{}': valid KV-cache dtypes are fp16, bf16, fp32, fp8", s));
  }
  return dtype_bytes(parse_dtype(s));
}

}  // namespace

Action add_kvcache_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "kvcache", "simulate a serving KV cache under a memory budget: contiguous vs paged");
  auto f = std::make_shared<KvFlags>();
  cmd->add_option("--profile", f->profile, "hardware profile whose HBM holds weights + KV cache")
      ->capture_default_str();
  cmd->add_option("--weights-bytes", f->weights_bytes,
                  "model weights (and anything else) taken from the profile's HBM");
  cmd->add_option("--kv-budget-bytes", f->kv_budget_bytes,
                  "KV-cache memory, instead of --profile HBM minus --weights-bytes");
  cmd->add_option("--layers", f->layers, "transformer layers")->required();
  cmd->add_option("--kv-heads", f->kv_heads, "key/value heads per layer")->required();
  cmd->add_option("--head-dim", f->head_dim, "head dimension")->required();
  cmd->add_option("--dtype", f->dtype, "KV element type: fp16 | bf16 | fp32 | fp8")
      ->capture_default_str();
  cmd->add_option("--policy", f->policy, "contiguous | paged | both")->capture_default_str();
  cmd->add_option("--block-tokens", f->block_tokens, "paged: tokens per block")
      ->capture_default_str();
  cmd->add_option("--requests", f->requests, "requests to draw")->capture_default_str();
  cmd->add_option("--prompt-len", f->prompt_len,
                  "prompt tokens after the shared prefix: const:N | uniform:MIN,MAX | "
                  "normal:MEAN,STD | lognormal:MU,SIGMA")
      ->capture_default_str();
  cmd->add_option("--output-len", f->output_len, "generated tokens per sample (same forms)")
      ->capture_default_str();
  cmd->add_option("--arrivals", f->arrivals, "burst | poisson:RATE (requests per step)")
      ->capture_default_str();
  cmd->add_option("--trace", f->trace,
                  "CSV trace arrival,prompt_len,output_len[,group] instead of drawn requests");
  cmd->add_option("--max-prompt-tokens", f->max_prompt_tokens, "prompts are clamped to this")
      ->capture_default_str();
  cmd->add_option("--max-output-tokens", f->max_output_tokens,
                  "outputs are clamped to this; contiguous reserves it per sample")
      ->capture_default_str();
  cmd->add_option("--samples", f->samples, "parallel samples per request (share the prompt)")
      ->capture_default_str();
  cmd->add_option("--shared-prefix-tokens", f->shared_prefix_tokens,
                  "a prompt prefix common to each prompt group (paged shares its full blocks)")
      ->capture_default_str();
  cmd->add_option("--prompt-groups", f->prompt_groups, "groups the requests are spread over")
      ->capture_default_str();
  cmd->add_option("--max-running", f->max_running, "most requests running at once (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--watermark", f->watermark, "paged: fraction of blocks admission keeps free")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "seed of the drawn stream")->capture_default_str();
  cmd->add_option("--series-points", f->series_points, "most windows in the time series")
      ->capture_default_str();
  cmd->add_flag("--series", f->series, "table/csv: print the time series");
  f->format.add_to(*cmd);
  return [f, cmd] {
    const std::string& format = f->format.checked();
    std::vector<kvcache::Policy> policies;
    if (f->policy == "both") {
      policies = {kvcache::Policy::contiguous, kvcache::Policy::paged};
    } else {
      policies = {kvcache::parse_policy(f->policy)};  // names the valid ones when it is wrong
    }

    KvCacheRun run;
    if (cmd->count("--kv-budget-bytes") > 0) {
      if (cmd->count("--weights-bytes") > 0 || cmd->count("--profile") > 0) {
        throw ConfigError(
            "--kv-budget-bytes replaces --profile and --weights-bytes; give one or the other");
      }
      run.budget_bytes = to_bytes(f->kv_budget_bytes, "--kv-budget-bytes");
    } else {
      const HardwareProfile hw = load_profile(f->profile);
      run.profile = hw.name;
      run.hbm_bytes = hw.hbm.capacity_bytes.value;
      run.weights_bytes = to_bytes(f->weights_bytes, "--weights-bytes");
      run.budget_bytes = run.hbm_bytes - run.weights_bytes;
      if (run.budget_bytes <= 0) {
        throw ConfigError(fmt::format("--weights-bytes {} leaves nothing of {}'s {} bytes of HBM",
                                      run.weights_bytes, hw.name, run.hbm_bytes));
      }
    }
    run.dtype = f->dtype;

    kvcache::StreamSpec& spec = run.spec;
    spec.samples = f->samples;
    spec.shared_prefix_tokens = f->shared_prefix_tokens;
    spec.prompt_groups = f->prompt_groups;
    spec.max_prompt_tokens = f->max_prompt_tokens;
    spec.max_output_tokens = f->max_output_tokens;
    spec.seed = f->seed;
    spec.requests = f->requests;
    kvcache::RequestStream stream;
    if (!f->trace.empty()) {
      for (const char* flag : {"--requests", "--prompt-len", "--output-len", "--arrivals"}) {
        if (cmd->count(flag) > 0) {
          throw ConfigError(fmt::format("--trace gives the arrivals and lengths; drop {}", flag));
        }
      }
      stream = kvcache::load_trace(f->trace, spec);
      run.from_trace = true;
    } else {
      spec.prompt_len = kvcache::parse_length_dist(f->prompt_len, "--prompt-len");
      spec.output_len = kvcache::parse_length_dist(f->output_len, "--output-len");
      spec.arrivals = kvcache::parse_arrivals(f->arrivals, "--arrivals");
      stream = kvcache::generate_stream(spec);
    }
    run.stream = kvcache::describe(stream);

    kvcache::CacheConfig base;
    base.model = {f->layers, f->kv_heads, f->head_dim, kv_dtype_bytes(f->dtype)};
    base.budget_bytes = run.budget_bytes;
    base.block_tokens = f->block_tokens;
    base.max_running = f->max_running;
    base.watermark = f->watermark;
    base.series_points = f->series_points;
    for (kvcache::Policy p : policies) {
      kvcache::CacheConfig c = base;
      c.policy = p;
      kvcache::validate(c);
    }
    for (kvcache::Policy p : policies) {
      kvcache::CacheConfig c = base;
      c.policy = p;
      run.results.push_back(kvcache::simulate_kvcache(c, stream));
    }

    if (format == "json") {
      std::cout << kvcache_to_json(run).dump(2) << "\n";
    } else if (format == "csv") {
      std::cout << (f->series ? kvcache_series_csv(run) : kvcache_summary_csv(run));
    } else {
      std::cout << kvcache_table(run, f->series);
    }
    return 0;
  };
}

}  // namespace iosim::cli
