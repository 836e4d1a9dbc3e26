// `iosim validate`'s summaries: per schedule (or kernel description) and over all cases, the
// median and worst errors and repeat spreads; the metrics' names and the comparisons' errors.
// The ranking of rank groups is validation_ranking.cpp's.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "api/validation.hpp"
#include "api/validation_detail.hpp"

namespace iosim {
namespace {

using validation_detail::median;

// The repeat spread of the case(s) the median and the worst of `errors` are taken from; each
// entry is a case's |relative error| and its spread.
struct CaseSpreads {
  std::optional<double> median, worst;
};
CaseSpreads case_spreads(std::vector<std::pair<double, std::optional<double>>> errors) {
  CaseSpreads out;
  if (errors.empty()) return out;
  std::stable_sort(errors.begin(), errors.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::size_t n = errors.size();
  out.worst = errors.back().second;
  if (n % 2) {
    out.median = errors[n / 2].second;
  } else if (errors[n / 2 - 1].second && errors[n / 2].second) {
    out.median = 0.5 * (*errors[n / 2 - 1].second + *errors[n / 2].second);
  }
  return out;
}

Summary summarize(const std::string& name, const std::vector<const CaseResult*>& cases) {
  Summary s;
  s.schedule = name;
  for (int i = 0; i < kMetricCount; ++i) {
    std::vector<double> errs;
    for (const CaseResult* c : cases) {
      if (const auto e = c->metrics[i].relative_error()) errs.push_back(std::abs(*e));
    }
    s.median_abs_error[i] = median(errs);
    if (!errs.empty()) s.worst_abs_error[i] = *std::max_element(errs.begin(), errs.end());
    std::vector<double> blind;
    for (const CaseResult* c : cases) {
      if (const auto e = c->blind[i].relative_error()) blind.push_back(std::abs(*e));
    }
    s.blind_median_abs_error[i] = median(blind);
    if (!blind.empty()) s.blind_worst_abs_error[i] = *std::max_element(blind.begin(), blind.end());
    // Spreads of the compared cases measured more than once.
    std::vector<double> spread, blind_spread;
    for (const CaseResult* c : cases) {
      if (c->metrics[i].relative_error() && c->metrics[i].spread)
        spread.push_back(*c->metrics[i].spread);
      if (c->blind[i].relative_error() && c->blind[i].spread)
        blind_spread.push_back(*c->blind[i].spread);
    }
    s.median_spread[i] = median(spread);
    if (!spread.empty()) s.worst_spread[i] = *std::max_element(spread.begin(), spread.end());
    s.blind_median_spread[i] = median(blind_spread);
    if (!blind_spread.empty())
      s.blind_worst_spread[i] = *std::max_element(blind_spread.begin(), blind_spread.end());
    // The spreads of the cases the statistics come from.
    std::vector<std::pair<double, std::optional<double>>> as_run_cases, blind_cases;
    for (const CaseResult* c : cases) {
      if (const auto e = c->metrics[i].relative_error())
        as_run_cases.emplace_back(std::abs(*e), c->metrics[i].spread);
      if (const auto e = c->blind[i].relative_error())
        blind_cases.emplace_back(std::abs(*e), c->blind[i].spread);
    }
    const CaseSpreads as_run = case_spreads(std::move(as_run_cases));
    s.median_case_spread[i] = as_run.median;
    s.worst_case_spread[i] = as_run.worst;
    const CaseSpreads blind_at = case_spreads(std::move(blind_cases));
    s.blind_median_case_spread[i] = blind_at.median;
    s.blind_worst_case_spread[i] = blind_at.worst;
  }
  s.cases = static_cast<int>(cases.size());
  return s;
}

}  // namespace

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::dram:
      return "dram";
    case Metric::dram_read:
      return "dram_read";
    case Metric::dram_write:
      return "dram_write";
    case Metric::l2_read:
      return "l2_read";
    case Metric::l2_write:
      return "l2_write";
    case Metric::time:
      return "time";
  }
  return "?";
}

std::string summary_name(const CaseResult& c) {
  // A schedule's runs with a backward are another workload than its forwards: summarized apart,
  // so that adding them leaves the forward's accuracy as it was. FP8 runs likewise (other pipe
  // rates, another kernel).
  // The configurations of a rank group (a tile sweep: each its own kernel description, named
  // after its tiles) are summarized by their family, not one summary per configuration.
  const std::string base =
      c.rank_group.empty() ? c.schedule : c.rank_group.substr(0, c.rank_group.find(' '));
  std::string name = c.pass == "fwd" ? base : base + " " + c.pass;
  if (c.dtype == "fp8") name += " fp8";
  return name;
}

std::optional<double> Comparison::relative_error() const {
  if (!(measured > 0.0)) return std::nullopt;
  return (predicted - measured) / measured;
}

bool Comparison::within_noise() const {
  const auto e = relative_error();
  return e && spread && *spread > 0 && std::abs(*e) <= *spread;
}

bool within_noise(const std::optional<double>& error, const std::optional<double>& spread) {
  return error && spread && *spread > 0 && *error <= *spread;
}

std::optional<double> validation_detail::median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The summaries of `v`'s compared cases: per schedule (or kernel description), then "all".
void validation_detail::summarize_cases(ValidationResult& v) {
  std::map<std::string, std::vector<const CaseResult*>> by_schedule;
  std::vector<const CaseResult*> all;
  for (const CaseResult& c : v.cases) {
    if (!c.skipped_reason.empty()) continue;
    by_schedule[summary_name(c)].push_back(&c);
    all.push_back(&c);
  }
  for (const auto& [name, cases] : by_schedule) v.summaries.push_back(summarize(name, cases));
  v.summaries.push_back(summarize("all", all));
  v.ranking = rank_cases(v.cases);
}

}  // namespace iosim
