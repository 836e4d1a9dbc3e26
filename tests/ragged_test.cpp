// Ragged (varlen) batches (--seq-lens, --seq-kv-lens): a launch over sequences of different
// lengths is the union of their batch-1 problems: its counts against the sum of the sequences'
// own runs, equal lengths against the batched run, decode rows beside a prefill chunk against the
// tiles of visible scores, each CTA's operations against its sequence's, the numerics, and the
// refusals.
#include "algorithms/ragged.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "algorithms/kernel_description.hpp"
#include "api/validation.hpp"
#include "sim/base/errors.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

using Lengths = std::vector<std::int64_t>;

// A ragged request: batch, seq and seq_kv from the lists, as to_request() sets them.
RunRequest ragged(const std::string& algo, const Lengths& q, const Lengths& kv, std::int64_t heads,
                  std::int64_t d) {
  RunRequest r = test::request(algo, static_cast<std::int64_t>(q.size()), heads,
                               *std::max_element(q.begin(), q.end()), d);
  r.problem.seq_kv = *std::max_element(kv.begin(), kv.end());
  r.problem.seq_lens = std::make_shared<const Lengths>(q);
  r.problem.seq_kv_lens = std::make_shared<const Lengths>(kv);
  return r;
}

// Sequence b's own run: batch 1, its lengths (its decode rows' query heads packed only where
// every sequence is one, as FlashAttention-2's varlen kernel packs them).
RunRequest sequence_run(const RunRequest& r, std::size_t b) {
  RunRequest one = r;
  one.problem = sequence_problem(r.problem, b);
  return one;
}

// Score tiles a dense forward computes (those holding a visible score, computed whole), over
// blocks block_q x block_kv, from score_visible() alone.
std::uint64_t computed_scores(const AttentionProblem& p, std::int64_t block_q,
                              std::int64_t block_kv) {
  std::uint64_t scores = 0;
  for (std::int64_t q0 = 0; q0 < p.seq; q0 += block_q) {
    const std::int64_t qr = std::min(block_q, p.seq - q0);
    for (std::int64_t k0 = 0; k0 < p.seq_kv; k0 += block_kv) {
      const std::int64_t kr = std::min(block_kv, p.seq_kv - k0);
      bool any = false;
      for (std::int64_t i = q0; i < q0 + qr && !any; ++i)
        for (std::int64_t j = k0; j < k0 + kr && !any; ++j) any = score_visible(p, i, j);
      if (any) scores += static_cast<std::uint64_t>(qr * kr);
    }
  }
  return scores;
}

}  // namespace

// About 0.1 s in Release: in the default suites (test::cases keeps a tenth under the sanitizers).
TEST_CASE("ragged: counts are the sum of the sequences' own runs (many shapes)") {
  test::ShapeGen gen(55);
  // flash2, flash3 and a description of the query-stationary forward (docs/kernels/'s wgmma
  // kernel with TMA loads).
  const char* algos[] = {"flash2", "flash3", "wg1_tma_fwd"};
  const auto described = std::make_shared<const KernelDescription>(
      load_kernel_description(std::string(IOSIM_REPO_DIR) + "/docs/kernels/wg1_tma_fwd.yaml"));
  const std::int64_t dims[] = {64, 128};
  int checked = 0, described_runs = 0;
  for (int i = 0; i < test::cases(40); ++i) {
    const std::string algo = gen.pick(algos);
    const std::int64_t heads = gen.pick(1, 4);
    const bool causal = gen.coin();
    const auto count = static_cast<std::size_t>(gen.pick(1, 6));
    Lengths q, kv;
    for (std::size_t b = 0; b < count; ++b) {
      // Short and long sequences, decode rows among them; causal needs N_kv >= N.
      // One batch in eight is all decode rows (their query groups packed).
      const std::int64_t n = i % 8 == 3 ? 1 : gen.coin() ? gen.pick(1, 300) : gen.pick(1, 3000);
      q.push_back(n);
      kv.push_back(gen.coin() ? n : n + gen.pick(0, 1000) * (causal ? 1 : 0) + gen.pick(0, 200));
    }
    RunRequest r = ragged(algo, q, kv, heads, gen.pick(dims));
    if (algo == described->name) {
      r.kernel = described;
      ++described_runs;
    }
    r.problem.causal = causal;
    // Grouped-query heads: a divisor of H.
    r.problem.kv_heads = heads % 2 == 0 && gen.coin() ? heads / 2 : 0;
    if (gen.pick(0, 3) == 0) r.problem.window = gen.pick(1, 400) + (causal ? 0 : 3000);
    r.problem.mask = gen.pick(0, 4) == 0;
    r.problem.dropout = gen.pick(0, 4) == 0 ? 0.1 : 0.0;
    r.engine.l2_enabled = gen.coin();
    CAPTURE(algo);
    CAPTURE(fmt::format("{}", fmt::join(q, ",")));
    CAPTURE(fmt::format("{}", fmt::join(kv, ",")));
    CAPTURE(heads);
    CAPTURE(r.problem.kv_heads);
    CAPTURE(r.problem.head_dim);
    CAPTURE(causal);
    CAPTURE(r.problem.window);
    CAPTURE(r.problem.mask);
    CAPTURE(r.problem.dropout);
    CAPTURE(r.engine.l2_enabled);
    const Report rep = simulate(test::profile(), r);
    REQUIRE(rep.feasible());
    Counters sum;
    std::uint64_t closed_form = 0;
    for (std::size_t b = 0; b < count; ++b) {
      const Report own = simulate(test::profile(), sequence_run(r, b));
      REQUIRE(own.feasible());
      sum += own.engine.total;
      closed_form += own.bounds.closed_form_bytes;
    }
    const Counters& t = rep.engine.total;
    CHECK(t.tensor_flops == sum.tensor_flops);
    CHECK(t.fp32_flops == sum.fp32_flops);
    CHECK(t.sfu_ops == sum.sfu_ops);
    CHECK(t.smem_read_bytes == sum.smem_read_bytes);
    CHECK(rep.bounds.closed_form_bytes == closed_form);
    if (!r.engine.l2_enabled) {
      CHECK(t.hbm.read_bytes == sum.hbm.read_bytes);  // per tensor
      CHECK(t.hbm.write_bytes == sum.hbm.write_bytes);
      CHECK(test::hbm_total(rep) == rep.bounds.closed_form_bytes);
    }
    ++checked;
  }
  CHECK(checked == test::cases(40));
  if (!test::kSanitized) CHECK(described_runs > 5);
}

TEST_CASE("ragged: equal lengths are the batched run, counters and time") {
  // Decode rows alone: FlashAttention-2's varlen kernel packs each K/V head's query heads, as a
  // batched run at N = 1 does (seqlenq_ngroups_swapped).
  for (const char* algo : {"flash2", "flash3"}) {
    RunRequest r = ragged(algo, {1, 1, 1, 1, 1}, {3000, 3000, 3000, 3000, 3000}, 8, 128);
    r.problem.kv_heads = 2;
    r.engine.exact = true;
    RunRequest batched = r;
    batched.problem.seq_lens.reset();
    batched.problem.seq_kv_lens.reset();
    CAPTURE(algo);
    const Report a = simulate(test::profile(), r), e = simulate(test::profile(), batched);
    REQUIRE(a.feasible());
    CHECK(a.engine.kernels.front().spec.grid.z == 2);  // per K/V head
    CHECK(test::identical(a.engine.total, e.engine.total));
    CHECK(a.engine.time_s == e.engine.time_s);
  }
  for (const char* algo : {"flash2", "flash3"}) {
    for (bool causal : {false, true}) {
      RunRequest r = ragged(algo, {700, 700, 700}, {900, 900, 900}, 4, 64);
      r.problem.kv_heads = 2;
      r.problem.causal = causal;
      r.engine.exact = true;
      RunRequest batched = r;
      batched.problem.seq_lens.reset();
      batched.problem.seq_kv_lens.reset();
      CAPTURE(algo);
      CAPTURE(causal);
      const Report a = simulate(test::profile(), r), e = simulate(test::profile(), batched);
      REQUIRE(a.feasible());
      CHECK(test::identical(a.engine.total, e.engine.total));
      CHECK(a.engine.time_s == e.engine.time_s);
      CHECK(a.bounds.closed_form_bytes == e.bounds.closed_form_bytes);
    }
  }
}

TEST_CASE("ragged: decode rows beside a prefill chunk compute the tiles of their visible scores") {
  // Three decode rows (N = 1: every key visible) and a 512-token chunk over a cached context
  // (causal within the chunk, bottom-right aligned on its own keys).
  for (const char* algo : {"flash2", "flash3"}) {
    RunRequest r = ragged(algo, {1, 1, 1, 512}, {4096, 2000, 8000, 8192}, 8, 128);
    r.problem.kv_heads = 2;
    r.problem.causal = true;
    const Report rep = simulate(test::profile(), r);
    REQUIRE(rep.feasible());
    std::uint64_t scores = 0;
    for (std::size_t b = 0; b < 4; ++b) {
      scores +=
          computed_scores(sequence_problem(r.problem, b), rep.tiling.block_q, rep.tiling.block_kv);
    }
    CAPTURE(algo);
    // Q K^T and P V: 2 d FLOPs a score each, per query head.
    CHECK(rep.engine.total.tensor_flops == scores * 4 * 128 * 8);
    // A decode row's own score count: each sees all its keys.
    AttentionProblem decode = sequence_problem(r.problem, 1);
    CHECK(computed_scores(decode, rep.tiling.block_q, rep.tiling.block_kv) == 2000);
  }
}

TEST_CASE("ragged: each CTA emits its sequence's batch-1 operations on the sequence's matrices") {
  RunRequest r = ragged("flash2", {130, 1, 300}, {300, 700, 300}, 4, 64);
  r.problem.kv_heads = 2;
  r.problem.causal = true;
  const Algorithm& algo = builtin_registry().get("flash2");
  const Planned planned = plan_ragged(algo, r.problem, test::profile(), r.tiling);
  REQUIRE(planned.feasible());
  const KernelSpec k = planned.schedule->kernels().front();
  const std::int64_t tiles = ceil_div(300, planned.tiling.block_q);
  CHECK(k.grid.x == tiles);
  CHECK(k.grid.y == 3);
  CHECK(k.grid.z == 4);
  int empty = 0;
  for (std::int64_t cta = 0; cta < k.grid.count(); ++cta) {
    const std::int64_t qb = cta % tiles, b = (cta / tiles) % 3, h = cta / (tiles * 3);
    const AttentionProblem one = sequence_problem(r.problem, static_cast<std::size_t>(b));
    std::vector<TileOp> got, want;
    planned.schedule->emit_cta(0, cta, got);
    const std::int64_t own_tiles = ceil_div(one.seq, planned.tiling.block_q);
    if (qb >= own_tiles) {
      CHECK(got.empty());  // past the sequence's end
      ++empty;
      continue;
    }
    const Planned own = algo.plan(one, test::profile(), r.tiling);
    own.schedule->emit_cta(0, h * own_tiles + qb, want);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      const TileRef &g = got[i].tile, &w = want[i].tile;
      const bool kv = w.tensor == TensorId::K || w.tensor == TensorId::V;
      CAPTURE(cta);
      CAPTURE(i);
      CHECK(g.matrix == w.matrix + b * (kv ? 2 : 4));
      CHECK(g.row0 == w.row0);
      CHECK(g.rows == w.rows);
      CHECK(g.cols == w.cols);
      CHECK(got[i].tensor_flops == want[i].tensor_flops);
    }
  }
  CHECK(empty == (tiles - 2 + tiles - 1) * 4);  // 130 rows: 2 blocks; 1 row: 1 block
}

TEST_CASE("ragged: --execute matches the FP64 reference in every sequence") {
  for (const char* algo : {"flash2", "flash3"}) {
    RunRequest r = ragged(algo, {1, 37, 100}, {90, 60, 130}, 2, 32);
    r.problem.causal = true;
    r.problem.kv_heads = 1;
    r.tiling.block_q = 64;
    r.tiling.block_kv = 32;
    r.execute = true;
    r.engine.l2_enabled = false;
    CAPTURE(algo);
    const Report rep = simulate(test::profile(), r);
    REQUIRE(rep.feasible());
    REQUIRE(rep.numerics.max_abs_error.has_value());
    CHECK(*rep.numerics.max_abs_error <= 1e-5);
  }
}

TEST_CASE("ragged: what it does not model is refused with the flag named") {
  const auto refused = test::refusal;
  RunRequest bwd = ragged("flash2", {10, 20}, {10, 20}, 1, 64);
  bwd.problem.pass = Pass::fwdbwd;
  CHECK(refused(bwd).find("--seq-lens with --pass fwdbwd: a ragged batch is modelled for the "
                          "forward only") == 0);
  for (const char* algo : {"standard", "flash1", "flash-decoding", "paged"}) {
    CAPTURE(algo);
    CHECK(refused(ragged(algo, {10, 20}, {10, 20}, 1, 64))
              .find(fmt::format("--seq-lens: '{}' has no ragged (varlen) forward", algo)) == 0);
  }
  RunRequest lists = ragged("flash2", {10, 20}, {10, 20, 30}, 1, 64);
  CHECK(refused(lists).find("--seq-kv-lens gives 3 lengths and --seq-lens 2") == 0);
  RunRequest short_kv = ragged("flash2", {10, 20}, {10, 5}, 1, 64);
  short_kv.problem.causal = true;
  CHECK(refused(short_kv).find("sequence 1 of the ragged batch (--seq-lens 20, --seq-kv-lens "
                               "5): --causal needs") == 0);
  RunRequest pack = ragged("flash2", {1, 20}, {10, 20}, 4, 64);
  pack.problem.kv_heads = 2;
  pack.problem.pack_gqa = GqaPacking::on;
  CHECK(refused(pack).find("--pack-gqa on with --seq-lens: a ragged batch packs a K/V head's "
                           "query heads only where every sequence is one decode row") == 0);
  CHECK(refused(ragged("flash3", {10, 20}, {10, 20}, 1, 64)) == "accepted");
}

// iosim validate reads a measured case's problem.seq_lens / seq_kv_lens (the lead's FA2 varlen
// cases): a ragged copy of a measured causal flash2 case with equal lengths predicts the batched
// case's bytes, shorter sequences fewer, and lists that disagree with batch or seq are refused.
TEST_CASE("ragged: validate predicts a measured case with its problem.seq_lens") {
  nlohmann::json doc = test::measured_document();
  const nlohmann::json causal =
      test::measured_case(doc, "flash2_b4_h16_n4096_nkv4096_d64_bq128_bkv64_causal");
  REQUIRE(causal.is_object());
  doc["cases"] = nlohmann::json::array();
  for (int i = 0; i < 3; ++i) {
    nlohmann::json c = causal;
    c["id"] = fmt::format("r{}", i);
    if (i == 1) c["problem"]["seq_lens"] = {4096, 4096, 4096, 4096};
    if (i == 2) {
      c["problem"]["seq_lens"] = {4096, 1024, 1, 2048};
      c["problem"]["seq_kv_lens"] = {4096, 4096, 4096, 2048};
    }
    doc["cases"].push_back(c);
  }
  const ValidationResult v = validate_document(doc, "ragged_test", "h100-sxm5-80gb");
  REQUIRE(v.cases.size() == 3);
  for (const CaseResult& c : v.cases) REQUIRE(c.skipped_reason.empty());
  const int read = static_cast<int>(Metric::l2_read);
  const double batched = v.cases[0].metrics[read].predicted;
  CHECK(v.cases[1].metrics[read].predicted == doctest::Approx(batched).epsilon(1e-9));
  CHECK(v.cases[2].metrics[read].predicted < 0.6 * batched);
  nlohmann::json bad = causal;
  bad["problem"]["seq_lens"] = {4096, 100};
  doc["cases"] = nlohmann::json::array({bad});
  CHECK_THROWS_WITH_AS(validate_document(doc, "ragged_test", "h100-sxm5-80gb"),
                       doctest::Contains("a ragged batch ('seq_lens') needs 'batch' 2 (its count), "
                                         "'seq' 4096 and 'seq_kv' 4096"),
                       ConfigError);
}
