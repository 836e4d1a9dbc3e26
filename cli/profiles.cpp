#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/output_file.hpp"
#include "reports/writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/hardware/profile_overrides.hpp"

namespace iosim::cli {

Action add_profiles_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("profiles", "list the built-in hardware profiles");
  struct Flags {
    std::string show;
    bool templ = false;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("--show", f->show,
                  "print a built-in profile's YAML (every number with its source), to copy and "
                  "edit");
  cmd->add_flag("--template", f->templ,
                "print an empty profile with every key, to fill in for a GPU of your own");
  return [f] {
    if (!f->show.empty() && f->templ) {
      throw ConfigError("--show and --template: give one of them");
    }
    if (!f->show.empty()) {
      write_stdout(builtin_profile_text(f->show));
      return 0;
    }
    if (f->templ) {
      write_stdout(profile_template());
      return 0;
    }
    for (const std::string& name : builtin_profile_names()) {
      const HardwareProfile p = load_profile(name);
      fmt::print("{:<18} {:<26} {:>4} SMs  L2 {:>6}  HBM {:>7} at {:.0f} GB/s  smem/CTA {} B\n",
                 name, p.description, p.sm.count.value,
                 human_bytes(static_cast<double>(p.l2.size_bytes.value)),
                 human_bytes(static_cast<double>(p.hbm.capacity_bytes.value)),
                 p.hbm.bandwidth_gbps.value, p.sm.smem_per_cta_max_bytes.value);
    }
    return 0;
  };
}

}  // namespace iosim::cli
