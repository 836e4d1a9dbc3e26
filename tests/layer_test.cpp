// `iosim layer`'s simulation (api/layer.*): the ops of one layer with the sizes the model and
// the request give them, tensor parallelism dividing them, the step as layers x layer + its tail,
// and bad requests refused.
#include "api/layer.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "api/layer_flags.hpp"
#include "api/run_flags.hpp"
#include "layer_toy_model.hpp"
#include "sim/base/errors.hpp"
#include "test_support.hpp"

using iosim::LayerOp;
using iosim::LayerReport;
using iosim::LayerRequest;

namespace {

const LayerOp& layer_op_named(const LayerReport& rep, const std::string& name) {
  for (const LayerOp& op : rep.ops) {
    if (op.name == name) return op;
  }
  for (const LayerOp& op : rep.tail) {
    if (op.name == name) return op;
  }
  FAIL("no op " << name);
  return rep.ops.front();
}

}  // namespace

TEST_CASE("layer: a prefill's ops have the model's sizes and add up to the step") {
  LayerRequest r;
  r.model = layer_toy_model();
  r.batch = 2;
  r.seq = 256;
  r.l2_enabled = false;  // the two-level model: bytes follow from the sizes alone
  const LayerReport rep = iosim::simulate_layer(iosim::test::profile(), r);
  CHECK(rep.tokens == 512);
  CHECK(rep.seq_kv == 256);
  REQUIRE(rep.ops.size() == 10);
  const LayerOp& qkv = layer_op_named(rep, "qkv_proj");
  CHECK(qkv.m == 512);
  CHECK(qkv.n == (8 + 2 * 2) * 64);
  CHECK(qkv.k == 512);
  CHECK(qkv.counters.tensor_flops == 2ull * 512 * 768 * 512);
  // The bias (qkv_bias): once per row of output tiles (of the split-K reduction's 16-row tiles
  // when split).
  iosim::GemmProblem qkv_problem;
  qkv_problem.m = 512;
  qkv_problem.n = 768;
  qkv_problem.k = 512;
  qkv_problem.bias = true;
  const iosim::GemmTiling t = iosim::resolve_gemm_tiling(iosim::test::profile(), qkv_problem);
  const std::uint64_t bias_rows = t.split_k > 1 ? 512 / 16 : (512 + t.bm - 1) / t.bm;
  CHECK(qkv.counters.hbm.read_bytes[iosim::index_of(iosim::TensorId::bias)] == bias_rows * 768 * 2);
  const LayerOp& gate_up = layer_op_named(rep, "gate_up_proj");
  CHECK(gate_up.n == 2 * 1536);
  const LayerOp& down = layer_op_named(rep, "down_proj");
  CHECK(down.n == 512);
  CHECK(down.k == 1536);
  // The activation reads the gate and up halves and writes one: 512 x 1536 bf16 out.
  CHECK(layer_op_named(rep, "silu_mul").counters.hbm.write_total() == 512ull * 1536 * 2);
  const LayerOp& attention = layer_op_named(rep, "attention");
  CHECK(attention.detail == "flash2");
  // Causal attention over 256 keys of 8 heads: the QK^T and PV products of the causal half and
  // more (whole diagonal blocks), at most the full square.
  const std::uint64_t full = 2ull * 2 * 2 * 8 * 256 * 256 * 64;
  CHECK(attention.counters.tensor_flops > full / 2);
  CHECK(attention.counters.tensor_flops < full);
  double shares = 0.0, time = 0.0;
  for (const LayerOp& op : rep.ops) {
    CHECK(op.time_s > 0);
    shares += op.share;
    time += op.time_s;
  }
  CHECK(shares == doctest::Approx(1.0));
  CHECK(iosim::test::rel_close(rep.layer_time_s, time, 1e-5));
  const LayerOp& lm = layer_op_named(rep, "lm_head");
  CHECK(lm.m == 2);  // the last position of each sequence
  CHECK(lm.n == 4000);
  CHECK(iosim::test::rel_close(
      rep.step_time_s, 6 * rep.layer_time_s + lm.time_s + layer_op_named(rep, "final_norm").time_s,
      1e-5));
  CHECK(rep.step_total.tensor_flops == 6 * rep.layer_total.tensor_flops + lm.counters.tensor_flops);
}

TEST_CASE("layer: PyTorch eager's activation is two kernels through HBM, fused is one") {
  // The layer suite's PyTorch layer launches F.silu and the multiply apart
  // (cuda_validate/measurements/*/layer_*/layer_time.json); --mlp-activation fused is one kernel.
  for (const std::int64_t batch : {1, 3}) {
    for (const bool prefill : {true, false}) {
      LayerRequest r;
      r.model = layer_toy_model();
      r.batch = batch;
      r.phase = prefill ? iosim::LayerPhase::prefill : iosim::LayerPhase::decode;
      r.seq = prefill ? 128 : 0;
      r.context = prefill ? 0 : 512;
      r.l2_enabled = false;
      CAPTURE(batch);
      CAPTURE(prefill);
      const LayerReport fused = iosim::simulate_layer(iosim::test::profile(), r);
      r.fused_activation = false;
      const LayerReport eager = iosim::simulate_layer(iosim::test::profile(), r);
      CHECK(fused.request.fused_activation);
      REQUIRE(eager.ops.size() == fused.ops.size() + 1);
      const std::uint64_t out = static_cast<std::uint64_t>(eager.tokens) * 1536 * 2;
      const LayerOp& silu = layer_op_named(eager, "silu");
      const LayerOp& mul = layer_op_named(eager, "mul");
      const LayerOp& silu_mul = layer_op_named(fused, "silu_mul");
      // SiLU reads the gate half and writes its output; the multiply reads that and the up half.
      CHECK(silu.counters.hbm.read_total() == out);
      CHECK(silu.counters.hbm.write_total() == out);
      CHECK(mul.counters.hbm.read_total() == 2 * out);
      CHECK(mul.counters.hbm.write_total() == out);
      CHECK(silu_mul.counters.hbm.read_total() == 2 * out);
      CHECK(silu_mul.counters.hbm.write_total() == out);
      // The round trip of SiLU's output through HBM, and a second kernel, cost time.
      CHECK(silu.time_s + mul.time_s > silu_mul.time_s);
      CHECK(eager.layer_total.hbm.read_total() == fused.layer_total.hbm.read_total() + out);
      for (const LayerOp& op : fused.ops) {
        if (op.name != "silu_mul") CHECK(layer_op_named(eager, op.name).time_s == op.time_s);
      }
    }
  }
}

TEST_CASE("layer: decode attends over the context with one query per sequence; tp divides") {
  LayerRequest r;
  r.model = iosim::load_model_config("llama-3-8b");
  r.phase = iosim::LayerPhase::decode;
  r.batch = 4;
  r.seq = 1024;
  r.tp = 2;
  const LayerReport rep = iosim::simulate_layer(iosim::test::profile(), r);
  CHECK(rep.tokens == 4);
  CHECK(rep.seq_kv == 1024);
  CHECK(layer_op_named(rep, "attention").detail == "flash-decoding");
  // 16 query heads, 4 K/V heads of 128 on each rank.
  CHECK(layer_op_named(rep, "qkv_proj").n == (16 + 2 * 4) * 128);
  CHECK(layer_op_named(rep, "gate_up_proj").n == 14336);
  CHECK(layer_op_named(rep, "lm_head").n == 128256 / 2);
  // Decode reads every weight: the GEMMs are memory bound at batch 4.
  CHECK(layer_op_named(rep, "gate_up_proj").bound == "memory");
  // Each rank's weights are read at least once: the layer reads no fewer bytes than they hold.
  const std::uint64_t weights = 2ull * (4096ull * 3072 + 2048ull * 4096 + 3ull * 7168 * 4096);
  CHECK(rep.layer_total.hbm.read_total() >= weights);

  // Mistral's window caps a long decode's keys.
  r.model = iosim::load_model_config("mistral-7b");
  r.tp = 1;
  r.seq = 8192;
  const LayerReport windowed = iosim::simulate_layer(iosim::test::profile(), r);
  CHECK(windowed.seq_kv == 4096);

  // A prefill chunk over more keys than the window attends over the window's band: its
  // attention is `iosim run --causal --window 4096` of the same shape, fewer FLOPs than full.
  // (4 tokens, as the decode above: its GEMM tilings are chosen already.)
  r.phase = iosim::LayerPhase::prefill;
  r.batch = 1;
  r.seq = 4;
  r.context = 4608;
  const LayerReport chunk = iosim::simulate_layer(iosim::test::profile(), r);
  iosim::RunFlags f;
  f.algorithm = "flash2";
  f.heads = 32;
  f.kv_heads = 8;
  f.seq = 4;
  f.seq_kv = 4608;
  f.head_dim = 128;
  f.causal = true;
  f.window = 4096;
  const iosim::Report run = iosim::simulate(iosim::test::profile(), iosim::to_request(f));
  CHECK(layer_op_named(chunk, "attention").counters.tensor_flops == run.engine.total.tensor_flops);
  f.window.reset();
  const iosim::Report full = iosim::simulate(iosim::test::profile(), iosim::to_request(f));
  CHECK(run.engine.total.tensor_flops < full.engine.total.tensor_flops);
}

TEST_CASE("layer: decode takes --context alone, one new token per sequence") {
  // `iosim layer --phase decode --context 8192` was refused: "--seq is required".
  iosim::LayerFlags f;
  f.model = "llama-3-8b";
  f.phase = "decode";
  f.context = 8192;
  const iosim::LayerRequest req = iosim::to_layer_request(f, {"--model", "--phase", "--context"});
  CHECK(req.context == 8192);
  CHECK_THROWS_WITH_AS(iosim::to_layer_request(f, {"--model", "--phase"}),
                       "--phase decode needs --context: the keys cached per sequence (one new "
                       "token each)",
                       iosim::ConfigError);
  f.phase = "prefill";
  CHECK_THROWS_WITH_AS(iosim::to_layer_request(f, {"--model", "--context"}),
                       "--seq is required with --phase prefill: the tokens per sequence",
                       iosim::ConfigError);

  // The step is the one --seq gave as the context: batch tokens over --context keys.
  LayerRequest r;
  r.model = layer_toy_model();
  r.phase = iosim::LayerPhase::decode;
  r.batch = 2;
  r.context = 512;
  const LayerReport by_context = iosim::simulate_layer(iosim::test::profile(), r);
  CHECK(by_context.request.seq == 1);  // what the JSON's request records
  CHECK(by_context.tokens == 2);
  CHECK(by_context.seq_kv == 512);
  r.context = 0;
  r.seq = 512;
  const LayerReport by_seq = iosim::simulate_layer(iosim::test::profile(), r);
  CHECK(by_seq.layer_time_s == by_context.layer_time_s);
  CHECK(by_seq.step_time_s == by_context.step_time_s);
  r.seq = 0;
  CHECK_THROWS_WITH_AS(iosim::simulate_layer(iosim::test::profile(), r),
                       doctest::Contains("--phase decode needs --context"), iosim::ConfigError);
}

TEST_CASE("layer: bad requests are refused naming what is wrong") {
  const auto error_of = [](const LayerRequest& r) -> std::string {
    try {
      iosim::simulate_layer(iosim::test::profile(), r);
    } catch (const iosim::ConfigError& e) {
      return e.what();
    }
    return "<no ConfigError>";
  };
  LayerRequest r;
  r.model = layer_toy_model();
  r.seq = 128;
  r.tp = 3;
  CHECK(error_of(r).find("--tp 3 does not divide the model's attention heads (8)") !=
        std::string::npos);
  r.tp = 8;  // divides the 8 heads, not the 2 K/V heads
  CHECK(error_of(r).find("K/V heads (2)") != std::string::npos);
  r.tp = 1;
  r.seq = 0;
  CHECK(error_of(r).find("--seq must be positive") != std::string::npos);
  r.seq = 128;
  r.context = 64;
  CHECK(error_of(r).find("--context 64 is shorter than --seq 128") != std::string::npos);
  r.context = 0;
  r.algorithm = "flsh2";
  CHECK(error_of(r).find("did you mean 'flash2'") != std::string::npos);
  r.algorithm.clear();
  r.model = iosim::load_model_config("mistral-7b");
  r.seq = 8192;
  r.algorithm = "standard";  // a prefill past the window needs an attention that skips by it
  CHECK(error_of(r).find("mistral-7b attends over a sliding window of 4096 tokens, and a prefill "
                         "over 8192 keys needs an attention that skips by the window: standard "
                         "does not") != std::string::npos);
}

TEST_CASE("layer: a sweep is the cartesian product of its lists, the last axis fastest") {
  iosim::LayerFlags base;
  base.model = "llama-3-8b";
  const iosim::LayerSweep sweep = iosim::layer_sweep(
      base, {{"--seq", "128,256,512"}, {"--batch", "1,4"}, {"--context", "1024"}});
  CHECK(sweep.axes == std::vector<std::string>{"--batch", "--seq"});
  REQUIRE(sweep.points.size() == 6);
  REQUIRE(sweep.values.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    const std::int64_t batch = i < 3 ? 1 : 4, seq = std::int64_t{128} << (i % 3);
    CHECK(sweep.values[i] == std::vector<std::int64_t>{batch, seq});
    CHECK(sweep.points[i].batch == batch);
    CHECK(sweep.points[i].seq == seq);
    CHECK(sweep.points[i].context == 1024);  // one value: no axis
    CHECK(sweep.points[i].model == "llama-3-8b");
  }
  const iosim::LayerSweep one = iosim::layer_sweep(base, {{"--seq", "64"}});
  CHECK(one.axes.empty());
  REQUIRE(one.points.size() == 1);
  CHECK(one.points[0].seq == 64);
  CHECK_THROWS_WITH_AS(iosim::layer_sweep(base, {{"--seq", "64,64"}}),
                       "--seq '64,64' lists 64 twice", iosim::ConfigError);
  CHECK_THROWS_WITH_AS(iosim::layer_sweep(base, {{"--batch", "1,x"}}),
                       "--batch '1,x': 'x' is not an integer", iosim::ConfigError);
  CHECK_THROWS_AS(iosim::layer_sweep(base, {{"--tp", "1,2"}}), iosim::ConfigError);
}
