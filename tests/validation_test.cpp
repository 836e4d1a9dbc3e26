// iosim validate on the committed measurements (cuda_validate/measurements/): how cases are read,
// predicted and summarized, whole measured sets read together. The recorded repeat spreads of the
// held-out and sealed sets, and that no level is finer than them, are accuracy_now's and
// accuracy_gate's (scripts/accuracy_levels.py), which read the same runs of those sets.
// The accuracy levels themselves (every set's errors within accuracy_levels*.json, per device
// folder and schedule) are ctest accuracy_now (scripts/accuracy_levels.py --check-now); the same
// script writes them (tightening freely, loosening only when told why, with a history entry and a
// CALIBRATION.md entry: its --check, ctest accuracy_gate, holds that).
#include "api/validation.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "api/validation_detail.hpp"
#include "reports/validation_writers.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

namespace fs = std::filesystem;

const std::string kDir = std::string(IOSIM_REPO_DIR) + "/cuda_validate/measurements";

// The cases of `device`'s measured file `file` that `keep` selects, validated from a copy in a
// folder named after the device (which picks the profile, as the device's own folder does): a
// few cases of a large file without predicting the rest.
template <typename Keep>
ValidationResult validate_some(const std::string& device, const std::string& file, Keep&& keep) {
  std::ifstream in(kDir + "/" + device + "/" + file);
  REQUIRE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  nlohmann::json kept = nlohmann::json::array();
  for (const nlohmann::json& c : doc.at("cases"))
    if (keep(c)) kept.push_back(c);
  REQUIRE(!kept.empty());
  doc["cases"] = kept;
  const fs::path dir = fs::temp_directory_path() / "iosim_validate_some_test" / device;
  fs::create_directories(dir);
  std::ofstream(dir / "measurements_some.json") << doc.dump();
  ValidationResult v = validate_measurements(dir);
  fs::remove_all(dir.parent_path());
  REQUIRE(v.cases.size() == kept.size());
  return v;
}

}  // namespace

// The accuracy levels themselves (every measured set's errors within
// cuda_validate/measurements/accuracy_levels*.json) are ctest accuracy_now:
// scripts/accuracy_levels.py --check-now, which shares its runs of iosim validate with the docs
// check (scripts/validated.py).

TEST_CASE("several measurement files are summarized together, FP8 runs apart") {
  // The FA3-style kernel's FP16 and FP8 files (H100) read together: each case counts in its own
  // file's summary, the FP8 runs apart, and every summary of the two is what its cases alone give
  // (summarized again from the joint run's cases of each file; that a case's prediction does not
  // depend on the files read beside it is the one-case test below, which validates each apart).
  const fs::path dir = kDir + "/h100-sxm5-80gb/fa3_own_2026-11-23";
  const fs::path files[] = {dir / "fa3_own_2026-11-23.json",
                            dir / "fp8" / "fa3_own_fp8_2026-11-23.json"};
  const ValidationResult both = validate_measurements(std::vector<fs::path>{files[0], files[1]});
  ValidationResult part[2];
  for (const CaseResult& c : both.cases) {
    const bool fp8 = fs::equivalent(c.source_file, files[1]);
    REQUIRE((fp8 || fs::equivalent(c.source_file, files[0])));
    part[fp8 ? 1 : 0].cases.push_back(c);
  }
  for (ValidationResult& v : part) validation_detail::summarize_cases(v);
  REQUIRE(!part[0].cases.empty());
  REQUIRE(!part[1].cases.empty());
  const auto find = [](const ValidationResult& v, const std::string& name) {
    for (const Summary& s : v.summaries)
      if (s.schedule == name) return s;
    FAIL("no summary " << name);
    return Summary{};
  };
  CHECK(find(both, "flash3").cases == find(part[0], "flash3").cases);
  CHECK(find(both, "flash3 fp8").cases == find(part[1], "flash3 fp8").cases);
  CHECK(find(both, "all").cases == part[0].cases.size() + part[1].cases.size());
  for (int i = 0; i < kMetricCount; ++i) {
    CAPTURE(i);
    CHECK(find(both, "flash3").median_abs_error[i] == find(part[0], "flash3").median_abs_error[i]);
    CHECK(find(both, "flash3").worst_abs_error[i] == find(part[0], "flash3").worst_abs_error[i]);
    CHECK(find(both, "flash3 fp8").median_abs_error[i] ==
          find(part[1], "flash3 fp8").median_abs_error[i]);
    CHECK(find(both, "flash3 fp8").worst_abs_error[i] ==
          find(part[1], "flash3 fp8").worst_abs_error[i]);
  }
  for (const CaseResult& c : part[1].cases) CHECK(summary_name(c) == "flash3 fp8");
  for (const CaseResult& c : part[0].cases) CHECK(summary_name(c) == "flash3");
}

TEST_CASE("two one-case files are summarized together, the FP8 one apart") {
  // The case above on one case of each file (H100): what scripts/sanitize.sh runs of it under
  // the sanitizers, where the whole files (120 kernels, twice) take minutes.
  const fs::path dir = kDir + "/h100-sxm5-80gb/fa3_own_2026-11-23";
  const fs::path tmp = fs::temp_directory_path() / "iosim_two_files_test";
  fs::create_directories(tmp);
  std::vector<fs::path> files;
  for (const fs::path& source :
       {dir / "fa3_own_2026-11-23.json", dir / "fp8" / "fa3_own_fp8_2026-11-23.json"}) {
    std::ifstream in(source);
    REQUIRE(in.good());
    nlohmann::json doc = nlohmann::json::parse(in);
    REQUIRE(!doc.at("cases").empty());
    doc["cases"] = nlohmann::json::array({doc.at("cases")[0]});
    files.push_back(tmp / source.filename());
    std::ofstream(files.back()) << doc.dump();
  }
  const ValidationResult fp16 = validate_measurements(files[0], "h100-sxm5-80gb");
  const ValidationResult fp8 = validate_measurements(files[1], "h100-sxm5-80gb");
  const ValidationResult both = validate_measurements(files, "h100-sxm5-80gb");
  fs::remove_all(tmp);
  REQUIRE(fp16.cases.size() == 1);
  REQUIRE(fp8.cases.size() == 1);
  REQUIRE(both.cases.size() == 2);
  const auto find = [](const ValidationResult& v, const std::string& name) {
    for (const Summary& s : v.summaries)
      if (s.schedule == name) return s;
    FAIL("no summary " << name);
    return Summary{};
  };
  CHECK(find(both, "flash3").cases == 1);
  CHECK(find(both, "flash3 fp8").cases == 1);
  CHECK(find(both, "all").cases == 2);
  const int t = 5;  // time
  REQUIRE(kMetrics[t] == Metric::time);
  CHECK(find(both, "flash3").median_abs_error[t] == find(fp16, "flash3").median_abs_error[t]);
  CHECK(find(both, "flash3 fp8").worst_abs_error[t] == find(fp8, "flash3 fp8").worst_abs_error[t]);
  CHECK(summary_name(fp8.cases[0]) == "flash3 fp8");
}

TEST_CASE(
    "blind predicts from the flags alone at the power model's clock; as-run adds what was "
    "measured") {
  // One committed case: our flash2 kernel, d = 64, 128 x 64 tiles, 128 threads; the compiler gave
  // it 234 registers (2 CTAs per SM); iosim's estimate (row_split_registers: 208) gives 2 as well.
  const fs::path file = kDir + "/h100-sxm5-80gb/measurements_2026-11-22.json";
  std::ifstream in(file);
  REQUIRE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  nlohmann::json one;
  for (const nlohmann::json& c : doc.at("cases"))
    if (c.at("id") == "flash2_b4_h16_n1024_nkv1024_d64_bq128_bkv64") one = c;
  REQUIRE(one.is_object());
  doc["cases"] = nlohmann::json::array({one});
  const fs::path dir = fs::temp_directory_path() / "iosim_blind_test" / "h100-sxm5-80gb";
  fs::create_directories(dir);
  std::ofstream(dir / "measurements_one.json") << doc.dump();
  const ValidationResult v = validate_measurements(dir);
  fs::remove_all(dir.parent_path());
  REQUIRE(v.cases.size() == 1);
  const CaseResult& c = v.cases[0];
  REQUIRE(c.skipped_reason.empty());
  // What a user types: iosim run --algo flash2 --batch 4 --heads 16 --seq 1024 --head-dim 64
  //   --block-q 128 --block-kv 64 --threads 128, no clock: the profile's power model picks the
  //   highest clock within the board's limit. This file's GPU was not held at one clock while it
  //   ran free (its samples above 150 W range over several), so nothing caps the model's clock.
  RunRequest r = test::request("flash2", 4, 16, 1024, 64, 128, 64);
  r.tiling.threads = 128;
  const Report run = simulate(test::profile(), r);
  REQUIRE(run.feasible());
  REQUIRE(run.power.has_value());
  CHECK(c.blind_sm_clock_mhz == run.sm_clock_mhz);
  CHECK(run.sm_clock_mhz <= test::profile().sm.boost_clock_mhz.value);
  const int t = 5, dram = 0;  // kMetrics: dram ... time
  REQUIRE(kMetrics[t] == Metric::time);
  CHECK(c.blind[t].predicted == run.engine.time_s);
  CHECK(c.blind[t].measured == one.at("time_free_running_s").get<double>());
  r.engine.flush_l2_between_kernels = true;  // bytes as Nsight Compute counts them
  const Report cold = simulate(test::profile(), r);
  CHECK(c.blind[dram].predicted == static_cast<double>(cold.engine.total.hbm.read_total() +
                                                       cold.engine.total.hbm.write_total()));
  CHECK(c.blind[dram].measured == c.metrics[dram].measured);

  // As-run: the kernel's 234 registers (2 CTAs per SM, as the estimate's 208 give: the FP32
  // accumulators alone, 168, allowed 3), its two K/V buffer pairs (49152 B of shared memory),
  // Nsight Compute's clock.
  CHECK(cold.engine.kernels.at(0).spec.registers_per_thread == 208);
  CHECK(cold.engine.kernels.at(0).occupancy.ctas_per_sm == 2);
  r.engine.sm_clock_mhz = c.sm_clock_mhz;
  r.engine.registers_by_role = {{"attention", 234}};
  r.tiling.pipeline_stages = 2;
  const Report as_run = simulate(test::profile(), r);
  CHECK(as_run.engine.kernels.at(0).occupancy.ctas_per_sm == 2);
  CHECK(c.metrics[t].predicted == as_run.engine.time_s);
  CHECK(test::rel_close(
      c.metrics[t].measured,
      one.at("kernels")[0].at("metrics").at("gpu__time_duration.sum").get<double>() * 1e-9, 1e-12));
}

namespace {

// A measurement file with one flash3 case per `variant.warpgroups` value given (null: no
// variant), a small problem cut from our FA3-style kernel's file (its counters do not matter
// here: the test compares predictions only).
fs::path flash3_variant_file(const std::vector<nlohmann::json>& arrangements) {
  std::ifstream in(kDir + "/h100-sxm5-80gb/fa3_own_2026-11-23/fa3_own_2026-11-23.json");
  REQUIRE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  // A d = 128 case: there ping-pong still differs from the cooperative arrangement.
  nlohmann::json one;
  for (const nlohmann::json& c : doc.at("cases")) {
    if (c.at("problem").at("head_dim") == 128) {
      one = c;
      break;
    }
  }
  REQUIRE(one.is_object());
  doc["cases"] = nlohmann::json::array();
  for (const nlohmann::json& a : arrangements) {
    nlohmann::json c = one;
    c["id"] = "case_" + a.dump();
    c["problem"]["batch"] = 1;
    c["problem"]["heads"] = 4;
    if (a.is_null()) {
      c.erase("variant");
    } else {
      c["variant"]["warpgroups"] = a;
    }
    doc["cases"].push_back(c);
  }
  const fs::path file = fs::temp_directory_path() / "iosim_validation_variant_test.json";
  std::ofstream(file) << doc.dump();
  return file;
}

}  // namespace

TEST_CASE("validate predicts each flash3 case with the warpgroup arrangement it was measured in") {
  const fs::path file = flash3_variant_file({"pingpong", "cooperative", nullptr});
  const ValidationResult v = validate_measurements(file, "h100-sxm5-80gb");
  REQUIRE(v.cases.size() == 3);
  const int time = static_cast<int>(Metric::time);
  for (const CaseResult& c : v.cases) REQUIRE(c.skipped_reason.empty());
  // The same case run directly with each arrangement, at the clock validate used.
  auto direct = [&](std::optional<PipeOverlap> arrangement) {
    RunRequest r;
    r.algorithm = "flash3";
    r.problem.batch = 1;
    r.problem.heads = 4;
    r.problem.seq = r.problem.seq_kv = 1024;
    r.problem.head_dim = 128;
    r.tiling.block_q = 128;
    r.tiling.block_kv = 128;
    r.tiling.threads = 384;
    r.tiling.pipeline_stages = 2;
    r.tiling.warpgroups = arrangement;
    r.engine.flush_l2_between_kernels = true;
    r.engine.sm_clock_mhz = v.cases[0].sm_clock_mhz;
    r.engine.registers_by_role = {{"attention", 168}};
    return simulate(load_profile("h100-sxm5-80gb"), r).engine.time_s;
  };
  const double pingpong = direct(PipeOverlap::pingpong), cooperative = direct(std::nullopt);
  REQUIRE(pingpong != cooperative);  // else the test could not tell them apart
  CHECK(test::rel_close(v.cases[0].metrics[time].predicted, pingpong, 1e-12));
  CHECK(test::rel_close(v.cases[1].metrics[time].predicted, cooperative, 1e-12));
  CHECK(test::rel_close(v.cases[2].metrics[time].predicted, cooperative, 1e-12));
  fs::remove(file);
}

TEST_CASE("validate refuses a variant.warpgroups it does not know, naming the case") {
  for (const nlohmann::json& bad : {nlohmann::json("pingpang"), nlohmann::json(2)}) {
    const fs::path file = flash3_variant_file({bad});
    CHECK_THROWS_WITH_AS(validate_measurements(file, "h100-sxm5-80gb"),
                         doctest::Contains("variant.warpgroups must be"), ConfigError);
    fs::remove(file);
  }
}

namespace {

// Validates held-out flash2 cases of the H200 (measured 3 times), each with every recorded
// repeat spread set to its given value (kernels' counters and the case's CUDA-event times and
// DRAM totals).
ValidationResult validate_with_spreads(const std::vector<std::pair<std::string, double>>& cases) {
  std::ifstream in(kDir + "/h200-sxm-141gb/heldout_2026-11-23/heldout_2026-11-23.json");
  REQUIRE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  nlohmann::json chosen = nlohmann::json::array();
  for (const auto& [id, spread] : cases) {
    nlohmann::json one;
    for (const nlohmann::json& c : doc.at("cases"))
      if (c.at("id") == id) one = c;
    REQUIRE(one.is_object());
    for (auto& [key, value] : one["repeats"]["spread"].items()) value = spread;
    for (nlohmann::json& k : one["kernels"])
      for (auto& [key, value] : k["spread"].items()) value = spread;
    chosen.push_back(one);
  }
  doc["cases"] = chosen;
  const fs::path file = fs::temp_directory_path() / "iosim_spread_test.json";
  std::ofstream(file) << doc.dump();
  ValidationResult v = validate_measurements(file, "h200-sxm-141gb");
  fs::remove(file);
  return v;
}

ValidationResult validate_with_spread(double spread) {
  return validate_with_spreads({{"flash2_b2_h32_n768_nkv768_d64_bq64_bkv64", spread}});
}

}  // namespace

TEST_CASE("a statistic prints its number, with the repeat spread of the case it comes from") {
  const int t = 5;  // kMetrics: dram ... time
  REQUIRE(kMetrics[t] == Metric::time);
  // Spreads far above every error: each compared quantity is within noise, and still printed.
  const ValidationResult noisy = validate_with_spread(50.0);
  REQUIRE(noisy.cases.size() == 1);
  const CaseResult& c = noisy.cases[0];
  REQUIRE(c.skipped_reason.empty());
  REQUIRE(c.blind[t].relative_error());
  CHECK(c.blind[t].spread == 50.0);
  CHECK(c.blind[t].within_noise());
  CHECK(c.metrics[t].within_noise());
  const Summary& s = noisy.summaries.back();
  CHECK(s.blind_median_spread[t] == 50.0);
  CHECK(s.blind_median_case_spread[t] == 50.0);
  CHECK(within_noise(s.blind_median_abs_error[t], s.blind_median_case_spread[t]));
  const std::string md = validation_markdown(noisy);
  const std::string noisy_pct =
      fmt::format("{:.1f}%", 100.0 * std::abs(*c.blind[t].relative_error()));
  CHECK(md.find("| all | 1 | " + noisy_pct + " (spread 5000.0%) / " + noisy_pct +
                " (spread 5000.0%) |") != std::string::npos);
  CHECK(md.find("within noise |") == std::string::npos);  // no statistic hidden behind words
  CHECK(validation_table(noisy).find("spread 5000.0%") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(validation_json(noisy));
  CHECK(j["summaries"][0]["blind"]["time"]["median_within_noise"] == true);
  CHECK(j["summaries"][0]["blind"]["time"]["median_case_spread"] == 50.0);
  CHECK(j["cases"][0]["blind"]["time"]["within_noise"] == true);
  CHECK(j["cases"][0]["blind"]["time"]["spread"] == 50.0);

  // The worst error's mark is its own case's spread, not the largest spread of another case:
  // H100 cuDNN's blind worst of 16.8% read "within noise" beside another case's spread.
  const std::string quiet_id = "flash2_b8_h8_n1536_nkv1536_d64_bq128_bkv64";
  const std::string noisy_id = "flash2_b2_h32_n768_nkv768_d64_bq64_bkv64";
  for (const auto& [a, b] : {std::pair{quiet_id, noisy_id}, std::pair{noisy_id, quiet_id}}) {
    const double spread_a = a == quiet_id ? 1e-6 : 50.0, spread_b = b == quiet_id ? 1e-6 : 50.0;
    const ValidationResult two = validate_with_spreads({{a, spread_a}, {b, spread_b}});
    REQUIRE(two.cases.size() == 2);
    const Summary& all = two.summaries.back();
    const CaseResult& worst = std::abs(*two.cases[0].blind[t].relative_error()) >=
                                      std::abs(*two.cases[1].blind[t].relative_error())
                                  ? two.cases[0]
                                  : two.cases[1];
    CAPTURE(worst.id);
    CHECK(all.blind_worst_spread[t] == 50.0);
    CHECK(all.blind_worst_case_spread[t] == worst.blind[t].spread);
    CHECK(within_noise(all.blind_worst_abs_error[t], all.blind_worst_case_spread[t]) ==
          worst.blind[t].within_noise());
    CHECK(all.blind_median_case_spread[t] == doctest::Approx(0.5 * (50.0 + 1e-6)));
  }

  // Spreads below the errors: the same numbers, marked with their (tiny) spreads.
  const ValidationResult quiet = validate_with_spread(1e-9);
  const CaseResult& q = quiet.cases[0];
  REQUIRE(std::abs(*q.blind[t].relative_error()) > 1e-9);
  CHECK_FALSE(q.blind[t].within_noise());
  const std::string quiet_md = validation_markdown(quiet);
  const std::string blind_pct =
      fmt::format("{:.1f}%", 100.0 * std::abs(*q.blind[t].relative_error()));
  CHECK(quiet_md.find("| all | 1 | " + blind_pct + " (spread 0.0%) / " + blind_pct +
                      " (spread 0.0%) |") != std::string::npos);  // blind time
  const nlohmann::json k = nlohmann::json::parse(validation_json(quiet));
  CHECK(k["summaries"][0]["blind"]["time"]["median_within_noise"] == false);

  // A spread of 0 (identical repeats) says nothing is noise: an exact match is 0.0%, not noise.
  Comparison exact{1.0, 1.0, 0.0};
  CHECK_FALSE(exact.within_noise());
  CHECK_FALSE(within_noise(0.0, 0.0));
  // A negative spread is not a measurement: refused, naming the case.
  CHECK_THROWS_AS(validate_with_spread(-0.5), ConfigError);
  // Measured once: no spread, never within noise.
  Comparison once{1.5, 1.0, std::nullopt};
  CHECK_FALSE(once.within_noise());
}

TEST_CASE(
    "the register estimate gives every measured flash1/flash2/block-sparse tiling the "
    "occupancy its compiled registers give") {
  // Every tiling of our row-split kernels in the committed measurements (calibration and held
  // out, both GPUs): CTAs per SM with iosim's estimate (row_split_registers) against CTAs per SM
  // with the registers ptxas gave the kernel, all else equal. Block-sparse runs flash2's kernel
  // body over a block list, so its tilings are simulated as flash2.
  struct Key {
    std::string algo;
    std::int64_t d, bq, bkv;
    int threads;
    auto operator<=>(const Key&) const = default;
  };
  std::map<Key, int> measured;
  for (const auto& f : fs::recursive_directory_iterator(kDir)) {
    const std::string name = f.path().filename().string();
    if (f.path().extension() != ".json" ||
        (name.rfind("measurements", 0) != 0 && name.rfind("heldout_", 0) != 0))
      continue;
    std::ifstream in(f.path());
    const nlohmann::json doc = nlohmann::json::parse(in);
    if (!doc.contains("cases")) continue;
    for (const nlohmann::json& c : doc.at("cases")) {
      const std::string s = c.value("schedule", std::string{});
      if (s != "flash1" && s != "flash2" && s != "block-sparse") continue;
      const nlohmann::json& t = c.at("tiling");
      for (const nlohmann::json& k : c.at("kernels")) {
        if (k.value("role", std::string{}) != "attention") continue;
        measured[{s == "flash1" ? "flash1" : "flash2", c.at("problem").at("head_dim"),
                  t.at("block_q"), t.at("block_kv"), t.at("threads")}] =
            k.at("launch").at("launch__registers_per_thread");
      }
    }
  }
  REQUIRE(measured.size() >= 9);
  for (const auto& key_regs : measured) {
    // Not a structured binding: CAPTURE's lambda cannot name one under clang 14.
    const auto& key = key_regs.first;
    const auto& regs = key_regs.second;
    CAPTURE(key.algo);
    CAPTURE(key.d);
    CAPTURE(key.bq);
    CAPTURE(key.bkv);
    CAPTURE(regs);
    RunRequest r = test::request(key.algo, 1, 4, 2048, key.d, key.bq, key.bkv);
    r.tiling.threads = key.threads;
    const Report estimated = simulate(test::profile(), r);
    r.engine.registers_by_role = {{"attention", regs}};
    const Report compiled = simulate(test::profile(), r);
    REQUIRE(estimated.feasible());
    // One tiling still differs: flash1 at d = 128 with 64 x 64 tiles holds 171 (estimate 156),
    // 2 CTAs against 3 by registers; on the GPU its 96 KB of shared memory allow 2 anyway.
    const bool known_miss = key.algo == "flash1" && key.d == 128 && key.bq == 64;
    CHECK((estimated.engine.kernels.at(0).occupancy.ctas_per_sm ==
           compiled.engine.kernels.at(0).occupancy.ctas_per_sm) != known_miss);
    // An estimate, not the count: within 26% of what ptxas gave (block-sparse d = 128 128 x 64:
    // 156 against 209; the rest within 17%).
    CHECK(test::rel_close(estimated.engine.kernels.at(0).spec.registers_per_thread, regs, 0.26));
  }
}

TEST_CASE("a decode case whose kernel packs the query group at N > 1 is predicted packed") {
  // Held-out decode cases with two query rows per head: cuda_validate's decode kernel holds a K/V
  // head's 4 query heads x 2 rows in one CTA (tiling.query_rows_per_cta = 8). Predicted with
  // FlashAttention-2's rule (packing at N = 1 only), each query head re-read its K/V head: L2
  // reads 4x the measured (+295% on the H100), as-run time +64%. Those cases of the held-out
  // file only, in a copy under the device's folder name (which picks the profile).
  for (const char* device : {"h100-sxm5-80gb", "h200-sxm-141gb"}) {
    CAPTURE(device);
    const ValidationResult v = validate_some(
        device, "heldout_2026-11-23/heldout_2026-11-23.json", [](const nlohmann::json& c) {
          return c.at("schedule") == "flash-decoding" &&
                 c.at("id").get<std::string>().find("_n2_") != std::string::npos;
        });
    for (const CaseResult& c : v.cases) {
      CAPTURE(c.id);
      REQUIRE(c.profile == device);
      REQUIRE(c.skipped_reason.empty());
      for (const Metric m : {Metric::l2_read, Metric::dram_read}) {
        const Comparison& x = c.metrics[static_cast<int>(m)];
        CHECK(std::abs(x.predicted / x.measured - 1) < 0.01);
      }
    }
  }
}

// The blind prediction of a case of `file` (one-case copy validated under the device's folder).
CaseResult blind_of_one(const std::string& device, const std::string& file, const std::string& id) {
  const ValidationResult v =
      validate_some(device, file, [&](const nlohmann::json& c) { return c.at("id") == id; });
  REQUIRE(v.cases.size() == 1);
  REQUIRE(v.cases[0].skipped_reason.empty());
  return v.cases[0];
}

// What a user of cuda_validate's decode kernel states (4 warps, query rows padded to one 16-row
// m-tile), predicted with a cold L2 per kernel as validate's blind bytes are.
RunRequest decode_flags(const std::string& algo, std::int64_t b, std::int64_t h, std::int64_t n,
                        std::int64_t d, std::int64_t block_kv, std::int64_t n_kv,
                        std::int64_t kv_heads, std::int64_t splits) {
  RunRequest r = test::request(algo, b, h, n, d, 16, block_kv);
  r.problem.seq_kv = n_kv;
  r.problem.kv_heads = kv_heads;
  r.tiling.threads = 128;
  r.tiling.splits = splits;
  r.engine.flush_l2_between_kernels = true;
  return r;
}

TEST_CASE("blind reads nothing measured: no seen clock, no tiles from kernel names, no packing") {
  // Issue #29: blind had taken the clock nvidia-smi saw (all 34 H100 PyTorch cases ran blind at
  // exactly 1590 MHz), tiles parsed from the measured kernels' names, and the query rows per CTA
  // of the measured decode launches. Each case below is predicted as `iosim run` from what a user
  // states; before the change each of these checks failed.
  const int t = 5, l2r = 3, dram = 0;
  REQUIRE(kMetrics[t] == Metric::time);
  REQUIRE(kMetrics[l2r] == Metric::l2_read);
  SUBCASE("PyTorch's flash forward: the algorithm's own tiles, the power model's clock") {
    const CaseResult c = blind_of_one("h100-sxm5-80gb", "pytorch_sdpa_2026-11-22.json",
                                      "flash_fwd_b4_h16_n1024_nkv1024_d64");
    const Report run = simulate(test::profile(), test::request("flash2", 4, 16, 1024, 64));
    REQUIRE(run.feasible());
    CHECK(c.blind_sm_clock_mhz == run.sm_clock_mhz);
    CHECK(c.blind_sm_clock_mhz != 1590.0);  // the clock nvidia-smi saw it held at
    CHECK(c.blind[t].predicted == run.engine.time_s);
  }
  SUBCASE("grouped-query decode at N = 2: FlashAttention-2's packing rule, as --pack-gqa auto") {
    const CaseResult c =
        blind_of_one("h100-sxm5-80gb", "heldout_2026-11-23/heldout_2026-11-23.json",
                     "flash-decoding_b2_h32_n2_nkv12288_d128_bq16_bkv64_hkv8_s16");
    const Report cold =
        simulate(test::profile(), decode_flags("flash-decoding", 2, 32, 2, 128, 64, 12288, 8, 16));
    REQUIRE(cold.feasible());
    CHECK(c.blind[l2r].predicted == static_cast<double>(cold.engine.total.l2.read_total()));
    // As-run keeps what the launch showed: the group packed in one CTA, 4x fewer K/V reads.
    CHECK(c.metrics[l2r].predicted < 0.5 * c.blind[l2r].predicted);
  }
  SUBCASE("paged decode: the page size the case asked for (--page-tokens), not the default") {
    const CaseResult c =
        blind_of_one("h100-sxm5-80gb", "heldout_2026-11-23/heldout_2026-11-23.json",
                     "paged_b8_h32_n1_nkv16384_d64_bq16_bkv128_hkv4_s4_page64");
    RunRequest r = decode_flags("paged", 8, 32, 1, 64, 128, 16384, 4, 4);
    r.problem.page_tokens = 64;
    const Report cold = simulate(test::profile(), r);
    REQUIRE(cold.feasible());
    CHECK(c.blind[dram].predicted == static_cast<double>(cold.engine.total.hbm.read_total() +
                                                         cold.engine.total.hbm.write_total()));
  }
}

TEST_CASE("a latent (MLA) decode case is predicted with its latent: K alone, V its columns") {
  // cuda_validate's MLA decode kernel records problem.latent (V is the first `latent` of the
  // head_dim columns of the one cached row) and its 16-row query tile as tiling.block_q. Read
  // without the latent, the case was predicted with a separate V of 576 columns: twice the DRAM
  // reads. A held-out decode case made into one (the measured numbers do not matter here).
  std::ifstream in(kDir + "/h100-sxm5-80gb/heldout_2026-11-23/heldout_2026-11-23.json");
  REQUIRE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  nlohmann::json kept = nlohmann::json::array();
  for (const nlohmann::json& c : doc.at("cases")) {
    if (c.at("schedule") != "flash-decoding" || !kept.empty()) continue;
    nlohmann::json m = c;
    m["problem"].update({{"batch", 2},
                         {"heads", 16},
                         {"kv_heads", 1},
                         {"seq", 1},
                         {"seq_kv", 2048},
                         {"head_dim", 576},
                         {"latent", 512}});
    m["tiling"].update({{"block_q", 16},
                        {"block_kv", 64},
                        {"threads", 128},
                        {"splits", 4},
                        {"pipeline_stages", 2}});
    kept.push_back(m);
  }
  REQUIRE(kept.size() == 1);
  doc["cases"] = kept;
  const fs::path dir = fs::temp_directory_path() / "iosim_validate_latent_test" / "h100-sxm5-80gb";
  fs::create_directories(dir);
  std::ofstream(dir / "measurements_latent.json") << doc.dump();
  const ValidationResult v = validate_measurements(dir);
  fs::remove_all(dir.parent_path());
  REQUIRE(v.cases.size() == 1);
  const CaseResult& c = v.cases[0];
  REQUIRE(c.skipped_reason.empty());
  RunRequest r = decode_flags("flash-decoding", 2, 16, 1, 576, 64, 2048, 1, 4);
  r.problem.latent_dim = 512;
  const Report cold = simulate(test::profile(), r);
  REQUIRE(cold.feasible());
  const double dram =
      static_cast<double>(cold.engine.total.hbm.read_total() + cold.engine.total.hbm.write_total());
  REQUIRE(kMetrics[0] == Metric::dram);
  CHECK(c.blind[0].predicted == dram);
  CHECK(c.metrics[0].predicted == doctest::Approx(dram).epsilon(0.01));
}

TEST_CASE("blind time is held to the queued CUDA-event time where a case has one") {
  // PyTorch's cases were first timed with the GPU idle before each call, so the host's dispatch
  // was inside the interval (cuDNN's forward at N = 1024: 114 us against 49 us queued on the
  // H100). retime.py's time_queued_s, where present, is what blind time is compared with, and its
  // spread over the sets is the blind time's spread; without it, time_free_running_s as before.
  std::ifstream in(kDir + "/h100-sxm5-80gb/cudnn_2026-11-23/cudnn_sdpa_2026-11-23.json");
  REQUIRE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  nlohmann::json one;
  for (const nlohmann::json& c : doc.at("cases"))
    if (c.at("id") == "cudnn_fwd_b4_h16_n1024_nkv1024_d64") one = c;
  REQUIRE(one.is_object());
  REQUIRE(one.contains("time_queued_s"));
  // The committed data shows the mechanism: the host-bound time is about twice the queued one,
  // and the queued one is within 15% of the kernels' own durations (CUPTI).
  const double queued = one.at("time_queued_s").get<double>();
  CHECK(one.at("time_free_running_rerun_s").get<double>() > 1.5 * queued);
  CHECK(std::abs(one.at("time_kernels_s").get<double>() / queued - 1) < 0.15);
  const int t = 5;
  REQUIRE(kMetrics[t] == Metric::time);
  const auto validate_one = [&](const nlohmann::json& c) {
    nlohmann::json d = doc;
    d["cases"] = nlohmann::json::array({c});
    const fs::path file = fs::temp_directory_path() / "iosim_queued_test.json";
    std::ofstream(file) << d.dump();
    ValidationResult v = validate_measurements(file, "h100-sxm5-80gb");
    fs::remove(file);
    REQUIRE(v.cases.size() == 1);
    return v.cases[0];
  };
  nlohmann::json with = one;
  with["time_queued_s"] = 1e-4;
  const CaseResult q = validate_one(with);
  CHECK(q.blind[t].measured == 1e-4);
  // Its spread over the sets is the blind time's, though the kernels' counters have no repeats
  // (the early return for files without kernel spreads dropped it).
  REQUIRE(q.blind[t].spread.has_value());
  CHECK(*q.blind[t].spread == one.at("repeats").at("spread").at("time_queued_s").get<double>());
  nlohmann::json without = one;
  without.erase("time_queued_s");
  const CaseResult f = validate_one(without);
  CHECK(f.blind[t].measured == one.at("time_free_running_s").get<double>());
  CHECK(f.blind[t].predicted == q.blind[t].predicted);
}
