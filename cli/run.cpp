#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/run_flags.hpp"
#include "reports/writers.hpp"
#include "sim/errors.hpp"
#include "sim/profile_overrides.hpp"

namespace iosim::cli {

Action add_run_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("run", "simulate one attention call");
  auto f = std::make_shared<RunFlags>();
  add_problem_flags(*cmd, *f);
  cmd->add_option("--set", f->set, kSetHelp);
  auto format = std::make_shared<FormatFlag>(std::vector<std::string>{"table", "json", "csv"});
  format->add_to(*cmd);
  return [f, format] {
    const std::string& chosen = format->checked();
    const HardwareProfile profile = load_profile(f->profile, parse_profile_overrides(f->set));
    const Report r = simulate(profile, to_request(*f));
    if (!r.feasible()) {
      std::cerr << "iosim: infeasible configuration: " << r.infeasible_reason << "\n";
      return 2;
    }
    if (chosen == "json") {
      std::cout << report_to_json(r).dump(2) << "\n";
    } else if (chosen == "csv") {
      std::cout << csv_header() << "\n" << csv_row(r) << "\n";
    } else {
      std::cout << format_table(r);
    }
    return 0;
  };
}

}  // namespace iosim::cli
