#include "api/kvcache_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <map>

#include "api/run_flags.hpp"
#include "sim/base/errors.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/schedule/dtype.hpp"
#include "transformer/model_config.hpp"

namespace iosim {
namespace {

using KvF = KvCacheFlags;

// --model's help names the built-in models (as `iosim layer --model` does); where their folder
// cannot be read (IOSIM_MODEL_DIR), only the way to list them.
std::string kv_model_help() {
  std::string names;
  try {
    names = fmt::format("{}", fmt::join(builtin_model_names(), ", "));
  } catch (const ConfigError&) {
  }
  return fmt::format(
      "a built-in model (`iosim models`{}) or a model YAML file: sets --layers, --kv-heads, "
      "--head-dim (and --latent-dim for a latent-attention model) from it; each of those flags "
      "given beside it replaces the model's value. Not the weights: --weights-bytes stays yours",
      names.empty() ? "" : ": " + names);
}

std::vector<KvCacheFlag> make_kvcache_flags() {
  return {
      {"--profile", "hardware profile whose HBM holds weights + KV cache", &KvF::profile},
      {"--weights-bytes", "model weights (and anything else) taken from the profile's HBM",
       &KvF::weights_bytes, false, false},
      {"--kv-budget-bytes", "KV-cache memory, instead of --profile HBM minus --weights-bytes",
       &KvF::kv_budget_bytes, false, false},
      {"--model", kv_model_help(), &KvF::model, false, false},
      {"--layers", "transformer layers (required without --model)", &KvF::layers, false, false},
      {"--kv-heads", "key/value heads per layer (required without --model)", &KvF::kv_heads, false,
       false},
      {"--head-dim", "head dimension (required without --model)", &KvF::head_dim, false, false},
      {"--latent-dim",
       "multi-head latent attention (DeepSeek-V2/V3): each token and layer caches one latent row "
       "of --head-dim columns (latent + RoPE: 512 + 64 = 576) that K and V share, V its first "
       "--latent-dim columns, instead of K and V rows of their own (default: none)",
       &KvF::latent_dim, false, false},
      {"--dtype", "KV element type: fp16 | bf16 | fp32 | fp8", &KvF::dtype},
      {"--kv-dtype",
       "the same as --dtype, by the name `iosim run` gives the K/V cache's type (--kv-dtype fp8: "
       "one byte a value, twice the tokens of fp16)",
       &KvF::kv_dtype, false, false},
      {"--policy", "contiguous | paged | both", &KvF::policy},
      {"--block-tokens", "paged: tokens per block", &KvF::block_tokens},
      {"--requests", "requests to draw", &KvF::requests},
      {"--prompt-len",
       "prompt tokens after the shared prefix: const:N | uniform:MIN,MAX | normal:MEAN,STD | "
       "lognormal:MU,SIGMA",
       &KvF::prompt_len},
      {"--output-len", "generated tokens per sample (same forms)", &KvF::output_len},
      {"--arrivals", "burst | poisson:RATE (requests per step)", &KvF::arrivals},
      {"--trace", "CSV trace arrival,prompt_len,output_len[,group] instead of drawn requests",
       &KvF::trace, false, false},
      {"--max-prompt-tokens", "prompts are clamped to this", &KvF::max_prompt_tokens},
      {"--max-output-tokens", "outputs are clamped to this; contiguous reserves it per sample",
       &KvF::max_output_tokens},
      {"--samples", "parallel samples per request (share the prompt)", &KvF::samples},
      {"--shared-prefix-tokens",
       "a prompt prefix common to each prompt group (paged shares its full blocks)",
       &KvF::shared_prefix_tokens},
      {"--prompt-groups", "groups the requests are spread over", &KvF::prompt_groups},
      {"--max-running", "most requests running at once (0: no limit)", &KvF::max_running},
      {"--watermark", "paged: fraction of blocks admission keeps free", &KvF::watermark},
      {"--seed", "seed of the drawn stream", &KvF::seed},
      {"--series-points", "most windows in the time series", &KvF::series_points},
  };
}

// Bytes given as a number that may be written 16e9; whole bytes, not negative.
std::int64_t to_bytes(double v, const char* flag) {
  if (!std::isfinite(v) || v < 0 || v > 1e18 || v != std::floor(v)) {
    throw ConfigError(fmt::format("{} {} must be a whole number of bytes in [0, 1e18]", flag, v));
  }
  return static_cast<std::int64_t>(v);
}

// KV caches are also kept in 8-bit formats, so fp8 is accepted here beside the attention dtypes.
std::int64_t kv_dtype_bytes(const std::string& s, bool kv_flag) {
  if (s == "fp8") return 1;
  if (s != "fp16" && s != "bf16" && s != "fp32") {
    throw ConfigError(fmt::format("{} '{}': valid KV-cache dtypes are fp16, bf16, fp32, fp8",
                                  kv_flag ? "--kv-dtype" : "--dtype", s));
  }
  return dtype_bytes(parse_dtype(s));
}

// The KV-cache shape of `model` (dtype_bytes left to --dtype).
kvcache::ModelShape kv_shape_of(const ModelConfig& model) {
  kvcache::ModelShape s;
  s.layers = model.layers;
  s.kv_heads = model.kv_heads;
  s.head_dim = model.head_dim;
  if (model.mla()) {
    // As the decode layer's absorbed attention reads it (transformer/decoder_layer.cpp): one
    // latent row a token and layer, the latent's kv_lora_rank columns and the shared rotary
    // key's, V its first kv_lora_rank.
    s.kv_heads = 1;
    s.head_dim = model.kv_lora_rank + model.qk_rope_head_dim;
    s.latent_dim = model.kv_lora_rank;
  }
  return s;
}

}  // namespace

const std::vector<KvCacheFlag>& kvcache_flags() {
  static const std::vector<KvCacheFlag> flags = make_kvcache_flags();
  return flags;
}

std::optional<std::pair<std::int64_t, std::int64_t>> kvcache_flag_range(const std::string& flag) {
  // kvcache's validate() checks (kvcache/workload.cpp, kvcache/simulator.cpp; tests/cli_test.sh,
  // section contract).
  static const std::map<std::string, std::pair<std::int64_t, std::int64_t>> ranges = {
      {"--layers", {1, 1000}},
      {"--kv-heads", {1, 1024}},
      {"--head-dim", {1, 4096}},
      {"--latent-dim", {1, 4096}},
      {"--block-tokens", {1, 4096}},
      {"--requests", {1, 20'000'000}},
      {"--max-prompt-tokens", {1, 10'000'000}},
      {"--max-output-tokens", {1, 10'000'000}},
      {"--samples", {1, 64}},
      {"--shared-prefix-tokens", {0, 10'000'000}},
      {"--prompt-groups", {1, 20'000'000}},
      {"--series-points", {2, 100'000}},
      {"--max-running", {0, std::numeric_limits<std::int64_t>::max()}}};
  const auto it = ranges.find(flag);
  return it == ranges.end() ? std::nullopt : std::optional(it->second);
}

KvCacheRun run_kvcache(const KvCacheFlags& flags, const std::set<std::string>& given) {
  KvCacheFlags f = flags;
  KvCacheRun run;
  if (given.count("--model") > 0) {
    // Unknown names are refused there, with the built-in models listed (as `iosim layer`).
    const ModelConfig model = load_model_config(f.model);
    const kvcache::ModelShape s = kv_shape_of(model);
    // A flag given beside --model replaces the model's value (its --help says so).
    if (given.count("--layers") == 0) f.layers = s.layers;
    if (given.count("--kv-heads") == 0) f.kv_heads = s.kv_heads;
    if (given.count("--head-dim") == 0) f.head_dim = s.head_dim;
    if (given.count("--latent-dim") == 0) f.latent_dim = s.latent_dim;
    run.model = model.name;
    if (model.sliding_window > 0) {
      run.notes.push_back(
          fmt::format("{}'s sliding window would bound each sequence's cache at {} tokens; not "
                      "applied: every sequence here keeps all its tokens",
                      model.name, model.sliding_window));
    }
  } else {
    // Without a model the shape is the user's (the Python package relies on this check).
    for (const char* flag : {"--layers", "--kv-heads", "--head-dim"}) {
      if (given.count(flag) == 0) {
        throw ConfigError(fmt::format("{} is required (or --model NAME)", flag));
      }
    }
  }
  std::vector<kvcache::Policy> policies;
  if (f.policy == "both") {
    policies = {kvcache::Policy::contiguous, kvcache::Policy::paged};
  } else {
    policies = {kvcache::parse_policy(f.policy)};  // names the valid ones when it is wrong
  }
  // The paged cache's flags do nothing to a contiguous one: taken and ignored, a user believed
  // they applied (issue #50 S8), as `run --splits` with flash2 is refused.
  if (f.policy == "contiguous") {
    for (const char* flag : {"--block-tokens", "--watermark"}) {
      if (given.count(flag) > 0) {
        throw ConfigError(fmt::format(
            "{} is for the paged cache: --policy contiguous does not use it (drop it, or use "
            "--policy paged or both)",
            flag));
      }
    }
  }

  if (given.count("--kv-budget-bytes") > 0) {
    if (given.count("--weights-bytes") > 0 || given.count("--profile") > 0) {
      throw ConfigError(
          "--kv-budget-bytes replaces --profile and --weights-bytes; give one or the other");
    }
    run.budget_bytes = to_bytes(f.kv_budget_bytes, "--kv-budget-bytes");
    // Named by its flag ("the KV-cache budget 0 bytes must be positive" named none; issue #50).
    if (run.budget_bytes < 1) {
      throw ConfigError(
          fmt::format("--kv-budget-bytes {} must be at least 1 byte", f.kv_budget_bytes));
    }
  } else {
    const HardwareProfile hw = load_profile(f.profile);
    run.profile = hw.name;
    run.hbm_bytes = hw.hbm.capacity_bytes.value;
    run.weights_bytes = to_bytes(f.weights_bytes, "--weights-bytes");
    run.budget_bytes = run.hbm_bytes - run.weights_bytes;
    if (run.budget_bytes <= 0) {
      throw ConfigError(fmt::format("--weights-bytes {} leaves nothing of {}'s {} bytes of HBM",
                                    run.weights_bytes, hw.name, run.hbm_bytes));
    }
  }
  // --kv-dtype is --dtype by run's name: both given, they must agree.
  if (given.count("--kv-dtype") > 0 && given.count("--dtype") > 0 && f.kv_dtype != f.dtype) {
    throw ConfigError(fmt::format(
        "--kv-dtype {} and --dtype {}: both set the K/V cache's element type here; give one",
        f.kv_dtype, f.dtype));
  }
  const std::string& dtype = given.count("--kv-dtype") > 0 ? f.kv_dtype : f.dtype;
  const std::int64_t value_bytes = kv_dtype_bytes(dtype, given.count("--kv-dtype") > 0);
  run.dtype = dtype;

  kvcache::StreamSpec& spec = run.spec;
  spec.samples = f.samples;
  spec.shared_prefix_tokens = f.shared_prefix_tokens;
  spec.prompt_groups = f.prompt_groups;
  spec.max_prompt_tokens = f.max_prompt_tokens;
  spec.max_output_tokens = f.max_output_tokens;
  spec.seed = f.seed;
  spec.requests = f.requests;
  kvcache::RequestStream stream;
  if (!f.trace.empty()) {
    for (const char* flag : {"--requests", "--prompt-len", "--output-len", "--arrivals"}) {
      if (given.count(flag) > 0) {
        throw ConfigError(fmt::format("--trace gives the arrivals and lengths; drop {}", flag));
      }
    }
    stream = kvcache::load_trace(f.trace, spec);
    run.from_trace = true;
  } else {
    spec.prompt_len = kvcache::parse_length_dist(f.prompt_len, "--prompt-len");
    spec.output_len = kvcache::parse_length_dist(f.output_len, "--output-len");
    spec.arrivals = kvcache::parse_arrivals(f.arrivals, "--arrivals");
    stream = kvcache::generate_stream(spec);
  }
  run.stream = kvcache::describe(stream);

  kvcache::CacheConfig base;
  if (given.count("--latent-dim") > 0) check_latent_dim_flag(f.latent_dim);  // as run's
  const bool latent = f.latent_dim > 0;  // given, or the model's
  if (latent && f.latent_dim > f.head_dim) {
    throw ConfigError(fmt::format(
        "--latent-dim {} exceeds --head-dim {}: V is the first --latent-dim columns of each "
        "cached row of --head-dim columns (DeepSeek-V3: --latent-dim 512 --head-dim 576)",
        f.latent_dim, f.head_dim));
  }
  base.model = {f.layers, f.kv_heads, f.head_dim, value_bytes, latent ? f.latent_dim : 0};
  base.budget_bytes = run.budget_bytes;
  base.block_tokens = f.block_tokens;
  base.max_running = f.max_running;
  base.watermark = f.watermark;
  base.series_points = f.series_points;
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
  return run;
}

}  // namespace iosim
