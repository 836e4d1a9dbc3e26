#pragma once
// The `iosim` subcommands. Each add_*_command adds its subcommand and flags to the app and returns
// the action main() runs when that subcommand was chosen. Actions throw ConfigError for bad
// input; only main() turns errors into exit codes.
#include <CLI/CLI.hpp>
#include <functional>

namespace iosim::cli {

using Action = std::function<int()>;

Action add_profiles_command(CLI::App& app);  // profiles.cpp
Action add_run_command(CLI::App& app);       // run.cpp
Action add_demo_command(CLI::App& app);      // demo.cpp
Action add_validate_command(CLI::App& app);  // validate.cpp
Action add_sweep_command(CLI::App& app);     // sweep.cpp
Action add_report_command(CLI::App& app);    // report.cpp
Action add_kvcache_command(CLI::App& app);   // kvcache.cpp
Action add_explain_command(CLI::App& app);   // explain.cpp
Action add_kernels_command(CLI::App& app);   // kernels.cpp
Action add_layer_command(CLI::App& app);     // layer.cpp
Action add_tune_command(CLI::App& app);      // tune.cpp
Action add_models_command(CLI::App& app);    // models.cpp

}  // namespace iosim::cli
