#include <fmt/format.h>

#include "cli/commands.hpp"
#include "reports/writers.hpp"
#include "sim/profile.hpp"

namespace iosim::cli {

Action add_profiles_command(CLI::App& app) {
  app.add_subcommand("profiles", "list the built-in hardware profiles");
  return [] {
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
