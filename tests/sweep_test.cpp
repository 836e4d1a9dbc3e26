// Sweeps and sweep reports: value lists and ranges, the cartesian product, shards, determinism
// whatever the thread count, infeasible and invalid points as rows, merging sweep files, the best
// block table and the report writers.
#include "api/sweep.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "reports/sweep_file.hpp"
#include "reports/sweep_report.hpp"
#include "sim/base/errors.hpp"
#include "tests/test_support.hpp"

using namespace iosim;
namespace fs = std::filesystem;

namespace {

// The ConfigError message of `f()`, or "" when it does not throw one.
template <typename F>
std::string config_error(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A small sweep: both profiles' worth of algorithms, N and block sizes, one infeasible tiling
// (flash2 with 1024 x 1024 blocks does not fit in shared memory).
std::vector<SweepPoint> small_points(std::vector<std::string>* profile_names = nullptr) {
  std::vector<SweepPoint> points;
  const std::vector<std::string> profiles = {"h100-sxm5-80gb", "a100-sxm4-80gb"};
  if (profile_names) *profile_names = profiles;
  std::size_t i = 0;
  for (const std::string& p : profiles) {
    for (const char* algo : {"standard", "flash1", "flash2"}) {
      for (std::int64_t n : {128, 256}) {
        for (std::int64_t bkv : {32, 64, 1024}) {
          RunRequest r = test::request(algo, 1, 2, n, 64, bkv == 1024 ? 1024 : 0, bkv);
          points.push_back({i++, p, r});
        }
      }
    }
  }
  return points;
}

std::map<std::string, HardwareProfile> profiles_of(const std::vector<SweepPoint>& points) {
  std::map<std::string, HardwareProfile> m;
  for (const SweepPoint& p : points) m.emplace(p.profile, test::profile(p.profile));
  return m;
}

SweepDescription description_of(std::size_t total, Shard shard = {}) {
  return {{{"--seq", {"128", "256"}}, {"--block-kv", {"32", "64", "1024"}}}, total, shard};
}

fs::path temp_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "iosim_sweep_test";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST_CASE("sweep values: lists, geometric and arithmetic ranges") {
  using V = std::vector<std::int64_t>;
  CHECK(parse_int_values("--seq", "512:16384:x2") == V{512, 1024, 2048, 4096, 8192, 16384});
  CHECK(parse_int_values("--seq", "64:256:+64") == V{64, 128, 192, 256});
  CHECK(parse_int_values("--seq", "64:256:64") == V{64, 128, 192, 256});
  CHECK(parse_int_values("--seq", "10:25:x2") == V{10, 20});
  CHECK(parse_int_values("--seq", "1,2,5:7") == V{1, 2, 5, 6, 7});
  CHECK(parse_int_values("--seq", "7") == V{7});
  CHECK(parse_int_values("--seq", "-3") == V{-3});  // the problem check rejects it later
  // The last value of a huge geometric range does not overflow.
  const V big = parse_int_values("--seq", "1:9223372036854775807:x2");
  CHECK(big.size() == 63);
  CHECK(big.back() == (std::int64_t{1} << 62));

  // Property: a geometric range starts at FROM, multiplies by the factor, stops at the last
  // value <= TO.
  for (std::int64_t from : {1, 3, 100}) {
    for (std::int64_t factor : {2, 3, 10}) {
      for (std::int64_t to : {from, from * 7, from * 1000 + 1}) {
        const V v = parse_int_values("--seq", std::to_string(from) + ":" + std::to_string(to) +
                                                  ":x" + std::to_string(factor));
        REQUIRE(!v.empty());
        CHECK(v.front() == from);
        for (std::size_t i = 1; i < v.size(); ++i) CHECK(v[i] == v[i - 1] * factor);
        CHECK(v.back() <= to);
        CHECK(v.back() * factor > to);
      }
    }
  }
}

TEST_CASE("sweep values: mistakes name the flag and the value") {
  for (const char* bad : {"", "a", "5:1", "1:8:x1", "1:8:+0", "0:8:x2", "1,1", "1:2:3:4", "1,",
                          "1:8:y2", "64:128:x2,128"}) {
    const std::string msg = config_error([&] { parse_int_values("--block-kv", bad); });
    CHECK_MESSAGE(msg.find("--block-kv") != std::string::npos, "'" << bad << "' -> " << msg);
  }
  CHECK(config_error([] { parse_double_values("--dropout", "0:1"); }).find("integer flags") !=
        std::string::npos);
  CHECK(parse_double_values("--dropout", "0,0.1") == std::vector<double>{0, 0.1});
  CHECK(!config_error([] { parse_string_values("--algo", "flash1,,flash2"); }).empty());
  CHECK(!config_error([] { parse_string_values("--algo", "flash2,flash2"); }).empty());
  CHECK(parse_string_values("--algo", "standard,flash2") ==
        std::vector<std::string>{"standard", "flash2"});
}

TEST_CASE("cartesian product: odometer order, counts, limit") {
  std::vector<std::vector<std::size_t>> seen;
  for_each_combination({2, 1, 3}, [&](const std::vector<std::size_t>& i) { seen.push_back(i); });
  REQUIRE(seen.size() == 6);
  CHECK(seen[0] == std::vector<std::size_t>{0, 0, 0});
  CHECK(seen[1] == std::vector<std::size_t>{0, 0, 1});
  CHECK(seen[3] == std::vector<std::size_t>{1, 0, 0});
  CHECK(std::set<std::vector<std::size_t>>(seen.begin(), seen.end()).size() == 6);
  CHECK(combination_count({4, 0, 5}) == 0);
  CHECK(combination_count({}) == 1);
  CHECK(!config_error([] { combination_count({100000, 100000, 100000}); }).empty());
}

TEST_CASE("shards partition the points") {
  CHECK(!config_error([] { parse_shard("0/3"); }).empty());
  CHECK(!config_error([] { parse_shard("4/3"); }).empty());
  CHECK(!config_error([] { parse_shard("1/0"); }).empty());
  CHECK(config_error([] { parse_shard("x"); }).find("--shard") != std::string::npos);
  for (int n : {1, 2, 3, 7}) {
    for (std::size_t point = 0; point < 50; ++point) {
      int holders = 0;
      for (int k = 1; k <= n; ++k) holders += parse_shard(fmt::format("{}/{}", k, n)).holds(point);
      CHECK(holders == 1);
    }
  }
}

TEST_CASE(
    "run_sweep: byte-identical output whatever the thread count; infeasible points are rows") {
  const std::vector<SweepPoint> points = small_points();
  const auto profiles = profiles_of(points);
  const SweepDescription d = description_of(points.size());
  const std::vector<Report> one = run_sweep(points, profiles, {1, {}});
  const std::vector<Report> three = run_sweep(points, profiles, {3, {}});
  CHECK(sweep_json(d, points, one, profiles) == sweep_json(d, points, three, profiles));
  CHECK(sweep_csv(points, one) == sweep_csv(points, three));
  REQUIRE(one.size() == points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    CHECK(one[i].request.algorithm == points[i].request.algorithm);
    CHECK(one[i].request.problem.seq == points[i].request.problem.seq);
    // The 1024 x 1024 tile does not fit in any GPU's shared memory; the others do.
    CHECK(one[i].feasible() == (points[i].request.tiling.block_kv != 1024));
    if (!one[i].feasible())
      CHECK(one[i].infeasible_reason.find("shared memory") != std::string::npos);
  }
  const std::string csv = sweep_csv(points, one);
  CHECK(csv.rfind("point,profile,algorithm,", 0) == 0);
  CHECK(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')) == points.size() + 1);
}

TEST_CASE("run_sweep: progress reaches the total; rejected input becomes a row, or an error") {
  std::vector<SweepPoint> points = small_points();
  points.resize(4);
  // --causal with N_kv < N is refused by simulate(): an "invalid input" row.
  points[1].request.problem.causal = true;
  points[1].request.problem.seq_kv = points[1].request.problem.seq / 2;
  const auto profiles = profiles_of(points);
  std::size_t calls = 0;
  SweepProgress last;
  const std::vector<Report> r = run_sweep(points, profiles, {2, [&](const SweepProgress& p) {
                                                               ++calls;
                                                               last = p;
                                                             }});
  CHECK(calls == points.size());
  CHECK(last.done == points.size());
  CHECK(last.done_work == doctest::Approx(last.total_work));
  CHECK(r[1].infeasible_reason.rfind("invalid input: ", 0) == 0);
  CHECK(r[1].profile == "h100-sxm5-80gb");
  CHECK(r[0].feasible());
  // Every point rejected: the sweep is a mistake, not a result.
  for (SweepPoint& p : points) p.request.problem.dropout = 1.5;
  CHECK(config_error([&] {
          run_sweep(points, profiles, {2, {}});
        }).find("--dropout") != std::string::npos);
  // A point whose profile was not loaded is a bug of the caller.
  CHECK_THROWS_AS(run_sweep(points, {}, {1, {}}), InternalError);
}

TEST_CASE("sweep files: shards merge into the whole sweep; duplicates and gaps are reported") {
  const std::vector<SweepPoint> points = small_points();
  const auto profiles = profiles_of(points);
  const std::vector<Report> reports = run_sweep(points, profiles, {2, {}});
  const fs::path whole =
      temp_file("whole.json", sweep_json(description_of(points.size()), points, reports, profiles));
  std::vector<fs::path> shards;
  for (int k = 1; k <= 3; ++k) {
    const Shard s{k, 3};
    std::vector<SweepPoint> sp;
    std::vector<Report> sr;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (s.holds(points[i].index)) {
        sp.push_back(points[i]);
        sr.push_back(reports[i]);
      }
    }
    shards.push_back(temp_file(fmt::format("shard{}.json", k),
                               sweep_json(description_of(points.size(), s), sp, sr, profiles)));
  }
  const SweepData all = load_sweeps({whole});
  const SweepData merged = load_sweeps(shards);
  REQUIRE(all.rows.size() == points.size());
  REQUIRE(merged.rows.size() == points.size());
  CHECK(all.profiles.size() == 2);
  CHECK(all.profiles.at("h100-sxm5-80gb").hbm_gbps > 0);
  CHECK(all.profiles.at("h100-sxm5-80gb").tensor_tflops.at("fp16") > 0);
  std::set<std::size_t> merged_points;
  for (const SweepRow& r : merged.rows) merged_points.insert(r.point);
  CHECK(merged_points.size() == points.size());
  REQUIRE(merged.coverage.size() == 1);
  CHECK(merged.coverage[0].find(fmt::format("{} of {} points", points.size(), points.size())) !=
        std::string::npos);
  CHECK(merged.coverage[0].find("incomplete") == std::string::npos);

  const SweepData partial = load_sweeps({shards[0], shards[0]});
  CHECK(partial.duplicate_rows == partial.rows.size());
  CHECK(partial.coverage[0].find("incomplete") != std::string::npos);

  // Row fields survive the round trip.
  const SweepRow& r0 = all.rows[0];
  CHECK(r0.algorithm == "standard");
  CHECK(r0.seq == 128);
  // HBM bytes count the lines left dirty in L2 at the end as written (hbm_total_bytes).
  CHECK(r0.hbm_bytes() == static_cast<double>(reports[0].engine.total.hbm_total_bytes()));
  CHECK(r0.hbm_bytes() > static_cast<double>(test::hbm_total(reports[0])));
  CHECK(!r0.per_tensor.empty());

  CHECK(config_error([] { load_sweeps({"/nonexistent/sweep.json"}); }).find("cannot read") !=
        std::string::npos);
  const fs::path bogus = temp_file("bogus.json", "{\"rows\": []}");
  CHECK(config_error([&] { load_sweeps({bogus}); }).find("not an iosim sweep file") !=
        std::string::npos);
  const fs::path broken = temp_file("broken.json", "{\"format\": \"iosim-sweep\", \"ver");
  CHECK(config_error([&] { load_sweeps({broken}); }).find("not valid JSON") != std::string::npos);
}

TEST_CASE("best block: the fewest HBM bytes and the least time of each problem") {
  const std::vector<SweepPoint> points = small_points();
  const auto profiles = profiles_of(points);
  const fs::path f =
      temp_file("best.json", sweep_json(description_of(points.size()), points,
                                        run_sweep(points, profiles, {2, {}}), profiles));
  const SweepData data = load_sweeps({f});
  const std::vector<BestBlock> best = best_blocks(data);
  CHECK(best.size() == 2 * 3 * 2);  // profiles x algorithms x N
  int tried = 0;
  for (const BestBlock& b : best) {
    tried += b.tried;
    CHECK(b.tried == 3);
    CHECK(b.feasible == 2);
    const SweepRow& h = data.rows[b.by_hbm];
    const SweepRow& t = data.rows[b.by_time];
    for (const SweepRow& r : data.rows) {
      if (!r.feasible || r.profile != h.profile || r.algorithm != h.algorithm || r.seq != h.seq) {
        continue;
      }
      CHECK(h.hbm_bytes() <= r.hbm_bytes());
      CHECK(t.time_s <= r.time_s);
    }
  }
  CHECK(tried == static_cast<int>(points.size()));
}

TEST_CASE("report writers: Markdown tables and one self-contained HTML page") {
  const std::vector<SweepPoint> points = small_points();
  const auto profiles = profiles_of(points);
  const fs::path f =
      temp_file("report.json", sweep_json(description_of(points.size()), points,
                                          run_sweep(points, profiles, {2, {}}), profiles));
  const SweepData data = load_sweeps({f});
  const std::string md = sweep_report_markdown(data, nullptr);
  CHECK(md.find("## Best block size per (N, d, profile, algorithm)") != std::string::npos);
  CHECK(md.find("| profile | algorithm | d | N |") != std::string::npos);
  CHECK(md.find("## Infeasible points (12)") != std::string::npos);
  for (const char* algo : {"standard", "flash1", "flash2"})
    CHECK(md.find(algo) != std::string::npos);

  const std::string fake_chartjs = "/* Chart.js stand-in </script> */ var Chart = {};";
  const std::string html = sweep_report_html(data, nullptr, fake_chartjs);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("Chart.js stand-in <\\/script>") != std::string::npos);  // cannot close <script>
  CHECK(html.find("id=\"iosim-data\"") != std::string::npos);
  CHECK(html.find("id=\"best-blocks\"") != std::string::npos);
  CHECK(html.find("http://") == std::string::npos);  // nothing fetched: it opens offline
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("id=\"validation\"") == std::string::npos);  // no measurements given

  CHECK(config_error([] { load_chartjs("/nonexistent/chart.js"); }).find("libjs-chart.js") !=
        std::string::npos);
}
