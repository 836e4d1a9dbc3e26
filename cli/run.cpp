#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/run_flags.hpp"
#include "reports/writers.hpp"
#include "sim/errors.hpp"

namespace iosim::cli {

Action add_run_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("run", "simulate one attention call");
  auto f = std::make_shared<RunFlags>();
  add_problem_flags(*cmd, *f);
  cmd->add_option("--format", f->format, "table | json | csv")->capture_default_str();
  return [f] {
    if (f->format != "table" && f->format != "json" && f->format != "csv") {
      throw ConfigError(fmt::format("--format must be table, json or csv, not '{}'", f->format));
    }
    const HardwareProfile profile = load_profile(f->profile);
    const Report r = simulate(profile, to_request(*f));
    if (!r.feasible()) {
      std::cerr << "iosim: infeasible configuration: " << r.infeasible_reason << "\n";
      return 2;
    }
    if (f->format == "json") {
      std::cout << report_to_json(r).dump(2) << "\n";
    } else if (f->format == "csv") {
      std::cout << csv_header() << "\n" << csv_row(r) << "\n";
    } else {
      std::cout << format_table(r);
    }
    return 0;
  };
}

}  // namespace iosim::cli
