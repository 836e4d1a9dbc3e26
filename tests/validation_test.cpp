// The committed measurements keep the model honest: `iosim validate` over reports/validation/
// must stay at or under the accuracy levels recorded next to the data. Our own kernels
// (measurements*.json) and PyTorch's (pytorch_sdpa_*.json) have levels of their own.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "reports/validation.hpp"

using namespace iosim;

namespace {

const std::string kDir = std::string(IOSIM_REPO_DIR) + "/reports/validation";

void check_levels(const ValidationResult& v, const std::string& levels_file) {
  std::ifstream in(kDir + "/" + levels_file);
  REQUIRE_MESSAGE(in.good(), "cannot read " << levels_file);
  const nlohmann::json levels = nlohmann::json::parse(in).at("schedules");
  REQUIRE(!v.summaries.empty());
  for (const Summary& s : v.summaries) {
    CAPTURE(levels_file);
    CAPTURE(s.schedule);
    REQUIRE_MESSAGE(levels.contains(s.schedule),
                    "no recorded level for schedule " << s.schedule << ": add it");
    const nlohmann::json& level = levels.at(s.schedule);
    CHECK(s.cases >= level.at("cases").get<int>());  // cases are added, never silently dropped
    for (int i = 0; i < 5; ++i) {
      const char* metric = metric_name(kMetrics[i]);
      CAPTURE(metric);
      const nlohmann::json& m = level.at(metric);
      if (m.at("median").is_null()) continue;
      REQUIRE(s.median_abs_error[i].has_value());
      CHECK(*s.median_abs_error[i] <= m.at("median").get<double>() + 1e-9);
      CHECK(*s.worst_abs_error[i] <= m.at("worst").get<double>() + 1e-9);
    }
  }
}

}  // namespace

TEST_CASE("validation accuracy of our kernels does not fall below the recorded levels") {
  check_levels(validate_measurements(kDir), "accuracy_levels.json");
}

TEST_CASE("validation accuracy on PyTorch's kernels does not fall below the recorded levels") {
  check_levels(validate_measurements(kDir + "/h200-sxm-141gb/pytorch_sdpa_2026-11-22.json"),
               "accuracy_levels_pytorch.json");
}
