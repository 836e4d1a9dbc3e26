// `iosim layer`: one transformer layer (and the whole step) of a model, attention beside the GEMMs
// and elementwise ops around it, at one point or over lists of --batch, --seq and --context. The
// flags, the sweep and the simulation are api/layer_flags.cpp's and api/layer.cpp's; this file
// adds the output flags and writes.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/flag_options.hpp"
#include "cli/format_flag.hpp"
#include "cli/output_file.hpp"
#include "reports/layer_page.hpp"
#include "reports/layer_writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_text.hpp"

namespace iosim::cli {
namespace {

struct LayerOutput {
  FormatFlag format{{"table", "json", "csv"}};
  std::string html;
  std::map<std::string, std::string> lists;  // the axis flags' texts, "512,1024"
};

}  // namespace

Action add_layer_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "layer", "one transformer layer and the whole step: attention beside the GEMMs around it");
  auto f = std::make_shared<LayerFlags>();
  auto out = std::make_shared<LayerOutput>();
  add_layer_flags(*cmd, *f, out->lists);
  out->format.add_to(*cmd);
  cmd->add_option("--html", out->html,
                  "also write a page: time per op stacked at each point, and the roofline of every "
                  "op of every point")
      ->check(output_file_name());
  // As run's, sweep's, tune's and kvcache's: a list of large prefills takes tens of seconds
  // (issue #50 H1), and a script needs a bound it can state.
  auto max_seconds = std::make_shared<MaxSecondsFlag>();
  max_seconds->add_to(*cmd);
  return [f, out, cmd, max_seconds] {
    const std::string& format = out->format.checked();
    max_seconds->apply();
    std::set<std::string> given;
    for (const LayerFlag& flag : layer_flags()) {
      if (cmd->count(flag.name) > 0) given.insert(flag.name);
    }
    std::map<std::string, std::string> lists;
    for (const auto& [flag, text] : out->lists) {
      if (given.count(flag) > 0) lists.emplace(flag, text);
    }
    const LayerSweep sweep = layer_sweep(*f, lists);
    if (!out->html.empty()) {
      // The files the run reads, which --html must not replace.
      check_output_folder("--html", out->html);
      check_not_an_input("--html", out->html, {f->model, f->profile, f->kernel});
    }
    const LayerSweepRun run = run_layer_sweep(sweep, given);
    if (!out->html.empty()) {
      write_file_atomically(out->html, layer_sweep_html(run));
      std::cerr << fmt::format("iosim layer: wrote {}\n", out->html);
    }
    if (format == "json") {
      // One document a point: indented for one, a line each (JSON Lines) for several.
      for (const LayerReport& rep : run.reports) {
        write_stdout(json_text(layer_to_json(rep), run.reports.size() == 1 ? 2 : -1) + "\n");
      }
    } else if (format == "csv") {
      write_stdout(layer_sweep_csv(run));
    } else {
      write_stdout(layer_sweep_table(run));
    }
    return 0;
  };
}

}  // namespace iosim::cli
