// The layer's composition as data (transformer/decoder_layer.*), with no engine run: the ops in
// execution order over every built-in model, phase, tensor-parallel degree and activation, their
// rows the step's tokens, their weights the model's parameters, the attention's problem the
// phase's; and the step's sizes resolved and refused as `iosim layer` documents them.
#include "transformer/decoder_layer.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/base/errors.hpp"

using iosim::DecoderLayer;
using iosim::DecoderLayerOp;
using iosim::LayerOpKind;
using iosim::LayerPhase;
using iosim::LayerStep;
using iosim::ModelConfig;

namespace {

std::vector<std::string> names(const std::vector<DecoderLayerOp>& ops) {
  std::vector<std::string> out;
  for (const DecoderLayerOp& op : ops) out.push_back(op.name);
  return out;
}

// Weights of one rank's GEMMs: N x K each.
std::int64_t weights(const std::vector<DecoderLayerOp>& ops) {
  std::int64_t sum = 0;
  for (const DecoderLayerOp& op : ops) {
    if (op.kind == LayerOpKind::gemm) sum += op.gemm.n * op.gemm.k;
  }
  return sum;
}

LayerStep step_of(LayerPhase phase, std::int64_t batch, std::int64_t seq, std::int64_t context,
                  std::int64_t tp) {
  LayerStep s;
  s.phase = phase;
  s.batch = batch;
  s.seq = seq;
  s.context = context;
  s.tp = tp;
  return iosim::resolve_layer_step(s);
}

}  // namespace

TEST_CASE("decoder_layer: ops in execution order, rows the step's tokens, over every model") {
  for (const std::string& name : iosim::builtin_model_names()) {
    const ModelConfig model = iosim::load_model_config(name);
    if (model.mla()) continue;  // its decode layer's ops: tests/mla_layer_test.cpp
    for (const std::int64_t tp : {1, 2, 4, 8}) {
      if (model.kv_heads % tp != 0 || model.intermediate_size % tp != 0 ||
          model.vocab_size % tp != 0) {
        continue;  // a degree the model refuses (the last case here)
      }
      for (const bool fused : {true, false}) {
        LayerStep mixed;
        mixed.phase = LayerPhase::mixed;
        mixed.seq_lens = {1, 1, 300};
        mixed.context_lens = {5000, 20, 300};
        mixed.tp = tp;
        const std::vector<std::pair<LayerStep, std::int64_t>> steps = {
            {step_of(LayerPhase::prefill, 3, 512, 0, tp), 3 * 512},
            {step_of(LayerPhase::prefill, 1, 256, 6000, tp), 256},
            {step_of(LayerPhase::decode, 16, 0, 8192, tp), 16},
            {iosim::resolve_layer_step(mixed), 302}};
        for (const auto& entry : steps) {
          // Not a structured binding: clang (the sanitize build) does not let doctest's CAPTURE
          // lambda refer to one.
          const LayerStep& step = entry.first;
          const std::int64_t tokens = entry.second;
          CAPTURE(name);
          CAPTURE(tp);
          CAPTURE(fused);
          CAPTURE(iosim::layer_phase_name(step.phase));
          const DecoderLayer layer = iosim::decoder_layer(model, step, iosim::Dtype::bf16, fused);
          CHECK(layer.tokens == tokens);
          std::vector<std::string> want = {"input_norm", "qkv_proj",      "attention",
                                           "o_proj",     "attn_residual", "post_attn_norm"};
          if (model.mlp == iosim::MlpKind::gated_silu) {
            want.push_back("gate_up_proj");
            if (fused) {
              want.push_back("silu_mul");
            } else {
              want.push_back("silu");
              want.push_back("mul");
            }
          } else {
            want.push_back("up_proj");
            want.push_back("gelu");
          }
          want.push_back("down_proj");
          want.push_back("mlp_residual");
          CHECK(names(layer.ops) == want);
          CHECK(names(layer.tail) == std::vector<std::string>{"final_norm", "lm_head"});
          for (const DecoderLayerOp& op : layer.ops) {
            if (op.kind == LayerOpKind::gemm) {
              CHECK(op.gemm.name == op.name);
              CHECK(op.gemm.m == tokens);
              CHECK(op.gemm.dtype == iosim::Dtype::bf16);
            } else if (op.kind != LayerOpKind::attention) {
              CHECK(op.elementwise.name == op.name);
              CHECK(op.elementwise.rows == tokens);
              // PyTorch eager's serial kernel past one row (its halves are not contiguous).
              const bool serial = !fused && tokens > 1 && (op.name == "silu" || op.name == "mul");
              CHECK((op.elementwise.loop == iosim::ElementwiseLoop::serial) == serial);
            }
          }
          // The weights the ranks hold together: the model's, per layer and in the LM head.
          const std::int64_t h = model.hidden_size, d = model.head_dim;
          const std::int64_t mlp =
              (model.mlp == iosim::MlpKind::gated_silu ? 3 : 2) * h * model.intermediate_size;
          CHECK(weights(layer.ops) * tp == h * (model.attention_heads + 2 * model.kv_heads) * d +
                                               model.attention_heads * d * h + mlp);
          CHECK(weights(layer.tail) * tp == model.vocab_size * h);
          CHECK(layer.tail[0].elementwise.rows == step.batch);
          CHECK(layer.tail[1].gemm.m == step.batch);
          // The attention: the rank's heads, causal unless a decode step.
          const iosim::AttentionProblem& a = layer.attention;
          CHECK(a.heads * tp == model.attention_heads);
          CHECK(a.kv_heads * tp == model.kv_heads);
          CHECK(a.head_dim == d);
          CHECK(a.causal == (step.phase != LayerPhase::decode));
          CHECK(a.seq == (step.phase == LayerPhase::decode ? 1 : step.seq));
          CHECK(a.batch == step.batch);
          CHECK(a.ragged() == (step.phase == LayerPhase::mixed));
          if (a.ragged()) {
            CHECK(*a.seq_lens == step.seq_lens);
            CHECK(*a.seq_kv_lens == step.context_lens);
            CHECK(a.seq_kv == 5000);
          }
          const std::int64_t keys = step.context > 0 ? step.context : step.seq;
          const bool over_window = model.sliding_window > 0 && keys > model.sliding_window;
          CHECK(a.window ==
                (over_window && step.phase != LayerPhase::decode ? model.sliding_window : 0));
          CHECK(layer.seq_kv ==
                (over_window && step.phase != LayerPhase::prefill ? model.sliding_window : keys));
          CHECK(layer.notes.empty() == !over_window);
        }
      }
    }
  }
}

TEST_CASE("decoder_layer: Llama 3 8B's weights are its 8,030,261,248 parameters") {
  // Meta-Llama-3-8B's parameter count (Hugging Face's model card, safetensors: 8.03B params):
  // the layers' GEMMs and norms, the LM head, the embedding (not tied) and the final norm.
  const ModelConfig model = iosim::load_model_config("llama-3-8b");
  const DecoderLayer layer = iosim::decoder_layer(model, step_of(LayerPhase::prefill, 1, 128, 0, 1),
                                                  iosim::Dtype::bf16, true);
  const std::int64_t h = model.hidden_size;
  const std::int64_t norms = 2 * h;  // input_norm, post_attn_norm
  CHECK(model.layers * (weights(layer.ops) + norms) + weights(layer.tail) + model.vocab_size * h +
            h ==
        8030261248);
}

TEST_CASE("decoder_layer: the step's sizes resolved and refused as iosim layer documents them") {
  // Decode with --context alone: one new token per sequence.
  const LayerStep decode = step_of(LayerPhase::decode, 4, 0, 1000, 1);
  CHECK(decode.seq == 1);
  CHECK(decode.context == 1000);
  // A mixed step: the batch the sequences' count, seq and context the longest, the contexts the
  // queries' when left out.
  LayerStep mixed;
  mixed.phase = LayerPhase::mixed;
  mixed.seq_lens = {1, 64, 7};
  const LayerStep m = iosim::resolve_layer_step(mixed);
  CHECK(m.batch == 3);
  CHECK(m.seq == 64);
  CHECK(m.context == 64);
  CHECK(m.context_lens == mixed.seq_lens);

  CHECK_THROWS_WITH_AS(step_of(LayerPhase::decode, 1, 0, 0, 1),
                       doctest::Contains("--phase decode needs --context"), iosim::ConfigError);
  CHECK_THROWS_WITH_AS(step_of(LayerPhase::prefill, 0, 128, 0, 1),
                       "--batch must be positive, got 0", iosim::ConfigError);
  CHECK_THROWS_WITH_AS(step_of(LayerPhase::prefill, 1, 128, -1, 1),
                       "--context must be positive, got -1", iosim::ConfigError);
  mixed.context_lens = {100, 20, 7};
  CHECK_THROWS_WITH_AS(iosim::resolve_layer_step(mixed),
                       doctest::Contains("sequence 2 of 3 attends over 20 keys, fewer than its 64"),
                       iosim::ConfigError);
  const ModelConfig llama = iosim::load_model_config("llama-3-8b");
  CHECK_THROWS_WITH_AS(iosim::decoder_layer(llama, step_of(LayerPhase::prefill, 1, 128, 0, 3),
                                            iosim::Dtype::bf16, true),
                       "--tp 3 does not divide the model's attention heads (32)",
                       iosim::ConfigError);
  CHECK_THROWS_WITH_AS(iosim::decoder_layer(llama, step_of(LayerPhase::prefill, 1, 128, 64, 1),
                                            iosim::Dtype::bf16, true),
                       doctest::Contains("--context 64 is shorter than --seq 128"),
                       iosim::ConfigError);
}
