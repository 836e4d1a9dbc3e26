// A sweep's CSV as report reads it (reports/sweep_csv_reader.cpp): every column's values checked.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/sweep.hpp"
#include "reports/sweep_file.hpp"
#include "sim/base/errors.hpp"
#include "tests/test_support.hpp"

using namespace iosim;
namespace fs = std::filesystem;

namespace {

std::string csv_config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

fs::path csv_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "iosim_sweep_csv_test";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p;
}

}  // namespace

// Issue #50's third probe: `.nan`, `null` or `true` in a column report does not read
// (hbm_total_bytes, l2_peak_fraction), and `true` in warpgroups, were taken without a word.
// Every column of a sweep's CSV, each field in turn given a value of the wrong kind, is refused
// naming the column and the value; the file as written is read.
TEST_CASE("sweep files: every CSV column's values are checked, read by report or not") {
  // flash2 on the H100 at two N, one tiling infeasible (its counters' columns empty).
  std::vector<SweepPoint> points;
  for (const std::int64_t n : {128, 256}) {
    for (const std::int64_t bkv : {64, 1024}) {
      points.push_back({points.size(), "h100-sxm5-80gb",
                        test::request("flash2", 1, 2, n, 64, bkv == 1024 ? 1024 : 0, bkv)});
    }
  }
  const std::map<std::string, HardwareProfile> profiles = {
      {"h100-sxm5-80gb", test::profile("h100-sxm5-80gb")}};
  const std::vector<Report> reports = run_sweep(points, profiles, {2, {}});
  const std::string csv = sweep_csv(points, reports);
  REQUIRE(load_sweeps({csv_file("good.csv", csv)}).rows.size() == points.size());
  const std::size_t eol = csv.find('\n');
  std::vector<std::string> header;
  for (std::size_t at = 0; at <= eol;) {
    const std::size_t end = std::min(csv.find(',', at), eol);
    header.push_back(csv.substr(at, end - at));
    at = end + 1;
  }
  // The row's fields (no quoted field holds a comma in the first row of this sweep).
  const std::size_t eol2 = csv.find('\n', eol + 1);
  const std::string row = csv.substr(eol + 1, eol2 - eol - 1);
  std::vector<std::string> fields;
  for (std::size_t at = 0; at <= row.size();) {
    const std::size_t end = std::min(row.find(',', at), row.size());
    fields.push_back(row.substr(at, end - at));
    at = end + 1;
  }
  REQUIRE(fields.size() == header.size());
  const std::set<std::string> free_text = {"profile", "algorithm",   "infeasible_reason",
                                           "pattern", "block_table", "bound"};
  int refused = 0;
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (free_text.count(header[c])) continue;
    for (const char* wrong : {".nan", "null", "x1", "1e999"}) {
      std::vector<std::string> f = fields;
      // (a bool column's "true" and a number column's digits are valid; these are none of them)
      f[c] = wrong;
      std::string text = csv.substr(0, eol + 1);
      for (std::size_t k = 0; k < f.size(); ++k) text += (k ? "," : "") + f[k];
      text += csv.substr(eol2);
      const std::string msg = csv_config_error([&] { load_sweeps({csv_file("wrong.csv", text)}); });
      // (parse_row()'s own checks, of dtype, l2 and pass, quote the value in double quotes)
      CHECK_MESSAGE((msg.find(fmt::format("'{}' = '{}'", header[c], wrong)) != std::string::npos ||
                     msg.find(fmt::format("'{}' = \"{}\"", header[c], wrong)) != std::string::npos),
                    header[c], " = ", wrong, ": ", msg);
      ++refused;
    }
  }
  CHECK(refused > 4 * 40);  // every column but the free text ones
  // A column named twice (seq 256 and seq 999999): the first was read, the other ignored.
  std::string twice = csv.substr(0, eol) + ",seq";
  for (std::size_t at = eol; at < csv.size();) {
    const std::size_t next = csv.find('\n', at + 1);
    const std::size_t line_end = next == std::string::npos ? csv.size() : next;
    if (line_end > at + 1) twice += csv.substr(at, line_end - at) + ",999999";
    at = line_end;
  }
  twice += "\n";
  CHECK(csv_config_error([&] {
          load_sweeps({csv_file("twice.csv", twice)});
        }).find("the header names the column 'seq' twice (columns 6 and ") != std::string::npos);
}
