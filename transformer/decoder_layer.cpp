#include "transformer/decoder_layer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "sim/base/errors.hpp"

namespace iosim {
namespace {

std::int64_t divided(std::int64_t value, std::int64_t tp, const char* what) {
  if (value % tp != 0) {
    throw ConfigError(fmt::format("--tp {} does not divide the model's {} ({})", tp, what, value));
  }
  return value / tp;
}

void require_positive_flag(const char* flag, std::int64_t v) {
  if (v <= 0) throw ConfigError(fmt::format("{} must be positive, got {}", flag, v));
}

// A mixed step's lengths checked, and the step's batch (their count), seq (the longest query)
// and context (the longest context) set from them, which the report and the step's tail use.
void resolve_mixed(LayerStep& s) {
  if (s.seq_lens.empty()) throw ConfigError("a mixed step needs --seq-lens");
  if (s.context_lens.empty()) s.context_lens = s.seq_lens;
  if (s.context_lens.size() != s.seq_lens.size()) {
    throw ConfigError(
        fmt::format("--context-lens gives {} lengths and --seq-lens {}: one context per sequence",
                    s.context_lens.size(), s.seq_lens.size()));
  }
  if (s.seq_lens.size() > static_cast<std::size_t>(kMaxBatch)) {
    throw ConfigError(
        fmt::format("--seq-lens gives {} sequences: at most {}", s.seq_lens.size(), kMaxBatch));
  }
  for (std::size_t b = 0; b < s.seq_lens.size(); ++b) {
    const std::int64_t q = s.seq_lens[b], kv = s.context_lens[b];
    if (q < 1 || q > kMaxSeq || kv < 1 || kv > kMaxSeq) {
      throw ConfigError(
          fmt::format("--seq-lens and --context-lens: sequence {} has {} and {}; "
                      "each length must be in [1, {}]",
                      b, q, kv, kMaxSeq));
    }
    if (kv < q) {
      throw ConfigError(fmt::format(
          "--context-lens: sequence {} of {} attends over {} keys, fewer than its {} queries "
          "(--seq-lens): a context counts the cached keys and the new ones",
          b + 1, s.seq_lens.size(), kv, q));
    }
  }
  s.batch = static_cast<std::int64_t>(s.seq_lens.size());
  s.seq = *std::max_element(s.seq_lens.begin(), s.seq_lens.end());
  s.context = *std::max_element(s.context_lens.begin(), s.context_lens.end());
}

DecoderLayerOp gemm(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, Dtype dtype,
                    bool bias, std::int64_t batch = 1) {
  DecoderLayerOp op;
  op.name = name;
  op.kind = LayerOpKind::gemm;
  op.gemm.name = std::move(name);
  op.gemm.m = m;
  op.gemm.n = n;
  op.gemm.k = k;
  op.gemm.dtype = dtype;
  op.gemm.bias = bias;
  op.gemm.batch = batch;
  return op;
}

DecoderLayerOp elementwise(std::string name, LayerOpKind kind, ElementwiseKind what,
                           std::int64_t rows, std::int64_t cols, Dtype dtype,
                           ElementwiseLoop loop = ElementwiseLoop::chunks) {
  DecoderLayerOp op;
  op.name = name;
  op.kind = kind;
  op.elementwise.name = std::move(name);
  op.elementwise.kind = what;
  op.elementwise.rows = rows;
  op.elementwise.cols = cols;
  op.elementwise.dtype = dtype;
  op.elementwise.loop = loop;
  return op;
}

}  // namespace

const char* layer_phase_name(LayerPhase phase) {
  return phase == LayerPhase::prefill  ? "prefill"
         : phase == LayerPhase::decode ? "decode"
                                       : "mixed";
}

const char* layer_op_kind_name(LayerOpKind kind) {
  switch (kind) {
    case LayerOpKind::norm:
      return "norm";
    case LayerOpKind::gemm:
      return "gemm";
    case LayerOpKind::attention:
      return "attention";
    case LayerOpKind::residual:
      return "residual";
    case LayerOpKind::activation:
      return "activation";
  }
  return "?";
}

LayerStep resolve_layer_step(LayerStep s) {
  // A decode step is one new token per sequence over the --context keys cached: --context alone
  // says it all (it was refused, "--seq is required"), and the step then records seq 1.
  // --seq, given instead, is the cached context (docs/layer.md).
  if (s.phase == LayerPhase::mixed) resolve_mixed(s);
  if (s.phase == LayerPhase::decode && s.seq == 0) {
    if (s.context == 0) {
      throw ConfigError(
          "--phase decode needs --context: the keys cached per sequence (one new token each)");
    }
    s.seq = 1;
  }
  require_positive_flag("--batch", s.batch);
  require_positive_flag("--seq", s.seq);
  require_positive_flag("--tp", s.tp);
  if (s.context < 0)
    throw ConfigError(fmt::format("--context must be positive, got {}", s.context));
  return s;
}

namespace {

// The attention block of a multi-head latent attention model's decode step, absorbed as vLLM's
// and FlashMLA's decode run it (DeepSeek-V2's paper, "absorbed" into the query and the output):
// the query through its low-rank bottleneck (q_a_proj, its norm, q_b_proj; or one q_proj), the
// new token's latent and rotary key (kv_a_proj: Hugging Face's kv_a_proj_with_mqa; the latent's
// norm), each head's non-rotary query taken into the latent's space (q_absorb: q_nope_h times
// W_UK_h, a batch of one GEMM a head), the attention over the latent cache, each head's output
// taken out of it (v_unabsorb: o_h times W_UV_h), then o_proj. The model's attention bias
// (qkv_bias) is the two down-projections', as Hugging Face's DeepseekV3Attention gives it. Over
// tensor-parallel ranks the two down-projections (q_a_proj, kv_a_proj) are replicated, the rest
// divided by heads, as vLLM's DeepseekV2MLAAttention divides them. `heads` is one rank's.
void mla_attention_ops(const ModelConfig& model, std::int64_t m, std::int64_t heads, Dtype dtype,
                       ElementwiseKind norm, std::vector<DecoderLayerOp>& ops) {
  const std::int64_t h = model.hidden_size, latent = model.kv_lora_rank;
  const std::int64_t qk_head = model.qk_nope_head_dim + model.qk_rope_head_dim;
  if (model.q_lora_rank > 0) {
    ops.push_back(gemm("q_a_proj", m, model.q_lora_rank, h, dtype, model.qkv_bias));
    ops.push_back(
        elementwise("q_a_layernorm", LayerOpKind::norm, norm, m, model.q_lora_rank, dtype));
    ops.push_back(gemm("q_b_proj", m, heads * qk_head, model.q_lora_rank, dtype, false));
  } else {
    ops.push_back(gemm("q_proj", m, heads * qk_head, h, dtype, false));
  }
  ops.push_back(gemm("kv_a_proj", m, latent + model.qk_rope_head_dim, h, dtype, model.qkv_bias));
  ops.push_back(elementwise("kv_a_layernorm", LayerOpKind::norm, norm, m, latent, dtype));
  ops.push_back(gemm("q_absorb", m, latent, model.qk_nope_head_dim, dtype, false, heads));
  {
    DecoderLayerOp op;
    op.name = "attention";
    op.kind = LayerOpKind::attention;
    ops.push_back(op);
  }
  ops.push_back(gemm("v_unabsorb", m, model.v_head_dim, latent, dtype, false, heads));
  ops.push_back(gemm("o_proj", m, h, heads * model.v_head_dim, dtype, false));
}

}  // namespace

DecoderLayer decoder_layer(const ModelConfig& model, const LayerStep& s, Dtype dtype,
                           bool fused_activation) {
  // A latent model's prefill runs MLA unabsorbed: K heads of qk_nope + qk_rope columns against
  // V heads of v_head_dim, which iosim's attention (one head dim for K and V, or V a prefix of
  // the latent K) does not model.
  if (model.mla() && s.phase != LayerPhase::decode) {
    throw ConfigError(fmt::format(
        "{}: {} has multi-head latent attention, whose prefill attends with K heads of {} "
        "columns and V heads of {} (the unabsorbed form), which iosim's attention does not "
        "model; iosim layer runs its decode (--phase decode --context N)",
        s.phase == LayerPhase::mixed ? "--seq-lens (a mixed step, its prefill chunks beside the "
                                       "decode rows)"
                                     : "--phase prefill",
        model.name, model.head_dim, model.v_head_dim));
  }
  const std::int64_t heads = divided(model.attention_heads, s.tp, "attention heads");
  const std::int64_t kv_heads = divided(model.kv_heads, s.tp, "K/V heads");
  const std::int64_t inter = divided(model.intermediate_size, s.tp, "intermediate (MLP) size");
  const std::int64_t vocab = divided(model.vocab_size, s.tp, "vocabulary");
  const std::int64_t h = model.hidden_size, d = model.head_dim;
  const bool prefill = s.phase == LayerPhase::prefill;
  const bool mixed = s.phase == LayerPhase::mixed;

  DecoderLayer layer;
  layer.tokens = prefill ? s.batch * s.seq : s.batch;
  // A mixed step's GEMMs see the packed total of its query tokens, as the serving engine packs
  // them.
  if (mixed) {
    layer.tokens = 0;
    for (const std::int64_t q : s.seq_lens) layer.tokens += q;
  }
  std::int64_t seq_kv = s.context > 0 ? s.context : s.seq;
  // (Past it, attention's own check named --seq-kv, a flag iosim layer does not have.)
  if (seq_kv > kMaxSeq) {
    throw ConfigError(fmt::format("{} {} is out of range: it must be in [1, {}]",
                                  s.context > 0 ? "--context" : "--seq", seq_kv, kMaxSeq));
  }
  if (prefill && seq_kv < s.seq) {
    throw ConfigError(
        fmt::format("--context {} is shorter than --seq {}: a prefill's queries see "
                    "their own keys",
                    seq_kv, s.seq));
  }
  // A prefill over more keys than the model's sliding window attends over the window's band
  // (--window, causal): each query sees its last W keys.
  const bool windowed_prefill =
      (prefill || mixed) && model.sliding_window > 0 && seq_kv > model.sliding_window;
  if (windowed_prefill) {
    layer.notes.push_back(fmt::format("attention over a sliding window of {} keys: {}'s",
                                      model.sliding_window, model.name));
  }
  if (!prefill && model.sliding_window > 0 && seq_kv > model.sliding_window) {
    // Decode over a rolling cache attends over the window's keys only (Mistral's rolling buffer).
    layer.notes.push_back(fmt::format("attention over the last {} keys: {}'s sliding window",
                                      model.sliding_window, model.name));
    seq_kv = model.sliding_window;
  }
  layer.seq_kv = seq_kv;

  // The attention: causal for a prefill and a mixed step; a decode query sees every cached key.
  AttentionProblem& a = layer.attention;
  a.batch = s.batch;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.seq = prefill ? s.seq : 1;
  a.seq_kv = seq_kv;
  a.head_dim = d;
  if (model.mla()) {
    // The absorbed decode: every query head of the rank reads the one latent row a token, its
    // kv_lora_rank columns and the shared rotary key's (K), V its first kv_lora_rank
    // (AttentionProblem::latent_dim).
    a.kv_heads = 1;
    a.head_dim = model.kv_lora_rank + model.qk_rope_head_dim;
    a.latent_dim = model.kv_lora_rank;
  }
  a.dtype = dtype;
  a.causal = prefill || mixed;
  if (mixed) {
    // One ragged launch (run's --seq-lens, --seq-kv-lens): causal bottom-right, so a decode row
    // sees its whole context and a chunk is causal within itself. Its batch is the sequences'
    // count, seq and seq_kv their longest (AttentionProblem::seq_lens).
    a.seq_lens = std::make_shared<const std::vector<std::int64_t>>(s.seq_lens);
    a.seq_kv_lens = std::make_shared<const std::vector<std::int64_t>>(s.context_lens);
    a.batch = static_cast<std::int64_t>(s.seq_lens.size());
    a.seq = *std::max_element(s.seq_lens.begin(), s.seq_lens.end());
    a.seq_kv = *std::max_element(s.context_lens.begin(), s.context_lens.end());
  }
  if (windowed_prefill) a.window = model.sliding_window;

  // The layer in execution order (Hugging Face's LlamaDecoderLayer, vLLM's fused QKV and
  // gate/up projections).
  const std::int64_t m = layer.tokens;
  const ElementwiseKind norm =
      model.norm == NormKind::rms_norm ? ElementwiseKind::rms_norm : ElementwiseKind::layer_norm;
  std::vector<DecoderLayerOp>& ops = layer.ops;
  ops.push_back(elementwise("input_norm", LayerOpKind::norm, norm, m, h, dtype));
  if (model.mla()) {
    mla_attention_ops(model, m, heads, dtype, norm, ops);
  } else {
    ops.push_back(gemm("qkv_proj", m, (heads + 2 * kv_heads) * d, h, dtype, model.qkv_bias));
    DecoderLayerOp op;
    op.name = "attention";
    op.kind = LayerOpKind::attention;
    ops.push_back(op);
    ops.push_back(gemm("o_proj", m, h, heads * d, dtype, false));
  }
  ops.push_back(elementwise("attn_residual", LayerOpKind::residual, ElementwiseKind::residual_add,
                            m, h, dtype));
  ops.push_back(elementwise("post_attn_norm", LayerOpKind::norm, norm, m, h, dtype));
  if (model.mlp == MlpKind::gated_silu) {
    ops.push_back(gemm("gate_up_proj", m, 2 * inter, h, dtype, false));
    if (fused_activation) {
      ops.push_back(elementwise("silu_mul", LayerOpKind::activation, ElementwiseKind::gated_silu, m,
                                inter, dtype));
    } else {
      // PyTorch eager: F.silu(gate), then * up, each kernel through HBM. gate and up are halves
      // of each row of the gate_up output, contiguous only for one row: past it TensorIterator
      // launches its serial kernel (elementwise_kernel<128, 4>) for both, as measured
      // (cuda_validate/measurements/*/layer_*/layer_time.json: the vectorized kernel at decode
      // batch 1, elementwise_kernel<128, 4> at 16 and at prefill).
      const ElementwiseLoop loop = m > 1 ? ElementwiseLoop::serial : ElementwiseLoop::chunks;
      ops.push_back(elementwise("silu", LayerOpKind::activation, ElementwiseKind::silu, m, inter,
                                dtype, loop));
      ops.push_back(elementwise("mul", LayerOpKind::activation, ElementwiseKind::gate_mul, m, inter,
                                dtype, loop));
    }
  } else {
    ops.push_back(gemm("up_proj", m, inter, h, dtype, false));
    ops.push_back(
        elementwise("gelu", LayerOpKind::activation, ElementwiseKind::gelu, m, inter, dtype));
  }
  ops.push_back(gemm("down_proj", m, h, inter, dtype, false));
  ops.push_back(elementwise("mlp_residual", LayerOpKind::residual, ElementwiseKind::residual_add, m,
                            h, dtype));

  // The step's tail: the final norm and the LM head over the last position of each sequence,
  // the only logits generation samples from (vLLM computes no others).
  layer.tail.push_back(elementwise("final_norm", LayerOpKind::norm, norm, s.batch, h, dtype));
  layer.tail.push_back(gemm("lm_head", s.batch, vocab, h, dtype, false));
  layer.not_modelled = "not modelled: rotary embeddings, the embedding lookup, sampling" +
                       std::string(s.tp > 1 ? ", the tensor-parallel all-reduces" : "");
  if (model.mla()) {
    // DeepSeek-V3's MoE layers (all but its first 3) route each token to a few experts: every
    // layer here has the dense MLP of intermediate_size.
    layer.not_modelled +=
        ", the latent cache's write of the new token, a mixture of experts (every layer is "
        "taken as a dense one, its MLP of intermediate_size)";
  }
  return layer;
}

}  // namespace iosim
