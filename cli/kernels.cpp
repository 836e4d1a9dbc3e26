// `iosim kernels`: the built-in kernels as descriptions (presets), the dataflows and mechanisms a
// description may name, and `--show NAME` to print one as YAML, ready to copy and edit.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "algorithms/dataflow.hpp"
#include "algorithms/kernel_description.hpp"
#include "cli/commands.hpp"
#include "cli/output_file.hpp"
#include "sim/base/errors.hpp"

namespace iosim::cli {

Action add_kernels_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "kernels", "list the built-in kernels as descriptions (dataflow x mechanisms)");
  auto show = std::make_shared<std::string>();
  cmd->add_option("--show", *show,
                  "print a built-in kernel's description as YAML, to copy and edit (run it with "
                  "--kernel FILE)");
  return [show] {
    if (!show->empty()) {
      write_stdout(kernel_description_yaml(kernel_preset(*show)));
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
    fmt::print(
        "mechanisms: mma mma_sync | wgmma_ss | wgmma_rs; load plain | cp_async | tma; warp_roles "
        "uniform | producer_consumer | pingpong; persistent true | false\n"
        "Print one with --show NAME, edit it, run it with iosim run --kernel FILE "
        "(docs/kernels.md).\n");
    return 0;
  };
}

}  // namespace iosim::cli
