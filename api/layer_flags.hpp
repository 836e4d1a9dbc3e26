#pragma once
// The flags of `iosim layer` and the run they describe, shared by the CLI (cli/layer.cpp,
// cli/flag_options.hpp) and the Python package (python/iosim_module.cpp), so that both check and
// default them alike.
#include <cstdint>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "api/layer.hpp"

namespace iosim {

struct LayerFlags {
  std::string model;
  std::string phase = "prefill";
  std::int64_t batch = 1, seq = 0, context = 0, tp = 1;
  std::string profile = "h100-sxm5-80gb";
  std::string algo, kernel;
  std::string dtype = "bf16";
  double sm_clock_mhz = 0.0;
  std::string l2 = "on";
  std::int64_t gemm_bm = 0, gemm_bn = 0, gemm_bk = 0;
  int gemm_cluster_m = 0;
  std::int64_t gemm_group_m = 0;
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

/// The request the flags describe, its model loaded (a built-in name or a YAML file). `given`
/// holds the names of the flags the user gave ("--seq"), whatever their values. Throws
/// ConfigError naming a bad flag: a required one left out, a phase or --l2 value that is not one
/// of the words, --algo given with --kernel, a model that cannot be read.
LayerRequest to_layer_request(const LayerFlags& f, const std::set<std::string>& given);

/// Checks the flags, loads the model and the profile and simulates the layer and the step
/// (simulate_layer()). Throws ConfigError naming a bad flag.
LayerReport run_layer(const LayerFlags& f, const std::set<std::string>& given);

}  // namespace iosim
