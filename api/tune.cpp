#include "api/tune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "sim/base/errors.hpp"
#include "sim/base/memory_budget.hpp"
#include "sim/engine/engine.hpp"

namespace iosim {
namespace {

// The values of `candidates` up to the first that reaches `length` (all when none does): a tile
// past that one covers the same rows with more of them masked.
std::vector<std::int64_t> up_to_cover(const std::vector<std::int64_t>& candidates,
                                      std::int64_t length) {
  std::vector<std::int64_t> out;
  for (std::int64_t c : candidates) {
    out.push_back(c);
    if (c >= length) break;
  }
  return out;
}

// The profile key of a tune's points in run_sweep()'s map: one profile for every point.
constexpr const char* kTuneProfileKey = "tune";

bool same_tiles(const Tiling& a, const Tiling& b) {
  return a.block_q == b.block_q && a.block_kv == b.block_kv && a.threads == b.threads &&
         a.pipeline_stages == b.pipeline_stages;
}

}  // namespace

TuneSpace default_tune_space(const HardwareProfile& profile, const RunRequest& request) {
  const Algorithm algorithm = request_algorithm(profile, request, builtin_registry());
  const Capabilities& c = algorithm.capabilities;
  const AttentionProblem p = with_defaults(request.problem);
  const std::int64_t query_rows = p.packs_query_group() ? p.group() * p.seq : p.seq;
  TuneSpace s;
  s.block_q = up_to_cover({64, 128, 192, 256}, query_rows);
  s.block_kv = up_to_cover({32, 64, 128, 256}, p.seq_kv);
  s.stages = c.one_stage                                   ? std::vector<int>{1}
             : c.forward_stages == StagesCount::q_o_stages ? std::vector<int>{1, 2, 3}
                                                           : std::vector<int>{2, 3, 4};
  s.threads = c.warpgroups ? std::vector<int>{0} : std::vector<int>{128, 256};
  return s;
}

void check_tune_space(const TuneSpace& space) {
  const auto check = [](const char* flag, const auto& values, std::int64_t most) {
    if (values.empty()) throw ConfigError(fmt::format("{} has no values", flag));
    for (const auto v : values) {
      if (v < 0 || v > most) {
        throw ConfigError(
            fmt::format("{} {} is out of range: it must be in [1, {}] (0: the algorithm's choice)",
                        flag, v, most));
      }
    }
  };
  check("--block-q", space.block_q, std::int64_t{1} << 20);
  check("--block-kv", space.block_kv, std::int64_t{1} << 20);
  check("--stages", space.stages, 64);
  check("--threads", space.threads, 1024);
  // Refused once here, not as every tiling of the space (each infeasible with the same words).
  for (const int t : space.threads) {
    if (t != 0) check_whole_warps(t);
  }
}

TuneResult tune(const HardwareProfile& profile, const RunRequest& base, const TuneSpace& space,
                const TuneOptions& options) {
  if (!(options.tie_band >= 0 && options.tie_band <= 1)) {
    throw ConfigError(
        fmt::format("the tie band {} is out of range: it must be in [0, 1]", options.tie_band));
  }
  check_tune_space(space);
  TuneResult result;
  result.space = space;
  result.tie_band = options.tie_band;
  const std::vector<std::size_t> sizes = {space.block_q.size(), space.block_kv.size(),
                                          space.stages.size(), space.threads.size()};
  result.points = combination_count(sizes);
  if (result.points > kMaxTunePoints) {
    throw ConfigError(fmt::format(
        "the tuning space has {} tilings, more than {}: narrow the lists (iosim sweep streams a "
        "larger space to a file)",
        result.points, kMaxTunePoints));
  }

  // Point i < points: combination i of the axes; the last point is the base request itself.
  std::vector<SweepPoint> points;
  points.reserve(result.points + 1);
  for (std::size_t i = 0; i < result.points; ++i) {
    const std::vector<std::size_t> idx = combination_at(sizes, i);
    SweepPoint point{i, kTuneProfileKey, base};
    TilingRequest& t = point.request.tiling;
    const auto given = [](auto v) { return v > 0 ? std::optional(v) : std::nullopt; };
    t.block_q = given(space.block_q[idx[0]]);
    t.block_kv = given(space.block_kv[idx[1]]);
    t.pipeline_stages = given(space.stages[idx[2]]);
    t.threads = given(space.threads[idx[3]]);
    points.push_back(std::move(point));
  }
  points.push_back(SweepPoint{result.points, kTuneProfileKey, base});

  // The L2 model's memory is the profile's, not a tiling's: a budget it cannot fit is refused as
  // run refuses it, naming --max-memory, before any point (issue #50's fourth probe: every tiling
  // came back "infeasible" for the host's budget, and tune blamed the space).
  if (base.engine.l2_enabled) {
    const L2ModelMemory m = l2_model_memory(profile);
    memory_budget::check(m.bytes, m.what, m.advice);
  }
  const std::map<std::string, HardwareProfile> profiles = {{kTuneProfileKey, profile}};
  SweepOptions sweep_options;
  sweep_options.jobs = options.jobs;
  sweep_options.on_progress = options.on_progress;
  std::vector<Report> reports = run_sweep(points, profiles, sweep_options);

  result.algorithm_default = std::move(reports.back());
  reports.pop_back();
  for (std::size_t i = 0; i < reports.size(); ++i) {
    TunePoint point{i, std::move(reports[i])};
    (point.report.feasible() ? result.ranked : result.infeasible).push_back(std::move(point));
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [](const TunePoint& a, const TunePoint& b) {
                     return a.report.engine.time_s < b.report.engine.time_s;
                   });
  if (result.algorithm_default.feasible()) {
    for (std::size_t r = 0; r < result.ranked.size(); ++r) {
      if (same_tiles(result.ranked[r].report.tiling, result.algorithm_default.tiling)) {
        result.default_rank = r + 1;
        break;
      }
    }
  }
  return result;
}

}  // namespace iosim
