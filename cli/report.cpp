// `iosim report`: Markdown and a self-contained HTML page with charts from sweep files.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/output_file.hpp"
#include "reports/sweep_report.hpp"
#include "sim/base/errors.hpp"

namespace iosim::cli {

Action add_report_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "report", "Markdown and self-contained HTML (charts) from sweep files and measurements");
  struct Flags {
    std::vector<std::string> sweeps;
    std::string validation, validation_profile, html, md, chartjs;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("sweeps", f->sweeps,
                  "sweep files: JSON (iosim sweep --out FILE.json; shards merge) or CSV (--out "
                  "FILE.csv: its profiles are loaded by name)")
      ->required();
  cmd->add_option("--validation", f->validation,
                  "a measurements JSON file or folder (see iosim validate): adds predicted vs "
                  "measured");
  cmd->add_option("--validation-profile", f->validation_profile,
                  "profile to re-predict the measurements with (default: from the data)");
  cmd->add_option("--html", f->html, "write the HTML report here")->check(output_file_name());
  cmd->add_option("--md", f->md, "write the Markdown report here (default: Markdown on stdout)")
      ->check(output_file_name());
  cmd->add_option("--chartjs", f->chartjs,
                  fmt::format("Chart.js UMD build to inline (default: $IOSIM_CHARTJS, else {})",
                              chartjs_embedded() ? "the copy built into iosim" : kDebianChartJs));
  return [f] {
    // (It was ignored without --validation.)
    if (!f->validation_profile.empty() && f->validation.empty()) {
      throw ConfigError(
          "--validation-profile re-predicts the measurements of --validation: give "
          "--validation FILE, or leave it out");
    }
    // (It was ignored without --html: any --chartjs, a file or not, gave exit 0; issue #50.)
    if (!f->chartjs.empty() && f->html.empty()) {
      throw ConfigError(
          fmt::format("--chartjs '{}' is inlined in --html's page: give --html FILE, or leave "
                      "--chartjs out",
                      f->chartjs));
    }
    check_distinct_outputs({{"--md", f->md}, {"--html", f->html}});
    if (!f->html.empty()) check_output_folder("--html", f->html);
    if (!f->md.empty()) check_output_folder("--md", f->md);
    std::vector<std::string> inputs = f->sweeps;
    if (!f->validation.empty()) inputs.push_back(f->validation);
    if (!f->html.empty()) check_not_an_input("--html", f->html, inputs);
    if (!f->md.empty()) check_not_an_input("--md", f->md, inputs);
    std::vector<std::filesystem::path> files(f->sweeps.begin(), f->sweeps.end());
    const SweepData data = load_sweeps(files);
    std::optional<ValidationResult> validation;
    if (!f->validation.empty()) {
      validation = validate_measurements(f->validation, f->validation_profile);
    }
    const ValidationResult* v = validation ? &*validation : nullptr;
    // Build everything before writing anything: a failure leaves no file behind.
    const std::string md = sweep_report_markdown(data, v);
    std::string html;
    if (!f->html.empty()) html = sweep_report_html(data, v, load_chartjs(f->chartjs));
    // Both files or neither: a failure writing one leaves no other behind.
    std::vector<std::pair<std::string, std::string>> outputs;
    if (!f->md.empty()) outputs.emplace_back(f->md, md);
    if (!f->html.empty()) outputs.emplace_back(f->html, html);
    write_files_atomically(outputs);
    if (f->md.empty() && f->html.empty()) write_stdout(md);
    return 0;
  };
}

}  // namespace iosim::cli
