// `iosim layer --seq-lens/--context-lens`: a mixed serving step (decode rows beside prefill
// chunks, continuous batching). Its GEMMs are those of the packed total of its query tokens, its
// attention is `iosim run`'s ragged causal launch of the same lists, and a step of equal lengths is
// the prefill (or decode) step of those lengths. On the A100: layer on Hopper times GEMM tile
// candidates, which is not the point here.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "api/layer.hpp"
#include "api/layer_flags.hpp"
#include "api/run_flags.hpp"
#include "api/simulate.hpp"
#include "layer_toy_model.hpp"
#include "sim/base/errors.hpp"
#include "test_support.hpp"

using iosim::LayerOp;
using iosim::LayerReport;
using iosim::LayerRequest;

namespace {

// `iosim run`'s flags for the toy model's attention on the A100 (flash2, its heads and head_dim).
iosim::RunFlags toy_attention_flags() {
  iosim::RunFlags flags;
  flags.profile = "a100-sxm4-80gb";
  flags.algorithm = "flash2";
  flags.heads = 8;
  flags.kv_heads = 2;
  flags.head_dim = 64;
  return flags;
}

const iosim::HardwareProfile& a100() {
  return iosim::test::profile("a100-sxm4-80gb");
}

LayerRequest mixed(std::vector<std::int64_t> q, std::vector<std::int64_t> kv) {
  LayerRequest r;
  r.model = layer_toy_model();
  r.phase = iosim::LayerPhase::mixed;
  r.seq_lens = std::move(q);
  r.context_lens = std::move(kv);
  return r;
}

// Every op of `a` has `b`'s counts and time, in the same order (the attention's: counts only
// where `attention_time` is false).
void check_same_ops(const std::vector<LayerOp>& a, const std::vector<LayerOp>& b,
                    bool attention_time = true) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(a[i].name);
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].m == b[i].m);
    CHECK(a[i].n == b[i].n);
    CHECK(a[i].k == b[i].k);
    CHECK(a[i].counters.flops() == b[i].counters.flops());
    CHECK(a[i].counters.hbm.read_total() == b[i].counters.hbm.read_total());
    if (a[i].kind != "attention" || attention_time) CHECK(a[i].time_s == b[i].time_s);
  }
}

}  // namespace

TEST_CASE("layer mixed: equal lengths are the prefill step of that length") {
  LayerRequest prefill;
  prefill.model = layer_toy_model();
  prefill.batch = 2;
  prefill.seq = 256;
  const LayerReport p = iosim::simulate_layer(a100(), prefill);
  const LayerReport m = iosim::simulate_layer(a100(), mixed({256, 256}, {256, 256}));
  CHECK(m.tokens == p.tokens);
  CHECK(m.request.batch == 2);
  check_same_ops(m.ops, p.ops);
  check_same_ops(m.tail, p.tail);
  CHECK(m.layer_total.flops() == p.layer_total.flops());

  // A chunk of a longer prompt: prefill --seq 128 --context 1024 over a batch of 3.
  prefill.batch = 3;
  prefill.seq = 128;
  prefill.context = 1024;
  check_same_ops(iosim::simulate_layer(a100(), mixed({128, 128, 128}, {1024, 1024, 1024})).ops,
                 iosim::simulate_layer(a100(), prefill).ops);
}

TEST_CASE("layer mixed: all-ones lengths are the decode step over the same context") {
  // Decode defaults to flash-decoding, which has no ragged forward: both run flash2 here. A
  // causal query bottom-right aligned sees every key, as a decode query does.
  LayerRequest decode;
  decode.model = layer_toy_model();
  decode.phase = iosim::LayerPhase::decode;
  decode.batch = 4;
  decode.context = 1000;
  decode.algorithm = "flash2";
  const LayerReport d = iosim::simulate_layer(a100(), decode);
  LayerRequest r = mixed({1, 1, 1, 1}, {1000, 1000, 1000, 1000});
  r.algorithm = "flash2";
  const LayerReport m = iosim::simulate_layer(a100(), r);
  CHECK(m.tokens == 4);
  // The attention's counts agree; its time may not (a causal launch's masking is its own).
  check_same_ops(m.ops, d.ops, false);
  check_same_ops(m.tail, d.tail);
  // And with no --algo a mixed step takes flash2 (flash-decoding has no ragged forward).
  const LayerReport by_default =
      iosim::simulate_layer(a100(), mixed({1, 1, 1, 1}, {1000, 1000, 1000, 1000}));
  CHECK(by_default.ops[2].detail == "flash2");
}

TEST_CASE("layer mixed: GEMMs over the packed total, attention as run's ragged launch") {
  const std::vector<std::int64_t> q = {1, 1, 1, 300}, kv = {700, 2000, 64, 1500};
  const LayerReport m = iosim::simulate_layer(a100(), mixed(q, kv));
  CHECK(m.tokens == 303);
  CHECK(m.request.batch == 4);
  CHECK(m.request.seq == 300);
  CHECK(m.seq_kv == 2000);
  // The GEMMs and the elementwise ops see M = 303 rows, as a prefill of one 303-token sequence.
  LayerRequest packed;
  packed.model = layer_toy_model();
  packed.seq = 303;
  const LayerReport p = iosim::simulate_layer(a100(), packed);
  REQUIRE(m.ops.size() == p.ops.size());
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    if (m.ops[i].kind == "attention") continue;
    CAPTURE(m.ops[i].name);
    CHECK(m.ops[i].m == 303);
    CHECK(m.ops[i].counters.flops() == p.ops[i].counters.flops());
    CHECK(m.ops[i].time_s == p.ops[i].time_s);
  }
  // The step's tail: one row per sequence (the last position of each).
  CHECK(m.tail.back().m == 4);

  // The attention: `iosim run --seq-lens 1,1,1,300 --seq-kv-lens 700,2000,64,1500 --causal`
  // with the model's heads.
  iosim::RunFlags flags = toy_attention_flags();
  flags.dtype = "bf16";
  flags.causal = true;
  flags.seq_lens = "1,1,1,300";
  flags.seq_kv_lens = "700,2000,64,1500";
  const iosim::Report run = iosim::simulate(a100(), iosim::to_request(flags));
  const LayerOp& attention = m.ops[2];
  REQUIRE(attention.kind == "attention");
  CHECK(attention.counters.flops() == run.engine.total.flops());
  CHECK(attention.counters.hbm.read_total() == run.engine.total.hbm.read_total());
  CHECK(attention.time_s == run.engine.time_s);
  // Not the padded batch's: the longest lengths for every sequence would count more.
  flags.seq_lens.clear();
  flags.seq_kv_lens.clear();
  flags.batch = 4;
  flags.seq = 300;
  flags.seq_kv = 2000;
  CHECK(iosim::simulate(a100(), iosim::to_request(flags)).engine.total.flops() >
        attention.counters.flops());

  CHECK(iosim::mixed_step_text(q, kv) ==
        "3 decode rows over 64 to 2000 keys, 1 prefill chunk of 300 over 1500");
}

TEST_CASE("layer mixed: a sliding-window model's attention is run's ragged launch with --window") {
  LayerRequest r = mixed({1, 1, 200}, {500, 90, 700});
  r.model.sliding_window = 128;
  const LayerReport m = iosim::simulate_layer(a100(), r);
  iosim::RunFlags flags = toy_attention_flags();
  flags.causal = true;
  flags.window = 128;
  flags.seq_lens = "1,1,200";
  flags.seq_kv_lens = "500,90,700";
  const iosim::Report run = iosim::simulate(a100(), iosim::to_request(flags));
  CHECK(m.ops[2].counters.flops() == run.engine.total.flops());
  CHECK(m.ops[2].time_s == run.engine.time_s);
  // Fewer than without the window: the band skips the keys before it.
  flags.window.reset();
  CHECK(iosim::simulate(a100(), iosim::to_request(flags)).engine.total.flops() >
        m.ops[2].counters.flops());
  // flash1 skips no key by the window: refused, as for a windowed prefill.
  r.algorithm = "flash1";
  CHECK_THROWS_WITH_AS(iosim::simulate_layer(a100(), r),
                       doctest::Contains("needs an attention that skips by the window"),
                       iosim::ConfigError);
}

TEST_CASE("layer mixed: the flags and lengths it refuses, naming them") {
  iosim::LayerFlags f;
  f.model = "llama-3-8b";
  f.seq_lens = "1,1,512";
  f.context_lens = "4096,2000,8192";
  const std::set<std::string> lists = {"--model", "--seq-lens", "--context-lens"};
  const LayerRequest req = iosim::to_layer_request(f, lists);
  CHECK(req.phase == iosim::LayerPhase::mixed);
  CHECK(req.seq_lens == std::vector<std::int64_t>{1, 1, 512});
  CHECK(req.context_lens == std::vector<std::int64_t>{4096, 2000, 8192});
  for (const char* flag : {"--phase", "--batch", "--seq", "--context"}) {
    std::set<std::string> given = lists;
    given.insert(flag);
    const std::string expected = std::string(flag) + " with --seq-lens";
    CHECK_THROWS_WITH_AS(iosim::to_layer_request(f, given), doctest::Contains(expected.c_str()),
                         iosim::ConfigError);
  }
  CHECK_THROWS_WITH_AS(iosim::to_layer_request(f, {"--model", "--context-lens"}),
                       doctest::Contains("--context-lens needs --seq-lens"), iosim::ConfigError);

  CHECK_THROWS_WITH_AS(iosim::simulate_layer(a100(), mixed({1, 1, 512}, {100, 200})),
                       doctest::Contains("--context-lens gives 2 lengths and --seq-lens 3"),
                       iosim::ConfigError);
  CHECK_THROWS_WITH_AS(iosim::simulate_layer(a100(), mixed({1, 600}, {100, 512})),
                       doctest::Contains("sequence 2 of 2 attends over 512 keys, fewer than its "
                                         "600 queries"),
                       iosim::ConfigError);
  LayerRequest r = mixed({1, 64}, {100, 64});
  r.algorithm = "flash-decoding";
  CHECK_THROWS_WITH_AS(iosim::simulate_layer(a100(), r),
                       doctest::Contains("--algo flash-decoding (the mixed step's ragged "
                                         "attention): --seq-lens: 'flash-decoding' has no ragged"),
                       iosim::ConfigError);
}
