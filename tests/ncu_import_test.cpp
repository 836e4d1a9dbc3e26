// `iosim validate --ncu`: a user's own Nsight Compute export compared with a kernel description
// gives what `iosim validate` gives for the same case in our measured format (both CSV layouts,
// scaled units), and malformed exports are refused with the file, line and reason.
#include "api/ncu_import.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "api/validation.hpp"
#include "sim/base/json_reader.hpp"
#include "test_support.hpp"

namespace iosim {
namespace {

const std::string kData = std::string(IOSIM_REPO_DIR) + "/tests/data/kernels/";
const std::string kMeasured =
    std::string(IOSIM_REPO_DIR) +
    "/cuda_validate/measurements/h100-sxm5-80gb/kernels_outside_catalog_2026-11-27/"
    "outside_wg1_fwd.json";

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The measured case the fixtures were made from, alone in a document of our format.
nlohmann::json measured_case_document() {
  nlohmann::json doc = nlohmann::json::parse(text_of(kMeasured));
  nlohmann::json one = nlohmann::json::array();
  for (const auto& c : doc["cases"]) {
    if (c["id"] == "flash2_b4_h16_n4096_nkv4096_d128_bq128_bkv64_wg1_tma_fwd_st3_fp16") {
      one.push_back(c);
    }
  }
  REQUIRE(one.size() == 1);
  doc["cases"] = one;
  return doc;
}

}  // namespace

TEST_CASE("validate --ncu equals validate of the same case, from either CSV layout") {
  const nlohmann::json doc = measured_case_document();
  const nlohmann::json& c = doc["cases"][0];
  const ValidationResult ours = validate_document(doc, kMeasured, "h100-sxm5-80gb");
  REQUIRE(ours.cases.size() == 1);
  REQUIRE(ours.cases[0].skipped_reason.empty());
  const KernelDescription kernel = load_kernel_description(kData + "wg1_tma_case.yaml");
  AttentionProblem p;
  p.batch = 4;
  p.heads = 16;
  p.seq = p.seq_kv = 4096;
  p.head_dim = 128;
  for (const char* file : {"ncu_wg1_h100.csv", "ncu_wg1_h100_raw.csv"}) {
    CAPTURE(file);
    const std::vector<NcuKernel> kernels = read_ncu_csv(text_of(kData + file), file);
    REQUIRE(kernels.size() == 1);
    CHECK(kernels[0].device == "NVIDIA H100 80GB HBM3");
    const ValidationResult v = validate_document(
        ncu_case_document(kernels, kernel, p, c["time_queued_s"].get<double>(), file), file,
        "h100-sxm5-80gb");
    REQUIRE(v.cases.size() == 1);
    REQUIRE(v.cases[0].skipped_reason.empty());
    for (int i = 0; i < kMetricCount; ++i) {
      CAPTURE(i);
      // The same prediction from the same description, and the counters to rounding of the
      // export's printed digits.
      CHECK(v.cases[0].blind[i].predicted == ours.cases[0].blind[i].predicted);
      CHECK(test::rel_close(v.cases[0].blind[i].measured, ours.cases[0].blind[i].measured, 1e-6));
      CHECK(
          test::rel_close(v.cases[0].metrics[i].measured, ours.cases[0].metrics[i].measured, 1e-6));
    }
  }
}

TEST_CASE("malformed ncu exports are refused with the line and the reason") {
  const auto refused = [](const std::string& csv, const std::string& needle) {
    CAPTURE(csv);
    CHECK_THROWS_WITH_AS(read_ncu_csv(csv, "k.csv"), doctest::Contains(needle.c_str()),
                         ConfigError);
  };
  refused("", "not an Nsight Compute CSV export");
  refused("hello\nworld\n", "export with ncu --csv --metrics dram__bytes_read.sum");
  const std::string header =
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
  refused(header + "\"0\",\"k\",\"dram__bytes_read.sum\",\"byte\",\"12\"\n",
          "kernel 'k' lacks dram__bytes_write.sum");
  refused(header + "\"0\",\"k\",\"dram__bytes_read.sum\",\"byte\",\"n/a\"\n",
          "k.csv:2: 'n/a' is not a measured value");
  refused(header + "\"0\",\"k\",\"dram__bytes_read.sum\",\"furlong\",\"12\"\n",
          "k.csv:2: unit 'furlong' is not one iosim knows");
  refused(header + "\"0\",\"k\",\"dram__bytes_read.sum\"\n", "k.csv:2: 3 fields, the header has 5");
  refused(header, "the export holds no kernel");
  // A details page without its value column read each value past the end of its row (a crash).
  refused(
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\"\n"
      "\"0\",\"k\",\"dram__bytes_read.sum\",\"byte\"\n",
      "k.csv:1: the header has a 'Metric Name' column but no 'Metric Value' column");
  // Ragged rows are refused, not read: a row with a stray field (the value shifted out of its
  // column) or missing one, on either page.
  refused(header + "\"0\",\"k\",\"dram__bytes_read.sum\",\"byte\",\"12\",\"7\"\n",
          "k.csv:2: 6 fields, the header has 5");
  const std::string raw =
      "\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"dram__bytes_write.sum\"\n"
      "\"\",\"\",\"byte\",\"byte\"\n";
  refused(raw + "\"0\",\"k\",\"12\"\n", "k.csv:3: 3 fields, the header has 4");
  refused(raw + "\"0\",\"k\",\"12\",\"13\",\"14\"\n", "k.csv:3: 5 fields, the header has 4");
  refused("\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\"\n\"\",\"\"\n",
          "k.csv:2: 2 fields, the header has 3");
}

TEST_CASE("a CSV given where a JSON file goes is named as a CSV, not as a JSON syntax error") {
  // `iosim validate export.csv` (the --ncu flag left out) said "not valid JSON: parse error at
  // line 1, column 1".
  const std::string export_csv = kData + "ncu_wg1_h100.csv";
  CHECK_THROWS_WITH_AS(validate_measurements(export_csv, ""),
                       doctest::Contains("ncu_wg1_h100.csv: a CSV file, not JSON; measured files "
                                         "are iosim-measurements JSON; an Nsight Compute CSV "
                                         "export goes with --ncu FILE.csv"),
                       ConfigError);
  CHECK_FALSE(looks_like_csv("{\"a\": 1,"));
  CHECK_FALSE(looks_like_csv("[1, 2"));
  CHECK(looks_like_csv("==PROF== note\n\"ID\",\"Kernel Name\"\n"));
  CHECK_THROWS_WITH_AS(parse_json_strictly("{\"a\": 1,", "f.json"),
                       doctest::Contains("f.json: not valid JSON"), ConfigError);
}

}  // namespace iosim
