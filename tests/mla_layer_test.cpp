// A multi-head latent attention (MLA) model's decode layer (transformer/decoder_layer.cpp's
// mla_attention_ops(), `iosim layer --model deepseek-v3 --phase decode`): over random MLA shapes
// and tensor-parallel degrees, the ops in execution order with the sizes the model's keys give
// them, their weights the model's (the per-head absorbed products are kv_b_proj's), each GEMM's
// bytes its closed form on the engine, the attention the latent decode (latent_dim kv_lora_rank,
// head_dim kv_lora_rank + qk_rope_head_dim, one K/V head) whose cache is one latent row a token;
// DeepSeek-V3's decode as a golden case; the refusals (prefill, a mixed step, tp, an attention
// that reads no latent).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "api/layer.hpp"
#include "sim/base/errors.hpp"
#include "sim/engine/engine.hpp"
#include "test_support.hpp"
#include "transformer/decoder_layer.hpp"

using iosim::DecoderLayer;
using iosim::DecoderLayerOp;
using iosim::LayerOpKind;
using iosim::LayerPhase;
using iosim::LayerStep;
using iosim::ModelConfig;

namespace {

// A random MLA model: the config's keys as a model file gives them (its head_dim the query/key
// head, a K/V head per query head), small enough that its GEMMs run on the engine quickly.
ModelConfig random_mla_model(iosim::test::ShapeGen& gen) {
  ModelConfig m;
  m.name = "mla";
  m.description = "a random MLA model";
  const std::int64_t heads[] = {4, 8, 16, 32};
  m.attention_heads = gen.pick(heads);
  m.kv_heads = m.attention_heads;
  m.hidden_size = 64 * gen.pick(2, 8);
  m.q_lora_rank = gen.coin() ? 0 : 32 * gen.pick(1, 6);
  m.kv_lora_rank = 32 * gen.pick(1, 8);
  m.qk_nope_head_dim = 16 * gen.pick(1, 8);
  m.qk_rope_head_dim = gen.pick(0, 3) == 0 ? 0 : 16 * gen.pick(1, 4);
  m.v_head_dim = 16 * gen.pick(1, 8);
  m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  m.intermediate_size = 128 * gen.pick(1, 6);
  m.layers = gen.pick(1, 8);
  m.vocab_size = 512 * gen.pick(1, 4);
  m.qkv_bias = gen.coin();
  return m;
}

LayerStep decode_step(std::int64_t batch, std::int64_t context, std::int64_t tp) {
  LayerStep s;
  s.phase = LayerPhase::decode;
  s.batch = batch;
  s.context = context;
  s.tp = tp;
  return iosim::resolve_layer_step(s);
}

const DecoderLayerOp& op_named(const DecoderLayer& layer, const std::string& name) {
  for (const DecoderLayerOp& op : layer.ops) {
    if (op.name == name) return op;
  }
  FAIL("no op " << name);
  return layer.ops.front();
}

}  // namespace

TEST_CASE("MLA decode layer: the absorbed ops, the model's weights, the latent attention") {
  iosim::test::ShapeGen gen(4401);
  for (int trial = 0; trial < 40; ++trial) {
    const ModelConfig model = random_mla_model(gen);
    const std::int64_t tps[] = {1, 2, 4};
    const std::int64_t tp = gen.pick(tps);
    const std::int64_t batch = gen.pick(1, 64), context = gen.pick(1, 20000);
    const bool fused = gen.coin();
    CAPTURE(model.attention_heads);
    CAPTURE(model.hidden_size);
    CAPTURE(model.q_lora_rank);
    CAPTURE(model.kv_lora_rank);
    CAPTURE(model.qk_nope_head_dim);
    CAPTURE(model.qk_rope_head_dim);
    CAPTURE(model.v_head_dim);
    CAPTURE(tp);
    CAPTURE(batch);
    const DecoderLayer layer =
        iosim::decoder_layer(model, decode_step(batch, context, tp), iosim::Dtype::bf16, fused);
    CHECK(layer.tokens == batch);
    std::vector<std::string> want = {"input_norm"};
    if (model.q_lora_rank > 0) {
      want.insert(want.end(), {"q_a_proj", "q_a_layernorm", "q_b_proj"});
    } else {
      want.push_back("q_proj");
    }
    want.insert(want.end(), {"kv_a_proj", "kv_a_layernorm", "q_absorb", "attention", "v_unabsorb",
                             "o_proj", "attn_residual", "post_attn_norm", "gate_up_proj"});
    if (fused) {
      want.push_back("silu_mul");
    } else {
      want.insert(want.end(), {"silu", "mul"});
    }
    want.insert(want.end(), {"down_proj", "mlp_residual"});
    std::vector<std::string> got;
    for (const DecoderLayerOp& op : layer.ops) got.push_back(op.name);
    CHECK(got == want);

    // Sizes from the keys: the rank's heads; the down-projections replicated.
    const std::int64_t h = model.hidden_size, heads = model.attention_heads / tp;
    const std::int64_t c = model.kv_lora_rank, rope = model.qk_rope_head_dim;
    const std::int64_t nope = model.qk_nope_head_dim, v = model.v_head_dim;
    const auto shape = [&](const std::string& name) {
      const iosim::GemmProblem& g = op_named(layer, name).gemm;
      CHECK(g.m == batch);
      return std::vector<std::int64_t>{g.batch, g.n, g.k};
    };
    if (model.q_lora_rank > 0) {
      CHECK(shape("q_a_proj") == std::vector<std::int64_t>{1, model.q_lora_rank, h});
      CHECK(shape("q_b_proj") ==
            std::vector<std::int64_t>{1, heads * (nope + rope), model.q_lora_rank});
      CHECK(op_named(layer, "q_a_layernorm").elementwise.cols == model.q_lora_rank);
    } else {
      CHECK(shape("q_proj") == std::vector<std::int64_t>{1, heads * (nope + rope), h});
    }
    CHECK(shape("kv_a_proj") == std::vector<std::int64_t>{1, c + rope, h});
    CHECK(op_named(layer, "kv_a_proj").gemm.bias == model.qkv_bias);
    CHECK(op_named(layer, "kv_a_layernorm").elementwise.cols == c);
    CHECK(shape("q_absorb") == std::vector<std::int64_t>{heads, c, nope});
    CHECK(shape("v_unabsorb") == std::vector<std::int64_t>{heads, v, c});
    CHECK(shape("o_proj") == std::vector<std::int64_t>{1, h, heads * v});

    // The weights the ranks hold: the model's attention (q's, the latent's down-projection,
    // kv_b_proj's C x H (nope + v) as the absorbed W_UK and W_UV, o_proj) and MLP, with the two
    // down-projections on every rank.
    std::int64_t held = 0;
    for (const DecoderLayerOp& op : layer.ops) {
      if (op.kind == LayerOpKind::gemm) held += op.gemm.batch * op.gemm.n * op.gemm.k;
    }
    const std::int64_t q =
        model.q_lora_rank > 0
            ? h * model.q_lora_rank + model.q_lora_rank * model.attention_heads * (nope + rope)
            : h * model.attention_heads * (nope + rope);
    const std::int64_t replicated =
        (model.q_lora_rank > 0 ? h * model.q_lora_rank : 0) + h * (c + rope);
    const std::int64_t model_weights = q + h * (c + rope) + c * model.attention_heads * (nope + v) +
                                       model.attention_heads * v * h +
                                       3 * h * model.intermediate_size;
    CHECK(held * tp == model_weights + (tp - 1) * replicated);

    // The attention: the latent decode of the rank's heads over one latent row a token.
    const iosim::AttentionProblem& a = layer.attention;
    CHECK(a.latent());
    CHECK(a.latent_dim == c);
    CHECK(a.head_dim == c + rope);
    CHECK(a.value_dim() == c);
    CHECK(a.kv_head_count() == 1);
    CHECK(a.heads == heads);
    CHECK(a.batch == batch);
    CHECK(a.seq == 1);
    CHECK(a.seq_kv == context);
    CHECK_FALSE(a.causal);
    // The cache a token holds on a rank: one latent row (K; V is its first C columns), in place of
    // K and V rows per K/V head.
    CHECK(a.kv_head_count() * a.head_dim * a.kv_elem_bytes() == (c + rope) * 2);
    CHECK(layer.not_modelled.find("a mixture of experts") != std::string::npos);
  }
}

TEST_CASE("MLA decode layer: each GEMM moves its closed form's bytes on the engine") {
  // With the L2 off, every GEMM of the layer (the per-head batches too) on the tiling the layer
  // runs it with moves exactly gemm_closed_form()'s bytes and 2 MNK FLOPs a member.
  iosim::test::ShapeGen gen(4402);
  for (const char* hw_name : {"a100-sxm4-80gb", "h100-sxm5-80gb"}) {
    const iosim::HardwareProfile& hw = iosim::test::profile(hw_name);
    for (int trial = 0; trial < 3; ++trial) {
      const ModelConfig model = random_mla_model(gen);
      const DecoderLayer layer = iosim::decoder_layer(
          model, decode_step(gen.pick(1, 16), gen.pick(1, 4000), 1), iosim::Dtype::bf16, true);
      for (const DecoderLayerOp& op : layer.ops) {
        if (op.kind != LayerOpKind::gemm) continue;
        CAPTURE(hw_name);
        CAPTURE(op.name);
        const iosim::GemmTiling t = iosim::resolve_gemm_tiling(hw, op.gemm);
        iosim::EngineOptions opt;
        opt.l2_enabled = false;
        const iosim::EngineResult r =
            iosim::run_schedule(hw, *iosim::make_gemm_schedule(op.gemm, t), opt);
        const iosim::GemmBytes want = iosim::gemm_closed_form(op.gemm, t);
        CHECK(r.total.hbm.read_total() == want.read);
        CHECK(r.total.hbm.write_total() == want.write);
        const auto u = [](std::int64_t x) { return static_cast<std::uint64_t>(x); };
        CHECK(r.total.tensor_flops ==
              u(op.gemm.batch) * 2 * u(op.gemm.m) * u(op.gemm.n) * u(op.gemm.k));
      }
    }
  }
}

TEST_CASE("DeepSeek-V3's decode layer (golden): 128 heads absorbed, the latent read per tile") {
  // Batch 8 over 4096 cached keys on the H100, L2 off: q_absorb holds W_UK, 128 heads of
  // 512 x 128 bf16 (16 MiB), v_unabsorb W_UV the same; the attention reads the 4096 x 576 bf16
  // latent of each sequence once per 64-row tile of its 128 packed heads (tests/latent_kv_test.cpp)
  // and no V.
  iosim::LayerRequest r;
  r.model = iosim::load_model_config("deepseek-v3");
  r.phase = LayerPhase::decode;
  r.batch = 8;
  r.context = 4096;
  r.l2_enabled = false;
  const iosim::LayerReport rep = iosim::simulate_layer(iosim::test::profile(), r);
  std::vector<std::string> names;
  for (const iosim::LayerOp& op : rep.ops) names.push_back(op.name);
  CHECK(names == std::vector<std::string>{"input_norm", "q_a_proj", "q_a_layernorm", "q_b_proj",
                                          "kv_a_proj", "kv_a_layernorm", "q_absorb", "attention",
                                          "v_unabsorb", "o_proj", "attn_residual", "post_attn_norm",
                                          "gate_up_proj", "silu_mul", "down_proj", "mlp_residual"});
  const auto op = [&](const std::string& name) -> const iosim::LayerOp& {
    for (const iosim::LayerOp& o : rep.ops) {
      if (o.name == name) return o;
    }
    FAIL("no op " << name);
    return rep.ops.front();
  };
  const auto read = [&](const std::string& name, iosim::TensorId id) {
    return op(name).counters.hbm.read_bytes[iosim::index_of(id)];
  };
  CHECK(op("q_b_proj").n == 128 * 192);
  CHECK(op("q_b_proj").k == 1536);
  CHECK(op("o_proj").k == 128 * 128);
  CHECK(op("q_absorb").batch == 128);
  CHECK(op("q_absorb").detail.find(" batch 128") != std::string::npos);
  CHECK(read("q_absorb", iosim::TensorId::W) == 128ull * 512 * 128 * 2);
  CHECK(read("v_unabsorb", iosim::TensorId::W) == 128ull * 128 * 512 * 2);
  CHECK(read("attention", iosim::TensorId::K) == 8ull * 2 * 4096 * 576 * 2);
  CHECK(read("attention", iosim::TensorId::V) == 0);
  CHECK(op("attention").detail == "flash-decoding");
  CHECK(rep.step_time_s > 61 * rep.layer_time_s);
  CHECK(rep.notes.back().find("a mixture of experts") != std::string::npos);
}

TEST_CASE("MLA models: what iosim layer does not model is refused naming the flag") {
  const ModelConfig model = iosim::load_model_config("deepseek-v3");
  LayerStep prefill;
  prefill.phase = LayerPhase::prefill;
  prefill.seq = 128;
  CHECK_THROWS_WITH_AS(
      iosim::decoder_layer(model, iosim::resolve_layer_step(prefill), iosim::Dtype::bf16, true),
      "--phase prefill: deepseek-v3 has multi-head latent attention, whose prefill attends with K "
      "heads of 192 columns and V heads of 128 (the unabsorbed form), which iosim's attention "
      "does not model; iosim layer runs its decode (--phase decode --context N)",
      iosim::ConfigError);
  LayerStep mixed;
  mixed.phase = LayerPhase::mixed;
  mixed.seq_lens = {1, 1};
  mixed.context_lens = {100, 200};
  CHECK_THROWS_WITH_AS(
      iosim::decoder_layer(model, iosim::resolve_layer_step(mixed), iosim::Dtype::bf16, true),
      doctest::Contains("--seq-lens (a mixed step, its prefill chunks beside the decode rows): "
                        "deepseek-v3 has multi-head latent attention"),
      iosim::ConfigError);
  CHECK_THROWS_WITH_AS(
      iosim::decoder_layer(model, decode_step(1, 100, 3), iosim::Dtype::bf16, true),
      "--tp 3 does not divide the model's attention heads (128)", iosim::ConfigError);
  iosim::LayerRequest r;
  r.model = model;
  r.phase = LayerPhase::decode;
  r.context = 100;
  r.algorithm = "flash2";
  CHECK_THROWS_WITH_AS(iosim::simulate_layer(iosim::test::profile(), r),
                       "deepseek-v3 has multi-head latent attention, whose decode reads one "
                       "latent cache row a token (V its first 512 columns): --algo flash2 does "
                       "not (flash-decoding and paged do)",
                       iosim::ConfigError);
}
