#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "api/ncu_import.hpp"
#include "api/run_flags.hpp"
#include "api/validation.hpp"
#include "cli/commands.hpp"
#include "cli/flag_options.hpp"
#include "cli/format_flag.hpp"
#include "cli/output_file.hpp"
#include "reports/validation_writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/text_file.hpp"

namespace iosim::cli {

namespace {
// --time-us: a kernel's time from 1 ns to 1000 s, the bound a measured time is held to
// (kSeconds, api/validation_prediction.cpp): past it (the flag took up to 1e12 us), the refusal
// named the export's case and 'time_free_running_s', not the flag (issue #50's fifth probe).
constexpr double kMinTimeUs = 1e-3, kMaxTimeUs = 1e9;
}  // namespace

Action add_validate_command(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("validate", "compare predictions with measured counters (cuda_validate)");
  struct Flags {
    std::vector<std::string> paths;
    std::string profile;
    FormatFlag format{{"table", "json", "csv", "md"}};
    std::string json_file;  // --json: the JSON report written there too
    // Your own kernel: its ncu export, its description, its problem and its CUDA-event time.
    std::string ncu;
    double time_us = 0.0;
    RunFlags problem;
    MaxSecondsFlag max_seconds;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("measured", f->paths,
                  "measurements JSON files or folders of them (several are summarized together)");
  cmd->add_option("--profile", f->profile,
                  "profile to predict with (default: from the folder or device name)");
  cmd->add_option("--ncu", f->ncu,
                  "your own kernel's Nsight Compute CSV export (ncu --csv --metrics ...; "
                  "docs/kernels.md), compared with --kernel on the problem the flags give");
  cmd->add_option("--time-us", f->time_us,
                  "--ncu: your kernel's time in microseconds, as CUDA events measured it");
  // The flags that describe the kernel of --ncu (and only it: measured files carry their own).
  static const std::vector<std::string> kNcuProblemFlags = {
      "--kernel",   "--batch", "--heads", "--kv-heads", "--seq", "--seq-kv",
      "--head-dim", "--dtype", "--pass",  "--causal",   "--mask"};
  add_problem_flags(*cmd, f->problem, kNcuProblemFlags);
  f->format.add_to(*cmd);
  // Each case is an engine run or more, and --ncu's problem may be as large as run's: a bound a
  // script can state (issue #50's fourth probe: `--ncu ... --batch 65536` ran for minutes).
  f->max_seconds.add_to(*cmd);
  cmd->add_option("--json", f->json_file,
                  "also write the JSON report (what --format json prints) to this file, so that "
                  "one run gives a table to read and a file to keep")
      ->check(output_file_name());
  return [f, cmd] {
    const std::string& format = f->format.checked();
    f->max_seconds.apply();
    if (!f->json_file.empty()) {
      // Refused before the predictions run, not after: a wrong path costs nothing.
      check_output_folder("--json", f->json_file);
      std::vector<std::string> inputs = f->paths;
      for (const std::string& p : {f->ncu, f->problem.kernel}) {
        if (!p.empty()) inputs.push_back(p);
      }
      check_not_an_input("--json", f->json_file, inputs);
    }
    ValidationResult v;
    if (!f->ncu.empty()) {
      if (!f->paths.empty()) {
        throw ConfigError("give measured files or --ncu FILE.csv, not both");
      }
      if (f->problem.kernel.empty()) {
        throw ConfigError("--ncu needs --kernel: the description of the kernel you measured");
      }
      if (f->problem.seq <= 0) throw ConfigError("--ncu needs --seq (and the problem's flags)");
      if (f->time_us == 0) {
        throw ConfigError("--ncu needs --time-us: your kernel's CUDA-event time in microseconds");
      }
      // Checked as the flag it is: inf (or 1e-320, which underflowed to a time of 0 s) reached
      // the comparison and came back as "NCU.csv: the kernel's measured time must be positive".
      if (!(f->time_us >= kMinTimeUs && f->time_us <= kMaxTimeUs)) {
        throw ConfigError(fmt::format(
            "--time-us {} is out of range: your kernel's CUDA-event time in microseconds must be "
            "in [{:g}, {:g}] (1 ns to 1000 s)",
            f->time_us, kMinTimeUs, kMaxTimeUs));
      }
      // The problem's flags are checked as run's are, naming the flag: past its range a value
      // was blamed on the export ("F.csv: case '...': problem: 'batch' = 9223372036854775807
      // must be a whole number in ..."; issue #50's probe).
      const RunFlags& p = f->problem;
      for (const auto& [name, value] :
           {std::pair{"--batch", p.batch}, std::pair{"--heads", p.heads},
            std::pair{"--kv-heads", p.kv_heads.value_or(1)}, std::pair{"--seq", p.seq},
            std::pair{"--seq-kv", p.seq_kv}, std::pair{"--head-dim", p.head_dim}}) {
        const auto range = problem_flag_range(name);
        if (cmd->count(name) > 0 && range && (value < range->first || value > range->second)) {
          throw ConfigError(fmt::format("{} {} is out of range: it must be in [{}, {}]", name,
                                        value, range->first, range->second));
        }
      }
      const RunRequest r = to_request(f->problem);
      const std::vector<NcuKernel> kernels =
          read_ncu_csv(read_text_file(f->ncu, "ncu CSV export", kMaxDataFileBytes), f->ncu);
      v = validate_document(
          ncu_case_document(kernels, *r.kernel, r.problem, f->time_us * 1e-6, f->ncu), f->ncu,
          f->profile);
    } else {
      if (f->paths.empty()) {
        throw ConfigError("give measurements files or folders, or --ncu FILE.csv --kernel ...");
      }
      // The problem's flags and --time-us describe the kernel of --ncu; measured files carry
      // their own problems (`validate FILE --seq 4096` ran FILE's cases and ignored --seq).
      std::vector<std::string> ncu_only = kNcuProblemFlags;
      ncu_only.push_back("--time-us");
      for (const std::string& name : ncu_only) {
        if (cmd->count(name) > 0) {
          throw ConfigError(fmt::format(
              "{} describes the kernel of --ncu; measured files carry their own problems: leave "
              "it out, or give --ncu FILE.csv",
              name));
        }
      }
      v = validate_measurements(
          std::vector<std::filesystem::path>(f->paths.begin(), f->paths.end()), f->profile);
    }
    const std::string json_text =
        format == "json" || !f->json_file.empty() ? validation_json(v) : std::string();
    if (!f->json_file.empty()) write_file_atomically(f->json_file, json_text);
    if (format == "json") {
      write_stdout(json_text);
    } else if (format == "csv") {
      write_stdout(validation_csv(v));
    } else if (format == "md") {
      write_stdout(validation_markdown(v));
    } else {
      write_stdout(validation_table(v));
    }
    return 0;
  };
}

}  // namespace iosim::cli
