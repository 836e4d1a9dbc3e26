#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "cli/format_flag.hpp"
#include "sim/errors.hpp"
#include "validation/validation.hpp"

namespace iosim::cli {

Action add_validate_command(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("validate", "compare predictions with measured counters (cuda_validate)");
  struct Flags {
    std::vector<std::string> paths;
    std::string profile;
    FormatFlag format{{"table", "json", "csv", "md"}};
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("measured", f->paths,
                  "measurements JSON files or folders of them (several are summarized together)")
      ->required();
  cmd->add_option("--profile", f->profile,
                  "profile to predict with (default: from the folder or device name)");
  f->format.add_to(*cmd);
  return [f] {
    const std::string& format = f->format.checked();
    const ValidationResult v = validate_measurements(
        std::vector<std::filesystem::path>(f->paths.begin(), f->paths.end()), f->profile);
    if (format == "json") {
      std::cout << validation_json(v);
    } else if (format == "csv") {
      std::cout << validation_csv(v);
    } else if (format == "md") {
      std::cout << validation_markdown(v);
    } else {
      std::cout << validation_table(v);
    }
    return 0;
  };
}

}  // namespace iosim::cli
