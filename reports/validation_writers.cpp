#include "reports/validation_writers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/schema_version.hpp"
#include "api/validation_detail.hpp"
#include "sim/base/csv_field.hpp"
#include "sim/base/human_units.hpp"
#include "sim/base/json_text.hpp"

namespace iosim {
namespace {

using nlohmann::json;

std::string pct(const std::optional<double>& e, bool sign = false) {
  if (!e) return "-";
  return sign ? fmt::format("{:+.1f}%", *e * 100) : fmt::format("{:.1f}%", *e * 100);
}

// A summary statistic: its number, and beside it the repeat spread of the case it comes from
// ("16.8% (spread 2.9%)"), which the reader holds it against; nothing beside a case measured once.
std::string stat_text(const std::optional<double>& error, const std::optional<double>& spread) {
  if (!error || !spread) return pct(error);
  return fmt::format("{} (spread {})", pct(error), pct(spread));
}

std::string blind_pair(const Summary& x, int i) {
  return stat_text(x.blind_median_abs_error[i], x.blind_median_case_spread[i]) + " / " +
         stat_text(x.blind_worst_abs_error[i], x.blind_worst_case_spread[i]);
}

std::string as_run_pair(const Summary& x, int i) {
  return stat_text(x.median_abs_error[i], x.median_case_spread[i]) + " / " +
         stat_text(x.worst_abs_error[i], x.worst_case_spread[i]);
}

bool has_spreads(const ValidationResult& v) {
  for (const Summary& x : v.summaries)
    for (int i = 0; i < kMetricCount; ++i)
      if (x.median_spread[i] || x.blind_median_spread[i]) return true;
  return false;
}

std::string value_text(Metric m, double v) {
  return m == Metric::time ? human_seconds(v) : human_bytes(v);
}

// The ranking's cells, as cuda_validate/tile_sweep/ranking.py prints them (rho to 2 places, regret
// to 0.1%, pairs to 1%), so that the two can be read side by side.
std::string rho_text(const std::optional<double>& rho) {
  return rho ? fmt::format("{:.2f}", *rho) : "-";
}
std::string regret_text(double regret) {
  return fmt::format("{:.1f}%", regret * 100);
}
std::string pairs_text(const std::optional<double>& share) {
  return share ? fmt::format("{:.0f}%", *share * 100) : "-";
}

// Rows of the ranking's two tables: per group, then per family (header first), as cells.
using Rows = std::vector<std::vector<std::string>>;
Rows ranking_group_rows(const RankSummary& r) {
  Rows rows = {{"rank group", "cases", "rho", "regret", "pairs right (pairs)"}};
  for (const RankGroup& g : r.groups) {
    rows.push_back({g.name, std::to_string(g.cases), rho_text(g.rho), regret_text(g.regret),
                    fmt::format("{} ({})", pairs_text(g.pairs_right), g.pairs_counted)});
  }
  return rows;
}
Rows ranking_family_rows(const RankSummary& r) {
  Rows rows = {
      {"family", "groups", "rho median (min)", "regret median (worst)", "pairs right median"}};
  for (const RankFamily& f : r.families) {
    rows.push_back(
        {f.family, std::to_string(f.groups),
         fmt::format("{} ({})", rho_text(f.median_rho), rho_text(f.min_rho)),
         fmt::format("{} ({})", regret_text(f.median_regret), regret_text(f.worst_regret)),
         pairs_text(f.median_pairs_right)});
  }
  return rows;
}

// A table of `rows` in columns as wide as their widest cell, the first left-aligned.
std::string aligned(const Rows& rows) {
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string s;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      s += i == 0 ? fmt::format("{:<{}}", row[i], width[i])
                  : fmt::format("  {:>{}}", row[i], width[i]);
    }
    s += "\n";
  }
  return s;
}

std::string markdown_rows(const Rows& rows) {
  std::string s;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    s += "|";
    for (const std::string& cell : rows[r]) s += fmt::format(" {} |", cell);
    s += "\n";
    if (r == 0) {
      s += "| ---";
      for (std::size_t i = 1; i < rows[r].size(); ++i) s += " | ---:";
      s += " |\n";
    }
  }
  return s;
}

constexpr const char* kRankingNote =
    "ranking: per rank group, blind time against measured time; rho: Spearman's (ties share "
    "their average rank); regret: measured time of iosim's fastest over the measured fastest, "
    "minus 1; pairs right: of the pairs whose measured times differ by more than the larger of "
    "their two repeat spreads, the share iosim orders the same way (their count in brackets)";

}  // namespace

std::string validation_table(const ValidationResult& v) {
  const auto cell = [](Metric m, const Comparison& x) {
    return fmt::format(
        "{}/{} ({})", value_text(m, x.predicted), value_text(m, x.measured),
        x.spread ? fmt::format("{}, spread {}", pct(x.relative_error(), true), pct(x.spread))
                 : pct(x.relative_error(), true));
  };
  std::string s = fmt::format("{:<52} {:>6} {:>28} {:>28} {:>6}", "case", "blind", "blind time",
                              "blind dram", "as-run");
  for (Metric m : kMetrics)
    s += fmt::format(" {:>28}", std::string(metric_name(m)) + " pred/meas (err)");
  // (The newline inside the format: "\n" + a std::string trips GCC 12's -Wrestrict at -O3 here.)
  s += fmt::format("\n{:<52} {:>6} {:>28} {:>28} {:>6}\n", "", "MHz", "pred/meas (err)",
                   "pred/meas (err)", "MHz");
  for (const CaseResult& c : v.cases) {
    if (!c.skipped_reason.empty()) {
      s += fmt::format("{:<52}  skipped: {}\n", c.id, c.skipped_reason);
      continue;
    }
    s += fmt::format("{:<52} {:>6.0f} {:>28} {:>28} {:>6.0f}", c.id, c.blind_sm_clock_mhz,
                     cell(Metric::time, c.blind[index_of(Metric::time)]),
                     cell(Metric::dram, c.blind[index_of(Metric::dram)]), c.sm_clock_mhz);
    for (int i = 0; i < kMetricCount; ++i)
      s += fmt::format(" {:>28}", cell(kMetrics[i], c.metrics[i]));
    s += "\n";
  }
  s += fmt::format("\n{:<12} {:>6} {:>22} {:>22}", "schedule", "cases", "blind time med/worst",
                   "blind dram med/worst");
  for (Metric m : kMetrics)
    s += fmt::format(" {:>22}", std::string(metric_name(m)) + " median/worst");
  s += "\n";
  for (const Summary& x : v.summaries) {
    const int t = index_of(Metric::time), d = index_of(Metric::dram);
    s += fmt::format("{:<12} {:>6} {:>22} {:>22}", x.schedule, x.cases, blind_pair(x, t),
                     blind_pair(x, d));
    for (int i = 0; i < kMetricCount; ++i) s += fmt::format(" {:>22}", as_run_pair(x, i));
    s += "\n";
  }
  s += "\nblind: `iosim run` from what a user states (the problem, the tiles, the kernel's "
       "description) at the profile's own clock policy, nothing measured, time against CUDA "
       "events; as-run: also what was measured (registers, buffers, splits, packing, Nsight "
       "Compute's clock), against its counters and durations\n";
  if (has_spreads(v)) {
    s += "spread: the measurement's own spread over its repeats (max - min over median), of the "
         "case the error is taken from (a median of an even count: the two middle cases' mean); "
         "an error below it is within noise\n";
  }
  if (!v.ranking.empty()) {
    s += fmt::format("\nRanking\n{}\n{}\n{}\n", aligned(ranking_group_rows(v.ranking)),
                     aligned(ranking_family_rows(v.ranking)), kRankingNote);
  }
  return s;
}

namespace {

// The summary table of the Markdown (what validation_summary_table() reads back as cells).
std::string summary_markdown(const ValidationResult& v) {
  // Files measured several times add the spread of the free-running time over the repeats (the
  // blind time's measurement) and of the DRAM bytes, beside the errors they bound.
  const bool spreads = has_spreads(v);
  std::string s =
      "| schedule | cases | **blind time** median / worst | **blind DRAM** median / worst | "
      "as-run DRAM (read + write) median / worst | DRAM read median / worst | "
      "DRAM write median / worst | L2 read median / worst | L2 write median / worst | "
      "as-run time median / worst |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const Summary& x : v.summaries) {
    const int t = index_of(Metric::time), d = index_of(Metric::dram);
    s += fmt::format("| {} | {} | {} | {} |", x.schedule, x.cases, blind_pair(x, t),
                     blind_pair(x, d));
    for (int i = 0; i < kMetricCount; ++i) s += fmt::format(" {} |", as_run_pair(x, i));
    s += "\n";
  }
  if (spreads) {
    s += "\n*(spread X%)*: the measurement's own spread over its repeats (max − min over "
         "median) in the case the error is taken from (for a median of an even count, the two "
         "middle cases' mean); an error below it is within noise.\n";
  }
  return s;
}

}  // namespace

std::string validation_markdown(const ValidationResult& v) {
  std::string s = summary_markdown(v);
  if (!v.ranking.empty()) {
    // (fmt, not "\n" + a std::string: GCC 12's -Wrestrict at -O3, as in validation_table.)
    s += fmt::format("\n{}\n{}\n*{}.*\n", markdown_rows(ranking_group_rows(v.ranking)),
                     markdown_rows(ranking_family_rows(v.ranking)), kRankingNote);
  }
  return s;
}

// The Markdown table's cells (its lines that start with '|', less the alignment row): the HTML
// report shows the same columns without keeping a second copy of them.
std::vector<std::vector<std::string>> validation_summary_table(const ValidationResult& v) {
  std::vector<std::vector<std::string>> t;
  std::istringstream in(summary_markdown(v));
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 2 || line[0] != '|' || line.rfind("| ---", 0) == 0) continue;
    std::vector<std::string> row;
    std::size_t start = 2;
    for (std::size_t bar = line.find(" |", start); bar != std::string::npos;
         bar = line.find(" |", start)) {
      row.push_back(line.substr(start, bar - start));
      start = bar + 3;
    }
    t.push_back(std::move(row));
  }
  return t;
}

std::string validation_csv(const ValidationResult& v) {
  std::string s = "case,schedule,profile,sm_clock_mhz,skipped";
  for (Metric m : kMetrics) {
    s += fmt::format(",{0}_predicted,{0}_measured,{0}_rel_error", metric_name(m));
  }
  s += ",blind_sm_clock_mhz";
  for (Metric m : kMetrics) {
    s += fmt::format(",blind_{0}_predicted,blind_{0}_measured,blind_{0}_rel_error", metric_name(m));
  }
  s += "\n";
  for (const CaseResult& c : v.cases) {
    s += fmt::format("{},{},{},{:.1f},{}", csv_field(c.id), csv_field(c.schedule),
                     csv_field(c.profile), c.sm_clock_mhz, csv_quoted(c.skipped_reason));
    for (int i = 0; i < kMetricCount; ++i) {
      const Comparison& x = c.metrics[i];
      const auto e = x.relative_error();
      s += fmt::format(",{:.6g},{:.6g},{}", x.predicted, x.measured,
                       e ? fmt::format("{:.6g}", *e) : "");
    }
    s += fmt::format(",{:.1f}", c.blind_sm_clock_mhz);
    for (int i = 0; i < kMetricCount; ++i) {
      const Comparison& x = c.blind[i];
      const auto e = x.relative_error();
      s += fmt::format(",{:.6g},{:.6g},{}", x.predicted, x.measured,
                       e ? fmt::format("{:.6g}", *e) : "");
    }
    s += "\n";
  }
  return s;
}

namespace {

// The repeat spread of a case's quantity and whether its error is within it; nothing for a
// quantity measured once (files without repeats keep their JSON as it was).
void add_spread(json& j, const Comparison& x) {
  if (!x.spread) return;
  j["spread"] = *x.spread;
  j["within_noise"] = x.within_noise();
}

// The set's spreads (median and worst over its cases), and each statistic's case's own spread
// and whether the statistic is within it.
void add_spreads(json& j, const std::optional<double>& median_error,
                 const std::optional<double>& worst_error, const std::optional<double>& median,
                 const std::optional<double>& worst, const std::optional<double>& median_case,
                 const std::optional<double>& worst_case) {
  if (median) j["median_spread"] = *median;
  if (worst) j["worst_spread"] = *worst;
  if (median_case) {
    j["median_case_spread"] = *median_case;
    j["median_within_noise"] = within_noise(median_error, median_case);
  }
  if (worst_case) {
    j["worst_case_spread"] = *worst_case;
    j["worst_within_noise"] = within_noise(worst_error, worst_case);
  }
}

json optional_number(const std::optional<double>& x) {
  return x ? json(*x) : json(nullptr);
}

json ranking_json(const RankSummary& r) {
  json groups = json::array(), families = json::array();
  for (const RankGroup& g : r.groups) {
    groups.push_back({{"rank_group", g.name},
                      {"family", g.family},
                      {"cases", g.cases},
                      {"rho", optional_number(g.rho)},
                      {"regret", g.regret},
                      {"pairs_right", optional_number(g.pairs_right)},
                      {"pairs_counted", g.pairs_counted}});
  }
  for (const RankFamily& f : r.families) {
    families.push_back({{"family", f.family},
                        {"groups", f.groups},
                        {"median_rho", optional_number(f.median_rho)},
                        {"min_rho", optional_number(f.min_rho)},
                        {"median_regret", f.median_regret},
                        {"worst_regret", f.worst_regret},
                        {"median_pairs_right", optional_number(f.median_pairs_right)}});
  }
  return {{"groups", groups}, {"families", families}};
}

}  // namespace

std::string validation_json(const ValidationResult& v) {
  json cases = json::array();
  for (const CaseResult& c : v.cases) {
    json j = {{"id", c.id},
              {"schedule", c.schedule},
              {"profile", c.profile},
              {"source_file", c.source_file},
              {"sm_clock_mhz", c.sm_clock_mhz}};
    if (!c.skipped_reason.empty()) {
      j["skipped"] = c.skipped_reason;
    } else {
      j["summary"] = summary_name(c);
      json blind = {{"sm_clock_mhz", c.blind_sm_clock_mhz}};
      for (int i = 0; i < kMetricCount; ++i) {
        const auto e = c.metrics[i].relative_error();
        j[metric_name(kMetrics[i])] = {{"predicted", c.metrics[i].predicted},
                                       {"measured", c.metrics[i].measured},
                                       {"relative_error", e ? json(*e) : json(nullptr)}};
        add_spread(j[metric_name(kMetrics[i])], c.metrics[i]);
        const auto b = c.blind[i].relative_error();
        blind[metric_name(kMetrics[i])] = {{"predicted", c.blind[i].predicted},
                                           {"measured", c.blind[i].measured},
                                           {"relative_error", b ? json(*b) : json(nullptr)}};
        add_spread(blind[metric_name(kMetrics[i])], c.blind[i]);
      }
      j["blind"] = blind;
    }
    cases.push_back(j);
  }
  json summaries = json::array();
  for (const Summary& x : v.summaries) {
    json j = {{"schedule", x.schedule}, {"cases", x.cases}};
    for (int i = 0; i < kMetricCount; ++i) {
      j[metric_name(kMetrics[i])] = {
          {"median_abs_error",
           x.median_abs_error[i] ? json(*x.median_abs_error[i]) : json(nullptr)},
          {"worst_abs_error", x.worst_abs_error[i] ? json(*x.worst_abs_error[i]) : json(nullptr)}};
      add_spreads(j[metric_name(kMetrics[i])], x.median_abs_error[i], x.worst_abs_error[i],
                  x.median_spread[i], x.worst_spread[i], x.median_case_spread[i],
                  x.worst_case_spread[i]);
      j["blind"][metric_name(kMetrics[i])] = {
          {"median_abs_error",
           x.blind_median_abs_error[i] ? json(*x.blind_median_abs_error[i]) : json(nullptr)},
          {"worst_abs_error",
           x.blind_worst_abs_error[i] ? json(*x.blind_worst_abs_error[i]) : json(nullptr)}};
      add_spreads(j["blind"][metric_name(kMetrics[i])], x.blind_median_abs_error[i],
                  x.blind_worst_abs_error[i], x.blind_median_spread[i], x.blind_worst_spread[i],
                  x.blind_median_case_spread[i], x.blind_worst_case_spread[i]);
    }
    summaries.push_back(j);
  }
  json doc = {{"schema_version", kSchemaVersion}, {"cases", cases}, {"summaries", summaries}};
  // Only where a case names a rank group: other files' JSON stays as it was.
  if (!v.ranking.empty()) doc["ranking"] = ranking_json(v.ranking);
  return json_text(doc, 2) + "\n";
}

}  // namespace iosim
