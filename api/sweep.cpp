#include "api/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <exception>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "sim/base/errors.hpp"
#include "sim/base/memory_budget.hpp"
#include "sim/base/run_control.hpp"

namespace iosim {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

template <typename T>
std::optional<T> parse_number(const std::string& s) {
  T v{};
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end || s.empty()) return std::nullopt;
  return v;
}

std::int64_t int_or_throw(const std::string& flag, const std::string& text,
                          const std::string& part) {
  const auto v = parse_number<std::int64_t>(part);
  if (!v) {
    throw ConfigError(fmt::format("{} '{}': '{}' is not an integer", flag, text, part));
  }
  return *v;
}

// Appends the values of one range "a:b[:step]" to `out`.
void expand_range(const std::string& flag, const std::string& text, const std::string& part,
                  std::vector<std::int64_t>& out) {
  const std::vector<std::string> f = split(part, ':');
  if (f.size() < 2 || f.size() > 3) {
    throw ConfigError(fmt::format(
        "{} '{}': range '{}' must be FROM:TO, FROM:TO:xFACTOR or FROM:TO:+STEP", flag, text, part));
  }
  const std::int64_t from = int_or_throw(flag, text, f[0]);
  const std::int64_t to = int_or_throw(flag, text, f[1]);
  if (to < from) {
    throw ConfigError(fmt::format("{} '{}': range '{}' ends before it starts", flag, text, part));
  }
  const std::string step_text = f.size() == 3 ? f[2] : "+1";
  const bool geometric = !step_text.empty() && step_text[0] == 'x';
  const std::string number = !step_text.empty() && (step_text[0] == 'x' || step_text[0] == '+')
                                 ? step_text.substr(1)
                                 : step_text;
  const std::int64_t step = int_or_throw(flag, text, number);
  if (geometric && (step < 2 || from < 1)) {
    throw ConfigError(fmt::format(
        "{} '{}': geometric range '{}' needs a factor >= 2 and a start >= 1", flag, text, part));
  }
  if (!geometric && step < 1) {
    throw ConfigError(fmt::format("{} '{}': range '{}' needs a step >= 1", flag, text, part));
  }
  for (std::int64_t v = from; v <= to;) {
    if (out.size() >= kMaxAxisValues) {
      throw ConfigError(fmt::format("{} '{}': more than {} values", flag, text, kMaxAxisValues));
    }
    out.push_back(v);
    // Stop before the next value would overflow.
    if (geometric ? v > to / step : v > to - step) break;
    v = geometric ? v * step : v + step;
  }
}

template <typename T>
void reject_duplicates(const std::string& flag, const std::string& text,
                       const std::vector<T>& values) {
  // The values arrive as increasing runs (each range is one; most lists are one), so a natural
  // merge of the runs finds a repeat in O(n log runs): a range of a million values is one pass.
  // A full sort of ten million took 3.6 s under the sanitizers and past libFuzzer's 10 s on CI's
  // loaded cores (tests/fuzz/fuzz_sweep_spec.cpp; a std::set of 4 million had taken over 10 s
  // before that).
  if (values.size() > kMaxAxisValues) {
    throw ConfigError(fmt::format("{} '{}': more than {} values", flag, text, kMaxAxisValues));
  }
  std::vector<std::size_t> starts{0};
  for (std::size_t i = 1; i < values.size(); ++i) {
    if (!(values[i - 1] < values[i])) starts.push_back(i);
  }
  starts.push_back(values.size());
  if (starts.size() <= 2) return;  // one strictly increasing run: no value twice
  std::vector<T> sorted = values;
  while (starts.size() > 2) {
    std::vector<std::size_t> merged{0};
    std::size_t k = 0;
    for (; k + 2 < starts.size(); k += 2) {
      std::inplace_merge(sorted.begin() + static_cast<std::ptrdiff_t>(starts[k]),
                         sorted.begin() + static_cast<std::ptrdiff_t>(starts[k + 1]),
                         sorted.begin() + static_cast<std::ptrdiff_t>(starts[k + 2]));
      merged.push_back(starts[k + 2]);
    }
    if (k + 1 < starts.size()) merged.push_back(starts[k + 1]);  // an odd run out, carried
    starts = std::move(merged);
  }
  const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  if (twice != sorted.end()) {
    throw ConfigError(fmt::format("{} '{}' lists {} twice", flag, text, *twice));
  }
}

// Relative cost of a point, to start large problems first (so that the threads finish together)
// and to weigh progress: the algorithm's own estimate.
double point_work(const RunRequest& r) {
  if (r.kernel) return tiled_estimated_work(r.problem, described_tiling(*r.kernel, r.tiling));
  return estimated_work(builtin_registry().get(r.algorithm), r.problem, r.tiling);
}

}  // namespace

std::vector<std::int64_t> parse_int_values(const std::string& flag, const std::string& text) {
  std::vector<std::int64_t> values;
  for (const std::string& part : split(text, ',')) {
    if (part.empty()) throw ConfigError(fmt::format("{} '{}' has an empty value", flag, text));
    if (part.find(':') != std::string::npos) {
      expand_range(flag, text, part, values);
    } else {
      values.push_back(int_or_throw(flag, text, part));
    }
  }
  reject_duplicates(flag, text, values);
  return values;
}

std::vector<double> parse_double_values(const std::string& flag, const std::string& text) {
  std::vector<double> values;
  for (const std::string& part : split(text, ',')) {
    if (part.find(':') != std::string::npos) {
      throw ConfigError(
          fmt::format("{} '{}': ranges are for integer flags; list the values", flag, text));
    }
    const auto v = parse_number<double>(part);
    if (!v) throw ConfigError(fmt::format("{} '{}': '{}' is not a number", flag, text, part));
    values.push_back(*v);
  }
  reject_duplicates(flag, text, values);
  return values;
}

std::vector<std::string> parse_string_values(const std::string& flag, const std::string& text) {
  std::vector<std::string> values = split(text, ',');
  for (const std::string& v : values) {
    if (v.empty()) throw ConfigError(fmt::format("{} '{}' has an empty value", flag, text));
  }
  reject_duplicates(flag, text, values);
  return values;
}

std::size_t combination_count(const std::vector<std::size_t>& sizes) {
  std::size_t n = 1;
  for (std::size_t s : sizes) {
    if (s == 0) return 0;
    if (n > kMaxSweepPoints / s) {
      throw ConfigError(fmt::format("the sweep has more than {} points; narrow the lists or ranges",
                                    kMaxSweepPoints));
    }
    n *= s;
  }
  return n;
}

void for_each_combination(const std::vector<std::size_t>& sizes,
                          const std::function<void(const std::vector<std::size_t>&)>& visit) {
  const std::size_t n = combination_count(sizes);
  std::vector<std::size_t> idx(sizes.size(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    visit(idx);
    for (std::size_t a = sizes.size(); a-- > 0;) {  // odometer: last axis fastest
      if (++idx[a] < sizes[a]) break;
      idx[a] = 0;
    }
  }
}

std::vector<std::size_t> combination_at(const std::vector<std::size_t>& sizes, std::size_t i) {
  std::vector<std::size_t> idx(sizes.size(), 0);
  for (std::size_t a = sizes.size(); a-- > 0;) {  // last axis fastest
    idx[a] = i % sizes[a];
    i /= sizes[a];
  }
  return idx;
}

Shard parse_shard(const std::string& text) {
  const std::vector<std::string> f = split(text, '/');
  const auto k = f.size() == 2 ? parse_number<int>(f[0]) : std::nullopt;
  const auto n = f.size() == 2 ? parse_number<int>(f[1]) : std::nullopt;
  if (!k || !n) throw ConfigError(fmt::format("--shard '{}' must be K/N, e.g. 2/8", text));
  if (*n < 1 || *k < 1 || *k > *n) {
    throw ConfigError(fmt::format("--shard {}: K must be in [1, N] and N >= 1", text));
  }
  return {*k, *n};
}

int resolve_jobs(int jobs) {
  if (jobs > 0) return jobs;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int run_sweep_streaming(std::size_t count, const std::function<SweepPoint(std::size_t)>& make,
                        const std::map<std::string, HardwareProfile>& profiles,
                        const SweepOptions& options, const SweepSink& done) {
  // Each point as simulate() reads its problem (with_defaults(): N_kv = N where left out), so that
  // its estimate and, when it is rejected, its report hold N_kv itself.
  const auto made = [&make](std::size_t k) {
    SweepPoint point = make(k);
    point.request.problem = with_defaults(point.request.problem);
    return point;
  };
  // Largest first; ties keep point order so that runs are reproducible. Only the estimates and
  // the order are held (16 bytes a point); each point is made again when it runs.
  std::vector<double> work(count);
  for (std::size_t k = 0; k < count; ++k) {
    const SweepPoint point = made(k);
    ensure(profiles.count(point.profile) == 1,
           "sweep point {} names profile '{}' that was not loaded", point.index, point.profile);
    work[k] = point_work(point.request);
    if (k % 4096 == 4095) run_control::check();  // making millions of points takes a while
  }
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return work[a] > work[b]; });

  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex done_mutex;  // guards `failure`, the progress and the calls of `done`
  std::exception_ptr failure;
  std::size_t failure_k = count;
  SweepProgress progress{0, count, 0.0, std::accumulate(work.begin(), work.end(), 0.0)};

  // The pool's threads work for this one: its time and memory budgets are theirs (a Python
  // call's max_seconds and max_memory are its thread's).
  const run_control::Budget time_budget = run_control::current_budget();
  const memory_budget::Budget memory = memory_budget::current_budget();
  auto worker = [&] {
    const run_control::Adopt adopt_time(time_budget);
    const memory_budget::Adopt adopt_memory(memory);
    while (!stop.load()) {
      const std::size_t i = next.fetch_add(1);
      if (i >= order.size()) return;
      const std::size_t k = order[i];
      try {
        run_control::check();  // a signal or the time budget: stop before the next point
        const SweepPoint point = made(k);
        Report report;
        std::string rejection;
        try {
          report = simulate(profiles.at(point.profile), point.request);
        } catch (const ConfigError& e) {
          rejection = e.what();
          report.profile = profiles.at(point.profile).name;
          report.profile_description = profiles.at(point.profile).description;
          report.request = point.request;
          report.sm_clock_mhz =
              point.request.engine.sm_clock_mhz > 0
                  ? point.request.engine.sm_clock_mhz
                  : profiles.at(point.profile).sm.boost_clock_mhz.value;  // as simulate()
          const TilingRequest& t = point.request.tiling;  // as asked, 0 where left out
          report.tiling = {t.block_q.value_or(0),
                           t.block_kv.value_or(0),
                           t.threads.value_or(0),
                           t.pipeline_stages.value_or(0),
                           t.registers_per_thread.value_or(0),
                           t.splits.value_or(0)};
          report.infeasible_reason = std::string("invalid input: ") + e.what();
        }
        std::lock_guard<std::mutex> lock(done_mutex);
        done(k, point, report, rejection);
        ++progress.done;
        progress.done_work += work[k];
        if (options.on_progress) options.on_progress(progress);
      } catch (...) {
        std::lock_guard<std::mutex> lock(done_mutex);
        if (k < failure_k) {  // the first failing point in point order, as one thread would
          failure = std::current_exception();
          failure_k = k;
        }
        stop.store(true);
        return;
      }
    }
  };
  const int threads =
      std::min<int>(resolve_jobs(options.jobs), std::max<int>(1, static_cast<int>(count)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // the system gives no more threads (a limit or a memory cap): run on those we have
    }
  }
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return static_cast<int>(pool.size()) + 1;
}

std::vector<Report> run_sweep(const std::vector<SweepPoint>& points,
                              const std::map<std::string, HardwareProfile>& profiles,
                              const SweepOptions& options) {
  std::vector<Report> reports(points.size());
  std::vector<std::string> rejected(points.size());  // ConfigError messages
  run_sweep_streaming(
      points.size(), [&](std::size_t k) { return points[k]; }, profiles, options,
      [&](std::size_t k, const SweepPoint&, Report& report, const std::string& rejection) {
        reports[k] = std::move(report);
        rejected[k] = rejection;
      });
  if (!points.empty() && std::all_of(rejected.begin(), rejected.end(),
                                     [](const std::string& m) { return !m.empty(); })) {
    throw ConfigError(rejected.front());
  }
  return reports;
}

}  // namespace iosim
