// `iosim kernels`: the built-in kernels as descriptions (presets), the dataflows and mechanisms a
// description may name, and `--show NAME` to print one as YAML, ready to copy and edit; the keys
// of a description and its JSON Schema, from their rows (algorithms/kernel_schema.hpp), as
// `iosim models` prints a model file's.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "algorithms/dataflow.hpp"
#include "algorithms/kernel_description.hpp"
#include "algorithms/kernel_schema.hpp"
#include "cli/commands.hpp"
#include "cli/output_file.hpp"
#include "sim/base/errors.hpp"

namespace iosim::cli {

Action add_kernels_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "kernels", "list the built-in kernels as descriptions (dataflow x mechanisms)");
  struct Flags {
    std::string show;
    bool keys = false;
    std::string format = "text";
    bool schema = false;
  };
  auto flags = std::make_shared<Flags>();
  cmd->add_option("--show", flags->show,
                  "print a built-in kernel's description as YAML, to copy and edit (run it with "
                  "--kernel FILE)");
  cmd->add_flag("--keys", flags->keys,
                "print a kernel description's keys: the values each takes, the checks a value "
                "must pass, and what it is");
  cmd->add_option("--format", flags->format, "--keys: text | md (docs/kernels.md's table)")
      ->check(CLI::IsMember({"text", "md"}))
      ->capture_default_str();
  cmd->add_flag("--schema", flags->schema,
                "print the JSON Schema of a kernel description (schemas/kernel.schema.json)");
  return [flags] {
    if (int(!flags->show.empty()) + int(flags->keys) + int(flags->schema) > 1) {
      throw ConfigError("--show, --keys and --schema: give one of them");
    }
    if (flags->schema) {
      write_stdout(kernel_json_schema());
      return 0;
    }
    if (flags->format != "text" && !flags->keys) throw ConfigError("--format: only with --keys");
    if (flags->keys) {
      write_stdout(kernel_key_table(flags->format == "md"));
      return 0;
    }
    if (!flags->show.empty()) {
      write_stdout(kernel_description_yaml(kernel_preset(flags->show)));
      return 0;
    }
    fmt::print("{:<15} {:<17} {:<24} {:<9} {:<9} {}\n", "preset", "forward", "backward", "mma",
               "load", "warp roles");
    for (const KernelDescription& d : kernel_presets()) {
      const ResolvedMechanisms m = resolve_mechanisms(d);
      fmt::print("{:<15} {:<17} {:<24} {:<9} {:<9} {}{}\n", d.name,
                 d.forward.empty() ? "-" : d.forward, d.backward.empty() ? "-" : d.backward,
                 mma_name(m.mma), load_name(m.load), warp_roles_name(m.warp_roles),
                 d.block_mask ? " (block mask)" : "");
    }
    fmt::print("\nforward dataflows:\n");
    for (const Dataflow* f : forward_dataflows()) fmt::print("  {:<24} {}\n", f->name, f->summary);
    fmt::print("backward dataflows:\n");
    for (const Dataflow* b : backward_dataflows()) {
      fmt::print("  {:<24} {}\n", b->name, b->summary);
    }
    // Every key of the mechanisms section with its values, from the schema's rows.
    fmt::print("{}\n", kernel_mechanisms_line());
    fmt::print(
        "Print one with --show NAME, edit it, run it with iosim run --kernel FILE "
        "(docs/kernels.md).\n");
    return 0;
  };
}

}  // namespace iosim::cli
