#include "api/layer_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "api/run_flags.hpp"
#include "api/sweep.hpp"
#include "sim/base/errors.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/schedule/problem.hpp"
#include "transformer/gemm_schedule.hpp"
#include "transformer/model_config.hpp"

namespace iosim {
namespace {

using LayerF = LayerFlags;

// --model's help names the built-in models as `iosim models` lists them (a model added to
// models/ appears here too); where their folder cannot be read (IOSIM_MODEL_DIR), only the way to
// list them: `iosim layer` then says what is wrong with the folder.
std::string model_help() {
  std::string names;
  try {
    names = fmt::format("{}", fmt::join(builtin_model_names(), ", "));
  } catch (const ConfigError&) {
  }
  return fmt::format("a built-in model (`iosim models`{}) or a model YAML file",
                     names.empty() ? "" : ": " + names);
}

std::vector<LayerFlag> make_layer_flags() {
  return {
      {"--model", model_help(), &LayerF::model, true},
      {"--phase", "prefill (default) or decode", &LayerF::phase, false, false},
      {"--batch", "sequences (default 1)", &LayerF::batch, false, false},
      {"--seq",
       "prefill (required): tokens per sequence; decode: the cached context when --context is "
       "left out",
       &LayerF::seq, false, false},
      {"--context",
       "keys each query attends over (default: --seq); decode: the keys cached per sequence, "
       "enough alone (one new token each)",
       &LayerF::context, false, false},
      {"--seq-lens",
       "a mixed step (continuous batching: decode rows beside prefill chunks): query tokens of "
       "each sequence this step, as --seq per sequence (1,1,512); the GEMMs run over their sum, "
       "attention is one ragged causal launch; not with --phase, --batch, --seq, --context",
       &LayerF::seq_lens, false, false},
      {"--context-lens",
       "a mixed step: keys each sequence attends over, cached + new, as --context per sequence "
       "(default: --seq-lens)",
       &LayerF::context_lens, false, false},
      {"--tp", "tensor-parallel ranks dividing heads, K/V heads, MLP width (1)", &LayerF::tp, false,
       false},
      {"--profile", "hardware profile name or YAML file", &LayerF::profile, false, false},
      {"--algo",
       "attention algorithm (default: flash2 for prefill and a mixed step, flash-decoding for "
       "decode)",
       &LayerF::algo, false, false},
      {"--kernel", "attention kernel description (file, preset or inline)", &LayerF::kernel, false,
       false},
      {"--dtype", "fp16 or bf16 (default bf16)", &LayerF::dtype, false, false},
      {"--kv-dtype",
       "decode: the K/V cache's type, fp8 (e4m3, converted on chip by the attention kernel; "
       "flash-decoding, paged) or --dtype's (the default); the GEMMs keep --dtype",
       &LayerF::kv_dtype, false, false},
      {"--sm-clock-mhz", "time every op at this SM clock (default: the power model's clock)",
       &LayerF::sm_clock_mhz, false, false},
      {"--l2", "on (default) or off: the two-level HBM <-> SRAM model", &LayerF::l2, false, false},
      {"--launch",
       "graph (default: kernels replayed from a CUDA graph, as serving engines run a step) or "
       "stream (each kernel launched from a stream)",
       &LayerF::launch, false, false},
      {"--mlp-activation",
       "fused (default: SiLU(gate) x up in one kernel, as vLLM's silu_and_mul) or eager "
       "(PyTorch eager's F.silu and multiply, two kernels through HBM)",
       &LayerF::mlp_activation, false, false},
      {"--gemm-bm",
       "GEMM output tile rows (default: on Hopper the tile cuBLAS's heuristic would choose, "
       "else 128)",
       &LayerF::gemm_bm, false, false},
      {"--gemm-bn", "GEMM output tile columns (default: as --gemm-bm, else 128)", &LayerF::gemm_bn,
       false, false},
      {"--gemm-bk", "GEMM K chunk, a multiple of 16 (default 64)", &LayerF::gemm_bk, false, false},
      {"--gemm-cluster-m",
       "GEMM CTAs per cluster along M sharing each W tile by TMA multicast (default: with the "
       "chosen tile on Hopper, else 1)",
       &LayerF::gemm_cluster_m, false, false},
      {"--gemm-cluster-n",
       "GEMM CTAs per cluster along N sharing each X tile by TMA multicast (default: with the "
       "chosen tile on Hopper, else 1)",
       &LayerF::gemm_cluster_n, false, false},
      {"--gemm-group-m",
       "GEMM CTA order: walk this many M tiles, then the next N tile (default: 8 on Hopper; "
       "elsewhere, and any group of all M tiles, the M tile fastest over the whole of M)",
       &LayerF::gemm_group_m, false, false},
      {"--gemm-split-k",
       "GEMM CTAs per output tile, each over 1/S of K, summed by a reduction kernel (default: "
       "with the chosen tile on Hopper, else 1)",
       &LayerF::gemm_split_k, false, false},
  };
}

}  // namespace

const std::vector<LayerFlag>& layer_flags() {
  static const std::vector<LayerFlag> flags = make_layer_flags();
  return flags;
}

LayerRequest to_layer_request(const LayerFlags& f, const std::set<std::string>& given) {
  // The CLI's parser checks these first; the Python package relies on this.
  for (const LayerFlag& flag : layer_flags()) {
    if (flag.required && given.count(flag.name) == 0) {
      throw ConfigError(fmt::format("{} is required", flag.name));
    }
  }
  LayerRequest req;
  const bool mixed = given.count("--seq-lens") > 0 || given.count("--context-lens") > 0;
  if (mixed) {
    // A step of per-sequence lengths is neither prefill nor decode (LayerPhase::mixed), and its
    // lists say what --batch, --seq and --context would (its sweeps take no lists of lists).
    if (given.count("--seq-lens") == 0) {
      throw ConfigError("--context-lens needs --seq-lens: the query tokens of each sequence");
    }
    for (const char* flag : {"--phase", "--batch", "--seq", "--context"}) {
      if (given.count(flag) > 0) {
        throw ConfigError(fmt::format(
            "{} with --seq-lens: a mixed step's lists give each sequence's queries and keys "
            "(the batch is their count, the phase mixed); leave {} out",
            flag, flag));
      }
    }
    req.phase = LayerPhase::mixed;
    req.seq_lens = *parse_lengths("--seq-lens", f.seq_lens);
    if (given.count("--context-lens") > 0) {
      req.context_lens = *parse_lengths("--context-lens", f.context_lens);
    }
  } else if (f.phase == "prefill") {
    req.phase = LayerPhase::prefill;
  } else if (f.phase == "decode") {
    req.phase = LayerPhase::decode;
  } else {
    throw ConfigError("--phase " + f.phase + ": expected prefill or decode");
  }
  // A prefill's queries are --seq tokens per sequence; a decode step's are one new token per
  // sequence, over the --context keys cached (or --seq's, as before --context alone was taken).
  if (req.phase == LayerPhase::prefill && given.count("--seq") == 0) {
    throw ConfigError("--seq is required with --phase prefill: the tokens per sequence");
  }
  if (req.phase == LayerPhase::decode && given.count("--seq") == 0 &&
      given.count("--context") == 0) {
    throw ConfigError(
        "--phase decode needs --context: the keys cached per sequence (one new token each)");
  }
  if (f.l2 != "on" && f.l2 != "off") throw ConfigError("--l2 " + f.l2 + ": expected on or off");
  if (f.launch != "graph" && f.launch != "stream") {
    throw ConfigError("--launch " + f.launch + ": expected graph or stream");
  }
  if (f.mlp_activation != "fused" && f.mlp_activation != "eager") {
    throw ConfigError("--mlp-activation " + f.mlp_activation + ": expected fused or eager");
  }
  if (!f.kernel.empty() && !f.algo.empty()) {
    throw ConfigError("--algo and --kernel: give one of them");
  }
  req.batch = f.batch;
  req.seq = f.seq;
  req.context = f.context;
  req.tp = f.tp;
  req.dtype = f.dtype;
  req.kv_dtype = f.kv_dtype;
  req.algorithm = f.algo;
  req.kernel = f.kernel;
  req.sm_clock_mhz = f.sm_clock_mhz;
  req.l2_enabled = f.l2 == "on";
  req.launch = f.launch == "graph" ? LayerLaunch::graph : LayerLaunch::stream;
  req.fused_activation = f.mlp_activation == "fused";
  req.gemm_tiling.bm = f.gemm_bm;
  req.gemm_tiling.bn = f.gemm_bn;
  req.gemm_tiling.bk = f.gemm_bk;
  req.gemm_tiling.cluster_m = f.gemm_cluster_m;
  req.gemm_tiling.cluster_n = f.gemm_cluster_n;
  req.gemm_tiling.group_m = f.gemm_group_m;
  req.gemm_tiling.split_k = f.gemm_split_k;
  req.model = load_model_config(f.model);
  return req;
}

LayerReport run_layer(const LayerFlags& f, const std::set<std::string>& given) {
  const LayerRequest req = to_layer_request(f, given);
  return simulate_layer(load_profile(f.profile), req);
}

std::optional<std::pair<std::int64_t, std::int64_t>> layer_flag_range(const std::string& flag) {
  // simulate_layer()'s checks (its GEMM flags: check_gemm_flags(); tests/cli_test.sh, section
  // contract). --seq and --context are lists, read by layer_sweep().
  constexpr std::int64_t kInt = std::numeric_limits<int>::max();
  constexpr std::int64_t kInt64 = std::numeric_limits<std::int64_t>::max();
  static const std::map<std::string, std::pair<std::int64_t, std::int64_t>> ranges = {
      {"--batch", {1, kMaxBatch}},
      {"--gemm-bm", {0, 256}},
      {"--gemm-bn", {0, 256}},
      {"--gemm-cluster-m", {0, kMaxClusterCtas}},
      {"--gemm-cluster-n", {0, kMaxClusterCtas}},
      {"--gemm-group-m", {0, kInt64}},
      {"--gemm-split-k", {0, kInt}}};
  const auto it = ranges.find(flag);
  return it == ranges.end() ? std::nullopt : std::optional(it->second);
}

const std::vector<std::string>& layer_axis_flags() {
  static const std::vector<std::string> axes = {"--batch", "--seq", "--context"};
  return axes;
}

LayerSweep layer_sweep(const LayerFlags& base, const std::map<std::string, std::string>& lists) {
  const std::vector<std::string>& axis_flags = layer_axis_flags();
  for (const auto& [flag, text] : lists) {
    if (std::find(axis_flags.begin(), axis_flags.end(), flag) == axis_flags.end()) {
      throw ConfigError(fmt::format("{} '{}': {} takes one value, not a list", flag, text, flag));
    }
  }
  LayerFlags one = base;  // the axes of one value set
  std::vector<std::int64_t LayerFlags::*> fields;
  std::vector<std::vector<std::int64_t>> axis_values;
  LayerSweep sweep;
  for (const std::string& flag : axis_flags) {
    const auto it = lists.find(flag);
    if (it == lists.end()) continue;
    std::vector<std::int64_t> values = parse_int_values(flag, it->second);
    // Every value of a list is checked before any point runs: past its range, a value was
    // refused only when its point came, after the points before it had run (issue #50:
    // --batch 1:9223372036854775807:x2 ran 21 points, past 20 s, before refusing 2097152).
    const std::int64_t lo = flag == "--context" ? 0 : 1;  // --context 0: --seq
    const std::int64_t hi = flag == "--batch" ? kMaxBatch : kMaxSeq;
    for (const std::int64_t v : values) {
      if (v < lo) throw ConfigError(fmt::format("{} must be positive, got {}", flag, v));
      if (v > hi) {
        throw ConfigError(fmt::format("{} {} is out of range: it must be in [1, {}]", flag, v, hi));
      }
    }
    const auto entry = std::find_if(layer_flags().begin(), layer_flags().end(),
                                    [&](const LayerFlag& f) { return f.name == flag; });
    if (entry == layer_flags().end() ||
        !std::holds_alternative<std::int64_t LayerFlags::*>(entry->field)) {
      throw InternalError(
          fmt::format("layer axis {} is not an integer flag of layer_flags()", flag));
    }
    const auto field = std::get<std::int64_t LayerFlags::*>(entry->field);
    if (values.size() == 1) {
      one.*field = values.front();
      continue;
    }
    sweep.axes.push_back(flag);
    fields.push_back(field);
    axis_values.push_back(std::move(values));
  }
  std::vector<std::size_t> sizes;
  for (const auto& v : axis_values) sizes.push_back(v.size());
  for_each_combination(sizes, [&](const std::vector<std::size_t>& at) {
    LayerFlags point = one;
    std::vector<std::int64_t> values;
    for (std::size_t a = 0; a < at.size(); ++a) {
      point.*fields[a] = axis_values[a][at[a]];
      values.push_back(axis_values[a][at[a]]);
    }
    sweep.points.push_back(point);
    sweep.values.push_back(std::move(values));
  });
  return sweep;
}

LayerSweepRun run_layer_sweep(const LayerSweep& sweep, const std::set<std::string>& given) {
  LayerSweepRun run;
  run.axes = sweep.axes;
  run.values = sweep.values;
  if (sweep.points.empty()) return run;
  // The points differ in their axes alone: one model and one profile for all.
  const LayerRequest first = to_layer_request(sweep.points.front(), given);
  const HardwareProfile profile = load_profile(sweep.points.front().profile);
  for (const LayerFlags& p : sweep.points) {
    LayerRequest req = first;
    req.batch = p.batch;
    req.seq = p.seq;
    req.context = p.context;
    run.reports.push_back(simulate_layer(profile, req));
  }
  return run;
}

}  // namespace iosim
