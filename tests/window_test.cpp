// Token-exact sliding windows (--window): which keys a row sees, the two-level counts against the
// closed form and against block counts made here from score_visible() alone, the lower bound, a
// window that hides nothing, exact numerics against the FP64 reference, and the refusals.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "api/validation.hpp"
#include "sim/base/errors.hpp"
#include "tests/test_support.hpp"

using namespace iosim;
using iosim::test::hbm_total;

namespace {

Report window_two_level(RunRequest r) {
  r.engine.l2_enabled = false;
  return simulate(test::profile(), r);
}

RunRequest windowed(const std::string& algo, std::int64_t n, std::int64_t d, std::int64_t window,
                    bool causal, std::int64_t block_q = 0, std::int64_t block_kv = 0) {
  RunRequest r = test::request(algo, 1, 1, n, d, block_q, block_kv);
  r.problem.window = window;
  r.problem.causal = causal;
  return r;
}

// What a dense forward over blocks block_q x block_kv computes, from score_visible() alone: the
// tiles holding a visible score (each computed whole), their scores, and the key rows some row
// sees.
struct VisitedTiles {
  std::uint64_t scores = 0;   // sum of the visited tiles' areas
  std::uint64_t kv_rows = 0;  // keys visible to some row
};
VisitedTiles visited_tiles(const AttentionProblem& p, std::int64_t block_q, std::int64_t block_kv) {
  VisitedTiles v;
  std::vector<bool> key_seen(static_cast<std::size_t>(p.seq_kv), false);
  for (std::int64_t q0 = 0; q0 < p.seq; q0 += block_q) {
    const std::int64_t qr = std::min(block_q, p.seq - q0);
    for (std::int64_t k0 = 0; k0 < p.seq_kv; k0 += block_kv) {
      const std::int64_t kr = std::min(block_kv, p.seq_kv - k0);
      bool any = false;
      for (std::int64_t i = q0; i < q0 + qr; ++i)
        for (std::int64_t j = k0; j < k0 + kr; ++j) {
          // The causal mask and the window, not the index mask (which hides scores inside tiles).
          AttentionProblem unmasked = p;
          unmasked.mask = false;
          if (!score_visible(unmasked, i, j)) continue;
          any = true;
          key_seen[static_cast<std::size_t>(j)] = true;
        }
      if (any) v.scores += static_cast<std::uint64_t>(qr * kr);
    }
  }
  for (bool seen : key_seen) v.kv_rows += seen ? 1 : 0;
  return v;
}

}  // namespace

TEST_CASE("window: a row sees the W keys up to its own (causal) or within W of it (a band)") {
  AttentionProblem p;
  p.seq = p.seq_kv = 20;
  p.window = 4;
  p.causal = true;
  for (std::int64_t i = 0; i < p.seq; ++i)
    for (std::int64_t j = 0; j < p.seq_kv; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(score_visible(p, i, j) == (i - 4 < j && j <= i));  // Mistral's i - W < j <= i
    }
  p.causal = false;
  for (std::int64_t i = 0; i < p.seq; ++i)
    for (std::int64_t j = 0; j < p.seq_kv; ++j)
      CHECK(score_visible(p, i, j) == (std::abs(j - i) < 4));
  // Bottom-right aligned, as the causal mask: with N_kv = N + 8 row i's own key is i + 8.
  p.seq_kv = 28;
  p.causal = true;
  CHECK(visible_keys(p, 0).first == 5);
  CHECK(visible_keys(p, 0).last == 8);
  CHECK(visible_keys(p, 19).last == 27);
}

TEST_CASE("window: two-level bytes equal the closed form, FLOPs the visited tiles, over shapes" *
          doctest::test_suite("long")) {
  test::ShapeGen gen(20261207);
  const char* algos[] = {"flash2", "flash3"};
  const std::int64_t dims[] = {16, 32, 64, 128};
  const std::int64_t blocks[] = {0, 16, 32, 64, 128};
  const Pass passes[] = {Pass::fwd, Pass::fwd, Pass::bwd, Pass::fwdbwd};
  int checked = 0;
  for (int i = 0; i < test::cases(120); ++i) {
    const std::string algo = gen.pick(algos);
    // flash3's consumer warpgroups take 64 query rows each.
    const std::int64_t wgmma_rows[] = {0, 64, 128};
    RunRequest r =
        test::request(algo, gen.pick(1, 2), gen.pick(1, 3), gen.pick(1, 600), gen.pick(dims),
                      algo == "flash3" ? gen.pick(wgmma_rows) : gen.pick(blocks), gen.pick(blocks));
    AttentionProblem& p = r.problem;
    p.causal = gen.coin();
    p.seq_kv = gen.coin() ? p.seq : p.seq + gen.pick(0, 400);
    p.window = gen.pick(1, 3) == 1 ? gen.pick(1, 16) : gen.pick(1, p.seq_kv + 64);
    p.mask = gen.pick(0, 3) == 0;
    p.pass = gen.pick(passes);
    // flash3's backward adds grouped-query heads' dK and dV into fp32 accumulators.
    if (algo == "flash3" && p.heads > 1 && gen.coin()) p.kv_heads = 1;
    CAPTURE(algo);
    CAPTURE(p.seq);
    CAPTURE(p.seq_kv);
    CAPTURE(p.head_dim);
    CAPTURE(p.window);
    CAPTURE(p.causal);
    CAPTURE(pass_name(p.pass));
    CAPTURE(p.kv_heads);
    const Report rep = window_two_level(r);
    if (!rep.feasible()) continue;
    test::require_closed_form(r, rep);
    REQUIRE(hbm_total(rep) >= rep.bounds.lower_bound_bytes);
    REQUIRE(hbm_total(rep) >= rep.bounds.compulsory_bytes);
    if (p.pass != Pass::fwd) {
      ++checked;
      continue;
    }
    // Each visited tile costs its Q K^T and P V products whole (4 d FLOPs a score), masked
    // edge tiles included; Q, K and V are read, O written at least once, K/V only where seen.
    const VisitedTiles v = visited_tiles(p, rep.tiling.block_q, rep.tiling.block_kv);
    const auto bh = static_cast<std::uint64_t>(p.bh()), d = static_cast<std::uint64_t>(p.head_dim);
    const auto eb = static_cast<std::uint64_t>(p.elem_bytes());
    CHECK(rep.engine.total.tensor_flops == 4 * d * v.scores * bh);
    const auto bh_kv = static_cast<std::uint64_t>(p.bh_kv());
    CHECK(rep.bounds.compulsory_bytes ==
          eb * d * (bh * 2 * static_cast<std::uint64_t>(p.seq) + bh_kv * 2 * v.kv_rows));
    ++checked;
  }
  CHECK(checked > (test::kSanitized ? 0 : 80));  // the sanitized run draws a tenth of the shapes
}

TEST_CASE("golden: flash2 causal window 128, N=512, d=64, 128x128 blocks") {
  const Report r = window_two_level(windowed("flash2", 512, 64, 128, true, 128, 128));
  REQUIRE(r.feasible());
  // Query block i sees keys 128 i - 127 .. 128 i + 127: blocks i - 1 and i (block 0 alone), 7
  // K/V block pairs against causal's 1 + 2 + 3 + 4 = 10.
  CHECK(r.engine.total.hbm.read_total() == 512 * 64 * 2 + 7 * 2 * 128 * 64 * 2);
  CHECK(r.engine.total.hbm.write_total() == 512 * 64 * 2 + 512 * 4);
  CHECK(r.engine.total.tensor_flops == 4ull * 64 * 128 * 128 * 7);
  CHECK(r.bounds.lower_bound_formula == "s*N*N_kv*d^2/M");
}

TEST_CASE("golden: flash2 band window 100 (no causal mask), N=256, d=64, 64x64 blocks") {
  const Report r = window_two_level(windowed("flash2", 256, 64, 100, false, 64, 64));
  REQUIRE(r.feasible());
  // Query block i sees keys 64 i - 99 .. 64 i + 162: 3, 4, 4 and 3 key blocks.
  CHECK(r.engine.total.hbm.read_total() == 256 * 64 * 2 + 14 * 2 * 64 * 64 * 2);
  CHECK(r.engine.total.tensor_flops == 4ull * 64 * 64 * 64 * 14);
}

TEST_CASE("window: N_kv keys or more with --causal hides nothing: the causal run's counts") {
  for (const char* algo : {"flash2", "flash3"}) {
    for (std::int64_t window : {300, 301, 5000}) {
      RunRequest r = windowed(algo, 300, 64, window, true);
      r.problem.pass = std::string(algo) == "flash2" ? Pass::fwdbwd : Pass::fwd;
      r.problem.batch = 2;
      r.problem.heads = 3;
      RunRequest causal = r;
      causal.problem.window = 0;
      const Report a = simulate(test::profile(), r), b = simulate(test::profile(), causal);
      CAPTURE(algo);
      CAPTURE(window);
      REQUIRE(a.feasible());
      CHECK(test::identical(a.engine.total, b.engine.total));
      CHECK(a.bounds.closed_form_bytes == b.bounds.closed_form_bytes);
      CHECK(a.bounds.compulsory_bytes == b.bounds.compulsory_bytes);
    }
  }
}

TEST_CASE("window: --execute matches the FP64 reference with the window applied" *
          doctest::test_suite("long")) {
  test::ShapeGen gen(52);
  const std::int64_t blocks[] = {16, 32, 64};
  const char* algos[] = {"flash2", "flash3"};
  std::vector<RunRequest> runs;
  for (int i = 0; i < test::cases(12); ++i) {
    const std::string algo = gen.pick(algos);
    RunRequest r = windowed(algo, gen.pick(1, 160), 32, gen.pick(1, 80), gen.coin(),
                            algo == "flash3" ? 64 : gen.pick(blocks), gen.pick(blocks));
    r.problem.seq_kv = r.problem.seq + (gen.coin() ? 0 : gen.pick(0, 100));
    r.problem.mask = gen.pick(0, 2) == 0;
    r.problem.pass = gen.coin() ? Pass::fwd : Pass::fwdbwd;
    if (!r.problem.causal) r.problem.window += r.problem.seq;  // every row sees a key
    runs.push_back(r);
  }
  // Windows that start past the first key block of most query blocks, over a longer context
  // (key blocks no query meets), causal and a band: each CTA must start at its own first block.
  for (bool causal : {true, false}) {
    RunRequest r = windowed("flash2", 160, 32, 24, causal, 32, 16);
    r.problem.seq_kv = 230;
    r.problem.pass = Pass::fwdbwd;
    runs.push_back(r);
    r = windowed("flash3", 192, 32, 40, causal, 64, 32);
    r.problem.seq_kv = 256;
    r.problem.pass = Pass::fwdbwd;
    runs.push_back(r);
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    RunRequest& r = runs[i];
    const std::string& algo = r.algorithm;
    r.execute = true;
    r.engine.l2_enabled = false;
    r.seed = static_cast<std::uint64_t>(i) + 1;
    CAPTURE(algo);
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    CAPTURE(r.problem.window);
    CAPTURE(r.problem.causal);
    const Report rep = simulate(test::profile(), r);
    REQUIRE(rep.feasible());
    REQUIRE(rep.numerics.max_abs_error.has_value());
    CHECK(*rep.numerics.max_abs_error <= 1e-5);
  }
}

TEST_CASE("window: bad combinations are refused with the flag named") {
  const auto refused = test::refusal;
  CHECK(refused(windowed("standard", 64, 32, 8, true)) ==
        "--window applies to --algo flash2 and flash3, not 'standard'");
  RunRequest sparse = windowed("block-sparse", 64, 32, 8, true);
  CHECK(refused(sparse).find("--window applies to --algo flash2 and flash3") == 0);
  // A description whose backward (two_pass) does not skip by position.
  KernelDescription two_pass;
  two_pass.name = "tp";
  two_pass.source = "test";
  two_pass.forward = "query_stationary";
  two_pass.backward = "two_pass";
  RunRequest bwd = windowed("flash2", 128, 64, 8, true);
  bwd.kernel = std::make_shared<const KernelDescription>(two_pass);
  bwd.algorithm = two_pass.name;
  bwd.problem.pass = Pass::bwd;
  CHECK(refused(bwd).find("--window with --pass bwd: tp's backward does not model a sliding "
                          "window (with one: flash2, flash3)") == 0);
  RunRequest narrow = windowed("flash2", 100, 32, 30, false);
  narrow.problem.seq_kv = 70;  // row 0's own key is -30: a band of 30 holds no key
  CHECK(refused(narrow).find("--window 30 without --causal") == 0);
  narrow.problem.window = 31;
  CHECK(refused(narrow) == "accepted");
  RunRequest packed = windowed("flash2", 1, 64, 8, false);
  packed.problem.seq_kv = 64;
  packed.problem.heads = 4;
  packed.problem.kv_heads = 1;
  packed.problem.pack_gqa = GqaPacking::on;
  CHECK(refused(packed).find("--pack-gqa on cannot pack with --window") == 0);
}

// iosim validate reads a measured case's problem.window (cuda_validate's window=W cases, issue #52
// item 3): the windowed copy of a measured causal flash2 case is predicted with the window (fewer
// L2 -> SM bytes than the causal case: its K/V blocks; DRAM reads stay the compulsory bytes here),
// and a window of N_kv keys predicts the causal case's bytes.
TEST_CASE("window: validate predicts a measured case with its problem.window") {
  nlohmann::json doc = test::measured_document();
  const nlohmann::json causal =
      test::measured_case(doc, "flash2_b4_h16_n4096_nkv4096_d64_bq128_bkv64_causal");
  REQUIRE(causal.is_object());
  doc["cases"] = nlohmann::json::array();
  for (const std::int64_t window : {0, 512, 4096}) {
    nlohmann::json c = causal;
    c["id"] = fmt::format("w{}", window);  // "w" + std::to_string: GCC 12's -Wrestrict misfires
    if (window > 0) c["problem"]["window"] = window;
    doc["cases"].push_back(c);
  }
  const ValidationResult v = validate_document(doc, "window_test", "h100-sxm5-80gb");
  REQUIRE(v.cases.size() == 3);
  for (const CaseResult& c : v.cases) REQUIRE(c.skipped_reason.empty());
  const int read = static_cast<int>(Metric::l2_read);
  const double none = v.cases[0].metrics[read].predicted;
  // A 128-row block reads 10-11 K/V blocks of 64 under the window, 32.5 on average without.
  CHECK(v.cases[1].metrics[read].predicted < 0.35 * none);
  CHECK(v.cases[2].metrics[read].predicted == doctest::Approx(none).epsilon(1e-12));
}
