// `iosim validate`'s ranking accuracy (api/validation_ranking.cpp, issue #46): the statistics of a
// rank group on small made-up groups (a perfect, a reversed and a tied order, pairs inside the
// repeat spread), their properties on random groups, and one golden file
// (tests/data/measurements_ranked.json) validated end to end.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "api/validation.hpp"
#include "reports/validation_writers.hpp"

using namespace iosim;

namespace {

std::vector<RankPoint> rank_points(const std::vector<double>& predicted,
                                   const std::vector<double>& measured,
                                   const std::vector<double>& spread = {}) {
  std::vector<RankPoint> out;
  for (std::size_t i = 0; i < predicted.size(); ++i)
    out.push_back({predicted[i], measured[i], spread.empty() ? 0.0 : spread[i]});
  return out;
}

}  // namespace

TEST_CASE("ranking: a perfect order, a reversed one, ties and pairs within the spread") {
  SUBCASE("perfect") {
    const RankGroup g = rank_statistics("fam shape", rank_points({1, 2, 3, 4}, {10, 20, 30, 40}));
    CHECK(g.family == "fam");
    CHECK(g.cases == 4);
    CHECK(*g.rho == doctest::Approx(1.0));
    CHECK(g.regret == 0.0);
    CHECK(g.pairs_counted == 6);
    CHECK(*g.pairs_right == 1.0);
  }
  SUBCASE("reversed") {
    const RankGroup g = rank_statistics("fam shape", rank_points({4, 3, 2, 1}, {10, 20, 30, 40}));
    CHECK(*g.rho == doctest::Approx(-1.0));
    CHECK(g.regret == doctest::Approx(3.0));  // picks the 40, the best is 10
    CHECK(*g.pairs_right == 0.0);
  }
  SUBCASE("tied predictions share their average rank; the first in file order is the pick") {
    // Ranks: predicted (2, 1, 1, 3) -> (3, 1.5, 1.5, 4), measured (1, 2, 3, 4):
    // deviations (0.5, -1, -1, 1.5) and (-1.5, -0.5, 0.5, 1.5): cov 1.5, var 4.5 and 5.
    const RankGroup g = rank_statistics("fam shape", rank_points({2, 1, 1, 3}, {10, 20, 30, 40}));
    CHECK(*g.rho == doctest::Approx(1.5 / std::sqrt(4.5 * 5.0)));
    CHECK(g.regret == doctest::Approx(1.0));  // the first 1 is the 20
    // Right: (0,3), (1,3), (2,3); wrong: (0,1), (0,2) and the tie (1,2).
    CHECK(g.pairs_counted == 6);
    CHECK(*g.pairs_right == doctest::Approx(0.5));
  }
  SUBCASE("pairs within their repeat spread are not counted") {
    // 10 and 10.2 differ by 2%, inside the 5% spread of either: not counted (the order the
    // model gives them, wrong here, does not count against it).
    const RankGroup g =
        rank_statistics("fam shape", rank_points({2, 1, 3}, {10, 10.2, 20}, {0.05, 0.01, 0}));
    CHECK(g.pairs_counted == 2);
    CHECK(*g.pairs_right == 1.0);
    CHECK(*g.rho == doctest::Approx(0.5));  // 1 - 6 * 2 / (3 * 8)
    CHECK(g.regret == doctest::Approx(0.02));
  }
  SUBCASE("one case, or equal times: no rho, no pair") {
    const RankGroup one = rank_statistics("fam shape", rank_points({1}, {10}));
    CHECK(!one.rho);
    CHECK(one.regret == 0.0);
    CHECK(!one.pairs_right);
    CHECK(one.pairs_counted == 0);
    const RankGroup flat = rank_statistics("fam", rank_points({1, 2, 3}, {10, 10, 10}));
    CHECK(flat.family == "fam");
    CHECK(!flat.rho);
    CHECK(!flat.pairs_right);
  }
  SUBCASE("a family: medians over its groups, the worst regret, the smallest rho") {
    std::vector<RankGroup> groups = {
        rank_statistics("fam a", rank_points({1, 2, 3, 4}, {10, 20, 30, 40})),
        rank_statistics("fam b", rank_points({4, 3, 2, 1}, {10, 20, 30, 40})),
        rank_statistics("fam c", rank_points({2, 1, 3}, {10, 10.2, 20}, {0.05, 0.01, 0})),
        rank_statistics("fam d", rank_points({1}, {10}))};
    const RankFamily f = rank_family("fam", groups);
    CHECK(f.groups == 4);
    CHECK(*f.median_rho == doctest::Approx(0.5));  // of 1, -1, 0.5 (d has none)
    CHECK(*f.min_rho == doctest::Approx(-1.0));
    CHECK(f.median_regret == doctest::Approx(0.01));  // of 0, 3, 0.02, 0
    CHECK(f.worst_regret == doctest::Approx(3.0));
    CHECK(*f.median_pairs_right == 1.0);  // of 1, 0, 1
  }
}

TEST_CASE("ranking: properties on random groups") {
  // rho in [-1, 1], regret >= 0 and 0 when the pick is the best, pairs counted at most n(n-1)/2;
  // rho and pairs unchanged by reordering the cases and by a monotone map of either time.
  std::mt19937 rng(46);
  std::uniform_real_distribution<double> time(1.0, 2.0), spread(0.0, 0.05);
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    const std::size_t n = 2 + static_cast<std::size_t>(trial % 12);
    std::vector<RankPoint> p(n);
    for (RankPoint& x : p) x = {time(rng), time(rng), spread(rng)};
    const RankGroup g = rank_statistics("f g", p);
    REQUIRE(g.rho);
    CHECK(*g.rho >= -1.0);
    CHECK(*g.rho <= 1.0);
    CHECK(g.regret >= 0.0);
    CHECK(g.pairs_counted <= static_cast<int>(n * (n - 1) / 2));
    const auto best = std::min_element(
        p.begin(), p.end(), [](const auto& a, const auto& b) { return a.measured < b.measured; });
    const auto pick = std::min_element(
        p.begin(), p.end(), [](const auto& a, const auto& b) { return a.predicted < b.predicted; });
    CHECK((g.regret == 0.0) == (best == pick));
    std::vector<RankPoint> q = p;
    std::shuffle(q.begin(), q.end(), rng);
    for (RankPoint& x : q) x.predicted = std::exp(3 * x.predicted);  // same order, other scale
    const RankGroup h = rank_statistics("f g", q);
    CHECK(*h.rho == doctest::Approx(*g.rho));
    CHECK(h.pairs_counted == g.pairs_counted);
    if (g.pairs_right) CHECK(*h.pairs_right == doctest::Approx(*g.pairs_right));
    CHECK(h.regret == doctest::Approx(g.regret));
  }
}

TEST_CASE("ranking: golden, two rank groups of time-only cases") {
  // tests/data/measurements_ranked.json: two families of kernel descriptions on one small problem
  // each, timed only (no Nsight Compute counters), the measured times set against the blind
  // predictions of when the file was written: family "tall" measured in its predicted order but
  // for its two fastest swapped, "wide" in the reverse of it. A case whose check failed is left
  // out of its group.
  const ValidationResult v =
      validate_measurements(std::string(IOSIM_TEST_DATA_DIR) + "/measurements_ranked.json");
  REQUIRE(v.ranking.groups.size() == 2);
  const RankGroup& tall = v.ranking.groups[0];
  const RankGroup& wide = v.ranking.groups[1];
  CHECK(tall.name == "tall d64_n512");
  CHECK(tall.cases == 4);
  CHECK(*tall.rho == doctest::Approx(0.8));
  CHECK(tall.regret == doctest::Approx(0.05));
  CHECK(tall.pairs_counted == 6);
  CHECK(*tall.pairs_right == doctest::Approx(5.0 / 6.0));
  CHECK(wide.name == "wide d128_n256_causal");
  CHECK(wide.cases == 3);
  CHECK(*wide.rho == doctest::Approx(-1.0));
  CHECK(wide.regret == doctest::Approx(1.0));
  // Its two slowest differ by 2%, within their 3% spread: one pair of three is not counted.
  CHECK(wide.pairs_counted == 2);
  CHECK(*wide.pairs_right == 0.0);
  REQUIRE(v.ranking.families.size() == 2);
  CHECK(v.ranking.families[0].family == "tall");
  CHECK(v.ranking.families[1].groups == 1);
  // Time-only cases: compared blind on time, their bytes and all of as-run not measured; summarized
  // by family.
  for (const CaseResult& c : v.cases) {
    CAPTURE(c.id);
    if (!c.skipped_reason.empty()) continue;
    for (int i = 0; i < kMetricCount; ++i) {
      CHECK(!c.metrics[i].relative_error());
      const bool time = kMetrics[i] == Metric::time;
      CHECK(bool(c.blind[i].relative_error()) == time);
    }
  }
  CHECK(v.summaries.size() == 3);  // tall, wide, all
  CHECK(v.summaries[0].schedule == "tall");
  const std::string table = validation_table(v);
  CHECK(table.find("\nRanking\n") != std::string::npos);
  CHECK(table.find("tall d64_n512") != std::string::npos);
  CHECK(validation_markdown(v).find("| wide d128_n256_causal | 3 | -1.00 | 100.0% | 0% (2) |") !=
        std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(validation_json(v));
  CHECK(j.at("ranking").at("groups").size() == 2);
  CHECK(j.at("ranking").at("families")[0].at("median_rho").get<double>() == doctest::Approx(0.8));
  // The summary table the HTML report shows is the summaries' alone.
  CHECK(validation_summary_table(v).size() == 4);
}

TEST_CASE("ranking: a file without rank groups has none, and writes none") {
  const ValidationResult v =
      validate_measurements(std::string(IOSIM_TEST_DATA_DIR) + "/measurements_small.json");
  CHECK(v.ranking.empty());
  CHECK(validation_table(v).find("Ranking") == std::string::npos);
  CHECK(validation_markdown(v).find("rho") == std::string::npos);
  CHECK(!nlohmann::json::parse(validation_json(v)).contains("ranking"));
}
