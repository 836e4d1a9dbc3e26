// `iosim layer`: one transformer layer (and the whole step) of a model, attention beside the GEMMs
// and elementwise ops around it. The flags and the simulation are api/layer_flags.cpp's and
// api/layer.cpp's; this file adds the output flags and writes.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/flag_options.hpp"
#include "cli/format_flag.hpp"
#include "reports/layer_writers.hpp"
#include "sim/base/json_text.hpp"

namespace iosim::cli {
namespace {

struct LayerOutput {
  FormatFlag format{{"table", "json", "csv"}};
};

}  // namespace

Action add_layer_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "layer", "one transformer layer and the whole step: attention beside the GEMMs around it");
  auto f = std::make_shared<LayerFlags>();
  auto out = std::make_shared<LayerOutput>();
  add_layer_flags(*cmd, *f);
  out->format.add_to(*cmd);
  return [f, out, cmd] {
    const std::string& format = out->format.checked();
    std::set<std::string> given;
    for (const LayerFlag& flag : layer_flags()) {
      if (cmd->count(flag.name) > 0) given.insert(flag.name);
    }
    const LayerReport rep = run_layer(*f, given);
    if (format == "json") {
      std::cout << json_text(layer_to_json(rep), 2) << "\n";
    } else if (format == "csv") {
      std::cout << layer_csv(rep);
    } else {
      std::cout << layer_table(rep);
    }
    return 0;
  };
}

}  // namespace iosim::cli
