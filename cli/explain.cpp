// `iosim explain`: a tiny attention call walked through step by step (teach/), in the terminal or
// as an interactive page (--html), or several schedules side by side (--compare, also --html).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "api/sweep.hpp"
#include "cli/commands.hpp"
#include "cli/flag_options.hpp"
#include "cli/output_file.hpp"
#include "sim/base/errors.hpp"
#include "teach/html_writer.hpp"
#include "teach/text_writer.hpp"

namespace iosim::cli {
namespace {

struct ExplainFlags {
  std::string compare, focus, html;
  std::optional<std::int64_t> step, until;
  bool no_color = false;
};

// "cta:I" -> I.
std::int64_t parse_focus(const std::string& s) {
  const std::string prefix = "cta:";
  const std::string number = s.rfind(prefix, 0) == 0 ? s.substr(prefix.size()) : "";
  std::size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || v < 0) {
    throw ConfigError(fmt::format("--focus '{}': expected cta:I, I a CTA number (0, 1, ...)", s));
  }
  return v;
}

std::optional<std::size_t> positive(const char* flag, std::optional<std::int64_t> v) {
  if (!v) return std::nullopt;
  if (*v < 1) throw ConfigError(fmt::format("{} {}: steps are numbered from 1", flag, *v));
  return static_cast<std::size_t>(*v);
}

// --compare A,B,...: two or more distinct built-in algorithms, each checked before any runs.
std::vector<std::string> compare_names(const std::string& text) {
  const std::vector<std::string> names = parse_string_values("--compare", text);
  if (names.size() < 2) {
    throw ConfigError(fmt::format(
        "--compare '{}': expected two or more algorithms A,B,... (e.g. standard,flash1,flash2)",
        text));
  }
  for (const std::string& name : names) {
    try {
      builtin_registry().get(name);
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("--compare '{}': {}", text, error.what()));
    }
  }
  return names;
}

}  // namespace

Action add_explain_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "explain", fmt::format("walk through a tiny attention call, one tile operation at a time "
                             "(N <= {}, d <= {}, B*H <= {})",
                             teach::kMaxSeq, teach::kMaxHeadDim, teach::kMaxMatrices));
  auto f = std::make_shared<RunFlags>();
  f->head_dim = teach::kMaxHeadDim;  // run's default (64) is past what explain traces
  add_problem_flags(*cmd, *f);
  auto e = std::make_shared<ExplainFlags>();
  cmd->add_option("--compare", e->compare,
                  "two or more algorithms side by side on the same problem, e.g. "
                  "standard,flash1,flash2 (with --html, a page of them)");
  cmd->add_option("--step", e->step, "show only step K (1-based)");
  cmd->add_option("--until", e->until, "show steps 1 to K");
  cmd->add_option("--focus", e->focus, "show only the steps of one CTA: cta:I");
  cmd->add_flag("--no-color", e->no_color, "plain text even on a terminal");
  cmd->add_option("--html", e->html,
                  "write a self-contained page here: the trace as a stepper, or with --compare "
                  "a table and a chart of the bytes")
      ->check(output_file_name());
  return [cmd, f, e] {
    check_kernel_or_algo(*cmd);
    if (!e->html.empty()) check_output_folder("--html", e->html);
    const RunRequest request = to_request(*f);
    teach::check_explainable(request);
    const HardwareProfile profile = load_profile(f->profile);
    teach::TextOptions options;
    options.color =
        !e->no_color && isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr;
    options.step = positive("--step", e->step);
    options.until = positive("--until", e->until);
    if (!e->focus.empty()) options.focus_cta = parse_focus(e->focus);
    if (options.step && options.until) {
      throw ConfigError("--step and --until: give one (a single step, or the steps up to one)");
    }
    if (!e->compare.empty()) {
      if (options.step || options.until || options.focus_cta) {
        throw ConfigError(
            "--compare shows totals side by side: it takes no --step, --until or --focus");
      }
      if (!f->kernel.empty()) {
        throw ConfigError(
            "--compare runs the algorithms it names: it takes no --kernel (explain a kernel "
            "description alone)");
      }
      std::vector<teach::Trace> traces;
      for (const std::string& name : compare_names(e->compare)) {
        RunRequest r = request;
        r.algorithm = name;
        traces.push_back(teach::build_trace(profile, r));
      }
      if (!e->html.empty()) {
        write_file_atomically(e->html, teach::compare_html(traces));
        std::cerr << fmt::format("iosim explain: wrote {} ({} algorithms side by side)\n", e->html,
                                 traces.size());
        return 0;
      }
      std::ostringstream text;
      teach::write_compare(text, traces, options.color);
      write_stdout(text.str());
      return 0;
    }
    const teach::Trace trace = teach::build_trace(profile, request);
    if (!e->html.empty()) {
      // The page shows every step, but a step or CTA the trace lacks is a mistake all the same:
      // refused as the terminal refuses it, before the page (which may replace a file) is written.
      teach::check_text_options(trace, options);
      write_file_atomically(e->html, teach::trace_html(trace));
      std::cerr << fmt::format("iosim explain: wrote {} ({} steps)\n", e->html, trace.steps.size());
      return 0;
    }
    std::ostringstream text;  // built whole first: a bad --step writes nothing
    teach::write_trace(text, trace, options);
    write_stdout(text.str());
    return 0;
  };
}

}  // namespace iosim::cli
