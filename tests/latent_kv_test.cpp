// --latent-dim: multi-head latent attention's absorbed decode (DeepSeek-V2/V3, FlashMLA) on the
// split-KV dataflows (flash-decoding, paged). K is a latent cache of head_dim columns a token and V
// its first latent_dim columns: no V tensor is declared or moved, S spans head_dim and P V
// value_dim, O and the partials are value_dim wide. Properties over random latent shapes: the
// closed form equals the two-level engine (tests/decode_test.cpp's closed-form case draws latent
// shapes too), the HBM bytes by tensor and the FLOPs against the shapes, an fp8 latent converted
// once; execution exact against an FP64 reference whose V is K's first columns; the refusals name
// the flag and the dataflows that read a latent; --kv-heads defaults to 1; the default tiles keep
// the fp32 accumulators within the register limit (FlashMLA's 256 threads at DeepSeek's shape).
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "algorithms/tile_costs.hpp"
#include "api/kvcache_flags.hpp"
#include "api/run_flags.hpp"
#include "api/validation.hpp"
#include "reports/kvcache_writers.hpp"
#include "sim/base/errors.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

// A random latent decode: one latent (or, now and then, a few) shared by up to 16 query heads, a
// latent of up to head_dim columns, small tiles and a given split count so that a split's blocks
// and the pages vary.
RunRequest random_latent_decode(test::ShapeGen& gen, const char* algo) {
  const std::int64_t dims[] = {16, 32, 48, 64, 96};
  const std::int64_t block_kv[] = {16, 32, 64};
  const std::int64_t pages[] = {1, 3, 16, 64};
  const std::int64_t kv = gen.pick(0, 3) == 0 ? 2 : 1;
  RunRequest r = test::request(algo, gen.pick(1, 3), kv * gen.pick(1, 16), 1, gen.pick(dims), 0,
                               gen.pick(block_kv));
  r.problem.kv_heads = kv;
  r.problem.latent_dim = gen.pick(1, r.problem.head_dim);
  r.problem.seq = gen.pick(0, 3) == 0 ? gen.pick(2, 4) : 1;  // speculative decoding now and then
  r.problem.seq_kv = gen.pick(r.problem.seq, 400);
  r.problem.causal = gen.coin();
  r.problem.dtype = gen.coin() ? Dtype::fp16 : Dtype::bf16;
  if (gen.pick(0, 3) == 0) r.problem.kv_dtype = Dtype::fp8;
  if (r.algorithm == "paged") r.problem.page_tokens = gen.pick(pages);
  const std::int64_t blocks = (r.problem.seq_kv + *r.tiling.block_kv - 1) / *r.tiling.block_kv;
  r.tiling.splits = gen.pick(1, std::min<std::int64_t>(blocks, 6));
  if (r.problem.can_pack_query_group()) {
    const GqaPacking modes[] = {GqaPacking::automatic, GqaPacking::on, GqaPacking::off};
    r.problem.pack_gqa = gen.pick(modes);
  }
  return r;
}

Report latent_two_level(RunRequest r) {
  r.engine.l2_enabled = false;
  return simulate(test::profile(), r);
}

std::uint64_t latent_read(const Report& r, TensorId t) {
  return r.engine.total.hbm.read_bytes[index_of(t)];
}
std::uint64_t latent_written(const Report& r, TensorId t) {
  return r.engine.total.hbm.write_bytes[index_of(t)];
}

void latent_refused(const RunRequest& r, const char* message) {
  CAPTURE(message);
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r), doctest::Contains(message), ConfigError);
}

}  // namespace

TEST_CASE("a latent cache moves K alone, once per split, and O of latent_dim columns") {
  test::ShapeGen gen(2026052);
  int checked = 0;
  for (const char* algo : {"flash-decoding", "paged"}) {
    for (int i = 0; i < test::cases(50); ++i) {
      const RunRequest latent = random_latent_decode(gen, algo);
      RunRequest separate = latent;  // the same K, and a V of its own
      separate.problem.latent_dim = 0;
      // Packed as the latent's heads are (a latent packs at every N; without one, at N = 1).
      separate.problem.pack_gqa =
          latent.problem.packs_query_group() ? GqaPacking::on : GqaPacking::off;
      const AttentionProblem& p = latent.problem;
      CAPTURE(algo);
      CAPTURE(p.batch);
      CAPTURE(p.heads);
      CAPTURE(p.kv_heads);
      CAPTURE(p.seq);
      CAPTURE(p.seq_kv);
      CAPTURE(p.head_dim);
      CAPTURE(p.latent_dim);
      CAPTURE(p.page_tokens);
      CAPTURE(p.causal);
      CAPTURE(*latent.tiling.splits);
      const Report a = latent_two_level(latent), b = latent_two_level(separate);
      REQUIRE(a.feasible());
      REQUIRE(b.feasible());
      REQUIRE(a.tiling.block_q == b.tiling.block_q);
      REQUIRE(a.tiling.splits == b.tiling.splits);
      // K as without a latent, no V at all; Q and the block table unchanged.
      CHECK(latent_read(a, TensorId::K) == latent_read(b, TensorId::K));
      CHECK(latent_read(a, TensorId::K) > 0);
      CHECK(latent_read(a, TensorId::V) == 0);
      CHECK(latent_read(b, TensorId::V) == latent_read(b, TensorId::K));
      CHECK(latent_read(a, TensorId::Q) == latent_read(b, TensorId::Q));
      CHECK(latent_read(a, TensorId::block_table) == latent_read(b, TensorId::block_table));
      // O (and the fp32 partials, written and read back) latent_dim columns wide: exactly the
      // separate cache's scaled by latent_dim / head_dim, each row once per split (L unchanged).
      const auto scaled = [&](std::uint64_t bytes) {
        return bytes / static_cast<std::uint64_t>(p.head_dim) *
               static_cast<std::uint64_t>(p.latent_dim);
      };
      CHECK(latent_written(a, TensorId::O) == scaled(latent_written(b, TensorId::O)));
      CHECK(latent_written(a, TensorId::O) ==
            static_cast<std::uint64_t>(p.bh() * p.seq * p.latent_dim * p.elem_bytes()));
      CHECK(latent_written(a, TensorId::partial_O) ==
            scaled(latent_written(b, TensorId::partial_O)));
      CHECK(latent_read(a, TensorId::partial_O) == scaled(latent_read(b, TensorId::partial_O)));
      CHECK(latent_written(a, TensorId::L) == latent_written(b, TensorId::L));
      // The closed form, written apart from the schedule, and the compulsory bytes.
      test::require_closed_form(latent, a);
      CHECK(a.bounds.compulsory_bytes == test::dense_compulsory_bytes(a.request.problem));
      CHECK(test::hbm_total(a) >= a.bounds.lower_bound_bytes);
      ++checked;
    }
  }
  CHECK(checked == 2 * test::cases(50));
}

TEST_CASE(
    "a latent's products: S over head_dim, P V over latent_dim; an fp8 latent converted once") {
  test::ShapeGen gen(576);
  for (const char* algo : {"flash-decoding", "paged"}) {
    for (int i = 0; i < test::cases(30); ++i) {
      RunRequest r = random_latent_decode(gen, algo);
      r.problem.causal = false;  // every row sees every key: the FLOPs are the shapes'
      r.problem.kv_dtype.reset();
      const AttentionProblem& p = r.problem;
      CAPTURE(algo);
      CAPTURE(p.heads);
      CAPTURE(p.seq);
      CAPTURE(p.seq_kv);
      CAPTURE(p.head_dim);
      CAPTURE(p.latent_dim);
      const Report a = latent_two_level(r);
      REQUIRE(a.feasible());
      CHECK(
          a.engine.total.tensor_flops ==
          static_cast<std::uint64_t>(2 * p.bh() * p.seq * p.seq_kv * (p.head_dim + p.latent_dim)));
      // With an fp8 latent: half K's bytes, and one conversion of each K element a warp reads
      // (the P V product reads V as those converted elements: none more).
      RunRequest r8 = r;
      r8.problem.kv_dtype = Dtype::fp8;
      const Report b = latent_two_level(r8);
      REQUIRE(b.feasible());
      CHECK(latent_read(a, TensorId::K) == 2 * latent_read(b, TensorId::K));
      CHECK(b.engine.total.tensor_flops == a.engine.total.tensor_flops);
      const std::uint64_t k_elements_read =
          a.engine.total.smem_read_bytes - b.engine.total.smem_read_bytes;  // a byte less each
      // The saved shared-memory bytes are K's (head_dim columns) and V's (latent_dim of them);
      // the converted elements are K's alone.
      const std::uint64_t converted = k_elements_read /
                                      static_cast<std::uint64_t>(p.head_dim + p.latent_dim) *
                                      static_cast<std::uint64_t>(p.head_dim);
      CHECK(b.engine.total.fp32_flops - a.engine.total.fp32_flops ==
            static_cast<std::uint64_t>(costs::kFp8ConvertFp32OpsPerElement) * converted);
    }
  }
}

TEST_CASE(
    "execution with a latent cache is exact against a reference whose V is K's first columns") {
  struct Shape {
    std::int64_t heads, head_dim, latent, seq_kv, block_kv, splits;
  };
  const Shape shapes[] = {{4, 48, 32, 64, 16, 1},   {4, 48, 32, 100, 16, 3},
                          {8, 576, 512, 40, 16, 1}, {3, 576, 512, 70, 32, 2},
                          {2, 32, 32, 33, 16, 2},   {16, 24, 1, 50, 16, 4}};
  int i = 0;
  for (const Shape& s : shapes) {
    for (const char* algo : {"flash-decoding", "paged"}) {
      for (const bool fp8 : {false, true}) {
        RunRequest r = test::request(algo, 2, s.heads, 1, s.head_dim, 0, s.block_kv);
        r.problem.kv_heads = 1;
        r.problem.latent_dim = s.latent;
        r.problem.seq_kv = s.seq_kv;
        r.problem.dtype = Dtype::bf16;
        if (fp8) r.problem.kv_dtype = Dtype::fp8;
        if (r.algorithm == "paged") r.problem.page_tokens = 16;
        r.tiling.splits = s.splits;
        r.execute = true;
        r.engine.l2_enabled = false;
        r.seed = static_cast<std::uint64_t>(++i);
        CAPTURE(algo);
        CAPTURE(fp8);
        CAPTURE(s.heads);
        CAPTURE(s.head_dim);
        CAPTURE(s.latent);
        CAPTURE(s.seq_kv);
        CAPTURE(s.splits);
        const Report rep = simulate(test::profile(), r);
        REQUIRE(rep.feasible());
        REQUIRE(rep.numerics.max_abs_error.has_value());
        CHECK(*rep.numerics.max_abs_error <= 1e-5);
      }
    }
  }
  // Speculative rows (N = 3, causal) of two latents, unpacked.
  RunRequest r = test::request("flash-decoding", 1, 4, 3, 40, 16, 16);
  r.problem.kv_heads = 2;
  r.problem.latent_dim = 24;
  r.problem.seq_kv = 90;
  r.problem.causal = true;
  r.tiling.splits = 2;
  r.execute = true;
  r.engine.l2_enabled = false;
  const Report rep = simulate(test::profile(), r);
  REQUIRE(rep.feasible());
  CHECK(*rep.numerics.max_abs_error <= 1e-5);
}

TEST_CASE("--latent-dim is refused where no kernel reads a latent, with the readers named") {
  RunRequest r = test::request("flash2", 1, 8, 1, 64);
  r.problem.seq_kv = 512;
  r.problem.kv_heads = 1;
  r.problem.latent_dim = 32;
  for (const char* algo : {"flash2", "flash1", "standard", "flash3", "block-sparse"}) {
    RunRequest x = r;
    x.algorithm = algo;
    CAPTURE(algo);
    latent_refused(x, "--latent-dim 32 (multi-head latent attention");
    latent_refused(x, "applies to --algo flash-decoding and paged");
    latent_refused(x, "dataflow.forward split_kv or paged");
  }
  RunRequest x = r;
  x.algorithm = "flash-decoding";
  CHECK(simulate(test::profile(), x).feasible());
  x.problem.pass = Pass::fwdbwd;
  latent_refused(x, "--latent-dim 32 with --pass fwdbwd");
  x.problem.pass = Pass::bwd;
  latent_refused(x, "--latent-dim 32 with --pass bwd");
  x.problem.pass = Pass::fwd;
  x.problem.latent_dim = 65;
  latent_refused(x, "--latent-dim 65 exceeds --head-dim 64");
  x.problem.latent_dim = -3;
  latent_refused(x, "--latent-dim -3 is out of range");
  // A kernel description is refused by its forward dataflow's entry, not by its name.
  x = r;
  x.kernel = std::make_shared<const KernelDescription>(parse_kernel_description(
      nlohmann::json{{"name", "my_mla"}, {"dataflow", {{"forward", "query_stationary"}}}}, "test"));
  x.algorithm = x.kernel->name;
  latent_refused(x, "not 'my_mla'");
  x.kernel = std::make_shared<const KernelDescription>(parse_kernel_description(
      nlohmann::json{{"name", "my_mla"}, {"dataflow", {{"forward", "split_kv"}}}}, "test"));
  CHECK(simulate(test::profile(), x).feasible());
}

TEST_CASE("--latent-dim from flags: --kv-heads defaults to 1, an explicit one is honoured") {
  RunFlags f;
  f.algorithm = "flash-decoding";
  f.heads = 16;
  f.seq = 1;
  f.seq_kv = 1024;
  f.head_dim = 96;
  f.latent_dim = 64;
  RunRequest r = to_request(f);
  CHECK(r.problem.latent_dim == 64);
  CHECK(r.problem.kv_head_count() == 1);
  f.kv_heads = 4;
  r = to_request(f);
  CHECK(r.problem.kv_head_count() == 4);
  f.kv_heads.reset();
  f.latent_dim.reset();
  CHECK(to_request(f).problem.kv_head_count() == 16);  // without a latent, --heads as before
  for (const std::int64_t bad : {0, -1}) {
    f.latent_dim = bad;
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(to_request(f), doctest::Contains("must be at least 1"), ConfigError);
  }
  f.latent_dim = 2000;
  CHECK_THROWS_WITH_AS(to_request(f), doctest::Contains("--latent-dim 2000 is out of range"),
                       ConfigError);
}

TEST_CASE("a latent's default tiles hold the fp32 accumulators within the register limit") {
  const HardwareProfile& hw = test::profile();
  const int limit = hw.sm.max_registers_per_thread.value;
  struct Shape {
    std::int64_t heads, head_dim, latent;
  };
  for (const Shape s : {Shape{128, 576, 512}, Shape{16, 576, 512}, Shape{8, 48, 32},
                        Shape{64, 768, 640}, Shape{4, 256, 128}}) {
    for (const char* algo : {"flash-decoding", "paged"}) {
      RunRequest r = test::request(algo, 2, s.heads, 1, s.head_dim);
      r.problem.kv_heads = 1;
      r.problem.latent_dim = s.latent;
      r.problem.seq_kv = 2048;
      r.problem.dtype = Dtype::bf16;
      if (r.algorithm == "paged") r.problem.page_tokens = 64;
      CAPTURE(algo);
      CAPTURE(s.head_dim);
      CAPTURE(s.latent);
      const Report rep = latent_two_level(r);
      REQUIRE(rep.feasible());
      CHECK(rep.tiling.block_q == 64);
      CHECK(rep.tiling.block_kv == 64);
      CHECK(rep.tiling.threads % 128 == 0);
      CHECK(fp32_accumulator_registers(rep.tiling.block_q, rep.tiling.block_kv, s.latent,
                                       rep.tiling.threads) <= limit);
      // The fewest warpgroups that do: one fewer would not hold them.
      if (rep.tiling.threads > 128) {
        CHECK(fp32_accumulator_registers(rep.tiling.block_q, rep.tiling.block_kv, s.latent,
                                         rep.tiling.threads - 128) > limit);
      }
    }
  }
  // DeepSeek-V3's shape takes FlashMLA's 2 warpgroups and its two K buffers (Q and two 64 x 576
  // bf16 tiles fit an H100's shared memory, not an A100's), each its own copy stage: one buffer
  // read by both products has no pair to alternate.
  RunRequest r = test::request("flash-decoding", 1, 128, 1, 576);
  r.problem.kv_heads = 1;
  r.problem.latent_dim = 512;
  r.problem.seq_kv = 1024;
  r.problem.dtype = Dtype::bf16;
  const Report h100 = latent_two_level(r);
  CHECK(h100.tiling.threads == 256);
  CHECK(h100.tiling.pipeline_stages == 2);
  CHECK(h100.engine.kernels.front().spec.smem_bytes_per_cta == (64 + 2 * 64) * 576 * 2);
  CHECK(h100.engine.kernels.front().spec.pipeline_stages == 2);
  RunRequest a100 = r;
  a100.engine.l2_enabled = false;
  const Report one = simulate(test::profile("a100-sxm4-80gb"), a100);
  REQUIRE(one.feasible());
  CHECK(one.tiling.pipeline_stages == 1);
  CHECK(one.engine.kernels.front().spec.pipeline_stages == 1);
  // Without a latent the one K/V pair is timed two tiles deep, as before.
  RunRequest separate = test::request("flash-decoding", 1, 8, 1, 128);
  separate.problem.seq_kv = 1024;
  const Report pair = latent_two_level(separate);
  CHECK(pair.tiling.pipeline_stages == 1);
  CHECK(pair.engine.kernels.front().spec.pipeline_stages == 2);
  // Asked for 128 threads DeepSeek's shape would spill.
  r.tiling.threads = 128;
  const Report spills = latent_two_level(r);
  CHECK_FALSE(spills.feasible());
  CHECK(spills.infeasible_reason.find("accumulators in fp32 alone take 288 registers") !=
        std::string::npos);
  r.tiling.registers_per_thread = 255;  // a compiler's report is taken as given
  CHECK(latent_two_level(r).feasible());
}

TEST_CASE("DeepSeek-V3's decode: the latent cache read once per 64-row tile of packed heads") {
  // 128 query heads packed as the rows of two 64-row tiles per sequence, each reading the whole
  // 8192 x 576 bf16 latent once (over its splits); O 128 x 512 a sequence.
  RunRequest r = test::request("flash-decoding", 32, 128, 1, 576);
  r.problem.kv_heads = 1;
  r.problem.latent_dim = 512;
  r.problem.seq_kv = 8192;
  r.problem.dtype = Dtype::bf16;
  const Report rep = latent_two_level(r);
  REQUIRE(rep.feasible());
  const std::uint64_t cache = 8192ull * 576 * 2;  // one sequence's latent, bytes
  CHECK(latent_read(rep, TensorId::K) == 32 * 2 * cache);
  CHECK(latent_read(rep, TensorId::V) == 0);
  CHECK(latent_written(rep, TensorId::O) == 32ull * 128 * 512 * 2);
  CHECK(rep.bounds.compulsory_bytes == 32ull * 128 * 576 * 2 + 32 * cache + 32ull * 128 * 512 * 2);
  test::require_closed_form(r, rep);
}

TEST_CASE("a latent packs its heads at every N: two query positions read the latent once") {
  // A speculative step (N = 2) over one latent: the 2 x 16 packed rows are one 32-row tile, so
  // the cache is read once a sequence, as at N = 1. Unpacked (--pack-gqa off, or the rule of
  // FlashAttention-2's decode path, which packs at N = 1 only) each head reads it again.
  RunRequest r = test::request("flash-decoding", 4, 16, 2, 576, 0, 64);
  r.tiling.block_q = 32;
  r.tiling.threads = 256;
  r.tiling.splits = 2;
  r.problem.kv_heads = 1;
  r.problem.latent_dim = 512;
  r.problem.seq_kv = 1024;
  const std::uint64_t cache = 1024ull * 576 * 2;
  for (const GqaPacking packing : {GqaPacking::automatic, GqaPacking::on, GqaPacking::off}) {
    CAPTURE(static_cast<int>(packing));
    r.problem.pack_gqa = packing;
    const Report rep = latent_two_level(r);
    REQUIRE(rep.feasible());
    CHECK(latent_read(rep, TensorId::K) == (packing == GqaPacking::off ? 16 : 1) * 4 * cache);
    test::require_closed_form(r, rep);
  }
}

TEST_CASE(
    "kvcache --latent-dim: one latent row a token and layer, as many tokens as K and V's half") {
  // DeepSeek-V3's cache: 61 layers x one 576-column bf16 row a token (70,272 B), where K and V
  // rows of their own would be twice that; V is the row's first 512 columns, so the latent width
  // changes no byte. Refused wider than the row.
  KvCacheFlags f;
  f.kv_budget_bytes = 4e9;
  f.layers = 61;
  f.kv_heads = 1;
  f.head_dim = 576;
  f.dtype = "bf16";
  f.requests = 50;
  const std::set<std::string> given = {"--kv-budget-bytes", "--layers", "--kv-heads",
                                       "--head-dim",        "--dtype",  "--requests"};
  const KvCacheRun separate = run_kvcache(f, given);
  std::set<std::string> with_latent = given;
  with_latent.insert("--latent-dim");
  for (const std::int64_t c : {512, 1, 576}) {
    CAPTURE(c);
    f.latent_dim = c;
    const KvCacheRun latent = run_kvcache(f, with_latent);
    REQUIRE(latent.results.size() == separate.results.size());
    for (std::size_t i = 0; i < latent.results.size(); ++i) {
      const kvcache::KvCacheResult &a = separate.results[i], &b = latent.results[i];
      CHECK(b.config.model.bytes_per_token() == 61 * 576 * 2);
      CHECK(2 * b.config.model.bytes_per_token() == a.config.model.bytes_per_token());
      CHECK(b.capacity_tokens >= 2 * a.capacity_tokens);
      CHECK(b.capacity_tokens <= 2 * a.capacity_tokens + 16);
    }
    CHECK(kvcache_to_json(latent).at("model").at("latent_dim") == c);
    CHECK(kvcache_table(latent, false).find("1 latent row x 576 head dim") != std::string::npos);
  }
  CHECK(!kvcache_to_json(separate).at("model").contains("latent_dim"));
  f.latent_dim = 577;
  CHECK_THROWS_WITH_AS(run_kvcache(f, with_latent),
                       doctest::Contains("--latent-dim 577 exceeds --head-dim 576"), ConfigError);
}

// iosim validate of a measured latent case (probe8 F1, F3): a problem key it does not read is
// refused, `latent_dim` (run's JSON name) with the measurement's own name given; a latent the
// prediction refuses names the file and the case, not run's flags alone.
TEST_CASE("validate: a measured latent case's unknown keys and bad latent are refused by name") {
  nlohmann::json doc = test::measured_document();
  nlohmann::json c = doc["cases"][0];
  c["id"] = "mla_probe";
  c["schedule"] = "flash-decoding";
  c["pass"] = "fwd";
  c.erase("tiling");
  c["problem"] = {{"batch", 1},      {"heads", 16},     {"seq", 1},        {"seq_kv", 4096},
                  {"head_dim", 576}, {"dtype", "fp16"}, {"causal", false}, {"latent_dim", 512}};
  doc["cases"] = nlohmann::json::array({c});
  CHECK_THROWS_WITH_AS(
      iosim::validate_document(doc, "m.json", "h100-sxm5-80gb"),
      doctest::Contains("m.json: case 'mla_probe': problem: unknown key 'latent_dim' (a "
                        "measurement names the latent's width 'latent')"),
      ConfigError);
  c["problem"].erase("latent_dim");
  c["problem"]["latent"] = 600;
  doc["cases"] = nlohmann::json::array({c});
  CHECK_THROWS_WITH_AS(iosim::validate_document(doc, "m.json", "h100-sxm5-80gb"),
                       doctest::Contains("m.json: case 'mla_probe': predicting it as `iosim run` "
                                         "would: --latent-dim 600 exceeds --head-dim 576"),
                       ConfigError);
  // The measurement's own name is read: predicted as a latent decode, one K/V head.
  c["problem"]["latent"] = 512;
  doc["cases"] = nlohmann::json::array({c});
  const iosim::ValidationResult v = iosim::validate_document(doc, "m.json", "h100-sxm5-80gb");
  REQUIRE(v.cases.size() == 1);
  CHECK(v.cases[0].skipped_reason.empty());
}
