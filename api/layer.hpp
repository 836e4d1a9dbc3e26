#pragma once
// One transformer layer, and the whole forward step, beside the attention in it (`iosim layer`):
// the norms, the QKV projection, attention (any algorithm or kernel description, through
// simulate()), the output projection, the residual adds and the MLP, each op simulated on the
// engine at the clock the power model allows, then layers x layer + the final norm + the LM head.
// What the layer holds, in which order and with which sizes, is transformer/decoder_layer.hpp's
// (decoder_layer()); this runs its list.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/counters.hpp"
#include "sim/hardware/profile.hpp"
#include "transformer/decoder_layer.hpp"
#include "transformer/gemm_schedule.hpp"
#include "transformer/model_config.hpp"

namespace iosim {

// LayerPhase (prefill, decode, mixed) and layer_phase_name() are the layer's composition's:
// transformer/decoder_layer.hpp.
/// How the step's kernels are launched: replayed from a CUDA graph (serving engines' decode
/// steps, and the layer suite's measurements) or launched one by one from a stream.
enum class LayerLaunch { graph, stream };

struct LayerRequest {
  ModelConfig model;
  LayerPhase phase = LayerPhase::prefill;
  std::int64_t batch = 1;
  // Prefill: tokens per sequence (the queries; attention is causal over them). Decode: the
  // context already cached, when `context` is left out; 0 with `context`: one new token.
  std::int64_t seq = 0;
  // Keys each query attends over, N_kv (0: `seq`). Prefill with a context longer than seq is a
  // chunk of a longer prompt: seq new tokens over context keys, causal, bottom-right aligned.
  std::int64_t context = 0;
  // A mixed step (phase mixed; --seq-lens, --context-lens): the query tokens of each sequence this
  // step and the keys each attends over (cached + new; empty: seq_lens). The GEMMs run over their
  // packed total, the attention is one ragged causal launch (bottom-right aligned: a decode row
  // sees its whole context, a chunk is causal within itself); batch, seq and context unused.
  std::vector<std::int64_t> seq_lens, context_lens;
  std::int64_t tp = 1;  // tensor-parallel ranks: heads, K/V heads and the MLP width divided by it
  std::string dtype = "bf16";
  // The attention's K/V cache type (run's --kv-dtype; empty: dtype): what the attention kernel
  // reads. The projections write K and V in dtype; the cache's quantizing write is not modelled.
  std::string kv_dtype;
  std::string
      algorithm;       // attention; empty: flash2 for prefill and mixed, flash-decoding for decode
  std::string kernel;  // a kernel description (file, preset or inline) instead of algorithm
  double sm_clock_mhz = 0.0;  // 0: the power model's clock (or the boost clock)
  bool l2_enabled = true;
  // Every op simulated in full: no steady-state extrapolation (sim/engine/steady_state.hpp), as
  // `iosim run --exact`; the GEMMs' K loops and the attention's repetitions otherwise are.
  bool exact = false;
  // graph: each kernel costs the profile's cuda_graph.kernel_gap_us beyond its work (its
  // launch.kernel_overhead_us where the profile has no cuda_graph section); stream: the launch's.
  LayerLaunch launch = LayerLaunch::graph;
  // The MLP's SiLU(gate) * up: true, one fused kernel (vLLM's silu_and_mul); false, PyTorch
  // eager's two kernels (F.silu, then the multiply, each through HBM), as the layer suite measured
  // them launched (cuda_validate/measurements/CALIBRATION.md, "PyTorch eager's activation").
  bool fused_activation = true;
  GemmTilingRequest gemm_tiling;
};

/// One op of the layer (or of the step's tail).
struct LayerOp {
  std::string name;                  // "input_norm", "qkv_proj", "attention", ...
  std::string kind;                  // "norm", "gemm", "attention", "residual", "activation"
  std::int64_t m = 0, n = 0, k = 0;  // a GEMM's sizes; elementwise ops: rows (m) and width (n)
  std::int64_t batch = 1;            // a batch of GEMMs (GemmProblem::batch): their count
  std::string detail;                // attention: the algorithm; a GEMM: its tile
  Counters counters;
  double time_s = 0.0;
  double sm_clock_mhz = 0.0;
  std::string bound;
  double share = 0.0;  // of the layer's time (ops of the step's tail: of the step's)
};

struct LayerReport {
  std::string profile;
  LayerRequest request;
  std::int64_t tokens = 0;    // M: rows of every GEMM of the layer
  std::int64_t seq_kv = 0;    // keys each query attends over
  std::vector<LayerOp> ops;   // one layer, in execution order
  std::vector<LayerOp> tail;  // once per step: the final norm and the LM head
  Counters layer_total;
  double layer_time_s = 0.0;
  Counters step_total;  // layers x layer + tail
  double step_time_s = 0.0;
  std::vector<std::string> notes;  // what the model leaves out
  // The roofs of a roofline of the ops, at the boost clock (each op runs at its own clock).
  double tensor_peak_tflops = 0.0;  // the tensor cores' at the request's dtype
  double hbm_peak_gbps = 0.0;
};

/// Simulates one layer and the step. Throws ConfigError on a bad request: a size that is not
/// positive, a tensor-parallel degree that does not divide the heads, K/V heads or MLP width, an
/// attention algorithm that cannot run the layer's attention.
LayerReport simulate_layer(const HardwareProfile& profile, const LayerRequest& request);

/// A mixed step's lengths in words: "4 decode rows over 1000 to 8000 keys, 1 prefill chunk of 512
/// over 8192".
std::string mixed_step_text(const std::vector<std::int64_t>& seq_lens,
                            const std::vector<std::int64_t>& context_lens);
const char* layer_launch_name(LayerLaunch launch);

}  // namespace iosim
