#pragma once
// A decoder layer as data: the ops of one layer of a model in execution order, and the step's
// tail, each with the problem it runs (a GEMM's sizes, an elementwise op's kind and shape, the
// attention's problem), for a phase and its sizes. Nothing here runs an op: `iosim layer`
// (api/layer.cpp) runs the list, the GEMMs and elementwise ops on the engine and the attention
// through simulate(), so that what a layer is and how it is timed stay apart.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/schedule/dtype.hpp"
#include "sim/schedule/problem.hpp"
#include "transformer/elementwise_schedule.hpp"
#include "transformer/gemm_schedule.hpp"
#include "transformer/model_config.hpp"

namespace iosim {

// mixed: a continuous-batching server's step (vLLM's, SGLang's), each sequence its own query and
// key lengths (LayerStep::seq_lens): decode rows beside prefill chunks, packed into one batch.
enum class LayerPhase { prefill, decode, mixed };

const char* layer_phase_name(LayerPhase phase);

/// The step a layer runs in: its phase and sizes as requested.
struct LayerStep {
  LayerPhase phase = LayerPhase::prefill;
  std::int64_t batch = 1;  // sequences
  // Prefill: tokens per sequence (the queries; attention is causal over them). Decode: the
  // context already cached, when `context` is left out (0); resolved to one new token.
  std::int64_t seq = 0;
  // Keys each query attends over (0: `seq`). Prefill with a context longer than seq is a chunk of
  // a longer prompt: seq new tokens over context keys, causal, bottom-right aligned.
  std::int64_t context = 0;
  // A mixed step: the query tokens of each sequence and the keys each attends over (cached + new;
  // empty: seq_lens). The GEMMs run over their packed total, the attention is one ragged causal
  // launch; batch, seq and context are resolved from them.
  std::vector<std::int64_t> seq_lens, context_lens;
  std::int64_t tp = 1;  // tensor-parallel ranks: heads, K/V heads and the MLP width divided by it
};

/// The step with what its phase implies filled in and its sizes checked: a mixed step's
/// context_lens (seq_lens when left out), batch (the sequences' count), seq and context (the
/// longest query and context), which the report and the step's tail use; a decode step's seq 1
/// when only the context is given (one new token per sequence). Throws ConfigError naming the
/// flag: a mixed step without lengths or with lengths that disagree, a decode step without a
/// context, a batch, seq or tp that is not positive, a negative context.
LayerStep resolve_layer_step(LayerStep step);

enum class LayerOpKind { norm, gemm, attention, residual, activation };

/// "norm", "gemm", "attention", "residual", "activation": the op's kind in the reports.
const char* layer_op_kind_name(LayerOpKind kind);

/// One op of the layer: its name in the reports, its kind and the problem it runs.
struct DecoderLayerOp {
  std::string name;  // "input_norm", "qkv_proj", "attention", ...
  LayerOpKind kind = LayerOpKind::gemm;
  GemmProblem gemm;                // kind gemm
  ElementwiseProblem elementwise;  // kinds norm, residual, activation
  // Kind attention: DecoderLayer::attention.
};

struct DecoderLayer {
  std::int64_t tokens = 0;  // M: rows of every GEMM of the layer
  std::int64_t seq_kv = 0;  // keys each query attends over (a rolling cache's window in decode)
  // The attention's problem, in the layer's dtype; its K/V type (kv_dtype) is the request's, left
  // to the caller. window > 0: a prefill (or mixed step) over more keys than the model's sliding
  // window, which needs an attention that skips by the window.
  AttentionProblem attention;
  std::vector<DecoderLayerOp> ops;   // one layer, in execution order
  std::vector<DecoderLayerOp> tail;  // once per step: the final norm and the LM head
  std::vector<std::string> notes;    // the sliding window's, when it applies
  std::string not_modelled;          // "not modelled: rotary embeddings, ..."
};

/// The layer of `model` in `step` (resolved by resolve_layer_step()) at `dtype`, its MLP's
/// activation fused (one kernel) or as PyTorch eager's two. A model with multi-head latent
/// attention (ModelConfig::mla()) runs its absorbed decode: the query's and the latent's
/// projections, each head's query taken into the latent's space and its output out of it (GEMMs
/// batched over the rank's heads), the attention over the latent cache (latent_dim kv_lora_rank,
/// head_dim kv_lora_rank + qk_rope_head_dim, one K/V head), o_proj. Throws ConfigError: a
/// tensor-parallel degree that does not divide the heads, K/V heads, MLP width or vocabulary;
/// keys past kMaxSeq; a prefill's context shorter than its queries; a latent model's prefill or
/// mixed step.
DecoderLayer decoder_layer(const ModelConfig& model, const LayerStep& step, Dtype dtype,
                           bool fused_activation);

}  // namespace iosim
