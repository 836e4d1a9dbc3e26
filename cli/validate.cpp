#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "sim/errors.hpp"
#include "validation/validation.hpp"

namespace iosim::cli {

Action add_validate_command(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("validate", "compare predictions with measured counters (cuda_validate)");
  struct Flags {
    std::string path, profile, format = "table";
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("measured", f->path, "a measurements JSON file or a folder of them")->required();
  cmd->add_option("--profile", f->profile,
                  "profile to predict with (default: from the folder or device name)");
  cmd->add_option("--format", f->format, "table | json | csv | md")->capture_default_str();
  return [f] {
    if (f->format != "table" && f->format != "json" && f->format != "csv" && f->format != "md") {
      throw ConfigError(fmt::format("--format must be table, json, csv or md, not '{}'", f->format));
    }
    const ValidationResult v = validate_measurements(f->path, f->profile);
    if (f->format == "json") {
      std::cout << validation_json(v);
    } else if (f->format == "csv") {
      std::cout << validation_csv(v);
    } else if (f->format == "md") {
      std::cout << validation_markdown(v);
    } else {
      std::cout << validation_table(v);
    }
    return 0;
  };
}

}  // namespace iosim::cli
