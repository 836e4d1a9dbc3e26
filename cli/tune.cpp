// `iosim tune`: run's problem flags, the tile axes as lists; the fastest tilings, ranked.
#include "api/tune.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/flag_options.hpp"
#include "cli/format_flag.hpp"
#include "cli/output_file.hpp"
#include "cli/progress_bar.hpp"
#include "reports/tune_page.hpp"
#include "reports/tune_writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_text.hpp"
#include "sim/base/run_control.hpp"
#include "sim/hardware/profile_overrides.hpp"

namespace iosim::cli {
namespace {

// The tile flags of problem_flags() that tune reads as lists.
const std::vector<std::string>& tile_axis_flags() {
  static const std::vector<std::string> flags = {"--block-q", "--block-kv", "--stages",
                                                 "--threads"};
  return flags;
}

struct TuneFlags {
  RunFlags run;
  std::string block_q, block_kv, stages, threads;  // lists as typed; not given: the default space
  std::int64_t top = 5;
  double tie_band_pct = TuneOptions{}.tie_band * 100.0;
  int jobs = 0;
  double max_seconds = 0.0;
  FormatFlag format{{"table", "json", "csv"}};
  std::string html;  // --html FILE: the ranking as a page, beside the --format output
};

std::vector<int> small_ints(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  for (std::int64_t v : parse_int_values(flag, text)) {
    // tune() checks the range (check_tune_space); this only keeps the value an int.
    if (v < -(1 << 30) || v > (1 << 30)) {
      throw ConfigError(fmt::format("{} {} is out of range", flag, v));
    }
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// `given(flag)`: whether the command line gave the flag (an empty list given is an error, not the
// default space).
int run_tune_command(const TuneFlags& s, const std::function<bool(const char*)>& given) {
  const std::string& format = s.format.checked();
  if (s.top < 0) throw ConfigError(fmt::format("--top {} must be 0 (all) or more", s.top));
  if (!(s.tie_band_pct >= 0 && s.tie_band_pct <= 100)) {
    throw ConfigError(fmt::format("--tie-band {} is out of range: it must be in [0, 100] (percent)",
                                  s.tie_band_pct));
  }
  if (s.jobs < 0 || s.jobs > kMaxSweepJobs) {
    throw ConfigError(fmt::format("--jobs {} is out of range: it must be in [1, {}] (0: all cores)",
                                  s.jobs, kMaxSweepJobs));
  }
  if (!(s.max_seconds >= 0)) {
    throw ConfigError(fmt::format("--max-seconds {} must be >= 0", s.max_seconds));
  }
  if (!s.html.empty()) {
    // Before any work: a page that cannot be written, or would replace a file the tune reads.
    check_output_folder("--html", s.html);
    std::vector<std::string> inputs = {s.run.profile, s.run.kernel, s.run.block_table};
    if (s.run.pattern.rfind("file:", 0) == 0) inputs.push_back(s.run.pattern.substr(5));
    check_not_an_input("--html", s.html, inputs);
  }
  const HardwareProfile profile = load_profile(s.run.profile, parse_profile_overrides(s.run.set));
  const RunRequest base = to_request(s.run);
  TuneSpace space = default_tune_space(profile, base);
  if (given("--block-q")) space.block_q = parse_int_values("--block-q", s.block_q);
  if (given("--block-kv")) space.block_kv = parse_int_values("--block-kv", s.block_kv);
  if (given("--stages")) space.stages = small_ints("--stages", s.stages);
  if (given("--threads")) space.threads = small_ints("--threads", s.threads);
  TuneOptions options;
  options.tie_band = s.tie_band_pct / 100.0;
  options.jobs = s.jobs;
  if (::isatty(STDERR_FILENO)) options.on_progress = ProgressBar();
  run_control::set_budget(s.max_seconds, "--max-seconds");
  const TuneResult result = tune(profile, base, space, options);
  const auto top = static_cast<std::size_t>(s.top);
  if (format == "json") {
    write_stdout(json_text(tune_to_json(result, top), 2) + "\n");
  } else if (format == "csv") {
    write_stdout(tune_csv(result, top));
  } else {
    write_stdout(tune_table(result, top));
  }
  // No page of an empty ranking: the exit below says why, and no file is left behind.
  if (!s.html.empty() && !result.ranked.empty())
    write_file_atomically(s.html, tune_html(result, top));
  if (result.ranked.empty()) {
    // As `iosim run` of an infeasible tiling: exit 2, the output above saying why each failed.
    std::cerr << "iosim: infeasible configuration: no tiling of the space is feasible\n";
    return 2;
  }
  return 0;
}

}  // namespace

Action add_tune_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "which tiling is fastest: run's problem flags, every combination of the tile lists "
      "simulated and ranked by time");
  auto s = std::make_shared<TuneFlags>();
  std::vector<std::string> names;
  for (const ProblemFlag& flag : problem_flags()) {
    const auto& axes = tile_axis_flags();
    if (std::find(axes.begin(), axes.end(), flag.name) == axes.end()) names.push_back(flag.name);
  }
  add_problem_flags(*cmd, s->run, names);
  cmd->get_option("--seq")->required()->default_str(
      "");  // picked flags are not required (add_problem_flags)
  seq_not_required_with_lens(*cmd);
  cmd->add_option("--set", s->run.set, kSetHelp);
  const auto list = [&](const char* name, std::string& text, const char* space) {
    cmd->add_option(name, text,
                    fmt::format("a list (A,B,...) or a range (FROM:TO:+STEP, FROM:TO:xFACTOR); 0: "
                                "the algorithm's choice (default: {})",
                                space))
        ->type_name("INT[,INT...]");
  };
  list("--block-q", s->block_q, "64,128,192,256, up to the first that covers the query rows");
  list("--block-kv", s->block_kv, "32,64,128,256, up to the first that covers N_kv");
  list("--stages", s->stages,
       "2,3,4; 1,2,3 where they count Q/O tiles in flight (flash1); iosim run --help says what "
       "they count");
  list("--threads", s->threads,
       "128,256; warp-specialized kernels (flash3): the algorithm's rule, one producer "
       "warpgroup and one consumer warpgroup per 64 query rows");
  cmd->add_option("--top", s->top, "the fastest K tilings written (0: all)")->capture_default_str();
  cmd->add_option("--tie-band", s->tie_band_pct,
                  "percent: tilings within this of the best are marked as ties, closer than "
                  "iosim's time model can tell apart")
      ->capture_default_str();
  cmd->add_option("--jobs,-j", s->jobs, "threads (default: all cores)");
  cmd->add_option("--max-seconds", s->max_seconds,
                  "stop with exit 3 after this much wall time (0: no limit)");
  s->format.add_to(*cmd);
  cmd->add_option("--html", s->html,
                  "also write the ranking as a self-contained page here: a bar per tiling, the tie "
                  "band shaded, the table and the infeasible tilings with their reasons")
      ->check(output_file_name());
  return [cmd, s] {
    check_kernel_or_algo(*cmd);
    return run_tune_command(*s, [cmd](const char* flag) { return cmd->count(flag) > 0; });
  };
}

}  // namespace iosim::cli
