// Where the time goes (sim/engine/time_attribution.hpp): over random shapes, algorithms and
// passes, every kernel's rows are non-negative and sum to its time, the run's to the run's time,
// and the bound is the largest row's class; a memory-bound decode is charged mostly to HBM, a large
// flash2 prefill mostly to the tensor pipe.
#include "sim/engine/time_attribution.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>

#include "sim/schedule/block_mask.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

// Each row >= 0 and the rows' sum within 1e-9 of `time_s`.
void require_sums(const TimeAttribution& a, double time_s) {
  for (TimeRow row : kAllTimeRows) {
    CAPTURE(time_row_key(row));
    CHECK(a[row] >= 0.0);
  }
  CHECK(std::abs(a.total() - time_s) <= 1e-9 * time_s);
}

}  // namespace

TEST_CASE("time attribution: rows sum to each kernel's time and the run's, the bound follows" *
          doctest::test_suite("long")) {
  test::ShapeGen gen(51);
  const char* algos[] = {"standard",     "flash1",         "flash2", "flash3",
                         "block-sparse", "flash-decoding", "paged"};
  const Pass passes[] = {Pass::fwd, Pass::bwd, Pass::fwdbwd};
  int extrapolated = 0, runs = 0;
  for (int i = 0; i < test::cases(36); ++i) {
    const std::string algo = algos[i % 7];
    const bool decode = algo == "flash-decoding" || algo == "paged";
    RunRequest r =
        test::request(algo, gen.pick(1, 4), gen.pick(1, 4) * 4,
                      decode ? gen.pick(1, 4) : 128 * gen.pick(1, 16), gen.pick(0, 1) ? 64 : 128);
    if (decode) {
      r.problem.seq_kv = 1024 * gen.pick(1, 8);
      r.problem.kv_heads = r.problem.heads / 4;
    } else {
      r.problem.pass = gen.pick(passes);
      r.problem.causal = gen.coin();
    }
    if (algo == "block-sparse") {
      r.problem.pattern = std::make_shared<const BlockPattern>(parse_block_pattern("local:2"));
    }
    r.engine.l2_enabled = i % 5 != 0;
    r.engine.exact = i % 4 == 0;
    // Some runs leave repeated work out however small (steady-state extrapolation).
    if (i % 3 == 1) r.extrapolate_above_work = 0;
    const char* profiles[] = {"h100-sxm5-80gb", "a100-sxm4-80gb", "h200-sxm-141gb"};
    const HardwareProfile& hw =
        test::profile(algo == "flash3" ? "h100-sxm5-80gb" : gen.pick(profiles));
    CAPTURE(algo);
    CAPTURE(hw.name);
    CAPTURE(pass_name(r.problem.pass));
    CAPTURE(r.problem.batch);
    CAPTURE(r.problem.heads);
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    CAPTURE(r.problem.head_dim);
    CAPTURE(r.engine.l2_enabled);
    const Report rep = simulate(hw, r);
    if (!rep.feasible()) continue;
    ++runs;
    if (rep.engine.extrapolation.applied()) ++extrapolated;
    for (const KernelResult& k : rep.engine.kernels) {
      CAPTURE(k.spec.name);
      require_sums(k.time_attribution, k.time_s);
      CHECK(k.bound == bound_of(k.time_attribution.largest()));
      CHECK(k.time_attribution[TimeRow::launch] >= k.launch_s);
    }
    require_sums(rep.engine.time_attribution, rep.engine.time_s);
    CHECK(rep.bound == bound_of(rep.engine.time_attribution.largest()));
  }
  CHECK(runs >= (test::kSanitized ? 1 : 30));  // the sanitized run draws a tenth of the shapes
  // Time left out as repetition is charged too (as the time simulated before it was).
  for (const bool l2 : {false, true}) {
    RunRequest r = test::request("flash2", 2, 4, 16384, 64);
    r.engine.l2_enabled = l2;
    r.extrapolate_above_work = 0;
    const Report rep = simulate(test::profile(), r);
    CAPTURE(l2);
    if (rep.engine.extrapolation.applied()) ++extrapolated;
    for (const KernelResult& k : rep.engine.kernels) require_sums(k.time_attribution, k.time_s);
    require_sums(rep.engine.time_attribution, rep.engine.time_s);
  }
  CHECK(extrapolated >= 1);
}

TEST_CASE(
    "time attribution: a decode that streams the KV cache is HBM's, a prefill the tensor "
    "pipe's") {
  // Every SM holds CTAs of a decode step over an 8K-token cache: HBM delivers each K/V block
  // after the SM has computed the last one.
  RunRequest decode = test::request("flash2", 64, 32, 1, 128);
  decode.problem.seq_kv = 8192;
  decode.problem.kv_heads = 8;
  const Report d = simulate(test::profile(), decode);
  REQUIRE(d.feasible());
  const TimeAttribution& da = d.engine.time_attribution;
  CHECK(da.largest() == TimeRow::hbm);
  CHECK(da[TimeRow::hbm] > 0.6 * d.engine.time_s);
  CHECK(d.bound == "memory");
  // The README's run: 4096 CTAs of mma.sync, 34% of the wgmma peak, but the tensor pipe at
  // mma.sync's rate is what the SMs wait on most.
  const Report p = simulate(test::profile(), test::request("flash2", 4, 16, 8192, 64));
  REQUIRE(p.feasible());
  const TimeAttribution& pa = p.engine.time_attribution;
  CHECK(pa.largest() == TimeRow::tensor);
  CHECK(pa[TimeRow::tensor] > 0.4 * p.engine.time_s);
  CHECK(pa[TimeRow::hbm] < 0.01 * p.engine.time_s);
  CHECK(p.bound == "compute");
}
