// The C++ API's defaults are its own, not the CLI's (#28): a caller who sets only seq gets
// N_kv = N from simulate(), the sweep, validate_problem() and an ncu case, as `iosim run --seq N`
// does, not the N_kv = 1 a default of AttentionProblem's once gave.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "api/ncu_import.hpp"
#include "api/sweep.hpp"
#include "reports/writers.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

// A report's JSON without iosim's own run time, the one field two runs of a request differ in.
nlohmann::json report_json_but_wall_time(const Report& r) {
  nlohmann::json j = report_to_json(r);
  j.erase("simulation_wall_s");
  return j;
}

}  // namespace

TEST_CASE("a problem that sets only seq has N_kv = N: simulate, sweep, validate_problem, ncu") {
  RunRequest only_seq;
  only_seq.problem.batch = 2;
  only_seq.problem.heads = 4;
  only_seq.problem.seq = 1024;
  only_seq.problem.causal = true;  // refused at N_kv < N
  RunRequest both = only_seq;
  both.problem.seq_kv = 1024;
  CHECK_NOTHROW(validate_problem(only_seq.problem));
  const Report alone = simulate(test::profile(), only_seq);
  REQUIRE(alone.feasible());
  CHECK(alone.request.problem.seq_kv == 1024);
  CHECK(report_json_but_wall_time(alone) ==
        report_json_but_wall_time(simulate(test::profile(), both)));

  // A sweep's point runs as simulate() runs it; a rejected point's row states N_kv too.
  std::vector<SweepPoint> points = {{0, "h100", only_seq}, {1, "h100", only_seq}};
  points[1].request.problem.head_dim = 4096;  // past the limit: an "invalid input" row
  const std::map<std::string, HardwareProfile> profiles = {{"h100", test::profile()}};
  const std::vector<Report> rows = run_sweep(points, profiles, {1, {}});
  CHECK(report_json_but_wall_time(rows[0]) == report_json_but_wall_time(alone));
  CHECK(rows[1].infeasible_reason.rfind("invalid input: ", 0) == 0);
  CHECK(rows[1].request.problem.seq_kv == 1024);

  // An ncu case states the N_kv it was measured at.
  NcuKernel measured{"flash_fwd", "NVIDIA H100 80GB HBM3", {}};
  for (const std::string& m : ncu_required_metrics()) measured.metrics[m] = 1.0;
  const nlohmann::json doc =
      ncu_case_document({measured}, kernel_preset("flash2"), only_seq.problem, 1e-3, "test");
  CHECK(doc["cases"][0]["problem"]["seq_kv"] == 1024);
}
