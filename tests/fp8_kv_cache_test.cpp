// --kv-dtype fp8: an FP8 (e4m3) K/V cache read by the decode dataflows (flash-decoding, paged)
// while Q and O stay fp16 or bf16. Properties over random decode shapes: K and V move half the
// bytes of a 16-bit cache and nothing else changes in HBM, the closed form equals the engine, the
// on-chip conversion is FP32-pipe work of every K/V element a warp reads; execution on quantized
// K/V is exact against a reference of the same values; the refusals name the flag; a serving
// cache (`iosim kvcache --kv-dtype fp8`) holds twice the tokens; a decode layer's attention
// (`iosim layer --kv-dtype fp8`) reads half the cache.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "algorithms/tile_costs.hpp"
#include "api/kvcache_flags.hpp"
#include "api/layer.hpp"
#include "numerics/numeric_executor.hpp"
#include "sim/base/errors.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

// A random decode request with every choice fixed that the K/V type could change: the split count
// is given (the heuristic reads the shared memory, which an fp8 cache halves), as are the tiles.
RunRequest random_fp8_decode(test::ShapeGen& gen, const char* algo) {
  const std::int64_t dims[] = {16, 32, 64, 128};
  const std::int64_t block_kv[] = {16, 32, 64, 128};
  const std::int64_t pages[] = {1, 3, 16, 64};
  const std::int64_t kv = gen.pick(1, 4);
  RunRequest r = test::request(algo, gen.pick(1, 3), kv * gen.pick(1, 4), 1, gen.pick(dims), 0,
                               gen.pick(block_kv));
  r.problem.kv_heads = kv;
  r.problem.seq = gen.pick(0, 3) == 0 ? gen.pick(2, 4) : 1;  // speculative decoding now and then
  r.problem.seq_kv = gen.pick(r.problem.seq, 900);
  r.problem.causal = gen.coin();
  r.problem.dtype = gen.coin() ? Dtype::fp16 : Dtype::bf16;
  if (r.algorithm == "paged") r.problem.page_tokens = gen.pick(pages);
  const std::int64_t blocks = (r.problem.seq_kv + *r.tiling.block_kv - 1) / *r.tiling.block_kv;
  r.tiling.splits = gen.pick(1, std::min<std::int64_t>(blocks, 8));
  if (r.problem.can_pack_query_group()) {
    const GqaPacking modes[] = {GqaPacking::automatic, GqaPacking::on, GqaPacking::off};
    r.problem.pack_gqa = gen.pick(modes);
  }
  return r;
}

RunRequest with_fp8_cache(RunRequest r) {
  r.problem.kv_dtype = Dtype::fp8;
  return r;
}

Report kv8_two_level(RunRequest r) {
  r.engine.l2_enabled = false;
  return simulate(test::profile(), r);
}

std::uint64_t kv8_read(const Report& r, TensorId t) {
  return r.engine.total.hbm.read_bytes[index_of(t)];
}
std::uint64_t kv8_written(const Report& r, TensorId t) {
  return r.engine.total.hbm.write_bytes[index_of(t)];
}

void kv8_refused(const RunRequest& r, const char* message) {
  CAPTURE(message);
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r), doctest::Contains(message), ConfigError);
}

// Records every value of K and V that the CTAs load on chip.
class KvValues final : public NumericObserver {
 public:
  std::vector<float> k, v;
  void on_op(std::size_t, std::int64_t, std::size_t, const TileOp& op,
             const std::function<MatrixView(TensorId)>& on_chip) override {
    if (op.kind != OpKind::load) return;
    if (op.tile.tensor != TensorId::K && op.tile.tensor != TensorId::V) return;
    const MatrixView m = on_chip(op.tile.tensor);
    std::vector<float>& out = op.tile.tensor == TensorId::K ? k : v;
    for (std::int64_t i = 0; i < m.rows * m.cols; ++i) out.push_back(m.data[i]);
  }
  void on_reference(TensorId, std::int64_t, const std::vector<double>&, std::int64_t,
                    std::int64_t) override {}
};

// Whether every value is scale * (an e4m3 value) for the one scale amax / 448 of them all.
bool one_e4m3_scale(const std::vector<float>& values) {
  float amax = 0.0f;
  for (float x : values) amax = std::max(amax, std::abs(x));
  const double scale = static_cast<double>(amax) / 448.0;
  for (float x : values) {
    const double q = static_cast<double>(x) / scale;
    if (std::abs(static_cast<double>(round_e4m3(static_cast<float>(q))) - q) >
        1e-5 * std::max(1.0, std::abs(q))) {
      return false;
    }
  }
  return !values.empty();
}

}  // namespace

TEST_CASE("an fp8 K/V cache halves the K and V bytes of every decode shape and nothing else") {
  test::ShapeGen gen(52);
  int checked = 0;
  for (const char* algo : {"flash-decoding", "paged"}) {
    for (int i = 0; i < test::cases(60); ++i) {
      const RunRequest r16 = random_fp8_decode(gen, algo);
      const RunRequest r8 = with_fp8_cache(r16);
      CAPTURE(algo);
      CAPTURE(r16.problem.batch);
      CAPTURE(r16.problem.heads);
      CAPTURE(r16.problem.kv_heads);
      CAPTURE(r16.problem.seq);
      CAPTURE(r16.problem.seq_kv);
      CAPTURE(r16.problem.head_dim);
      CAPTURE(dtype_name(r16.problem.dtype));
      CAPTURE(r16.problem.page_tokens);
      CAPTURE(*r16.tiling.splits);
      const Report a = kv8_two_level(r16), b = kv8_two_level(r8);
      REQUIRE(a.feasible());
      REQUIRE(b.feasible());
      REQUIRE(b.tiling.splits == a.tiling.splits);
      // K and V at one byte an element, each read exactly as often.
      CHECK(kv8_read(a, TensorId::K) == 2 * kv8_read(b, TensorId::K));
      CHECK(kv8_read(a, TensorId::V) == 2 * kv8_read(b, TensorId::V));
      CHECK(kv8_read(b, TensorId::K) > 0);
      // Q, O, L, the partials and the block table as with a 16-bit cache.
      for (TensorId t : {TensorId::Q, TensorId::O, TensorId::L, TensorId::partial_O,
                         TensorId::partial_lse, TensorId::block_table}) {
        CAPTURE(tensor_name(t));
        CHECK(kv8_read(b, t) == kv8_read(a, t));
        CHECK(kv8_written(b, t) == kv8_written(a, t));
      }
      // The closed form and the compulsory bytes, both written apart from the schedule.
      test::require_closed_form(r8, b);
      CHECK(b.bounds.compulsory_bytes == test::dense_compulsory_bytes(b.request.problem));
      CHECK(a.bounds.compulsory_bytes - b.bounds.compulsory_bytes ==
            static_cast<std::uint64_t>(2 * r16.problem.bh_kv() * r16.problem.seq_kv *
                                       r16.problem.head_dim));
      CHECK(test::hbm_total(b) >= b.bounds.lower_bound_bytes);
      // The conversion: every K/V element a warp reads from shared memory (one byte less each
      // than at 16 bits) converted once on the FP32 pipe; the MMAs unchanged.
      CHECK(b.engine.total.tensor_flops == a.engine.total.tensor_flops);
      const std::uint64_t kv_elements_read =
          a.engine.total.smem_read_bytes - b.engine.total.smem_read_bytes;
      CHECK(kv_elements_read > 0);
      CHECK(b.engine.total.fp32_flops - a.engine.total.fp32_flops ==
            static_cast<std::uint64_t>(costs::kFp8ConvertFp32OpsPerElement) * kv_elements_read);
      ++checked;
    }
  }
  CHECK(checked == 2 * test::cases(60));
}

TEST_CASE("an fp8 K/V cache through the L2: K and V bytes halve, the decode gets faster") {
  // A long context with whole 32-byte sectors per K/V row (d = 128: 128 bytes at fp8).
  for (const char* algo : {"flash-decoding", "paged"}) {
    CAPTURE(algo);
    RunRequest r = test::request(algo, 8, 32, 1, 128);
    r.problem.kv_heads = 8;
    r.problem.seq_kv = 8192;
    r.tiling.splits = 4;
    const Report a = simulate(test::profile(), r);
    const Report b = simulate(test::profile(), with_fp8_cache(r));
    REQUIRE(a.feasible());
    REQUIRE(b.feasible());
    CHECK(kv8_read(a, TensorId::K) == 2 * kv8_read(b, TensorId::K));
    CHECK(kv8_read(a, TensorId::V) == 2 * kv8_read(b, TensorId::V));
    CHECK(b.engine.time_s < a.engine.time_s);
  }
}

TEST_CASE("execution on an fp8 K/V cache is exact against a reference of the same values") {
  test::ShapeGen gen(448);
  for (const char* algo : {"flash-decoding", "paged"}) {
    for (int i = 0; i < test::cases(12); ++i) {
      RunRequest r = with_fp8_cache(random_fp8_decode(gen, algo));
      r.problem.seq_kv = std::min<std::int64_t>(r.problem.seq_kv, 300);
      const std::int64_t blocks = (r.problem.seq_kv + *r.tiling.block_kv - 1) / *r.tiling.block_kv;
      r.tiling.splits = std::min<std::int64_t>(1 + i % 2, blocks);
      r.execute = true;
      r.engine.l2_enabled = false;
      r.seed = static_cast<std::uint64_t>(i) + 7;
      CAPTURE(algo);
      CAPTURE(r.problem.heads);
      CAPTURE(r.problem.kv_heads);
      CAPTURE(r.problem.seq_kv);
      CAPTURE(r.problem.head_dim);
      const Report rep = simulate(test::profile(), r);
      REQUIRE(rep.feasible());
      REQUIRE(rep.numerics.max_abs_error.has_value());
      CHECK(*rep.numerics.max_abs_error <= 1e-5);
    }
  }
}

TEST_CASE("the executor stores an fp8 K/V cache with one e4m3 scale per tensor") {
  RunRequest r = test::request("flash-decoding", 1, 4, 1, 32, 0, 16);
  r.problem.kv_heads = 2;
  r.problem.seq_kv = 80;
  r.tiling.splits = 2;
  const AttentionProblem p16 = with_defaults(r.problem);
  const AttentionProblem p8 = with_defaults(with_fp8_cache(r).problem);
  const Planned planned =
      builtin_registry().get("flash-decoding").plan(p8, test::profile(), r.tiling);
  REQUIRE(planned.feasible());
  KvValues fp8, fp16;
  CHECK(execute_schedule(*planned.schedule, p8, 3, nullptr, &fp8).max_abs_error() <= 1e-5);
  execute_schedule(*planned.schedule, p16, 3, nullptr, &fp16);
  CHECK(one_e4m3_scale(fp8.k));
  CHECK(one_e4m3_scale(fp8.v));
  // The 16-bit cache's values are the normal draws themselves: not on an e4m3 grid.
  CHECK_FALSE(one_e4m3_scale(fp16.k));
  CHECK_FALSE(one_e4m3_scale(fp16.v));
}

TEST_CASE("--kv-dtype is refused where no kernel reads it, with the flag and the readers named") {
  RunRequest r = test::request("flash2", 1, 8, 1, 64);
  r.problem.seq_kv = 512;
  r.problem.kv_dtype = Dtype::fp8;
  const char* readers = "applies to --algo flash-decoding and paged";
  for (const char* algo : {"flash2", "flash1", "standard", "flash3", "block-sparse"}) {
    RunRequest x = r;
    x.algorithm = algo;
    if (x.algorithm == "block-sparse") x.problem.pattern = nullptr;
    CAPTURE(algo);
    kv8_refused(x, readers);
    kv8_refused(x, "dataflow.forward split_kv or paged");
  }
  RunRequest x = r;
  x.algorithm = "flash-decoding";
  x.problem.pass = Pass::fwdbwd;
  kv8_refused(x, "--kv-dtype fp8 with --pass fwdbwd");
  // A kernel description is refused by its forward dataflow's entry, not by its name.
  x = r;
  x.kernel = std::make_shared<const KernelDescription>(parse_kernel_description(
      nlohmann::json{{"name", "my_decode"}, {"dataflow", {{"forward", "query_stationary"}}}},
      "test"));
  x.algorithm = x.kernel->name;
  kv8_refused(x, "not 'my_decode'");
  x.kernel = std::make_shared<const KernelDescription>(parse_kernel_description(
      nlohmann::json{{"name", "my_decode"}, {"dataflow", {{"forward", "split_kv"}}}}, "test"));
  CHECK(simulate(test::profile(), x).feasible());
  // The decode kernels read it in the forward alone, and only fp8 under fp16 or bf16.
  x = r;
  x.algorithm = "flash-decoding";
  CHECK(simulate(test::profile(), x).feasible());
  x.problem.dtype = Dtype::fp32;
  kv8_refused(x, "--kv-dtype fp8 with --dtype fp32");
  x.problem.dtype = Dtype::fp16;
  x.problem.kv_dtype = Dtype::bf16;
  kv8_refused(x, "--kv-dtype bf16 with --dtype fp16");
  x.problem.kv_dtype = Dtype::fp16;  // the same type: nothing to convert
  CHECK(simulate(test::profile(), x).feasible());
}

TEST_CASE("--kv-dtype left out or equal to --dtype changes nothing") {
  RunRequest r = test::request("paged", 2, 16, 1, 128);
  r.problem.kv_heads = 4;
  r.problem.seq_kv = 3000;
  const Report base = simulate(test::profile(), r);
  r.problem.kv_dtype = Dtype::fp16;
  const Report same = simulate(test::profile(), r);
  REQUIRE(base.feasible());
  CHECK(test::identical(same.engine.total, base.engine.total));
  CHECK(same.engine.time_s == base.engine.time_s);
  CHECK(same.bounds.closed_form_bytes == base.bounds.closed_form_bytes);
  CHECK(same.bounds.lower_bound_bytes == base.bounds.lower_bound_bytes);
}

TEST_CASE("kvcache --kv-dtype fp8 holds twice the tokens of fp16 in the same budget") {
  KvCacheFlags f;
  f.kv_budget_bytes = 4e9;
  f.layers = 32;
  f.kv_heads = 8;
  f.head_dim = 128;
  f.requests = 50;
  const std::set<std::string> given = {"--kv-budget-bytes", "--layers", "--kv-heads", "--head-dim",
                                       "--requests"};
  const KvCacheRun fp16 = run_kvcache(f, given);
  f.kv_dtype = "fp8";
  std::set<std::string> with_kv = given;
  with_kv.insert("--kv-dtype");
  const KvCacheRun fp8 = run_kvcache(f, with_kv);
  CHECK(fp8.dtype == "fp8");
  REQUIRE(fp8.results.size() == fp16.results.size());
  for (std::size_t i = 0; i < fp8.results.size(); ++i) {
    const kvcache::KvCacheResult &a = fp16.results[i], &b = fp8.results[i];
    CHECK(2 * b.config.model.bytes_per_token() == a.config.model.bytes_per_token());
    // Whole blocks (paged) or token slots (contiguous) of the same budget: twice as many, to the
    // one slot a rounded division loses.
    CHECK(b.capacity_tokens >= 2 * a.capacity_tokens);
    CHECK(b.capacity_tokens <= 2 * a.capacity_tokens + 16);
  }
  // --kv-dtype is --dtype by run's name: the same run either way, and both given must agree.
  f.kv_dtype.clear();
  f.dtype = "fp8";
  std::set<std::string> with_dtype = given;
  with_dtype.insert("--dtype");
  CHECK(run_kvcache(f, with_dtype).results.front().capacity_tokens ==
        fp8.results.front().capacity_tokens);
  f.dtype = "fp16";
  f.kv_dtype = "fp8";
  with_dtype.insert("--kv-dtype");
  CHECK_THROWS_WITH_AS(run_kvcache(f, with_dtype), doctest::Contains("give one"), ConfigError);
}

TEST_CASE(
    "layer --phase decode --kv-dtype fp8: the attention reads half the cache, the GEMMs as "
    "before") {
  LayerRequest r;
  r.model = load_model_config("llama-3-8b");
  r.phase = LayerPhase::decode;
  r.batch = 4;
  r.seq = 2048;
  r.l2_enabled = false;
  const LayerReport fp16 = simulate_layer(test::profile(), r);
  r.kv_dtype = "fp8";
  const LayerReport fp8 = simulate_layer(test::profile(), r);
  REQUIRE(fp8.ops.size() == fp16.ops.size());
  for (std::size_t i = 0; i < fp8.ops.size(); ++i) {
    const LayerOp &a = fp16.ops[i], &b = fp8.ops[i];
    CAPTURE(a.name);
    if (a.kind != "attention") {
      CHECK(b.counters.hbm.read_total() == a.counters.hbm.read_total());
      continue;
    }
    for (TensorId t : {TensorId::K, TensorId::V}) {
      CHECK(a.counters.hbm.read_bytes[index_of(t)] == 2 * b.counters.hbm.read_bytes[index_of(t)]);
      // 4 sequences x 8 K/V heads x 2048 keys x 128, one byte each.
      CHECK(b.counters.hbm.read_bytes[index_of(t)] == 4u * 8 * 2048 * 128);
    }
    CHECK(b.time_s < a.time_s);
  }
  // A prefill's attention (flash2) reads no fp8 cache: refused with the flag named.
  r.phase = LayerPhase::prefill;
  r.seq = 256;
  CHECK_THROWS_WITH_AS(simulate_layer(test::profile(), r), doctest::Contains("--kv-dtype fp8"),
                       ConfigError);
}
