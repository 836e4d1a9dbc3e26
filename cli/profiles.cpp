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
    std::string keys;
    std::string format = "text";
    bool schema = false;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("--show", f->show,
                  "print a built-in profile's YAML (every number with its source), to copy and "
                  "edit");
  cmd->add_flag("--template", f->templ,
                "print an empty profile with every key, to fill in for a GPU of your own");
  cmd->add_option("--keys", f->keys,
                  "print a section's keys (sm, compute, l2, hbm, launch, power, cuda_graph, "
                  "clock_domains, cta_dispatch, clusters; all: every section): type, unit, the "
                  "checks a value must pass, and what it is");
  cmd->add_option("--format", f->format, "--keys: text | md (hwprofiles/README.md's tables)")
      ->check(CLI::IsMember({"text", "md"}))
      ->capture_default_str();
  cmd->add_flag("--schema", f->schema,
                "print the JSON Schema of a profile read as JSON (schemas/profile.schema.json)");
  return [f] {
    if (int(!f->show.empty()) + int(f->templ) + int(!f->keys.empty()) + int(f->schema) > 1) {
      throw ConfigError(!f->keys.empty() || f->schema
                            ? "--show, --template, --keys and --schema: give one of them"
                            : "--show and --template: give one of them");
    }
    if (f->schema) {
      write_stdout(profile_json_schema());
      return 0;
    }
    if (f->format != "text" && f->keys.empty()) {
      throw ConfigError("--format: only with --keys");
    }
    if (!f->keys.empty()) {
      write_stdout(profile_key_table(f->keys, f->format == "md"));
      return 0;
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
