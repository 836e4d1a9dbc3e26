// Several kernels side by side (api/compare.hpp, `iosim run --algo A,B`): each column is the
// kernel's own single run, to the byte and the second, over random shapes and kernel sets; the
// writers' JSON and CSV carry each run's own document and row; mistakes name the kernel.
#include "api/compare.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/compare_writers.hpp"
#include "reports/writers.hpp"
#include "sim/base/errors.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

// The ConfigError message of `f()`, or "" when it does not throw one.
template <typename F>
std::string comparison_refusal(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A run's JSON without the one field that changes from run to run.
nlohmann::json json_without_wall_s(nlohmann::json j) {
  j.erase("simulation_wall_s");
  return j;
}

}  // namespace

TEST_CASE("each column of a comparison is that kernel's single run") {
  const HardwareProfile& gpu = test::profile();
  test::ShapeGen gen(51);
  const char* const algos[] = {"standard", "flash1", "flash2", "flash3"};
  for (int trial = 0; trial < 10; ++trial) {
    RunFlags shared;
    shared.batch = gen.pick(1, 3);
    shared.heads = gen.pick(1, 4);
    shared.seq = gen.pick(32, 768);
    shared.head_dim = gen.coin() ? 64 : 128;
    shared.causal = gen.coin();
    shared.l2 = gen.coin() ? "on" : "off";
    // Two or three distinct algorithms; in half the trials the last is the preset's description
    // (--kernel NAME), which runs as its algorithm does.
    std::vector<std::string> names(std::begin(algos), std::end(algos));
    std::shuffle(names.begin(), names.end(), gen.rng);
    names.resize(static_cast<std::size_t>(gen.pick(2, 3)));
    std::vector<ComparedKernel> kernels;
    for (const std::string& n : names) kernels.push_back({false, n});
    if (gen.coin()) kernels.back().description = true;
    CAPTURE(trial);
    CAPTURE(fmt::format("B={} H={} N={} d={} causal={} l2={} last is a description: {}",
                        shared.batch, shared.heads, shared.seq, shared.head_dim, shared.causal,
                        shared.l2, kernels.back().description));
    const std::vector<Report> reports = compare(gpu, compare_requests(gpu, shared, kernels));
    REQUIRE(reports.size() == kernels.size());
    const nlohmann::json doc = compare_to_json(reports);
    const std::string csv = compare_csv(reports);
    CHECK(doc["compare"]["baseline"] == names.front());
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      RunFlags one = shared;
      (kernels[i].description ? one.kernel : one.algorithm) = kernels[i].text;
      const Report single = simulate(gpu, to_request(one));
      CAPTURE(kernels[i].text);
      REQUIRE(reports[i].feasible() == single.feasible());
      if (!single.feasible()) continue;
      CHECK(reports[i].request.algorithm == kernels[i].text);
      CHECK(doc["compare"]["kernels"][i] == kernels[i].text);
      CHECK(test::identical(reports[i].engine.total, single.engine.total));
      CHECK(reports[i].engine.time_s == single.engine.time_s);
      for (TimeRow row : kAllTimeRows) {
        CHECK(reports[i].engine.time_attribution[row] == single.engine.time_attribution[row]);
      }
      CHECK(reports[i].bound == single.bound);
      CHECK(json_without_wall_s(doc["runs"][i]) == json_without_wall_s(report_to_json(single)));
      CHECK(csv.find(fmt::format("\n{}\n", csv_row(single))) != std::string::npos);
    }
  }
}

TEST_CASE("the comparison's rows: a ratio to the first where it means something") {
  const HardwareProfile& gpu = test::profile();
  RunFlags shared;
  shared.batch = 2;
  shared.heads = 4;
  shared.seq = 512;
  const std::vector<Report> reports =
      compare(gpu, compare_requests(gpu, shared, {{false, "flash1"}, {false, "flash2"}}));
  const std::vector<CompareRow> rows = compare_rows(reports);
  const auto row = [&](const std::string& label) {
    const auto it = std::find_if(rows.begin(), rows.end(),
                                 [&](const CompareRow& r) { return r.label == label; });
    REQUIRE(it != rows.end());
    return *it;
  };
  CHECK(row("total").values ==
        std::vector<double>{reports[0].engine.time_s, reports[1].engine.time_s});
  CHECK(row("total").ratio(1) ==
        fmt::format("{:.2f}x", reports[1].engine.time_s / reports[0].engine.time_s));
  CHECK(row("HBM read").values[1] == static_cast<double>(reports[1].engine.total.hbm.read_total()));
  CHECK(row("bound").values.empty());
  CHECK(row("bound").ratio(1) == "-");
  // A table has a column per kernel and one ratio column after the first.
  const std::string table = compare_table(reports);
  CHECK(table.find("flash1 / flash2") == std::string::npos);
  CHECK(table.find("flash2 / flash1") != std::string::npos);
}

TEST_CASE("a comparison's mistakes name the kernel, before any kernel runs") {
  const HardwareProfile& gpu = test::profile();
  RunFlags shared;
  shared.seq = 256;
  const auto refusal = [&](std::vector<ComparedKernel> kernels) {
    return comparison_refusal([&] { compare_requests(gpu, shared, kernels); });
  };
  CHECK(refusal({{false, "flash2"}, {false, "flash2"}}).find("'flash2' is compared twice") !=
        std::string::npos);
  // The preset's description is named as the algorithm is: one column each would be one name.
  CHECK(refusal({{false, "flash2"}, {true, "flash2"}}).find("compared twice") != std::string::npos);
  CHECK(refusal({{false, "flash2"}, {true, "no/such/kernel.yaml"}})
            .find("--kernel no/such/kernel.yaml: ") == 0);
  CHECK(refusal({{false, "flash2"}, {false, "nope"}}).find("--algo nope: unknown algorithm") == 0);
  CHECK(refusal({{false, "flash2"}, {true, ""}}).find("--kernel : an empty name") == 0);
  shared.pattern = "strided:2";
  CHECK(refusal({{false, "block-sparse"}, {false, "flash2"}}).find("--algo flash2: --pattern") ==
        0);
  CHECK(comparison_refusal([] {
          split_kernel_list("flash2,,flash3", false);
        }).find("an empty name in the list") != std::string::npos);
}

TEST_CASE("a kernel list splits at commas, an inline description never") {
  const std::vector<ComparedKernel> algos = split_kernel_list("flash2,flash3", false);
  REQUIRE(algos.size() == 2);
  CHECK((algos[0].text == "flash2" && algos[1].text == "flash3" && !algos[1].description));
  const std::string inline_kernel =
      R"({"name": "tp", "dataflow": {"forward": "query_stationary"}})";
  const std::vector<ComparedKernel> one = split_kernel_list(inline_kernel, true);
  REQUIRE(one.size() == 1);
  CHECK((one[0].text == inline_kernel && one[0].description));
  CHECK(split_kernel_list("flash2,my.yaml", true).size() == 2);
  // One value without a comma is one kernel, even empty: its single run refuses it as before.
  CHECK(split_kernel_list("", false).size() == 1);
}
