#pragma once
// The flags of `iosim layer` and the run they describe, shared by the CLI (cli/layer.cpp,
// cli/flag_options.hpp) and the Python package (python/iosim_module.cpp), so that both check and
// default them alike.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "api/layer.hpp"

namespace iosim {

struct LayerFlags {
  std::string model;
  std::string phase = "prefill";
  std::int64_t batch = 1, seq = 0, context = 0, tp = 1;
  std::string seq_lens, context_lens;  // a mixed step: "1,1,512", one length per sequence
  std::string profile = "h100-sxm5-80gb";
  std::string algo, kernel;
  std::string dtype = "bf16";
  std::string kv_dtype;  // --kv-dtype: the attention's K/V cache type (empty: --dtype)
  double sm_clock_mhz = 0.0;
  std::string l2 = "on";
  std::string launch = "graph";
  std::string mlp_activation = "fused";
  std::int64_t gemm_bm = 0, gemm_bn = 0, gemm_bk = 0;
  int gemm_cluster_m = 0;
  int gemm_cluster_n = 0;
  std::int64_t gemm_group_m = 0;
  int gemm_split_k = 0;
};

/// One flag of `iosim layer`'s simulation (not of its output: --format).
struct LayerFlag {
  using Field = std::variant<std::string LayerFlags::*, double LayerFlags::*,
                             std::int64_t LayerFlags::*, int LayerFlags::*>;
  std::string name;  // "--seq"
  std::string help;
  Field field;
  bool required = false;
  bool show_default = true;  // in --help (never for a required flag); off where the default
                             // means "not given"
};

/// The flags, in --help's order.
const std::vector<LayerFlag>& layer_flags();

/// The fixed range its command checks integer flag `flag` against ("--seq" -> [1, 16777216]), or
/// none where the bound depends on other flags or the GPU. The CLI and the Python package name it
/// when a value is past what the flag's field holds (int64's range is no flag's).
std::optional<std::pair<std::int64_t, std::int64_t>> layer_flag_range(const std::string& flag);

/// The request the flags describe, its model loaded (a built-in name or a YAML file). `given`
/// holds the names of the flags the user gave ("--seq"), whatever their values. Throws
/// ConfigError naming a bad flag: a required one left out, a phase or --l2 value that is not one
/// of the words, --algo given with --kernel, a model that cannot be read.
LayerRequest to_layer_request(const LayerFlags& f, const std::set<std::string>& given);

/// Checks the flags, loads the model and the profile and simulates the layer and the step
/// (simulate_layer()). Throws ConfigError naming a bad flag.
LayerReport run_layer(const LayerFlags& f, const std::set<std::string>& given);

/// The flags of `iosim layer` that the CLI takes as lists ("512,1024", or a range as in
/// api/sweep.hpp: "512:4096:x2"): the sweep axes, in the order the points vary (the last
/// fastest).
const std::vector<std::string>& layer_axis_flags();

/// A sweep of `iosim layer`: one LayerFlags per point of the cartesian product of the axis
/// flags' lists.
struct LayerSweep {
  std::vector<std::string> axes;                  // the flags given more than one value ("--seq")
  std::vector<LayerFlags> points;                 // the last axis varying fastest
  std::vector<std::vector<std::int64_t>> values;  // values[i][a]: axis a's value at point i
};

/// The points of `base` with each flag of `lists` (an axis flag -> its text) set to each of its
/// values. Throws ConfigError naming the flag of a list with an empty value, a repeat or a value
/// that is not a decimal integer, or of a flag that is not an axis.
LayerSweep layer_sweep(const LayerFlags& base, const std::map<std::string, std::string>& lists);

/// The layer runs of a sweep's points, reading the model and the profile once (run_layer()'s
/// checks). `given` as for run_layer().
struct LayerSweepRun {
  std::vector<std::string> axes;                  // as LayerSweep's
  std::vector<std::vector<std::int64_t>> values;  // as LayerSweep's
  std::vector<LayerReport> reports;               // one per point, in point order
};
LayerSweepRun run_layer_sweep(const LayerSweep& sweep, const std::set<std::string>& given);

}  // namespace iosim
