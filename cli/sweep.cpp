// `iosim sweep`: run's flags with lists and ranges; the cartesian product, on --jobs threads.
#include "sweep/sweep.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <type_traits>
#include <utility>
#include <variant>

#include "cli/commands.hpp"
#include "cli/output_file.hpp"
#include "cli/run_flags.hpp"
#include "reports/sweep_file.hpp"
#include "sim/errors.hpp"
#include "sim/profile_overrides.hpp"

namespace iosim::cli {
namespace {

// Every swept flag as the user typed it (problem_flags()'s lists, by flag name); parsed once the
// command runs.
struct SweepFlags {
  std::map<std::string, std::string> text;
  std::vector<std::string> set;  // --set KEY=V1,V2,...: one axis each, after problem_flags()'s
  RunFlags scalars;  // --causal, --mask, --cold-l2, --execute, --seed: one value for every point
  int jobs = 0;
  std::string out, shard = "1/1";
  FormatFlag format{{"json", "csv"}};
};

// The swept axes in point order (outermost first). Each knows how to set its value on RunFlags.
struct Axis {
  std::string flag;
  std::vector<std::string> text;  // values as recorded in the sweep file
  std::function<void(RunFlags&, std::size_t)> apply;
  bool recorded = true;  // false: a flag left out, one point with run's default, not in the file
};

// `Field`: std::int64_t, or std::optional<std::int64_t> for a flag whose absence means a default.
template <typename Field>
Axis int_axis(const std::string& flag, const std::string& text, Field RunFlags::*field) {
  const std::vector<std::int64_t> v = parse_int_values(flag, text);
  Axis a{flag, {}, [v, field](RunFlags& f, std::size_t i) { f.*field = v[i]; }};
  for (std::int64_t x : v) a.text.push_back(std::to_string(x));
  return a;
}

Axis small_int_axis(const std::string& flag, const std::string& text, int RunFlags::*field) {
  const std::vector<std::int64_t> v = parse_int_values(flag, text);
  for (std::int64_t x : v) {
    if (x < -(1 << 30) || x > (1 << 30))
      throw ConfigError(fmt::format("{} {} is out of range", flag, x));
  }
  Axis a{flag, {}, [v, field](RunFlags& f, std::size_t i) { f.*field = static_cast<int>(v[i]); }};
  for (std::int64_t x : v) a.text.push_back(std::to_string(x));
  return a;
}

Axis double_axis(const std::string& flag, const std::string& text, double RunFlags::*field) {
  const std::vector<double> v = parse_double_values(flag, text);
  Axis a{flag, {}, [v, field](RunFlags& f, std::size_t i) { f.*field = v[i]; }};
  for (double x : v) a.text.push_back(fmt::format("{}", x));
  return a;
}

// A string flag whose default is empty (--pattern: none) is one point with that empty value.
Axis string_axis(const std::string& flag, const std::string& text, std::string RunFlags::*field) {
  const std::vector<std::string> v =
      text.empty() ? std::vector<std::string>{""} : parse_string_values(flag, text);
  return {flag, v, [v, field](RunFlags& f, std::size_t i) { f.*field = v[i]; }};
}

// The text a sweep gives a flag the user left out: run's default, "" for an optional one.
std::string default_text(const ProblemFlag& flag) {
  static const RunFlags defaults;
  return std::visit(
      [](auto field) -> std::string {
        using T = std::remove_cvref_t<decltype(defaults.*field)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return defaults.*field;
        } else if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) {
          return "";
        } else {
          return fmt::format("{}", defaults.*field);
        }
      },
      flag.field);
}

// --causal, --mask, --cold-l2, --execute and --seed take one value for every point.
bool is_scalar(const ProblemFlag& flag) {
  return std::holds_alternative<bool RunFlags::*>(flag.field) ||
         std::holds_alternative<std::uint64_t RunFlags::*>(flag.field);
}

// One axis per list-valued flag of problem_flags(), in its order; the scalar flags are not axes.
std::vector<Axis> make_axes(const SweepFlags& s) {
  std::vector<Axis> axes;
  for (const ProblemFlag& flag : problem_flags()) {
    if (is_scalar(flag)) continue;
    const std::string& text = s.text.at(flag.name);
    if (text.empty() && flag.unrecorded_when_absent) {
      axes.push_back({flag.name, {""}, [](RunFlags&, std::size_t) {}, false});
      continue;
    }
    std::visit(
        [&](auto field) {
          using T = std::remove_cvref_t<decltype(RunFlags{}.*field)>;
          if constexpr (std::is_same_v<T, std::string>) {
            axes.push_back(string_axis(flag.name, text, field));
          } else if constexpr (std::is_same_v<T, double>) {
            axes.push_back(double_axis(flag.name, text, field));
          } else if constexpr (std::is_same_v<T, int>) {
            axes.push_back(small_int_axis(flag.name, text, field));
          } else if constexpr (std::is_same_v<T, std::int64_t> ||
                               std::is_same_v<T, std::optional<std::int64_t>>) {
            axes.push_back(int_axis(flag.name, text, field));
          }
        },
        flag.field);
  }
  // --set KEY=VALUES: the values are numbers, a list or a range like any numeric flag's.
  std::set<std::string> keys;
  for (const ProfileOverride& o : parse_profile_overrides(s.set)) {
    const std::string flag = "--set " + o.key;
    if (!keys.insert(o.key).second) {
      throw ConfigError(
          fmt::format("--set {} is given twice; list its values in one --set", o.key));
    }
    const std::vector<double> v = parse_double_values(flag, o.value);
    Axis a{flag, {}, {}};
    for (double x : v) a.text.push_back(fmt::format("{}", x));
    a.apply = [key = o.key, text = a.text](RunFlags& f, std::size_t i) {
      f.set.push_back(key + "=" + text[i]);
    };
    axes.push_back(std::move(a));
  }
  return axes;
}

// A progress bar with an ETA on stderr, redrawn at most ten times a second.
class ProgressBar {
 public:
  void operator()(const SweepProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (p.done < p.total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double fraction = p.total_work > 0 ? p.done_work / p.total_work : 1.0;
    const int width = 30;
    const int filled = static_cast<int>(fraction * width);
    std::string eta = "--";
    if (p.done > 0 && fraction > 0) eta = duration_text(elapsed * (1.0 - fraction) / fraction);
    fmt::print(stderr, "\r[{}{}] {}/{} points  {:3.0f}%  elapsed {}  ETA {}   ",
               std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(width - filled), '-'), p.done, p.total,
               fraction * 100, duration_text(elapsed), eta);
    if (p.done == p.total) fmt::print(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  static std::string duration_text(double s) {
    if (s < 60) return fmt::format("{:.0f}s", s);
    return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  }
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

int run_sweep_command(const SweepFlags& s) {
  const auto started = std::chrono::steady_clock::now();
  std::string format;
  if (!s.out.empty()) {
    format = extension_of(s.out);
    if (format != "json" && format != "csv") {
      throw ConfigError(fmt::format("--out '{}': the file name must end in .json or .csv", s.out));
    }
    check_output_folder("--out", s.out);
  } else {
    format = s.format.checked();
  }
  if (s.jobs < 0) throw ConfigError(fmt::format("--jobs {} must be positive", s.jobs));
  const Shard shard = parse_shard(s.shard);

  const std::vector<Axis> axes = make_axes(s);
  std::vector<std::size_t> sizes;
  for (const Axis& a : axes) sizes.push_back(a.text.size());
  const std::size_t total = combination_count(sizes);

  // Bad names fail before anything runs: every algorithm, then every profile (loaded once).
  for (const std::string& algo : axes[1].text) builtin_registry().get(algo);
  std::map<std::string, HardwareProfile> profiles;
  for (const std::string& name : axes[0].text) {
    HardwareProfile p = load_profile(name);
    if (s.set.empty()) profiles.emplace(name, std::move(p));  // with --set: loaded per point
  }

  const RunFlags& base = s.scalars;
  std::vector<SweepPoint> points;
  std::size_t index = 0;
  for_each_combination(sizes, [&](const std::vector<std::size_t>& idx) {
    if (shard.holds(index)) {
      RunFlags f = base;
      for (std::size_t a = 0; a < axes.size(); ++a) axes[a].apply(f, idx[a]);
      // A profile with --set values is loaded (and checked) once per combination of them.
      std::string key = f.profile;
      for (const std::string& o : f.set) key += " --set " + o;
      if (profiles.count(key) == 0) {
        profiles.emplace(key, load_profile(f.profile, parse_profile_overrides(f.set)));
      }
      points.push_back({index, key, to_request(f)});
    }
    ++index;
  });

  SweepOptions options;
  options.jobs = s.jobs;
  if (::isatty(STDERR_FILENO) && !points.empty()) options.on_progress = ProgressBar();
  const std::vector<Report> reports = run_sweep(points, profiles, options);

  SweepDescription description;
  description.total_points = total;
  description.shard = shard;
  for (const Axis& a : axes) {
    if (a.recorded) description.axes.push_back({a.flag, a.text});
  }
  for (auto [flag, on] :
       {std::pair{"--causal", base.causal}, std::pair{"--mask", base.mask},
        std::pair{"--cold-l2", base.cold_l2}, std::pair{"--execute", base.execute}}) {
    if (on) description.axes.push_back({flag, {"true"}});
  }
  description.axes.push_back({"--seed", {std::to_string(base.seed)}});

  const std::string text = format == "csv" ? sweep_csv(points, reports)
                                           : sweep_json(description, points, reports, profiles);
  if (s.out.empty()) {
    std::cout << text;
  } else {
    write_file_atomically(s.out, text);
  }
  std::size_t infeasible = 0;
  for (const Report& r : reports) infeasible += r.feasible() ? 0 : 1;
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print(
      stderr, "iosim sweep: {} points{} ({} infeasible) in {:.1f} s on {} threads{}\n",
      points.size(),
      shard.count > 1 ? fmt::format(" of {} (shard {}/{})", total, shard.index, shard.count) : "",
      infeasible, wall_s, resolve_jobs(s.jobs), s.out.empty() ? "" : " -> " + s.out);
  return 0;
}

}  // namespace

Action add_sweep_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "simulate the cartesian product of run's flags; each takes a list (32,64,128) or a range "
      "(512:65536:x2, 64:256:+64)");
  auto s = std::make_shared<SweepFlags>();
  for (const ProblemFlag& flag : problem_flags()) {
    if (is_scalar(flag)) {
      add_problem_flags(*cmd, s->scalars, {flag.name});
      continue;
    }
    std::string& text = s->text[flag.name] = default_text(flag);
    CLI::Option* o = cmd->add_option(flag.name, text, flag.help);
    if (flag.required) o->required();
    if (!text.empty() && !flag.required) o->capture_default_str();
  }
  cmd->add_option(
      "--set", s->set,
      std::string(kSetHelp) + "; VALUE may be a list or a range (l2.size_bytes=10e6,20e6)");
  cmd->add_option("--jobs,-j", s->jobs, "threads (default: all cores)");
  cmd->add_option("--out,-o", s->out, "output file; .json or .csv (default: JSON on stdout)");
  s->format.add_to(*cmd, ", for stdout");
  cmd->add_option("--shard", s->shard, "run part K of N (points i with i % N == K-1)")
      ->capture_default_str();
  return [s] { return run_sweep_command(*s); };
}

}  // namespace iosim::cli
