// Tuning (api/tune.hpp): the default space of each kind of algorithm, the ranking (sorted, every
// point's time simulate()'s with its tiles, infeasible points with reasons, the algorithm's own
// tiling placed), the space's checks.
#include "api/tune.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/base/memory_budget.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

RunRequest tune_request(const std::string& algo, std::int64_t seq, std::int64_t head_dim) {
  RunRequest r;
  r.algorithm = algo;
  r.problem.batch = 1;
  r.problem.heads = 2;
  r.problem.seq = seq;
  r.problem.head_dim = head_dim;
  return r;
}

// The ConfigError message of check_tune_space(`s`), or "" when it accepts it.
std::string tune_space_error(const TuneSpace& s) {
  try {
    check_tune_space(s);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("tune: the default space follows the algorithm's capabilities and the problem") {
  const HardwareProfile& hw = test::profile("h100-sxm5-80gb");
  const TuneSpace flash2 = default_tune_space(hw, tune_request("flash2", 4096, 64));
  CHECK(flash2.block_q == std::vector<std::int64_t>{64, 128, 192, 256});
  CHECK(flash2.block_kv == std::vector<std::int64_t>{32, 64, 128, 256});
  CHECK(flash2.stages == std::vector<int>{2, 3, 4});
  CHECK(flash2.threads == std::vector<int>{128, 256});
  // Warp-specialized: the CTA's threads follow block_q (the algorithm's rule, 0 in the list).
  CHECK(default_tune_space(hw, tune_request("flash3", 4096, 64)).threads == std::vector<int>{0});
  // FlashAttention-1's stages count Q/O tiles in flight (its default: 1).
  CHECK(default_tune_space(hw, tune_request("flash1", 4096, 64)).stages ==
        std::vector<int>{1, 2, 3});
  // Short sequences: no tile past the first that covers them.
  const TuneSpace short_seq = default_tune_space(hw, tune_request("flash2", 100, 64));
  CHECK(short_seq.block_q == std::vector<std::int64_t>{64, 128});
  CHECK(short_seq.block_kv == std::vector<std::int64_t>{32, 64, 128});
  // Decoding with a packed query group: its rows are the group's (4 here), one tile of 64.
  RunRequest decode = tune_request("flash-decoding", 1, 128);
  decode.problem.heads = 8;
  decode.problem.kv_heads = 2;
  decode.problem.seq_kv = 4096;
  CHECK(default_tune_space(hw, decode).block_q == std::vector<std::int64_t>{64});
  CHECK_THROWS_AS(default_tune_space(hw, tune_request("flsh2", 128, 64)), ConfigError);
}

TEST_CASE("tune: feasible points ranked by simulate()'s time, infeasible ones with reasons") {
  const HardwareProfile& hw = test::profile("h100-sxm5-80gb");
  const RunRequest base = tune_request("flash2", 512, 128);
  TuneSpace space;
  space.block_q = {64, 128};
  space.block_kv = {64, 512};  // 512 x 128 K/V stages do not fit in shared memory
  space.stages = {2, 0};       // 0: the algorithm's own
  space.threads = {128};
  TuneOptions options;
  options.jobs = 2;
  const TuneResult t = tune(hw, base, space, options);
  CHECK(t.points == 8);
  REQUIRE(t.ranked.size() + t.infeasible.size() == t.points);
  REQUIRE(!t.ranked.empty());
  REQUIRE(!t.infeasible.empty());
  for (const TunePoint& p : t.infeasible) CHECK(!p.report.infeasible_reason.empty());
  for (std::size_t i = 1; i < t.ranked.size(); ++i) {
    CHECK(t.ranked[i - 1].report.engine.time_s <= t.ranked[i].report.engine.time_s);
  }
  CHECK(t.ties_best(t.best_time_s()));
  CHECK_FALSE(t.ties_best(t.best_time_s() * (1.001 + options.tie_band)));
  // Each point is simulate() of the base request with its tiles.
  for (const TunePoint& p : {t.ranked.front(), t.ranked.back()}) {
    RunRequest r = base;
    r.tiling = p.report.request.tiling;
    CHECK(simulate(hw, r).engine.time_s == p.report.engine.time_s);
  }
  // The algorithm's own tiling (128 x 64 at d 128, 2 stages, 128 threads) is in the space.
  REQUIRE(t.algorithm_default.feasible());
  REQUIRE(t.default_rank.has_value());
  CHECK(t.ranked[*t.default_rank - 1].report.engine.time_s == t.algorithm_default.engine.time_s);
}

TEST_CASE("tune: the space's checks name the flag") {
  TuneSpace s{{64}, {64}, {2}, {128}};
  CHECK(tune_space_error(s).empty());
  s.block_kv = {};
  CHECK(tune_space_error(s) == "--block-kv has no values");
  s.block_kv = {-64};
  CHECK(tune_space_error(s).find("--block-kv -64 is out of range") == 0);
  s.block_kv = {64};
  s.threads = {128, 2048};
  CHECK(tune_space_error(s).find("--threads 2048 is out of range") == 0);
  // Not whole warps: refused once, as run refuses it (every tiling of the space was listed
  // infeasible with these words, then "no tiling of the space is feasible").
  s.threads = {128, 1};
  CHECK(tune_space_error(s) == "--threads 1: a CTA runs whole warps of 32 threads; use 32");
  s.threads = {100};
  CHECK(tune_space_error(s) ==
        "--threads 100: a CTA runs whole warps of 32 threads; use 96 or 128");
  s.threads = {0};
  s.stages = {65};
  CHECK(tune_space_error(s).find("--stages 65 is out of range") == 0);
  TuneOptions options;
  options.tie_band = -0.5;
  CHECK_THROWS_AS(tune(test::profile("h100-sxm5-80gb"), tune_request("flash2", 128, 64),
                       TuneSpace{{64}, {64}, {2}, {128}}, options),
                  ConfigError);
}

TEST_CASE("tune: a memory budget the L2 model cannot fit is refused as run refuses it") {
  // Issue #50's fourth probe: `tune --max-memory 1` listed every tiling as infeasible and blamed
  // the space; the budget is the host's and the L2 model's size the profile's.
  struct DefaultBudgetAfter {
    ~DefaultBudgetAfter() { memory_budget::set_bytes(0, ""); }
  } restore;
  memory_budget::set_bytes(1, "--max-memory");
  const HardwareProfile hw = test::profile("h100-sxm5-80gb");
  const TuneSpace space{{64, 128}, {64}, {2}, {128}};
  try {
    tune(hw, tune_request("flash2", 256, 64), space, TuneOptions{});
    FAIL("a 1-byte budget was accepted");
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    CHECK(m.find("the L2 model of h100-sxm5-80gb") == 0);
    CHECK(m.find("--max-memory") != std::string::npos);
  }
  // Without the L2 model there is nothing to refuse: the tilings run.
  RunRequest off = tune_request("flash2", 256, 64);
  off.engine.l2_enabled = false;
  CHECK(tune(hw, off, space, TuneOptions{}).ranked.size() == 2);
}
