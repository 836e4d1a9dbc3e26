// The committed measurements keep the model honest: `iosim validate` over measurements/
// must stay at or under the accuracy levels recorded next to the data, per device folder. Our own
// kernels (measurements*.json), PyTorch's (pytorch_sdpa_*.json) and cuDNN's Hopper kernels
// (cudnn_*/cudnn_sdpa_*.json, forward and forward+backward) have levels of their own, a schedule's
// runs with a backward apart from its forwards ("flash3 fwdbwd");
// scripts/accuracy_levels.py writes them (tightening freely, loosening only when told why).
#include "validation/validation.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace iosim;

namespace {

namespace fs = std::filesystem;

const std::string kDir = std::string(IOSIM_REPO_DIR) + "/measurements";

nlohmann::json read_levels(const std::string& levels_file) {
  std::ifstream in(kDir + "/" + levels_file);
  REQUIRE_MESSAGE(in.good(), "cannot read " << levels_file);
  return nlohmann::json::parse(in).at("devices");
}

void check_levels(const ValidationResult& v, const nlohmann::json& levels) {
  REQUIRE(!v.summaries.empty());
  for (const Summary& s : v.summaries) {
    CAPTURE(s.schedule);
    REQUIRE_MESSAGE(levels.contains(s.schedule),
                    "no recorded level for schedule " << s.schedule << ": add it");
    const nlohmann::json& level = levels.at(s.schedule);
    CHECK(s.cases >= level.at("cases").get<int>());  // cases are added, never silently dropped
    for (int i = 0; i < kMetricCount; ++i) {
      const std::string metric = metric_name(kMetrics[i]);
      CAPTURE(metric);
      const nlohmann::json& m = level.at(metric);
      if (m.at("median").is_null()) continue;
      REQUIRE(s.median_abs_error[i].has_value());
      CHECK(*s.median_abs_error[i] <= m.at("median").get<double>() + 1e-9);
      CHECK(*s.worst_abs_error[i] <= m.at("worst").get<double>() + 1e-9);
    }
  }
}

// Device folders (one per GPU the data was measured on) that hold files matching `prefix`.
std::vector<std::string> device_folders(const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& d : fs::directory_iterator(kDir)) {
    if (!d.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(d.path())) {
      if (f.path().filename().string().rfind(prefix, 0) == 0) {
        out.push_back(d.path().filename().string());
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("validation accuracy of our kernels does not fall below the recorded levels") {
  const nlohmann::json levels = read_levels("accuracy_levels.json");
  const std::vector<std::string> devices = device_folders("measurements");
  REQUIRE(devices.size() >= 2);  // H100 and H200
  for (const std::string& device : devices) {
    CAPTURE(device);
    REQUIRE_MESSAGE(levels.contains(device), "no recorded levels for " << device);
    check_levels(validate_measurements(kDir + "/" + device), levels.at(device).at("schedules"));
  }
}

TEST_CASE("validation accuracy on PyTorch's kernels does not fall below the recorded levels") {
  const nlohmann::json levels = read_levels("accuracy_levels_pytorch.json");
  const std::vector<std::string> devices = device_folders("pytorch_sdpa");
  REQUIRE(devices.size() >= 2);
  for (const std::string& device : devices) {
    CAPTURE(device);
    REQUIRE_MESSAGE(levels.contains(device), "no recorded levels for " << device);
    check_levels(validate_measurements(kDir + "/" + device + "/pytorch_sdpa_2026-11-22.json"),
                 levels.at(device).at("schedules"));
  }
}

TEST_CASE("validation accuracy on cuDNN's Hopper kernels does not fall below the recorded levels") {
  const nlohmann::json levels = read_levels("accuracy_levels_cudnn.json");
  int devices = 0;
  for (const auto& d : fs::directory_iterator(kDir)) {
    const fs::path file = d.path() / "cudnn_2026-11-23" / "cudnn_sdpa_2026-11-23.json";
    if (!fs::exists(file)) continue;
    const std::string device = d.path().filename().string();
    CAPTURE(device);
    REQUIRE_MESSAGE(levels.contains(device), "no recorded levels for " << device);
    check_levels(validate_measurements(file), levels.at(device).at("schedules"));
    ++devices;
  }
  CHECK(devices >= 2);  // H100 and H200
}
