// `iosim sweep`: run's flags with lists and ranges; the cartesian product, on --jobs threads.
#include "api/sweep.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>
#include <variant>

#include "cli/commands.hpp"
#include "cli/flag_options.hpp"
#include "cli/format_flag.hpp"
#include "cli/output_file.hpp"
#include "cli/progress_bar.hpp"
#include "cli/strict_numbers.hpp"
#include "cli/sweep_output.hpp"
#include "reports/sweep_file.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/fnv1a.hpp"
#include "sim/base/run_control.hpp"
#include "sim/hardware/profile_overrides.hpp"
#include "sim/hardware/profile_schema.hpp"

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
  bool resume = false;
  double max_seconds = 0.0;
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
    if (!text.empty() && (flag.name == "--seq-lens" || flag.name == "--seq-kv-lens")) {
      throw ConfigError(fmt::format(
          "{}: iosim sweep does not sweep ragged batches yet (its lists are axes); run each "
          "batch with iosim run",
          flag.name));
    }
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
    // An integer key (sm.count) takes ranges as an integer flag does; an unknown key is left to
    // the profile loader, which names it.
    Axis a{flag, {}, {}};
    if (profile_yaml::key_is_integer(o.key).value_or(false) &&
        o.value.find(':') != std::string::npos) {
      for (std::int64_t x : parse_int_values(flag, o.value)) a.text.push_back(std::to_string(x));
    } else {
      for (double x : parse_double_values(flag, o.value)) a.text.push_back(fmt::format("{}", x));
    }
    a.apply = [key = o.key, text = a.text](RunFlags& f, std::size_t i) {
      f.set.push_back(key + "=" + text[i]);
    };
    axes.push_back(std::move(a));
  }
  return axes;
}

// FNV-1a of the text: a sweep's identity in its journal.
std::string fingerprint_of(const std::string& text) {
  return fmt::format("{:016x}", fnv1a64(text));
}

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
  if (s.jobs < 0 || s.jobs > kMaxSweepJobs) {
    throw ConfigError(fmt::format("--jobs {} is out of range: it must be in [1, {}] (0: all cores)",
                                  s.jobs, kMaxSweepJobs));
  }
  if (s.resume && s.out.empty()) {
    throw ConfigError("--resume needs --out FILE: the finished points are kept beside FILE");
  }
  if (!(s.max_seconds >= 0)) {
    throw ConfigError(fmt::format("--max-seconds {} must be >= 0", s.max_seconds));
  }
  const Shard shard = parse_shard(s.shard);
  // The wall-time budget covers the whole command: loading a --set axis's profiles took minutes
  // before the first point (the seventh probe: 900,001 values, no stop honoured).
  run_control::set_budget(s.max_seconds, "--max-seconds");

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
  // A profile with --set values is loaded (and checked) once per combination of them, before
  // anything runs: every combination of the profile axis and the --set axes, the others at 0.
  const auto profile_key = [](const RunFlags& f) {
    std::string key = f.profile;
    for (const std::string& o : f.set) key += " --set " + o;
    return key;
  };
  if (!s.set.empty()) {
    std::vector<std::size_t> profile_sizes(sizes.size(), 1);
    std::size_t profile_count = 1;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      if (a == 0 || axes[a].flag.rfind("--set ", 0) == 0) {
        profile_sizes[a] = sizes[a];
        profile_count *= sizes[a];  // each at most kMaxAxisValues: checked before it overflows
        if (profile_count > kMaxWhatIfProfiles) {
          throw ConfigError(fmt::format(
              "the --set values make more than {} profiles (one per combination of --profile's "
              "and every --set's values, each loaded and held before the first point): list "
              "fewer values, or sweep them in several runs",
              kMaxWhatIfProfiles));
        }
      }
    }
    for_each_combination(profile_sizes, [&](const std::vector<std::size_t>& idx) {
      run_control::check();  // a stop (signal, --max-seconds) while they load
      RunFlags f = base;
      for (std::size_t a = 0; a < axes.size(); ++a) axes[a].apply(f, idx[a]);
      const std::string key = profile_key(f);
      if (profiles.count(key) == 0) {
        profiles.emplace(key, load_profile(f.profile, parse_profile_overrides(f.set)));
      }
    });
  }
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

  // The shard's points, made one at a time: point k of the shard is combination K - 1 + k N.
  const std::size_t shard_total = total > static_cast<std::size_t>(shard.index - 1)
                                      ? (total - static_cast<std::size_t>(shard.index)) /
                                                static_cast<std::size_t>(shard.count) +
                                            1
                                      : 0;
  const auto make_point = [&](std::size_t k) {
    const std::size_t index =
        static_cast<std::size_t>(shard.index - 1) + k * static_cast<std::size_t>(shard.count);
    const std::vector<std::size_t> idx = combination_at(sizes, index);
    RunFlags f = base;
    for (std::size_t a = 0; a < axes.size(); ++a) axes[a].apply(f, idx[a]);
    return SweepPoint{index, profile_key(f), to_request(f)};
  };

  std::string identity = fmt::format("{}\n{}/{}\n{}", format, shard.index, shard.count, total);
  for (const SweepAxis& a : description.axes) {
    identity += "\n" + a.flag;
    for (const std::string& v : a.values) identity += " " + v;
  }
  const ShardPoints shard_points{static_cast<std::size_t>(shard.index - 1),
                                 static_cast<std::size_t>(shard.count), shard_total};
  SweepOutput output(s.out, fingerprint_of(identity), s.resume, shard_points);

  // The points --resume did not read back, by their number k in the shard.
  std::vector<std::size_t> todo;
  todo.reserve(shard_total - output.resumed_rows());
  for (std::size_t k = 0; k < shard_total; ++k) {
    if (!output.has(k)) todo.push_back(k);
  }
  SweepOptions options;
  options.jobs = s.jobs;
  int threads_used = 1;
  if (::isatty(STDERR_FILENO) && !todo.empty()) options.on_progress = ProgressBar();
  std::size_t infeasible = 0, rejected = 0, done = 0;
  std::size_t first_rejected = shard_total;
  std::string first_rejection;
  try {
    threads_used = run_sweep_streaming(
        todo.size(), [&](std::size_t i) { return make_point(todo[i]); }, profiles, options,
        [&](std::size_t i, const SweepPoint& point, Report& report, const std::string& rejection) {
          output.append(todo[i], format == "csv" ? sweep_csv_row(point, report)
                                                 : sweep_json_row(point, report));
          ++done;
          if (!report.feasible()) ++infeasible;
          if (rejection.empty()) return;
          ++rejected;
          if (todo[i] < first_rejected) {
            first_rejected = todo[i];
            first_rejection = rejection;
          }
        });
  } catch (const Stopped& e) {
    const std::string kept = output.keep_for_resume();
    throw Stopped(fmt::format(
        "{} after {} of {} points{}", e.what(), output.resumed_rows() + done, shard_total,
        kept.empty() ? "; nothing written"
                     : fmt::format("; the finished points are kept in '{}': run the same command "
                                   "with --resume to continue",
                                   kept)));
  }
  // Every point rejected: the input is wrong, not the points (resumed rows were accepted once).
  if (rejected > 0 && rejected == shard_total) throw ConfigError(first_rejection);

  if (format == "csv") {
    output.finish(sweep_csv_header(), "", "", sweep_csv_header());
  } else {
    const SweepJsonFrame frame = sweep_json_frame(description, profiles);
    output.finish(frame.head, ",\n", frame.tail, frame.empty);
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print(
      stderr, "iosim sweep: {} points{} ({} infeasible{}) in {:.1f} s on {} threads{}\n",
      shard_total,
      shard.count > 1 ? fmt::format(" of {} (shard {}/{})", total, shard.index, shard.count) : "",
      infeasible,
      output.resumed_rows() > 0 ? fmt::format(", {} resumed", output.resumed_rows()) : "", wall_s,
      threads_used, s.out.empty() ? "" : " -> " + s.out);
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
  declare_integer_range(cmd->add_option("--jobs,-j", s->jobs, "threads (default: all cores)"),
                        std::numeric_limits<int>::min(), std::numeric_limits<int>::max(),
                        std::pair<std::int64_t, std::int64_t>{0, kMaxSweepJobs});
  cmd->add_option("--out,-o", s->out, "output file; .json or .csv (default: JSON on stdout)")
      ->check(output_file_name());
  s->format.add_to(*cmd, ", for stdout");
  cmd->add_option("--shard", s->shard, "run part K of N (points i with i % N == K-1)")
      ->capture_default_str();
  cmd->add_flag("--resume", s->resume,
                "continue a stopped sweep from the finished points it kept in OUT.partial");
  cmd->add_option("--max-seconds", s->max_seconds,
                  "stop (exit 3) after this much wall time, keeping finished points for --resume "
                  "(0: no limit)");
  return [cmd, s] {
    check_kernel_or_algo(*cmd);
    return run_sweep_command(*s);
  };
}

}  // namespace iosim::cli
