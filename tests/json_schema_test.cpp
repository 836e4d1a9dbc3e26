// Sweep files read back against the schema they were written by (api/json_schema.hpp, issue
// #50's S2: a row's keys that the report does not use took values of any type), and measured
// files against schemas/measurements.schema.json (S1). The checker's keywords on small schemas,
// the embedded schemas within its subset, every committed measured file within its schema, and a
// property over every leaf of real sweep rows and measured files: a value of the wrong type
// anywhere is refused, naming its path.
#include "api/json_schema.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>

#include "algorithms/kernel_description.hpp"
#include "api/sweep.hpp"
#include "api/validation.hpp"
#include "reports/sweep_file.hpp"
#include "sim/base/errors.hpp"
#include "tests/test_support.hpp"

using namespace iosim;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const JsonSchemas& small_schemas() {
  static const JsonSchemas schemas(
      std::map<std::string, std::string>{{"a.schema.json", R"({
    "type": "object", "required": ["n"], "additionalProperties": false,
    "properties": {
      "n": {"type": "integer", "minimum": 1},
      "x": {"type": ["number", "null"], "exclusiveMaximum": 1},
      "s": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 4},
      "e": {"enum": ["on", "off"]},
      "v": {"type": "array", "items": {"$ref": "b.schema.json#/$defs/pos"}, "maxItems": 2},
      "o": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 10}]},
      "k": {"if": {"const": 0}, "then": true, "else": {"minimum": 5}},
      "m": {"not": {"required": ["bad"]}, "minProperties": 1}
    }})"},
                                         {"b.schema.json", R"({"$defs": {"pos": {"type": "number",
                                       "minimum": 0}}})"}});
  return schemas;
}

std::string err(const std::string& text) {
  return small_schemas().first_error(json::parse(text), "a.schema.json");
}

// Calls `bad(pointer, path, value)` for every leaf (not an object or array) of `v`, its JSON
// pointer and its path as the checker writes it (`cases[0].problem.batch`).
void each_leaf(const json& v, const std::string& pointer, const std::string& path,
               const std::function<void(const std::string&, const std::string&, const json&)>& f) {
  if (v.is_object()) {
    for (const auto& [k, c] : v.items()) each_leaf(c, pointer + "/" + k, path + "." + k, f);
  } else if (v.is_array()) {
    for (std::size_t k = 0; k < v.size(); ++k)
      each_leaf(v[k], fmt::format("{}/{}", pointer, k), fmt::format("{}[{}]", path, k), f);
  } else {
    f(pointer, path, v);
  }
}

// A string where a number was, a number where a string, an array where a null: no schema here
// takes both (a nullable string takes "7" for null).
json wrong_type(const json& v) {
  return v.is_string() ? json(7) : v.is_null() ? json::array({7}) : json("7");
}

json read_json_file(const fs::path& file) {
  std::ifstream in(file);
  return json::parse(in);
}

}  // namespace

TEST_CASE("JSON schema: each keyword of the subset, golden cases") {
  CHECK(err(R"({"n": 3})").empty());
  CHECK(err(R"({"n": 3.0})").empty());  // an integer to JSON Schema
  CHECK(err(R"({"n": 3.5})") == "n must be an integer, not a number");
  CHECK(err(R"({"n": 0})") == "n must be at least 1");
  CHECK(err(R"({})") == "the document lacks the key \"n\"");
  CHECK(err(R"({"n": 1, "y": 2})") ==
        "the document has a key \"y\" that its schema does not define");
  CHECK(err(R"({"n": 1, "x": null})").empty());
  CHECK(err(R"({"n": 1, "x": 1})") == "x must be below 1");
  CHECK(err(R"({"n": 1, "x": "1"})") == "x must be a number or null, not a string");
  CHECK(err(R"({"n": 1, "s": "abc"})").empty());
  CHECK(err(R"({"n": 1, "s": "aBc"})") == "s must match \"^[a-z]+$\"");
  CHECK(err(R"({"n": 1, "s": "abcde"})") == "s must have at most 4 characters");
  CHECK(err(R"({"n": 1, "e": "auto"})") == "e must be one of [\"on\",\"off\"]");
  CHECK(err(R"({"n": 1, "v": [0, 2.5]})").empty());
  CHECK(err(R"({"n": 1, "v": [0, -1]})") == "v[1] must be at least 0");  // $ref across files
  CHECK(err(R"({"n": 1, "v": [0, 1, 2]})") == "v must have at most 2 items");
  CHECK(err(R"({"n": 1, "o": 3})").empty());
  CHECK(err(R"({"n": 1, "o": 12})") == "o matches more than one of its alternatives");
  CHECK(err(R"({"n": 1, "o": 2.5})") == "o must be an integer, not a number");
  CHECK(err(R"({"n": 1, "k": 0})").empty());
  CHECK(err(R"({"n": 1, "k": 2})") == "k must be at least 5");
  CHECK(err(R"({"n": 1, "m": {"bad": 1}})") == "m must not match {\"required\":[\"bad\"]}");
  CHECK(err(R"({"n": 1, "m": {}})") == "m must have at least 1 keys");
}

TEST_CASE("JSON schema: the embedded schemas use only the keywords the checker knows") {
  for (const std::string schema :
       {"run.schema.json", "sweep.schema.json", "kernel.schema.json", "measurements.schema.json"}) {
    CAPTURE(schema);
    CHECK(JsonSchemas::embedded().unknown_keywords(schema) == "");
    // Every document a schema refers to is embedded too (run.schema.json's kernel description is
    // kernel.schema.json: a sweep of --kernel FILE was an internal error without it).
    CHECK(JsonSchemas::embedded().unresolved_refs(schema) == "");
  }
  CHECK(small_schemas().unresolved_refs("a.schema.json") == "");
  const JsonSchemas dangling(std::map<std::string, std::string>{
      {"d.schema.json", R"({"items": {"$ref": "e.schema.json#/x"}, "not": {"$ref": "#/nope"}})"}});
  CHECK(dangling.unresolved_refs("d.schema.json") == "e.schema.json#/x, #/nope");
  CHECK(small_schemas().unknown_keywords("a.schema.json") == "");
  const JsonSchemas odd(std::map<std::string, std::string>{
      {"c.schema.json", R"({"properties": {"a": {"patternProperties": {}}}})"}});
  CHECK(odd.unknown_keywords("c.schema.json") == "patternProperties");
}

TEST_CASE("sweep files: a value of the wrong type at any key of a row is refused, by its path" *
          doctest::test_suite("long")) {
  // A sweep of forward, decode, grouped-query and described points, so that the rows carry every
  // optional block the writer emits; each leaf in turn gets a value of another JSON type.
  std::vector<SweepPoint> points;
  std::size_t i = 0;
  for (const char* algo : {"standard", "flash2", "flash3", "flash-decoding"}) {
    RunRequest r = test::request(algo, 1, 4, std::string(algo) == "flash-decoding" ? 1 : 256, 64);
    if (std::string(algo) == "flash-decoding") r.problem.seq_kv = 1024;
    if (std::string(algo) == "flash2") r.problem.kv_heads = 2;
    points.push_back({i++, "h100-sxm5-80gb", r});
  }
  // And a kernel description (its own schema, kernel.schema.json, which run.schema.json refers to).
  RunRequest described = test::request("flash2", 1, 4, 256, 64);
  described.kernel = std::make_shared<const KernelDescription>(
      load_kernel_description(std::string(IOSIM_REPO_DIR) + "/docs/kernels/wg1_tma_fwd.yaml"));
  points.push_back({i++, "h100-sxm5-80gb", described});
  std::map<std::string, HardwareProfile> profiles = {
      {"h100-sxm5-80gb", test::profile("h100-sxm5-80gb")}};
  const SweepDescription description{{{"--algo", {"standard", "flash2"}}}, points.size(), {}};
  const json doc =
      json::parse(sweep_json(description, points, run_sweep(points, profiles, {2, {}}), profiles));
  const fs::path dir = fs::temp_directory_path() / "iosim_json_schema_test";
  fs::create_directories(dir);
  const fs::path file = dir / "s.json";
  const auto load = [&](const json& d) {
    std::ofstream(file) << d.dump();
    try {
      load_sweeps({file});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  REQUIRE(load(doc).empty());
  // Every leaf of every row: its JSON pointer and a value of another type, against the schema
  // load_sweeps() checks a file by (every tenth leaf under the sanitizers: test::kept).
  int leaves = 0, checked = 0, refused = 0;
  std::function<void(const json&, const std::string&, const std::string&)> walk =
      [&](const json& v, const std::string& pointer, const std::string& path) {
        if (v.is_object()) {
          for (const auto& [k, c] : v.items()) walk(c, pointer + "/" + k, path + "." + k);
          return;
        }
        if (v.is_array()) {
          for (std::size_t k = 0; k < v.size(); ++k)
            walk(v[k], fmt::format("{}/{}", pointer, k), fmt::format("{}[{}]", path, k));
          return;
        }
        if (!test::kept(leaves++)) return;
        json bad = doc;
        // A string where a number was, a number where a string, an array where a null: no
        // schema here takes both (a nullable string takes "7" for null).
        bad[json::json_pointer(pointer)] = v.is_string() ? json(7)
                                           : v.is_null() ? json::array({7})
                                                         : json("7");
        const std::string e = JsonSchemas::embedded().first_error(bad, "sweep.schema.json");
        ++checked;
        CAPTURE(path);
        CAPTURE(e);
        CHECK(e.find(path.substr(1)) != std::string::npos);
        refused += !e.empty();
      };
  for (std::size_t r = 0; r < doc["rows"].size(); ++r) {
    walk(doc["rows"][r], fmt::format("/rows/{}", r), fmt::format(".rows[{}]", r));
  }
  MESSAGE(refused, " of ", checked, " leaves refused with a value of the wrong type");
  CHECK(leaves > 400);
  CHECK(refused == checked);
  // And the report's reader refuses such a file (exit 2 on the CLI), naming the file and the key.
  json bad = doc;
  bad["rows"][1]["counters"]["per_tensor"]["O"]["l2_write_bytes"] = "12";
  const std::string e = load(bad);
  CHECK(e.find(file.string()) != std::string::npos);
  CHECK(e.find("rows[1].counters.per_tensor.O.l2_write_bytes must be an integer, not a string") !=
        std::string::npos);
}

TEST_CASE("measured files: every committed one conforms to measurements.schema.json" *
          doctest::test_suite("long")) {
  // Every iosim-measurements file under cuda_validate/measurements/ (those `iosim validate DIR`
  // reads and those it does not take yet: PyTorch, cuDNN, repeats) and the tests' own; parsed
  // and checked only, not predicted (every sixth under the sanitizers: 14 MB of JSON).
  int files = 0;
  for (const char* dir : {"cuda_validate/measurements", "tests/data", "tests/fuzz/corpus"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(IOSIM_REPO_DIR) / dir)) {
      if (entry.path().extension() != ".json" || !entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      if (text.find("\"iosim-measurements\"") == std::string::npos) continue;  // parse only these
      const json doc = json::parse(text, nullptr, false);
      if (!doc.is_object() || doc.value("format", json()) != "iosim-measurements") continue;
      if (!test::kept(files++)) continue;
      CAPTURE(entry.path().string());
      CHECK(JsonSchemas::embedded().first_error(doc, "measurements.schema.json") == "");
    }
  }
  CHECK(files >= 60);
}

TEST_CASE("measured files: a value of the wrong type at any key is refused, by its path" *
          doctest::test_suite("long")) {
  // The flash/standard forward cases with ncu counters, clocks, settings and device
  // (measurements_small.json), and cases carrying a kernel description and a rank group
  // (measurements_ranked.json): each leaf in turn gets a value of another JSON type.
  const fs::path data = fs::path(IOSIM_REPO_DIR) / "tests/data";
  int leaves = 0, checked = 0, refused = 0;
  for (const char* name : {"measurements_small.json", "measurements_ranked.json"}) {
    const json doc = read_json_file(data / name);
    REQUIRE(JsonSchemas::embedded().first_error(doc, "measurements.schema.json") == "");
    each_leaf(doc, "", "", [&](const std::string& pointer, const std::string& path, const json& v) {
      if (!test::kept(leaves++)) return;
      json bad = doc;
      bad[json::json_pointer(pointer)] = wrong_type(v);
      const std::string e = JsonSchemas::embedded().first_error(bad, "measurements.schema.json");
      ++checked;
      CAPTURE(name);
      CAPTURE(path);
      CAPTURE(e);
      CHECK(e.find(path.substr(1)) != std::string::npos);
      refused += !e.empty();
    });
  }
  MESSAGE(refused, " of ", checked, " leaves refused with a value of the wrong type");
  CHECK(leaves > 500);
  CHECK(refused == checked);
}

TEST_CASE("measured files: iosim validate refuses a key of the wrong type it does not read") {
  // check.reference and settings.ncu.metrics are not read by the prediction: they were accepted
  // with any type. The message names the file and the key's path.
  const fs::path dir = fs::temp_directory_path() / "iosim_json_schema_test";
  fs::create_directories(dir);
  json doc = read_json_file(fs::path(IOSIM_REPO_DIR) / "tests/data/measurements_small.json");
  doc["cases"] = json::array({doc["cases"][0]});  // one case to predict: fast under sanitizers
  const auto message = [&](const std::string& pointer, const json& value) {
    json bad = doc;
    bad[json::json_pointer(pointer)] = value;
    const fs::path file = dir / "measurements_bad.json";
    std::ofstream(file) << bad.dump();
    try {
      validate_measurements(file, "");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string e = message("/cases/0/check/reference", 7);
  CHECK(e.find("measurements_bad.json") != std::string::npos);
  CHECK(e.find("cases[0].check.reference must be a string, not an integer") != std::string::npos);
  CHECK(message("/settings/ncu/metrics/0", json::array()).find("settings.ncu.metrics[0] must be") !=
        std::string::npos);
  // The reader's own message stays first where it has one (a range and a unit).
  CHECK(message("/cases/0/kernels/0/metrics/gpu__time_duration.sum", 0)
            .find("'gpu__time_duration.sum' = 0 must be in (0, 1000000000000] ns") !=
        std::string::npos);
}
