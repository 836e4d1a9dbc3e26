#include "api/layer_flags.hpp"

#include <fmt/format.h>

#include "sim/base/errors.hpp"
#include "sim/hardware/profile.hpp"

namespace iosim {
namespace {

using F = LayerFlags;

std::vector<LayerFlag> make_layer_flags() {
  return {
      {"--model",
       "a built-in model (models/*.yaml: llama-3-8b, llama-3-70b, mistral-7b, qwen2-7b) or a "
       "model YAML file",
       &F::model, true},
      {"--phase", "prefill (default) or decode", &F::phase, false, false},
      {"--batch", "sequences (default 1)", &F::batch, false, false},
      {"--seq",
       "prefill: tokens per sequence; decode: the cached context when --context is left out",
       &F::seq, true},
      {"--context", "keys each query attends over (default: --seq)", &F::context, false, false},
      {"--tp", "tensor-parallel ranks dividing heads, K/V heads, MLP width (1)", &F::tp, false,
       false},
      {"--profile", "hardware profile name or YAML file", &F::profile, false, false},
      {"--algo", "attention algorithm (default: flash2 for prefill, flash-decoding for decode)",
       &F::algo, false, false},
      {"--kernel", "attention kernel description (file, preset or inline)", &F::kernel, false,
       false},
      {"--dtype", "fp16 or bf16 (default bf16)", &F::dtype, false, false},
      {"--sm-clock-mhz", "time every op at this SM clock (default: the power model's clock)",
       &F::sm_clock_mhz, false, false},
      {"--l2", "on (default) or off: the two-level HBM <-> SRAM model", &F::l2, false, false},
      {"--gemm-bm", "GEMM output tile rows (default 128)", &F::gemm_bm, false, false},
      {"--gemm-bn", "GEMM output tile columns (default 128; 192 for M >= 128 on Hopper)",
       &F::gemm_bn, false, false},
      {"--gemm-bk", "GEMM K chunk (default 64)", &F::gemm_bk, false, false},
      {"--gemm-cluster-m",
       "GEMM CTAs per cluster along M sharing each W tile by TMA multicast (default: 2 for M >= "
       "128 on Hopper, else 1)",
       &F::gemm_cluster_m, false, false},
      {"--gemm-group-m",
       "GEMM CTA order: walk this many M tiles, then the next N tile (default 0: the M tile "
       "fastest over the whole of M)",
       &F::gemm_group_m, false, false},
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
  if (f.phase == "prefill") {
    req.phase = LayerPhase::prefill;
  } else if (f.phase == "decode") {
    req.phase = LayerPhase::decode;
  } else {
    throw ConfigError("--phase " + f.phase + ": expected prefill or decode");
  }
  if (f.l2 != "on" && f.l2 != "off") throw ConfigError("--l2 " + f.l2 + ": expected on or off");
  if (!f.kernel.empty() && !f.algo.empty()) {
    throw ConfigError("--algo and --kernel: give one of them");
  }
  req.batch = f.batch;
  req.seq = f.seq;
  req.context = f.context;
  req.tp = f.tp;
  req.dtype = f.dtype;
  req.algorithm = f.algo;
  req.kernel = f.kernel;
  req.sm_clock_mhz = f.sm_clock_mhz;
  req.l2_enabled = f.l2 == "on";
  req.gemm_tiling.bm = f.gemm_bm;
  req.gemm_tiling.bn = f.gemm_bn;
  req.gemm_tiling.bk = f.gemm_bk;
  req.gemm_tiling.cluster_m = f.gemm_cluster_m;
  req.gemm_tiling.group_m = f.gemm_group_m;
  req.model = load_model_config(f.model);
  return req;
}

LayerReport run_layer(const LayerFlags& f, const std::set<std::string>& given) {
  const LayerRequest req = to_layer_request(f, given);
  return simulate_layer(load_profile(f.profile), req);
}

}  // namespace iosim
