// `iosim kvcache`: a serving KV cache under a memory budget, contiguous vs paged allocation, on one
// request stream. The flags and the simulation are api/kvcache_flags.cpp's; this file adds the
// output flags and writes.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "cli/flag_options.hpp"
#include "cli/format_flag.hpp"
#include "cli/output_file.hpp"
#include "reports/kvcache_writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_text.hpp"

namespace iosim::cli {
namespace {

struct OutputFlags {
  bool series = false;
  FormatFlag format{{"table", "json", "csv"}};
};

}  // namespace

Action add_kvcache_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "kvcache", "simulate a serving KV cache under a memory budget: contiguous vs paged");
  auto f = std::make_shared<KvCacheFlags>();
  auto out = std::make_shared<OutputFlags>();
  add_kvcache_flags(*cmd, *f);
  cmd->add_flag("--series", out->series, "table/csv: print the time series");
  out->format.add_to(*cmd);
  auto max_seconds = std::make_shared<MaxSecondsFlag>();
  max_seconds->add_to(*cmd);
  return [f, out, cmd, max_seconds] {
    const std::string& format = out->format.checked();
    max_seconds->apply();
    std::set<std::string> given;
    for (const KvCacheFlag& flag : kvcache_flags()) {
      if (cmd->count(flag.name) > 0) given.insert(flag.name);
    }
    const KvCacheRun run = run_kvcache(*f, given);
    if (format == "json") {
      write_stdout(json_text(kvcache_to_json(run), 2) + "\n");
    } else if (format == "csv") {
      write_stdout(out->series ? kvcache_series_csv(run) : kvcache_summary_csv(run));
    } else {
      write_stdout(kvcache_table(run, out->series));
    }
    return 0;
  };
}

}  // namespace iosim::cli
