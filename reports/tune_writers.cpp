#include "reports/tune_writers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "api/schema_version.hpp"
#include "reports/writers.hpp"
#include "sim/base/csv_field.hpp"
#include "sim/base/human_units.hpp"

namespace iosim {
namespace {

using nlohmann::json;

// How many infeasible points the table quotes with their reasons.
constexpr std::size_t kInfeasibleShown = 3;

// The kernel that took longest: the one whose occupancy and waves the tune's columns show. Null for
// an infeasible run.
const KernelResult* longest_kernel(const Report& r) {
  const auto& k = r.engine.kernels;
  const auto it = std::max_element(
      k.begin(), k.end(), [](const auto& a, const auto& b) { return a.time_s < b.time_s; });
  return it == k.end() ? nullptr : &*it;
}

std::size_t shown(const TuneResult& result, std::size_t top) {
  return top == 0 ? result.ranked.size() : std::min(top, result.ranked.size());
}

double over_best(const TuneResult& result, const Report& r) {
  return result.best_time_s() > 0 ? r.engine.time_s / result.best_time_s() : 0.0;
}

// A tiling value as the table writes it: "-" where the algorithm was left to choose and the plan
// did not get as far as choosing.
std::string tile_text(std::int64_t v) {
  return v > 0 ? fmt::format("{}", v) : "-";
}

// "block_q 128 block_kv 64 stages 2 threads 128".
std::string tiles_text(const Tiling& t) {
  return fmt::format("block_q {} block_kv {} stages {} threads {}", tile_text(t.block_q),
                     tile_text(t.block_kv), tile_text(t.pipeline_stages), tile_text(t.threads));
}

std::string space_text(const TuneSpace& s) {
  const auto list = [](const auto& values) {
    std::vector<std::string> out;
    for (const auto v : values) out.push_back(v > 0 ? fmt::format("{}", v) : "auto");
    return fmt::format("{}", fmt::join(out, ","));
  };
  return fmt::format("block_q {} x block_kv {} x stages {} x threads {}", list(s.block_q),
                     list(s.block_kv), list(s.stages), list(s.threads));
}

// Any report of the tune: they all share the profile, the algorithm and the problem.
const Report& any_report(const TuneResult& result) {
  return result.algorithm_default;
}

json tiles_json(const Tiling& t) {
  return {{"block_q", t.block_q},
          {"block_kv", t.block_kv},
          {"stages", t.pipeline_stages},
          {"threads", t.threads}};
}

// The columns of one feasible point, as JSON and CSV write them (rank and point aside).
json point_json(const TuneResult& result, const Report& r) {
  json j = tiles_json(r.tiling);
  const KernelResult* k = longest_kernel(r);
  j["time_s"] = r.engine.time_s;
  j["time_over_best"] = result.ranked.empty() ? json(nullptr) : json(over_best(result, r));
  j["within_tie_band"] = result.ties_best(r.engine.time_s);
  j["bound"] = r.bound;
  j["ctas_per_sm"] = k != nullptr ? k->occupancy.ctas_per_sm : 0;
  j["waves"] = k != nullptr ? k->waves : 0.0;
  j["hbm_total_bytes"] = r.engine.total.hbm_total_bytes();
  j["registers_per_thread"] = r.tiling.registers_per_thread;
  j["smem_bytes_per_cta"] = k != nullptr ? k->spec.smem_bytes_per_cta : 0;
  return j;
}

}  // namespace

std::string tune_table(const TuneResult& result, std::size_t top) {
  const Report& any = any_report(result);
  std::string s = fmt::format("iosim tune: {} on {} ({}), L2 {}\n", any.request.algorithm,
                              any.profile_description, any.profile,
                              any.request.engine.l2_enabled ? "on" : "off (two-level model)");
  s += "problem  " + problem_text(any.request.problem) + "\n";
  s +=
      fmt::format("space    {}: {} tilings, {} feasible, {} infeasible\n", space_text(result.space),
                  result.points, result.ranked.size(), result.infeasible.size());
  const std::size_t n = shown(result, top);
  if (n > 0) {
    s += fmt::format("\n{:>5} {:>7} {:>8} {:>6} {:>7} {:>10} {:>7}  {:<8} {:>7} {:>7} {:>10}\n",
                     "rank", "block_q", "block_kv", "stages", "threads", "time", "/ best", "bound",
                     "CTAs/SM", "waves", "HBM");
    for (std::size_t i = 0; i < n; ++i) {
      const Report& r = result.ranked[i].report;
      const KernelResult* k = longest_kernel(r);
      s += fmt::format(
          "{:>4}{} {:>7} {:>8} {:>6} {:>7} {:>10} {:>7.3f}  {:<8} {:>7} {:>7.2f} {:>10}\n", i + 1,
          result.ties_best(r.engine.time_s) ? "*" : " ", r.tiling.block_q, r.tiling.block_kv,
          r.tiling.pipeline_stages, r.tiling.threads, human_seconds(r.engine.time_s),
          over_best(result, r), r.bound, k != nullptr ? k->occupancy.ctas_per_sm : 0,
          k != nullptr ? k->waves : 0.0,
          human_bytes(static_cast<double>(r.engine.total.hbm_total_bytes())));
    }
    if (n < result.ranked.size()) {
      s += fmt::format("      ... {} more feasible (--top 0: all)\n", result.ranked.size() - n);
    }
    s += fmt::format(
        "* within {:g}% of the best (--tie-band): closer than iosim's time model can tell apart\n",
        100 * result.tie_band);
  } else {
    s += "\nno tiling of the space is feasible\n";
  }
  const Report& d = result.algorithm_default;
  const std::string tiles = tiles_text(d.tiling) + " (the algorithm's own)";
  if (!d.feasible()) {
    s += fmt::format("default  {}: infeasible: {}\n", tiles, d.infeasible_reason);
  } else {
    s += fmt::format("default  {}: {}{}\n", tiles, human_seconds(d.engine.time_s),
                     result.ranked.empty() ? std::string()
                     : result.default_rank ? fmt::format(", rank {}, {:.3f} x the best",
                                                         *result.default_rank, over_best(result, d))
                                           : fmt::format(", outside the space, {:.3f} x the best",
                                                         over_best(result, d)));
  }
  if (!result.infeasible.empty()) {
    const std::size_t quoted = std::min(kInfeasibleShown, result.infeasible.size());
    s += fmt::format("\ninfeasible: {} tilings{}\n", result.infeasible.size(),
                     quoted < result.infeasible.size()
                         ? fmt::format(" (the first {}; --format json or csv: all)", quoted)
                         : "");
    for (std::size_t i = 0; i < quoted; ++i) {
      const Report& r = result.infeasible[i].report;
      s += fmt::format("  {}: {}\n", tiles_text(r.tiling), r.infeasible_reason);
    }
  }
  return s;
}

json tune_to_json(const TuneResult& result, std::size_t top) {
  const Report& any = any_report(result);
  json j;
  j["schema_version"] = kSchemaVersion;
  j["profile"] = any.profile;
  j["algorithm"] = any.request.algorithm;
  j["l2"] = any.request.engine.l2_enabled ? "on" : "off";
  j["problem"] = report_to_json(any)["problem"];
  j["space"] = {{"block_q", result.space.block_q},
                {"block_kv", result.space.block_kv},
                {"stages", result.space.stages},
                {"threads", result.space.threads}};
  j["points"] = result.points;
  j["feasible"] = result.ranked.size();
  j["infeasible"] = result.infeasible.size();
  j["tie_band"] = result.tie_band;
  j["best_time_s"] = result.ranked.empty() ? json(nullptr) : json(result.best_time_s());
  json ranked = json::array();
  for (std::size_t i = 0; i < shown(result, top); ++i) {
    const TunePoint& p = result.ranked[i];
    json row = {{"rank", i + 1}, {"point", p.index}};
    row.update(point_json(result, p.report));
    ranked.push_back(std::move(row));
  }
  j["ranked"] = std::move(ranked);
  const Report& d = result.algorithm_default;
  json def = tiles_json(d.tiling);
  def["feasible"] = d.feasible();
  if (d.feasible()) {
    def.update(point_json(result, d));
    def["rank"] = result.default_rank ? json(*result.default_rank) : json(nullptr);
  } else {
    def["infeasible_reason"] = d.infeasible_reason;
  }
  j["default"] = std::move(def);
  json infeasible = json::array();
  for (const TunePoint& p : result.infeasible) {
    json row = {{"point", p.index}};
    row.update(tiles_json(p.report.tiling));
    row["infeasible_reason"] = p.report.infeasible_reason;
    infeasible.push_back(std::move(row));
  }
  j["infeasible_points"] = std::move(infeasible);
  return j;
}

std::string tune_csv(const TuneResult& result, std::size_t top) {
  std::string s =
      "rank,point,block_q,block_kv,stages,threads,feasible,time_s,time_over_best,"
      "within_tie_band,bound,ctas_per_sm,waves,hbm_total_bytes,infeasible_reason\n";
  for (std::size_t i = 0; i < shown(result, top); ++i) {
    const TunePoint& p = result.ranked[i];
    const Report& r = p.report;
    const KernelResult* k = longest_kernel(r);
    s += fmt::format("{},{},{},{},{},{},true,{:.9g},{:.6g},{},{},{},{:.6g},{},\n", i + 1, p.index,
                     r.tiling.block_q, r.tiling.block_kv, r.tiling.pipeline_stages,
                     r.tiling.threads, r.engine.time_s, over_best(result, r),
                     result.ties_best(r.engine.time_s) ? "true" : "false", r.bound,
                     k != nullptr ? k->occupancy.ctas_per_sm : 0, k != nullptr ? k->waves : 0.0,
                     r.engine.total.hbm_total_bytes());
  }
  for (const TunePoint& p : result.infeasible) {
    const Report& r = p.report;
    s += fmt::format(",{},{},{},{},{},false,,,,,,,,{}\n", p.index, r.tiling.block_q,
                     r.tiling.block_kv, r.tiling.pipeline_stages, r.tiling.threads,
                     csv_field(r.infeasible_reason));
  }
  return s;
}

}  // namespace iosim
