// `iosim validate`'s ranking accuracy (issue #46): for the cases of one rank group (configurations
// of one kernel family on one problem), how well blind time orders them, the question a tile sweep
// asks: Spearman's rho, the regret of the predicted best, and the share of the pairs ordered right
// among pairs that differ by more than their repeat spread; then per family. The same statistics
// as cuda_validate/tile_sweep/ranking.py, which they are checked against.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

#include "api/validation.hpp"
#include "api/validation_detail.hpp"

namespace iosim {
namespace {

// Ranks from 1, equal values sharing the mean of the ranks they span (Spearman's convention:
// without it, which of two tied configurations came first in the file would move rho).
std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> rank(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double shared = 0.5 * static_cast<double>(i + j) + 1.0;
    for (std::size_t k = i; k <= j; ++k) rank[order[k]] = shared;
    i = j + 1;
  }
  return rank;
}

// Pearson's correlation of the two rank lists; none where either is constant (no order to
// compare: one case, or every time equal).
std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> ra = average_ranks(a), rb = average_ranks(b);
  const double n = static_cast<double>(ra.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double cov = 0.0, va = 0.0, vb = 0.0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (!(va > 0.0 && vb > 0.0)) return std::nullopt;
  // Rounding may step a hair past +-1 for a perfect (reversed) order.
  return std::clamp(cov / std::sqrt(va * vb), -1.0, 1.0);
}

}  // namespace

RankGroup rank_statistics(const std::string& name, const std::vector<RankPoint>& points) {
  RankGroup g;
  g.name = name;
  g.family = name.substr(0, name.find(' '));
  g.cases = static_cast<int>(points.size());
  if (points.empty()) return g;
  std::vector<double> pred, meas;
  for (const RankPoint& p : points) {
    pred.push_back(p.predicted);
    meas.push_back(p.measured);
  }
  g.rho = spearman(pred, meas);
  // min_element returns the first of equal predictions: the file's order breaks a tie, as
  // ranking.py's min() does.
  const std::size_t pick =
      static_cast<std::size_t>(std::min_element(pred.begin(), pred.end()) - pred.begin());
  g.regret = meas[pick] / *std::min_element(meas.begin(), meas.end()) - 1.0;
  int right = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    for (std::size_t j = i + 1; j < points.size(); ++j) {
      const double gap = std::abs(meas[i] - meas[j]) / std::min(meas[i], meas[j]);
      // A difference the repeats themselves show is no order the model can be held to.
      if (!(gap > std::max(points[i].spread, points[j].spread))) continue;
      ++g.pairs_counted;
      if ((pred[i] - pred[j]) * (meas[i] - meas[j]) > 0.0) ++right;
    }
  }
  if (g.pairs_counted > 0) g.pairs_right = static_cast<double>(right) / g.pairs_counted;
  return g;
}

RankFamily rank_family(const std::string& family, const std::vector<RankGroup>& groups) {
  RankFamily f;
  f.family = family;
  f.groups = static_cast<int>(groups.size());
  std::vector<double> rho, regret, pairs;
  for (const RankGroup& g : groups) {
    if (g.rho) rho.push_back(*g.rho);
    regret.push_back(g.regret);
    if (g.pairs_right) pairs.push_back(*g.pairs_right);
  }
  f.median_rho = validation_detail::median(rho);
  if (!rho.empty()) f.min_rho = *std::min_element(rho.begin(), rho.end());
  f.median_regret = validation_detail::median(regret).value_or(0.0);
  if (!regret.empty()) f.worst_regret = *std::max_element(regret.begin(), regret.end());
  f.median_pairs_right = validation_detail::median(pairs);
  return f;
}

RankSummary validation_detail::rank_cases(const std::vector<CaseResult>& cases) {
  // Groups by name (std::map: the report's order), each group's points in file order.
  std::map<std::string, std::vector<RankPoint>> points;
  const int t = index_of(Metric::time);
  for (const CaseResult& c : cases) {
    // A case that was skipped, or whose blind time is not known (infeasible blind, not timed),
    // is in no ranking: its place in the order is unknown.
    if (c.rank_group.empty() || !c.skipped_reason.empty() || !c.blind[t].relative_error()) {
      continue;
    }
    points[c.rank_group].push_back(
        {c.blind[t].predicted, c.blind[t].measured, c.blind[t].spread.value_or(0.0)});
  }
  RankSummary out;
  std::map<std::string, std::vector<RankGroup>> by_family;
  for (const auto& [name, pts] : points) {
    out.groups.push_back(rank_statistics(name, pts));
    by_family[out.groups.back().family].push_back(out.groups.back());
  }
  for (const auto& [family, groups] : by_family)
    out.families.push_back(rank_family(family, groups));
  return out;
}

}  // namespace iosim
