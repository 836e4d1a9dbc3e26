// Decoding: grouped-query attention, flash-decoding (split-KV + reduce) and paged attention.
// Properties over random shapes: exact numerics against an FP64 reference (paged against
// contiguous K/V), two-level counts equal to the closed form, K/V read once per K/V head when the
// query group is packed; the split heuristic; bad input.
#include "algorithms/decode.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>

#include "numerics/numeric_executor.hpp"
#include "sim/base/errors.hpp"
#include "sim/schedule/block_table.hpp"
#include "tests/test_support.hpp"

using namespace iosim;
using iosim::test::hbm_total;

namespace {

const std::string kTables = std::string(IOSIM_TEST_DATA_DIR) + "/block_tables/";

// A random decode-shaped request: a few query rows, grouped-query heads, a K/V cache of up to
// ~600 tokens, small blocks so that there are many splits and pages.
RunRequest random_decode(test::ShapeGen& gen, const char* algo) {
  const std::int64_t dims[] = {16, 32, 64, 128};
  const std::int64_t blocks[] = {0, 16, 32, 64};
  const std::int64_t pages[] = {1, 3, 16, 64};
  const std::int64_t kv = gen.pick(1, 3);
  RunRequest r = test::request(algo, gen.pick(1, 2), kv * gen.pick(1, 4), 1, gen.pick(dims),
                               gen.pick(blocks), gen.pick(blocks));
  r.problem.kv_heads = kv;
  r.problem.seq = gen.pick(0, 2) == 0 ? gen.pick(2, 5) : 1;  // speculative decoding now and then
  r.problem.seq_kv = gen.pick(r.problem.seq, 600);
  r.problem.causal = gen.coin();
  r.problem.mask = gen.pick(0, 3) == 0;
  if (r.algorithm == "paged") r.problem.page_tokens = gen.pick(pages);
  const std::int64_t bk = r.tiling.block_kv.value_or(r.problem.head_dim <= 64 ? 256 : 128);
  const std::int64_t blocks_kv = (r.problem.seq_kv + bk - 1) / bk;
  r.tiling.splits = test::given(gen.coin() ? 0 : gen.pick(1, std::min<std::int64_t>(blocks_kv, 9)));
  // --pack-gqa: on (at any N) or off now and then, where the rows can be packed.
  if (r.problem.can_pack_query_group()) {
    const GqaPacking modes[] = {GqaPacking::automatic, GqaPacking::on, GqaPacking::off};
    r.problem.pack_gqa = gen.pick(modes);
  }
  return r;
}

double decode_executed_error(RunRequest r) {
  r.execute = true;
  r.engine.l2_enabled = false;
  const Report rep = simulate(test::profile(), r);
  REQUIRE(rep.feasible());
  REQUIRE(rep.numerics.max_abs_error.has_value());
  return *rep.numerics.max_abs_error;
}

Report decode_two_level(RunRequest r) {
  r.engine.l2_enabled = false;
  return simulate(test::profile(), r);
}

std::uint64_t hbm_read(const Report& r, TensorId t) {
  return r.engine.total.hbm.read_bytes[index_of(t)];
}

}  // namespace

TEST_CASE("flash-decoding and paged compute exact attention over random decode shapes" *
          doctest::test_suite("long")) {
  test::ShapeGen gen(4);
  for (const char* algo : {"flash-decoding", "paged"}) {
    for (int i = 0; i < test::cases(40); ++i) {
      RunRequest r = random_decode(gen, algo);
      r.seed = static_cast<std::uint64_t>(i) + 1;
      CAPTURE(algo);
      CAPTURE(r.problem.batch);
      CAPTURE(r.problem.heads);
      CAPTURE(r.problem.kv_heads);
      CAPTURE(r.problem.seq);
      CAPTURE(r.problem.seq_kv);
      CAPTURE(r.problem.head_dim);
      CAPTURE(r.problem.page_tokens);
      CAPTURE(r.problem.causal);
      CAPTURE(r.problem.mask);
      CAPTURE(r.tiling.block_kv);
      CAPTURE(r.tiling.splits);
      CHECK(decode_executed_error(r) <= 1e-5);
    }
  }
}

TEST_CASE("every forward schedule honours grouped-query attention numerically") {
  test::ShapeGen gen(11);
  const char* algos[] = {"standard", "flash1", "flash2", "block-sparse"};
  for (int i = 0; i < 24; ++i) {
    RunRequest r = test::request(gen.pick(algos), gen.pick(1, 2), 8, gen.pick(1, 3) == 1 ? 1 : 70,
                                 gen.pick(1, 2) * 32, 32, 32);
    r.problem.kv_heads = gen.pick(0, 1) ? 2 : 4;
    r.problem.seq_kv = r.problem.seq + gen.pick(0, 90);
    r.problem.causal = gen.coin();
    CAPTURE(r.algorithm);
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.kv_heads);
    CHECK(decode_executed_error(r) <= 1e-5);
  }
}

TEST_CASE("a paged schedule gathering the wrong page is caught by execution") {
  RunRequest r = test::request("paged", 2, 2, 1, 32, 0, 16);
  r.problem.seq_kv = 64;
  r.problem.page_tokens = 16;
  BlockTable table = random_block_table(2, 4, 3);
  r.problem.block_table = std::make_shared<const BlockTable>(table);
  const Planned planned =
      builtin_registry().get("paged").plan(r.problem, test::profile(), r.tiling);
  REQUIRE(planned.feasible());
  CHECK(execute_schedule(*planned.schedule, r.problem, 1).max_abs_error() <= 1e-5);
  // Sequence 0's page 1 and sequence 1's page 2 trade places: the kernel gathers the other
  // sequence's keys (a swap within one sequence would only permute keys, which softmax ignores).
  std::swap(table.pages[1], table.pages[4 + 2]);
  AttentionProblem other = r.problem;
  other.block_table = std::make_shared<const BlockTable>(table);
  CHECK(execute_schedule(*planned.schedule, other, 1).max_abs_error() > 0.01);
}

TEST_CASE("two-level decode bytes equal the closed form over random shapes") {
  test::ShapeGen gen(20261123);
  int checked = 0;
  for (const char* algo : {"flash-decoding", "paged", "flash2", "standard", "flash1"}) {
    for (int i = 0; i < 50; ++i) {
      RunRequest r = random_decode(gen, algo);
      if (r.algorithm != "flash-decoding" && r.algorithm != "paged") r.tiling.splits.reset();
      if (r.algorithm == "standard" || r.algorithm == "flash1") {
        r.problem.pack_gqa = GqaPacking::automatic;  // they never pack
      }
      r.problem.batch = gen.pick(1, 4);
      r.problem.dtype = gen.coin() ? Dtype::fp16 : Dtype::fp32;
      const Report rep = decode_two_level(r);
      if (!rep.feasible()) continue;
      CAPTURE(algo);
      CAPTURE(r.problem.heads);
      CAPTURE(r.problem.kv_heads);
      test::require_closed_form(r, rep);
      REQUIRE(hbm_total(rep) >= rep.bounds.lower_bound_bytes);
      // Compulsory bytes against the tensors' sizes, not against the bound made from them.
      REQUIRE(rep.bounds.compulsory_bytes == test::dense_compulsory_bytes(r.problem));
      REQUIRE(hbm_total(rep) >= rep.bounds.compulsory_bytes);
      ++checked;
    }
  }
  CHECK(checked > 200);
  // A latent cache (--latent-dim, multi-head latent attention): K alone, V its first columns, O
  // of latent_dim columns; the decode dataflows only (the others refuse it).
  test::ShapeGen latent_gen(512);
  int latent_checked = 0;
  for (const char* algo : {"flash-decoding", "paged"}) {
    for (int i = 0; i < 40; ++i) {
      RunRequest r = random_decode(latent_gen, algo);
      r.problem.latent_dim = latent_gen.pick(1, r.problem.head_dim);
      r.problem.dtype = latent_gen.coin() ? Dtype::fp16 : Dtype::bf16;
      if (latent_gen.coin()) r.problem.kv_dtype = Dtype::fp8;
      const Report rep = decode_two_level(r);
      REQUIRE(rep.feasible());
      CAPTURE(algo);
      CAPTURE(r.problem.heads);
      test::require_closed_form(r, rep);
      REQUIRE(rep.engine.total.hbm.read_bytes[index_of(TensorId::V)] == 0);
      REQUIRE(hbm_total(rep) >= rep.bounds.lower_bound_bytes);
      REQUIRE(rep.bounds.compulsory_bytes == test::dense_compulsory_bytes(r.problem));
      ++latent_checked;
    }
  }
  CHECK(latent_checked == 80);
}

TEST_CASE("a packed query group reads each K/V head once; without packing once per query head") {
  const std::int64_t d = 128, nk = 4096, eb = 2;
  for (const char* algo : {"flash-decoding", "paged", "flash2"}) {
    CAPTURE(algo);
    RunRequest r = test::request(algo, 2, 32, 1, d);
    r.problem.seq_kv = nk;
    r.problem.kv_heads = 8;
    const Report packed = decode_two_level(r);
    REQUIRE(packed.feasible());
    CHECK(hbm_read(packed, TensorId::K) == static_cast<std::uint64_t>(2 * 8 * nk * d * eb));
    CHECK(hbm_read(packed, TensorId::V) == hbm_read(packed, TensorId::K));
    // The compulsory bytes count K and V once per K/V head, so the packed run meets them.
    const std::uint64_t q_o = 2 * 2 * 32 * d * eb;
    CHECK(packed.bounds.compulsory_bytes == q_o + 2 * 2 * 8 * nk * d * eb);
    r.problem.mask = true;  // an index mask depends on the query position: no packing
    const Report unpacked = decode_two_level(r);
    CHECK(hbm_read(unpacked, TensorId::K) == static_cast<std::uint64_t>(2 * 32 * nk * d * eb));
  }
}

TEST_CASE("FlashAttention's split heuristic") {
  // Enough query tiles for 80% of the slots: one split.
  CHECK(num_splits_heuristic(212, 264, 512, 128) == 1);
  // PyTorch's decode on the H200 (B*H = 128 tiles, 132 SMs x 2, 32 K/V blocks): 2 splits, as
  // measured (cuda_validate/measurements/h200-sxm-141gb/pytorch_sdpa_2026-11-22.json).
  CHECK(num_splits_heuristic(128, 264, 32, 128) == 2);
  // One tile and few blocks: as many splits as blocks at most.
  CHECK(num_splits_heuristic(1, 264, 5, 128) <= 5);
  test::ShapeGen gen(5);
  for (int i = 0; i < 200; ++i) {
    const std::int64_t tiles = gen.pick(1, 300), slots = gen.pick(1, 300),
                       blocks = gen.pick(1, 600);
    const std::int64_t s = num_splits_heuristic(tiles, slots, blocks, 128);
    CHECK(s >= 1);
    CHECK(s <= std::max<std::int64_t>(1, std::min<std::int64_t>({128, slots, blocks})));
  }
}

TEST_CASE("flash-decoding: a split kernel and a reduce kernel; faster than flash2 at seq 1") {
  RunRequest r = test::request("flash-decoding", 1, 32, 1, 128);
  r.problem.seq_kv = 65536;  // the done-criterion shape
  const Report fd = simulate(test::profile(), r);
  REQUIRE(fd.feasible());
  REQUIRE(fd.engine.kernels.size() == 2);
  CHECK(fd.engine.kernels[0].spec.name == "fd_split");
  CHECK(fd.engine.kernels[1].spec.name == "fd_reduce");
  CHECK(fd.tiling.splits > 1);
  CHECK(fd.engine.kernels[0].spec.grid.y == fd.tiling.splits);
  r.algorithm = "flash2";
  const Report f2 = simulate(test::profile(), r);
  REQUIRE(f2.feasible());
  // flash2: one CTA per (batch, head), so 32 of the H100's 132 SMs work.
  CHECK(f2.engine.kernels[0].spec.grid.count() == 32);
  CHECK(f2.engine.kernels[0].idle_sm_fraction == doctest::Approx(100.0 / 132.0));
  CHECK(fd.engine.kernels[0].idle_sm_fraction == 0.0);
  CHECK(fd.engine.time_s < 0.7 * f2.engine.time_s);
  // One split: no partials, no reduce kernel.
  r.algorithm = "flash-decoding";
  r.tiling.splits = 1;
  const Report one = simulate(test::profile(), r);
  REQUIRE(one.engine.kernels.size() == 1);
  CHECK(one.engine.total.l2.read_bytes[index_of(TensorId::partial_O)] == 0);
}

TEST_CASE("paged: block-table reads, the partly filled last page, small pages in the L2") {
  RunRequest r = test::request("paged", 2, 4, 1, 64, 0, 64);
  r.problem.seq_kv = 1000;  // 62.5 pages of 16 tokens: the last one half full
  r.problem.kv_heads = 2;
  r.tiling.splits = 3;
  const Report two = decode_two_level(r);
  REQUIRE(two.feasible());
  // K read exactly once per K/V head, the half page included (packed group, two-level).
  CHECK(hbm_read(two, TensorId::K) == static_cast<std::uint64_t>(2 * 2 * 1000 * 64 * 2));
  // Each split of each of the 4 query tiles (packed groups) reads the ids of the pages it spans:
  // splits of 6, 6 and 4 blocks of 64 tokens = 24, 24 and 15 pages.
  CHECK(hbm_read(two, TensorId::block_table) ==
        static_cast<std::uint64_t>(2 * 2 * (24 + 24 + 15) * 4));
  // The same problem with contiguous K/V moves the same K/V bytes.
  RunRequest contiguous = r;
  contiguous.algorithm = "flash-decoding";
  contiguous.problem.page_tokens = 0;
  const Report fd = decode_two_level(contiguous);
  CHECK(hbm_read(fd, TensorId::K) == hbm_read(two, TensorId::K));
  // Through the L2, pages of 2 tokens (256-byte runs at d = 64) touch no fewer sectors than
  // 16-token pages and contiguous tiles.
  r.problem.page_tokens = 2;
  const Report small = simulate(test::profile(), r);
  r.problem.page_tokens = 16;
  const Report large = simulate(test::profile(), r);
  contiguous.engine.l2_enabled = true;
  const Report flat = simulate(test::profile(), contiguous);
  const auto l2k = [](const Report& x) {
    return x.engine.total.l2.read_bytes[index_of(TensorId::K)];
  };
  CHECK(l2k(small) >= l2k(large));
  CHECK(l2k(large) >= l2k(flat));
}

TEST_CASE("paged: a block table from a file") {
  RunRequest r = test::request("paged", 2, 2, 1, 32, 0, 16);
  r.problem.seq_kv = 40;  // 3 pages of 16 tokens per sequence
  r.problem.block_table =
      std::make_shared<const BlockTable>(load_block_table(kTables + "two_by_three.txt"));
  CHECK(r.problem.block_table->pool_pages == 7);
  CHECK(r.problem.block_table->at(1, 2) == 4);
  CHECK(decode_executed_error(r) <= 1e-5);
  r.problem.seq_kv = 60;  // 4 pages: the table's 3 do not cover it
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r), doctest::Contains("the problem needs 2 x 4"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(load_block_table(kTables + "duplicate.txt"),
                       doctest::Contains("line 2: page 1 is listed twice"), ConfigError);
  CHECK_THROWS_WITH_AS(load_block_table(kTables + "ragged.txt"),
                       doctest::Contains("line 2: 2 pages, line 1 has 3"), ConfigError);
  CHECK_THROWS_WITH_AS(load_block_table(kTables + "not_a_number.txt"),
                       doctest::Contains("'x' is not a page id"), ConfigError);
  CHECK_THROWS_WITH_AS(load_block_table(kTables + "missing.txt"),
                       doctest::Contains("cannot read block-table file"), ConfigError);
}

TEST_CASE("--pack-gqa on packs a query group at every N; off never packs") {
  const std::int64_t d = 64, nk = 2048, eb = 2;
  for (const char* algo : {"flash-decoding", "paged", "flash2", "flash3"}) {
    for (const std::int64_t n : {1, 2, 3, 4}) {
      CAPTURE(algo);
      CAPTURE(n);
      RunRequest r = test::request(algo, 2, 16, n, d);
      r.problem.seq_kv = nk;
      r.problem.kv_heads = 4;  // groups of 4: 4 n <= 16 rows, one query tile per group
      r.tiling.block_q = 16;
      if (r.algorithm == "flash3") r.tiling.block_q = 64;  // a warpgroup's 64 rows
      const auto k_read = [&](GqaPacking mode) {
        RunRequest x = r;
        x.problem.pack_gqa = mode;
        const Report rep = decode_two_level(x);
        REQUIRE(rep.feasible());
        test::require_closed_form(x, rep);
        return hbm_read(rep, TensorId::K);
      };
      const auto once = static_cast<std::uint64_t>(2 * 4 * nk * d * eb);
      CHECK(k_read(GqaPacking::on) == once);
      CHECK(k_read(GqaPacking::off) == 4 * once);
      // The default is FlashAttention-2's: packed at N = 1 only.
      CHECK(k_read(GqaPacking::automatic) == (n == 1 ? once : 4 * once));
      // Executed packed over 512 keys (several K/V blocks and splits still): the execution was
      // nearly all of this case's time at 2048 (31 s of the sanitizers' unit_decode).
      RunRequest x = r;
      x.problem.pack_gqa = GqaPacking::on;
      x.problem.seq_kv = 512;
      CHECK(decode_executed_error(x) < 1e-5);
    }
  }
}

TEST_CASE("decode inputs that make no sense are rejected with the flag named") {
  RunRequest r = test::request("flash-decoding", 1, 8, 1, 64);
  r.problem.seq_kv = 512;
  auto fails = [&](RunRequest x, const char* message) {
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(simulate(test::profile(), x), doctest::Contains(message), ConfigError);
  };
  RunRequest x = r;
  x.problem.kv_heads = 3;
  fails(x, "--kv-heads 3 must divide --heads 8");
  x = r;
  x.problem.kv_heads = 16;
  fails(x, "--kv-heads 16 is out of range");
  x = r;
  x.tiling.splits = 3;  // 512 tokens are 2 blocks of 256 at d = 64
  fails(x, "--splits 3 exceeds the 2 K/V blocks");
  x = r;
  x.algorithm = "flash2";
  x.tiling.splits = 2;
  fails(x, "--splits applies to --algo flash-decoding and paged");
  x = r;
  x.problem.page_tokens = 16;
  fails(x, "--page-tokens and --block-table apply to --algo paged");
  x = r;
  x.problem.dropout = 0.1;
  fails(x, "flash-decoding has no dropout");
  x = r;
  x.problem.pass = Pass::fwdbwd;
  fails(x, "has only a forward pass");
  x = r;
  x.algorithm = "flash2";
  x.problem.kv_heads = 2;
  x.problem.pass = Pass::bwd;
  fails(x, "--kv-heads 2 with --pass bwd");
  x = r;
  x.problem.pack_gqa = GqaPacking::on;
  fails(x, "--pack-gqa on needs grouped-query attention");
  x.problem.kv_heads = 2;
  x.problem.seq = 2;
  x.problem.causal = true;
  fails(x, "--pack-gqa on cannot pack --causal rows at --seq 2");
  x.problem.causal = false;
  x.problem.mask = true;
  fails(x, "--pack-gqa on cannot pack with --mask, --dropout or --pattern");
  x.problem.mask = false;
  x.algorithm = "flash1";
  fails(x, "--pack-gqa on applies to --algo flash2 and flash3");
}

TEST_CASE("decode schedules emit a split's CTA in parts of 64 K/V blocks") {
  for (const char* algo : {"flash-decoding", "paged"}) {
    RunRequest r = test::request(algo, 1, 4, 1, 32, 0, 16);
    r.problem.kv_heads = 2;
    r.problem.seq_kv = 3000;  // 188 blocks of 16: three parts when there is one split
    r.problem.page_tokens = r.algorithm == std::string("paged") ? 5 : 0;
    if (r.problem.page_tokens > 0) {
      r.problem.block_table = std::make_shared<const BlockTable>(random_block_table(1, 600, 9));
    }
    for (std::int64_t splits : {1, 2, 7}) {
      r.tiling.splits = splits;
      const Planned planned =
          builtin_registry().get(algo).plan(r.problem, test::profile(), r.tiling);
      REQUIRE(planned.feasible());
      const Schedule& s = *planned.schedule;
      const std::vector<KernelSpec> kernels = s.kernels();
      for (std::size_t k = 0; k < kernels.size(); ++k) {
        for (std::int64_t cta = 0; cta < kernels[k].grid.count(); ++cta) {
          std::vector<TileOp> parts;
          std::size_t count = 1;
          for (std::size_t part = 0; s.emit_cta_part(k, cta, part, parts); ++part) ++count;
          CAPTURE(algo);
          CAPTURE(splits);
          // Parts of 64 K/V blocks in the split kernel (188 blocks over `splits`); one in the
          // reduce.
          const std::int64_t per_split = (188 + splits - 1) / splits;
          CHECK(count == (k == 0 ? static_cast<std::size_t>((per_split + 63) / 64) : 1u));
        }
      }
    }
  }
}
