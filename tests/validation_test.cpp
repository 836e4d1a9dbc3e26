// The committed measurements keep the model honest: `iosim validate` over reports/validation/
// must stay at or under the accuracy levels recorded in reports/validation/accuracy_levels.json.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "reports/validation.hpp"

using namespace iosim;

TEST_CASE("validation accuracy does not fall below the recorded levels") {
  const std::string dir = std::string(IOSIM_REPO_DIR) + "/reports/validation";
  std::ifstream in(dir + "/accuracy_levels.json");
  REQUIRE(in.good());
  const nlohmann::json levels = nlohmann::json::parse(in).at("schedules");
  const ValidationResult v = validate_measurements(dir);
  REQUIRE(!v.summaries.empty());
  for (const Summary& s : v.summaries) {
    CAPTURE(s.schedule);
    REQUIRE_MESSAGE(levels.contains(s.schedule),
                    "no recorded level for schedule " << s.schedule << ": add it");
    const nlohmann::json& level = levels.at(s.schedule);
    CHECK(s.cases >= level.at("cases").get<int>());  // cases are added, never silently dropped
    for (int i = 0; i < 5; ++i) {
      const char* metric = metric_name(kMetrics[i]);
      CAPTURE(metric);
      const nlohmann::json& m = level.at(metric);
      if (!m.at("median").is_null()) {
        REQUIRE(s.median_abs_error[i].has_value());
        CHECK(*s.median_abs_error[i] <= m.at("median").get<double>() + 1e-9);
        CHECK(*s.worst_abs_error[i] <= m.at("worst").get<double>() + 1e-9);
      }
    }
  }
}
