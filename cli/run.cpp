#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "api/compare.hpp"
#include "cli/commands.hpp"
#include "cli/flag_options.hpp"
#include "cli/format_flag.hpp"
#include "cli/output_file.hpp"
#include "reports/compare_page.hpp"
#include "reports/compare_writers.hpp"
#include "reports/run_page.hpp"
#include "reports/writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_text.hpp"
#include "sim/base/run_control.hpp"
#include "sim/hardware/profile_overrides.hpp"

namespace iosim::cli {
namespace {

// On a terminal, a run that takes more than a second shows how far its kernels are, with an
// ETA, redrawn at most four times a second; the line is erased when the run ends.
class ProgressLine {
 public:
  ProgressLine() {
    if (!::isatty(STDERR_FILENO)) return;
    run_control::set_progress_hook([this](const std::string& kernel, std::int64_t done,
                                          std::int64_t total) { draw(kernel, done, total); });
  }
  ~ProgressLine() {
    run_control::set_progress_hook({});
    clear();
  }
  void clear() {
    if (shown_) fmt::print(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  void draw(const std::string& kernel, std::int64_t done, std::int64_t total) {
    const auto now = Clock::now();
    if (kernel != kernel_) {
      // The first kernel started with the run; a later one when its first wave was reported
      // (its start is not seen, so its ETA runs a wave short).
      kernel_start_ = kernel_.empty() ? start_ : now;
      kernel_ = kernel;
    }
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (elapsed < 1.0 || now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    const double fraction = static_cast<double>(done) / static_cast<double>(total);
    const double kernel_s = std::chrono::duration<double>(now - kernel_start_).count();
    fmt::print(stderr, "\r\033[Kiosim: kernel {}: {} of {} CTAs ({:.1f}%), elapsed {}, ETA {}",
               kernel, done, total, 100 * fraction, duration_text(elapsed),
               fraction > 0 ? duration_text(kernel_s * (1 - fraction) / fraction) : "--");
    std::fflush(stderr);
    shown_ = true;
  }
  static std::string duration_text(double s) {
    if (s < 60) return fmt::format("{:.0f}s", s);
    if (s < 3600) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
    return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::fmod(s / 60, 60));
  }
  Clock::time_point start_ = Clock::now(), last_{}, kernel_start_ = Clock::now();
  std::string kernel_;
  bool shown_ = false;
};

// The kernels --algo and --kernel name, in the order given on the command line (the first is the
// comparison's baseline): each occurrence's value (results(), one per occurrence under
// MultiOptionPolicy::Join), each split at its commas.
std::vector<ComparedKernel> kernels_given(const CLI::App& cmd) {
  const CLI::Option* algo = cmd.get_option("--algo");
  std::map<const CLI::Option*, std::size_t> seen;
  std::vector<ComparedKernel> kernels;
  for (const CLI::Option* o : cmd.parse_order()) {
    if (o != algo && o != cmd.get_option("--kernel")) continue;
    const std::size_t i = seen[o]++;
    if (i >= o->results().size()) continue;
    for (ComparedKernel& k : split_kernel_list(o->results()[i], o != algo)) {
      kernels.push_back(std::move(k));
    }
  }
  return kernels;
}

struct Pages {
  std::string html, svg;
};

// Several kernels side by side: every flag of `f` but the kernel shared, each checked before the
// first runs; nothing is written unless every kernel ran.
int run_comparison(const RunFlags& f, const std::vector<ComparedKernel>& kernels,
                   const std::string& format, double max_seconds, const Pages& pages) {
  if (!pages.svg.empty()) {
    throw ConfigError(fmt::format(
        "--svg {}: the SVG draws one run; for {} kernels side by side use --html (one page, a "
        "column per kernel)",
        pages.svg, kernels.size()));
  }
  std::vector<std::string> inputs = {f.profile, f.block_table};
  for (const ComparedKernel& k : kernels) {
    if (k.description) inputs.push_back(k.text);
  }
  if (f.pattern.rfind("file:", 0) == 0) inputs.push_back(f.pattern.substr(5));
  if (!pages.html.empty()) {
    check_output_folder("--html", pages.html);
    check_not_an_input("--html", pages.html, inputs);
  }
  const HardwareProfile profile = load_profile(f.profile, parse_profile_overrides(f.set));
  const std::vector<RunRequest> requests = compare_requests(profile, f, kernels);
  run_control::set_budget(max_seconds, "--max-seconds");
  ProgressLine progress;
  const std::vector<Report> reports = compare(profile, requests);
  progress.clear();
  for (const Report& r : reports) {
    if (!r.feasible()) {
      std::cerr << "iosim: infeasible configuration: " << r.request.algorithm << ": "
                << r.infeasible_reason << "\n";
      return 2;
    }
  }
  if (!pages.html.empty()) {
    write_file_atomically(pages.html, compare_html(reports));
    std::cerr << fmt::format("iosim run: wrote {}\n", pages.html);
  }
  if (format == "json") {
    write_stdout(json_text(compare_to_json(reports), 2) + "\n");
  } else if (format == "csv") {
    write_stdout(compare_csv(reports));
  } else {
    write_stdout(compare_table(reports));
  }
  return 0;
}

}  // namespace

Action add_run_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "run", "simulate one attention call, or several kernels side by side (--algo A,B)");
  auto f = std::make_shared<RunFlags>();
  add_problem_flags(*cmd, *f);
  // Several kernels run side by side: --algo and --kernel may be repeated (each occurrence kept,
  // in order, by kernels_given()) or given comma lists.
  for (const char* name : {"--algo", "--kernel"}) {
    CLI::Option* o = cmd->get_option(name);
    o->multi_option_policy(CLI::MultiOptionPolicy::Join);
    o->description(o->get_description() +
                   "; several (a comma list, repeated, or both flags) run side by side, every "
                   "other flag shared");
  }
  cmd->add_option("--set", f->set, kSetHelp);
  auto format = std::make_shared<FormatFlag>(std::vector<std::string>{"table", "json", "csv"});
  format->add_to(*cmd);
  auto max_seconds = std::make_shared<double>(0.0);
  cmd->add_option("--max-seconds", *max_seconds,
                  "stop with exit 3 after this much wall time (0: no limit)");
  auto pages = std::make_shared<std::pair<std::string, std::string>>();
  cmd->add_option("--html", pages->first,
                  "also write the run as a page: memory chart, roofline, kernel timeline")
      ->check(output_file_name());
  cmd->add_option("--svg", pages->second, "also write the memory chart and the roofline as one SVG")
      ->check(output_file_name());
  return [cmd, f, format, max_seconds, pages] {
    const std::string& chosen = format->checked();
    if (!(*max_seconds >= 0)) {
      throw ConfigError(fmt::format("--max-seconds {} must be >= 0", *max_seconds));
    }
    const auto& [html, svg] = *pages;
    check_distinct_outputs({{"--html", html}, {"--svg", svg}});
    const std::vector<ComparedKernel> kernels = kernels_given(*cmd);
    if (kernels.size() > 1) return run_comparison(*f, kernels, chosen, *max_seconds, {html, svg});
    // The files the run reads, which --html and --svg must not replace.
    std::vector<std::string> inputs = {f->profile, f->kernel, f->block_table};
    if (f->pattern.rfind("file:", 0) == 0) inputs.push_back(f->pattern.substr(5));
    for (const auto& [flag, path] : {std::pair{"--html", html}, std::pair{"--svg", svg}}) {
      if (path.empty()) continue;
      check_output_folder(flag, path);
      check_not_an_input(flag, path, inputs);
    }
    const HardwareProfile profile = load_profile(f->profile, parse_profile_overrides(f->set));
    const RunRequest request = to_request(*f);
    run_control::set_budget(*max_seconds, "--max-seconds");
    ProgressLine progress;
    const Report r = simulate(profile, request);
    progress.clear();
    if (!r.feasible()) {
      std::cerr << "iosim: infeasible configuration: " << r.infeasible_reason << "\n";
      return 2;
    }
    std::vector<std::pair<std::string, std::string>> outputs;
    if (!html.empty()) outputs.emplace_back(html, run_html(r));
    if (!svg.empty()) outputs.emplace_back(svg, run_svg(r));
    write_files_atomically(outputs);
    for (const auto& [path, text] : outputs) {
      std::cerr << fmt::format("iosim run: wrote {}\n", path);
    }
    if (chosen == "json") {
      write_stdout(json_text(report_to_json(r), 2) + "\n");
    } else if (chosen == "csv") {
      write_stdout(csv_header() + "\n" + csv_row(r) + "\n");
    } else {
      write_stdout(format_table(r));
    }
    return 0;
  };
}

}  // namespace iosim::cli
