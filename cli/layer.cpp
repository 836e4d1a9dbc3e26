// `iosim layer`: one transformer layer (and the whole step) of a model, attention beside the GEMMs
// and elementwise ops around it. The simulation is api/layer.cpp's; this file parses the flags
// and writes.
#include "api/layer.hpp"

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/format_flag.hpp"
#include "reports/layer_writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_text.hpp"
#include "sim/hardware/profile.hpp"

namespace iosim::cli {
namespace {

struct LayerFlags {
  std::string model, phase = "prefill", profile = "h100-sxm5-80gb", l2 = "on";
  LayerRequest request;
  FormatFlag format{{"table", "json", "csv"}};
};

}  // namespace

Action add_layer_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "layer", "one transformer layer and the whole step: attention beside the GEMMs around it");
  auto f = std::make_shared<LayerFlags>();
  LayerRequest& r = f->request;
  cmd->add_option("--model", f->model,
                  "a built-in model (models/*.yaml: llama-3-8b, llama-3-70b, mistral-7b, "
                  "qwen2-7b) or a model YAML file")
      ->required();
  cmd->add_option("--phase", f->phase, "prefill (default) or decode");
  cmd->add_option("--batch", r.batch, "sequences (default 1)");
  cmd->add_option("--seq", r.seq,
                  "prefill: tokens per sequence; decode: the cached context when --context is "
                  "left out")
      ->required();
  cmd->add_option("--context", r.context, "keys each query attends over (default: --seq)");
  cmd->add_option("--tp", r.tp, "tensor-parallel ranks dividing heads, K/V heads, MLP width (1)");
  cmd->add_option("--profile", f->profile, "hardware profile name or YAML file");
  cmd->add_option("--algo", r.algorithm,
                  "attention algorithm (default: flash2 for prefill, flash-decoding for decode)");
  cmd->add_option("--kernel", r.kernel, "attention kernel description (file, preset or inline)");
  cmd->add_option("--dtype", r.dtype, "fp16 or bf16 (default bf16)");
  cmd->add_option("--sm-clock-mhz", r.sm_clock_mhz,
                  "time every op at this SM clock (default: the power model's clock)");
  cmd->add_option("--l2", f->l2, "on (default) or off: the two-level HBM <-> SRAM model");
  cmd->add_option("--gemm-bm", r.gemm_tiling.bm, "GEMM output tile rows (default 128)");
  cmd->add_option("--gemm-bn", r.gemm_tiling.bn,
                  "GEMM output tile columns (default 128; 192 for M >= 128 on Hopper)");
  cmd->add_option("--gemm-bk", r.gemm_tiling.bk, "GEMM K chunk (default 64)");
  cmd->add_option("--gemm-cluster-m", r.gemm_tiling.cluster_m,
                  "GEMM CTAs per cluster along M sharing each W tile by TMA multicast (default: 2 "
                  "for M >= 128 on Hopper, else 1)");
  cmd->add_option("--gemm-group-m", r.gemm_tiling.group_m,
                  "GEMM CTA order: walk this many M tiles, then the next N tile (default 0: the "
                  "M tile fastest over the whole of M)");
  f->format.add_to(*cmd);
  return [f] {
    const std::string& format = f->format.checked();
    LayerRequest req = f->request;
    if (f->phase == "prefill") {
      req.phase = LayerPhase::prefill;
    } else if (f->phase == "decode") {
      req.phase = LayerPhase::decode;
    } else {
      throw ConfigError("--phase " + f->phase + ": expected prefill or decode");
    }
    if (f->l2 != "on" && f->l2 != "off")
      throw ConfigError("--l2 " + f->l2 + ": expected on or off");
    req.l2_enabled = f->l2 == "on";
    if (!req.kernel.empty() && !req.algorithm.empty()) {
      throw ConfigError("--algo and --kernel: give one of them");
    }
    req.model = load_model_config(f->model);
    const HardwareProfile profile = load_profile(f->profile);
    const LayerReport rep = simulate_layer(profile, req);
    if (format == "json") {
      std::cout << json_text(layer_to_json(rep), 2) << "\n";
    } else if (format == "csv") {
      std::cout << layer_csv(rep);
    } else {
      std::cout << layer_table(rep);
    }
    return 0;
  };
}

}  // namespace iosim::cli
