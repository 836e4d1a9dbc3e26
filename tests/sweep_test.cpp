// Sweeps and sweep reports: value lists and ranges, the cartesian product, shards, determinism
// whatever the thread count, infeasible and invalid points as rows, merging sweep files, the best
// block table and the report writers.
#include "api/sweep.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <tuple>

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

TEST_CASE(
    "sweep values: a repeat is found across interleaved ranges; one flag lists at most a "
    "million values") {
  // Property: over lists of overlapping ranges and single values in any order, a list is refused
  // exactly when some value occurs twice (the increasing runs are merged, not sorted whole).
  std::mt19937 rng(29);
  for (int trial = 0; trial < 400; ++trial) {
    std::string text;
    std::vector<std::int64_t> all;
    const int parts = 1 + static_cast<int>(rng() % 6);
    for (int p = 0; p < parts; ++p) {
      const std::int64_t from = 1 + static_cast<std::int64_t>(rng() % 200);
      if (!text.empty()) text += ",";
      if (rng() % 3 == 0) {
        text += std::to_string(from);
        all.push_back(from);
      } else {
        const std::int64_t to = from + static_cast<std::int64_t>(rng() % 300);
        const std::int64_t step = 1 + static_cast<std::int64_t>(rng() % 40);
        text += std::to_string(from) + ":" + std::to_string(to) + ":+" + std::to_string(step);
        for (std::int64_t v = from; v <= to; v += step) all.push_back(v);
      }
    }
    const bool repeats = std::set<std::int64_t>(all.begin(), all.end()).size() < all.size();
    if (repeats) {
      CHECK_MESSAGE(
          config_error([&] { parse_int_values("--seq", text); }).find("twice") != std::string::npos,
          text);
    } else {
      CHECK_MESSAGE(parse_int_values("--seq", text) == all, text);
    }
  }
  // A million values is the most one flag takes, however they are written (fuzz_sweep_spec timed
  // out when ten million were sorted under the sanitizers).
  CHECK(parse_int_values("--seq", "1:1000000").size() == kMaxAxisValues);
  for (const char* over : {"1:1000001", "0:999999,-1", "1:9999999", "1:500000,1000001:1500001"}) {
    CHECK_MESSAGE(config_error([&] {
                    parse_int_values("--seq", over);
                  }).find("more than 1000000 values") != std::string::npos,
                  over);
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
  // So do its tensors: each one's lines left dirty at the end are read back, and they sum to the
  // row's (the report's per-tensor chart gave the output no HBM bar when they were all dirty).
  double dirty = 0;
  for (const auto& [name, v] : r0.per_tensor) dirty += v[4];
  CHECK(dirty == r0.hbm_dirty_at_end_bytes);
  CHECK(r0.per_tensor.at("O")[4] ==
        static_cast<double>(reports[0].engine.total.l2_dirty_at_end[index_of(TensorId::O)]));

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
  // The ratio's bound is the two-level model's; the L2-on bytes beside it may fall below it, and
  // the text says so (it read "HBM / lower bound" and "no schedule falls below the compulsory
  // line", false of L2-on DRAM bytes; issue #51).
  CHECK(md.find("| HBM / two-level lower bound |") != std::string::npos);
  CHECK(md.find("With the L2 on, HBM bytes are DRAM bytes after the L2") != std::string::npos);
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
  CHECK(html.find("no schedule falls below the compulsory line") == std::string::npos);
  CHECK(html.find("they may fall below the lower bound") != std::string::npos);

  CHECK(config_error([] { load_chartjs("/nonexistent/chart.js"); }).find("libjs-chart.js") !=
        std::string::npos);
}

namespace {

// A sweep of tiles: flash1 and flash2 over block_q x block_kv at two N on the H100 profile with
// its default clock policy (the power model picks each point's clock), one tile too large.
std::vector<SweepPoint> tile_points() {
  std::vector<SweepPoint> points;
  std::size_t i = 0;
  for (const char* algo : {"flash1", "flash2"}) {
    for (std::int64_t n : {256, 512}) {
      for (std::int64_t bq : {64, 128}) {
        for (std::int64_t bkv : {32, 64, 512}) {
          points.push_back({i++, "h100-sxm5-80gb", test::request(algo, 1, 4, n, 64, bq, bkv)});
        }
      }
    }
  }
  return points;
}

}  // namespace

TEST_CASE("tile heatmap: each shape's best tile is the fastest row of the sweep's JSON") {
  const std::vector<SweepPoint> points = tile_points();
  const auto profiles = profiles_of(points);
  const std::string text = sweep_json(description_of(points.size()), points,
                                      run_sweep(points, profiles, {2, {}}), profiles);
  const SweepData data = load_sweeps({temp_file("tiles.json", text)});
  // The fastest row per (algorithm, N), read from the JSON itself (ties: fewer HBM bytes).
  struct Fastest {
    double time = 0, hbm = 0;
    std::int64_t bq = 0, bkv = 0;
    int rows = 0;
  };
  std::map<std::pair<std::string, std::int64_t>, Fastest> fastest;
  std::set<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>> infeasible;
  const nlohmann::json doc = nlohmann::json::parse(text);
  for (const nlohmann::json& r : doc["rows"]) {
    const std::string algo = r["algorithm"];
    const std::int64_t n = r["problem"]["seq"], bq = r["tiling"]["block_q"],
                       bkv = r["tiling"]["block_kv"];
    if (!r["feasible"].get<bool>()) {
      infeasible.insert({algo, n, bq, bkv});
      continue;
    }
    // Every point's clock was the power model's: a value, not part of the problem.
    CHECK(r["power"]["clock_given"] == false);
    const double t = r["time_s"], hbm = r["counters"]["hbm_total_bytes"];
    Fastest& f = fastest[{algo, n}];
    if (f.rows++ == 0 || t < f.time || (t == f.time && hbm < f.hbm)) f = {t, hbm, bq, bkv, f.rows};
  }
  REQUIRE(fastest.size() == 4);
  REQUIRE(!infeasible.empty());  // 128 x 512 does not fit
  const std::vector<TileHeatmap> maps = tile_heatmaps(data);
  REQUIRE(maps.size() == 4);  // one per shape, whatever clock each point ran at
  for (const TileHeatmap& h : maps) {
    const SweepRow& first = data.rows[h.best.first];
    CAPTURE(first.algorithm);
    CAPTURE(first.seq);
    const Fastest& f = fastest.at({first.algorithm, first.seq});
    CHECK(h.block_q == std::vector<std::int64_t>{64, 128});
    CHECK(h.block_kv == std::vector<std::int64_t>{32, 64, 512});
    CHECK(h.best.tried == 6);
    const SweepRow& best = data.rows[h.best.by_time];
    CHECK(best.block_q == f.bq);
    CHECK(best.block_kv == f.bkv);
    CHECK(best.time_s == f.time);
    int best_cells = 0;
    for (std::size_t q = 0; q < h.block_q.size(); ++q) {
      for (std::size_t kv = 0; kv < h.block_kv.size(); ++kv) {
        const TileCell& c = h.at(q, kv);
        CHECK(c.tried);
        const SweepRow& r = data.rows[c.row];
        CHECK(r.block_q == h.block_q[q]);
        CHECK(r.block_kv == h.block_kv[kv]);
        CHECK(c.feasible ==
              !infeasible.count({first.algorithm, first.seq, h.block_q[q], h.block_kv[kv]}));
        if (c.feasible) CHECK(r.time_s >= f.time);
        best_cells += c.feasible && c.row == h.best.by_time;
      }
    }
    CHECK(best_cells == 1);
  }
  // The report: one best mark per shape in both formats, infeasible tiles shown as such, and the
  // best-block table one row per shape with no clock column.
  const std::string md = sweep_report_markdown(data, nullptr);
  CHECK(md.find("## Time by tile (Br x Bc): which tile is fastest") != std::string::npos);
  CHECK(md.find("### h100-sxm5-80gb, flash2, d=64") != std::string::npos);
  CHECK(md.find("| N | Br \\ Bc | 32 | 64 | 512 |") != std::string::npos);
  std::size_t marks = 0;
  for (std::size_t at = md.find("** best |"); at != std::string::npos;
       at = md.find("** best |", at + 1))
    ++marks;
  CHECK(marks == 4);
  CHECK(md.find("| infeasible |") != std::string::npos);
  CHECK(md.find("SM MHz") == std::string::npos);
  CHECK(md.find("| 1 / 1 |") == std::string::npos);
  const std::string html = sweep_report_html(data, nullptr, "var Chart = {};");
  std::size_t stars = 0;
  for (std::size_t at = html.find("class=\"best\""); at != std::string::npos;
       at = html.find("class=\"best\"", at + 1))
    ++stars;
  CHECK(stars == 4);
  CHECK(html.find("<td class=\"infeasible\" title=\"flash2 N=256 Br x Bc = 128 x 512: ") !=
        std::string::npos);
}

TEST_CASE("best tiles: the report names every other tiling within the tie band, and no other") {
  // Issue #46: the sweep report ranks as `tune` does; a tile within kTieBand (5%) of the fastest
  // is one iosim cannot order against it on a GPU, so the report must name them all. Over every
  // problem of a sweep of tiles: the row's tie cell names exactly the feasible rows within the
  // band (three at most by tile, the rest counted), fastest first, each above the best's time.
  const std::vector<SweepPoint> points = tile_points();
  const auto profiles = profiles_of(points);
  const SweepData data = load_sweeps(
      {temp_file("ties.json", sweep_json(description_of(points.size()), points,
                                         run_sweep(points, profiles, {2, {}}), profiles))});
  const std::string md = sweep_report_markdown(data, nullptr);
  const std::string header = "also within 5% (tie band)";
  REQUIRE(md.find(header) != std::string::npos);
  // The best table's rows, in best_blocks() order: its cells split on " | ".
  const std::size_t table = md.find("| profile | algorithm | d | N |");
  REQUIRE(table != std::string::npos);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t at = table; at < md.size() && md[at] == '|';) {
    const std::size_t end = md.find('\n', at);
    std::vector<std::string> cells;
    std::string line = md.substr(at + 2, end - at - 4);
    for (std::size_t c = 0, next = 0; next != std::string::npos; c = next + 3) {
      next = line.find(" | ", c);
      cells.push_back(line.substr(c, next == std::string::npos ? std::string::npos : next - c));
    }
    rows.push_back(cells);
    at = end + 1;
  }
  const std::size_t col =
      static_cast<std::size_t>(std::find(rows[0].begin(), rows[0].end(), header) - rows[0].begin());
  REQUIRE(col < rows[0].size());
  const std::vector<BestBlock> best = best_blocks(data);
  REQUIRE(rows.size() == best.size() + 2);  // header, separator
  int with_ties = 0;
  for (std::size_t k = 0; k < best.size(); ++k) {
    const std::string& cell = rows[k + 2][col];
    CAPTURE(cell);
    const double t = data.rows[best[k].by_time].time_s;
    std::vector<double> within;
    for (const std::size_t i : best[k].rows) {
      const SweepRow& r = data.rows[i];
      if (i != best[k].by_time && r.feasible && r.time_s <= t * 1.05) within.push_back(r.time_s);
    }
    if (within.empty()) {
      CHECK(cell == "none");
      continue;
    }
    ++with_ties;
    // "+x.y%" per named tile, then "and n more": as many as there are rows in the band.
    std::size_t named = 0;
    double last = 0;
    for (std::size_t at = cell.find("(+"); at != std::string::npos; at = cell.find("(+", at + 1)) {
      const double pct = std::stod(cell.substr(at + 2));
      CHECK(pct >= last);  // fastest first
      CHECK(pct <= 5.0 + 0.05);
      last = pct;
      ++named;
    }
    const std::size_t more =
        cell.find("and ") == std::string::npos ? 0 : std::stoul(cell.substr(cell.find("and ") + 4));
    CHECK(named == std::min<std::size_t>(within.size(), 3));
    CHECK(named + more == within.size());
  }
  MESSAGE(with_ties, " of ", best.size(), " problems have tiles within the tie band");
  CHECK(with_ties > 0);
}

TEST_CASE("report: a best tile names every tiling axis its problem's rows differ in") {
  // flash2 over block_kv x stages x threads: "best 128 x 64" alone hid which stages and threads
  // won.
  std::vector<SweepPoint> points;
  for (std::int64_t bkv : {64, 128}) {
    for (int stages : {1, 2, 3}) {
      for (int threads : {128, 256}) {
        RunRequest r = test::request("flash2", 1, 4, 512, 64, 128, bkv);
        r.tiling.pipeline_stages = stages;
        r.tiling.threads = threads;
        points.push_back({points.size(), "h100-sxm5-80gb", r});
      }
    }
  }
  const auto profiles = profiles_of(points);
  const std::vector<Report> reports = run_sweep(points, profiles, {2, {}});
  for (const fs::path& f : {temp_file("axes.json", sweep_json(description_of(points.size()), points,
                                                              reports, profiles)),
                            temp_file("axes.csv", sweep_csv(points, reports))}) {
    CAPTURE(f);
    const SweepData data = load_sweeps({f});
    const std::vector<BestBlock> best = best_blocks(data);
    REQUIRE(best.size() == 1);
    REQUIRE(best[0].feasible > 0);
    const SweepRow& t = data.rows[best[0].by_time];
    const SweepRow& h = data.rows[best[0].by_hbm];
    const std::string md = sweep_report_markdown(data, nullptr);
    CHECK(md.find("| best Br x Bc, stages, threads (HBM) |") != std::string::npos);
    CHECK(md.find("| best Br x Bc, stages, threads (time) |") != std::string::npos);
    const std::string time_cell =
        fmt::format("| 128 x {}, stages {}, threads {} |", t.block_kv, t.stages, t.threads);
    const std::string hbm_cell =
        fmt::format("| 128 x {}, stages {}, threads {} |", h.block_kv, h.stages, h.threads);
    CHECK(md.find(time_cell) != std::string::npos);
    CHECK(md.find(hbm_cell) != std::string::npos);
    // The heatmap's best cell says which stages and threads its time is of.
    CHECK(md.find(fmt::format("best (stages {}, threads {}) |", t.stages, t.threads)) !=
          std::string::npos);
    const std::string html = sweep_report_html(data, nullptr, "var Chart = {};");
    CHECK(html.find(fmt::format("Br x Bc = 128 x {} (stages {}, threads {})", t.block_kv, t.stages,
                                t.threads)) != std::string::npos);
    // The charts' data: each point's tile as the tables name it (the bytes-per-tensor chart
    // labelled its pick "128x64", the roofline's tooltip "Br x Bc = 128 x 64").
    CHECK(html.find(fmt::format("\"tile\":\"128 x {}, stages {}, threads {}\"", t.block_kv,
                                t.stages, t.threads)) != std::string::npos);
    CHECK(html.find("picked[i].tile") != std::string::npos);
  }
}

TEST_CASE("report reads a sweep's CSV: the same rows, best tiles and heatmaps as its JSON") {
  const std::vector<SweepPoint> points = tile_points();
  const auto profiles = profiles_of(points);
  const std::vector<Report> reports = run_sweep(points, profiles, {2, {}});
  const SweepData json_data = load_sweeps({temp_file(
      "csv_twin.json", sweep_json(description_of(points.size()), points, reports, profiles))});
  const fs::path csv = temp_file("sweep.csv", sweep_csv(points, reports));
  const SweepData csv_data = load_sweeps({csv});
  REQUIRE(csv_data.rows.size() == json_data.rows.size());
  for (std::size_t i = 0; i < csv_data.rows.size(); ++i) {
    const SweepRow &c = csv_data.rows[i], &j = json_data.rows[i];
    CAPTURE(i);
    CHECK(c.point == j.point);
    CHECK(c.algorithm == j.algorithm);
    CHECK(c.seq == j.seq);
    CHECK(c.block_q == j.block_q);
    CHECK(c.block_kv == j.block_kv);
    CHECK(c.feasible == j.feasible);
    CHECK(c.requested_clock_mhz == j.requested_clock_mhz);
    CHECK(c.hbm_bytes() == j.hbm_bytes());
    // 9 digits in the CSV; the scale a picosecond, not Approx's default 1 s
    CHECK(c.time_s == doctest::Approx(j.time_s).epsilon(1e-8).scale(1e-12));
    CHECK(c.lower_bound_bytes == j.lower_bound_bytes);
  }
  CHECK(csv_data.profiles.at("h100-sxm5-80gb").hbm_gbps ==
        json_data.profiles.at("h100-sxm5-80gb").hbm_gbps);
  REQUIRE(csv_data.coverage.size() == 1);
  CHECK(csv_data.coverage[0].find("a sweep's CSV records no sweep axes") != std::string::npos);
  const auto cb = best_blocks(csv_data), jb = best_blocks(json_data);
  REQUIRE(cb.size() == jb.size());
  for (std::size_t i = 0; i < cb.size(); ++i) CHECK(cb[i].by_time == jb[i].by_time);
  // The Markdown's tables are the JSON's (the sources and coverage lines name the file).
  const std::string cm = sweep_report_markdown(csv_data, nullptr);
  const std::string jm = sweep_report_markdown(json_data, nullptr);
  const std::string from = "## Best block size";
  CHECK(cm.substr(cm.find(from)) == jm.substr(jm.find(from)));

  // A CSV without a column names it; a profile it cannot load says what report needs.
  std::string text = sweep_csv(points, reports);
  const std::string no_clock = text.substr(0, text.find(",clock_given")) + "\n";
  CHECK(config_error([&] {
          load_sweeps({temp_file("old.csv", no_clock)});
        }).find("without the column clock_given that report reads") != std::string::npos);
  for (std::size_t at = text.find("h100-sxm5-80gb"); at != std::string::npos;
       at = text.find("h100-sxm5-80gb", at + 1)) {
    text.replace(at, 14, "my-gpu-0000000");
  }
  CHECK(config_error([&] {
          load_sweeps({temp_file("mine.csv", text)});
        }).find("'my-gpu-0000000' did not load") != std::string::npos);
}

TEST_CASE("report: an fp8 K/V cache is a problem of its own, from the sweep's JSON and its CSV") {
  // Two block sizes of each K/V type, flash-decoding at the same shape: two problems, each
  // with its two tiles, whose rows keep their --kv-dtype (given: fp16 is named too).
  std::vector<SweepPoint> points;
  std::size_t i = 0;
  for (const Dtype kv : {Dtype::fp16, Dtype::fp8}) {
    for (std::int64_t bkv : {64, 128}) {
      RunRequest r = test::request("flash-decoding", 1, 8, 1, 128, 0, bkv);
      r.problem.seq_kv = 4096;
      r.problem.kv_heads = 2;
      r.problem.kv_dtype = kv;
      r.tiling.splits = 2;  // the heuristic's count differs by tile: a problem field of the report
      points.push_back({i++, "h100-sxm5-80gb", r});
    }
  }
  const auto profiles = profiles_of(points);
  const std::vector<Report> reports = run_sweep(points, profiles, {2, {}});
  const SweepDescription d = {
      {{"--kv-dtype", {"fp16", "fp8"}}, {"--block-kv", {"64", "128"}}}, points.size(), {}};
  for (const fs::path& f : {temp_file("kv.json", sweep_json(d, points, reports, profiles)),
                            temp_file("kv.csv", sweep_csv(points, reports))}) {
    CAPTURE(f);
    const SweepData data = load_sweeps({f});
    REQUIRE(data.rows.size() == 4);
    for (std::size_t r = 0; r < 4; ++r) CHECK(data.rows[r].kv_dtype == (r < 2 ? "fp16" : "fp8"));
    const std::vector<BestBlock> best = best_blocks(data);
    REQUIRE(best.size() == 2);
    for (const BestBlock& b : best) {
      CHECK(b.tried == 2);
      CHECK(data.rows[b.rows[0]].kv_dtype == data.rows[b.rows[1]].kv_dtype);
    }
  }
}

TEST_CASE("report: each latent width is a problem of its own, from the sweep's JSON and its CSV") {
  // Two block sizes of each --latent-dim (and none), flash-decoding at the same shape: three
  // problems, each with its two tiles, whose rows keep their latent (0: none).
  std::vector<SweepPoint> points;
  std::size_t i = 0;
  for (const std::int64_t latent : {0, 64, 96}) {
    for (std::int64_t bkv : {32, 64}) {
      RunRequest r = test::request("flash-decoding", 1, 8, 1, 128, 0, bkv);
      r.problem.seq_kv = 4096;
      r.problem.kv_heads = 1;
      r.problem.latent_dim = latent;
      r.tiling.splits = 2;
      points.push_back({i++, "h100-sxm5-80gb", r});
    }
  }
  const auto profiles = profiles_of(points);
  const std::vector<Report> reports = run_sweep(points, profiles, {2, {}});
  const SweepDescription d = {
      {{"--latent-dim", {"0", "64", "96"}}, {"--block-kv", {"32", "64"}}}, points.size(), {}};
  for (const fs::path& f : {temp_file("latent.json", sweep_json(d, points, reports, profiles)),
                            temp_file("latent.csv", sweep_csv(points, reports))}) {
    CAPTURE(f);
    const SweepData data = load_sweeps({f});
    REQUIRE(data.rows.size() == 6);
    for (std::size_t r = 0; r < 6; ++r) {
      CHECK(data.rows[r].latent_dim == (r < 2 ? 0 : r < 4 ? 64 : 96));
    }
    const std::vector<BestBlock> best = best_blocks(data);
    REQUIRE(best.size() == 3);
    for (const BestBlock& b : best) {
      CHECK(b.tried == 2);
      CHECK(data.rows[b.rows[0]].latent_dim == data.rows[b.rows[1]].latent_dim);
    }
  }
}
