// The `iosim` command. It parses flags, calls the library (load_profile, simulate) and prints
// what the writers format. Only this file turns errors into exit codes:
//   0 success, 2 bad input or an infeasible configuration, 3 an internal error (a bug).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>

#include "algorithms/simulate.hpp"
#include "reports/writers.hpp"
#include "sim/errors.hpp"

namespace {

using namespace iosim;

struct RunFlags {
  std::string profile = "h100-sxm5-80gb";
  std::string algorithm = "flash2";
  std::int64_t batch = 1, heads = 1, seq = 0, seq_kv = 0, head_dim = 64;
  std::string dtype = "fp16";
  std::int64_t block_q = 0, block_kv = 0;
  int threads = 0, stages = 0;
  std::string pass = "fwd";
  bool causal = false, mask = false, execute = false, cold_l2 = false;
  double dropout = 0.0, sm_clock_mhz = 0.0;
  std::string l2 = "on";
  std::string format = "table";
  std::uint64_t seed = 1;
};

void add_problem_flags(CLI::App& cmd, RunFlags& f) {
  cmd.add_option("--profile", f.profile, "built-in profile name or path to a YAML profile")
      ->capture_default_str();
  cmd.add_option("--algo", f.algorithm, "standard | flash1 | flash2")->capture_default_str();
  cmd.add_option("--batch", f.batch, "batch size B")->capture_default_str();
  cmd.add_option("--heads", f.heads, "attention heads H")->capture_default_str();
  cmd.add_option("--seq", f.seq, "query length N")->required();
  cmd.add_option("--seq-kv", f.seq_kv, "key/value length (default: --seq)");
  cmd.add_option("--head-dim", f.head_dim, "head dimension d")->capture_default_str();
  cmd.add_option("--dtype", f.dtype, "fp16 | bf16 | fp32")->capture_default_str();
  cmd.add_option("--block-q", f.block_q, "query rows per tile Br (default: the algorithm's)");
  cmd.add_option("--block-kv", f.block_kv, "key/value rows per tile Bc (default: the algorithm's)");
  cmd.add_option("--threads", f.threads, "threads per CTA of the main kernel");
  cmd.add_option("--stages", f.stages, "copy pipeline stages of the main kernel");
  cmd.add_option("--pass", f.pass, "fwd | bwd | fwdbwd")->capture_default_str();
  cmd.add_flag("--causal", f.causal, "causal mask (bottom-right aligned), masked blocks skipped");
  cmd.add_flag("--mask", f.mask, "an elementwise mask computed from indices");
  cmd.add_option("--dropout", f.dropout, "dropout probability in [0, 1)");
  cmd.add_option("--l2", f.l2, "on: three-level model; off: two-level HBM<->SRAM model")
      ->capture_default_str();
  cmd.add_flag("--cold-l2", f.cold_l2, "flush the L2 before every kernel, as Nsight Compute does");
  cmd.add_option("--sm-clock-mhz", f.sm_clock_mhz, "SM clock (default: the profile's boost clock)");
  cmd.add_flag("--execute", f.execute, "run the schedule numerically and report the max error");
  cmd.add_option("--seed", f.seed, "seed of the random inputs and dropout")->capture_default_str();
}

RunRequest to_request(const RunFlags& f) {
  RunRequest r;
  r.algorithm = f.algorithm;
  AttentionProblem& p = r.problem;
  p.batch = f.batch;
  p.heads = f.heads;
  p.seq = f.seq;
  p.seq_kv = f.seq_kv > 0 ? f.seq_kv : f.seq;
  if (f.seq_kv < 0) throw ConfigError(fmt::format("--seq-kv {} must be positive", f.seq_kv));
  p.head_dim = f.head_dim;
  p.dtype = parse_dtype(f.dtype);
  p.causal = f.causal;
  p.mask = f.mask;
  p.dropout = f.dropout;
  p.pass = parse_pass(f.pass);
  for (auto [name, v] : {std::pair{"--block-q", f.block_q}, std::pair{"--block-kv", f.block_kv},
                         std::pair{"--threads", std::int64_t{f.threads}},
                         std::pair{"--stages", std::int64_t{f.stages}}}) {
    if (v < 0) throw ConfigError(fmt::format("{} {} must be positive", name, v));
  }
  if (f.block_q > (1 << 20) || f.block_kv > (1 << 20)) {
    throw ConfigError(fmt::format("block sizes {} x {} are absurd (limit 1048576)", f.block_q,
                                  f.block_kv));
  }
  if (f.threads > 1024) throw ConfigError(fmt::format("--threads {} exceeds 1024", f.threads));
  r.tiling = {f.block_q, f.block_kv, f.threads, f.stages};
  if (f.l2 != "on" && f.l2 != "off") {
    throw ConfigError(fmt::format("--l2 must be 'on' or 'off', not '{}'", f.l2));
  }
  r.engine.l2_enabled = f.l2 == "on";
  r.engine.flush_l2_between_kernels = f.cold_l2;
  if (f.sm_clock_mhz < 0 || f.sm_clock_mhz > 1e4) {
    throw ConfigError(fmt::format("--sm-clock-mhz {} is out of range", f.sm_clock_mhz));
  }
  r.engine.sm_clock_mhz = f.sm_clock_mhz;
  r.execute = f.execute;
  r.seed = f.seed;
  return r;
}

int cmd_profiles() {
  for (const std::string& name : builtin_profile_names()) {
    const HardwareProfile p = load_profile(name);
    fmt::print("{:<18} {:<26} {:>4} SMs  L2 {:>6}  HBM {:>7} at {:.0f} GB/s  smem/CTA {} B\n", name,
               p.description, p.sm.count.value, human_bytes(static_cast<double>(p.l2.size_bytes.value)),
               human_bytes(static_cast<double>(p.hbm.capacity_bytes.value)),
               p.hbm.bandwidth_gbps.value, p.sm.smem_per_cta_max_bytes.value);
  }
  return 0;
}

int cmd_run(const RunFlags& f) {
  if (f.format != "table" && f.format != "json" && f.format != "csv") {
    throw ConfigError(fmt::format("--format must be table, json or csv, not '{}'", f.format));
  }
  const HardwareProfile profile = load_profile(f.profile);
  const Report r = simulate(profile, to_request(f));
  if (!r.feasible()) {
    std::cerr << "iosim: infeasible configuration: " << r.infeasible_reason << "\n";
    return 2;
  }
  if (f.format == "json") {
    std::cout << report_to_json(r).dump(2) << "\n";
  } else if (f.format == "csv") {
    std::cout << csv_header() << "\n" << csv_row(r) << "\n";
  } else {
    std::cout << format_table(r);
  }
  return 0;
}

// The README's first command: standard vs FlashAttention on one GPU, both IO models.
int cmd_demo(RunFlags f) {
  const HardwareProfile profile = load_profile(f.profile);
  std::vector<Report> two_level, three_level;
  for (const char* algo : {"standard", "flash1", "flash2"}) {
    f.algorithm = algo;
    RunRequest req = to_request(f);
    req.engine.l2_enabled = false;
    two_level.push_back(simulate(profile, req));
    req.engine.l2_enabled = true;
    three_level.push_back(simulate(profile, req));
  }
  const AttentionProblem& p = three_level.front().request.problem;
  fmt::print("iosim demo: attention forward on {} ({})\n", profile.description, profile.name);
  fmt::print("problem: B={} H={} N={} d={} {}{}\n\n", p.batch, p.heads, p.seq, p.head_dim,
             dtype_name(p.dtype), p.causal ? " causal" : "");
  std::cout << format_comparison(two_level, three_level);
  fmt::print(
      "\nHBM (2-level) is the FlashAttention paper's model (every load and store reaches HBM);\n"
      "HBM (L2 on) counts only L2 misses and write-backs, so re-reads of K/V that hit in L2 drop "
      "out.\nTry: iosim run --algo flash2 --seq 4096 --batch 4 --heads 16 --head-dim 64\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"iosim: GPU memory-hierarchy simulator and IO-complexity analyzer for attention"};
  app.require_subcommand(1);
  app.get_formatter()->column_width(34);
  RunFlags run_flags;
  CLI::App* profiles = app.add_subcommand("profiles", "list the built-in hardware profiles");
  CLI::App* run = app.add_subcommand("run", "simulate one attention call");
  add_problem_flags(*run, run_flags);
  run->add_option("--format", run_flags.format, "table | json | csv")->capture_default_str();
  RunFlags demo_flags;
  demo_flags.batch = 4;
  demo_flags.heads = 16;
  demo_flags.seq = 4096;
  CLI::App* demo = app.add_subcommand("demo", "standard vs FlashAttention-1/2 on one profile");
  demo->add_option("--profile", demo_flags.profile, "profile name or YAML path")->capture_default_str();
  demo->add_option("--batch", demo_flags.batch, "batch size B")->capture_default_str();
  demo->add_option("--heads", demo_flags.heads, "attention heads H")->capture_default_str();
  demo->add_option("--seq", demo_flags.seq, "sequence length N")->capture_default_str();
  demo->add_option("--head-dim", demo_flags.head_dim, "head dimension d")->capture_default_str();
  demo->add_option("--dtype", demo_flags.dtype, "fp16 | bf16 | fp32")->capture_default_str();
  demo->add_flag("--causal", demo_flags.causal, "causal mask");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "iosim: " << e.what() << "\nRun 'iosim --help' for usage.\n";
    return 2;
  }
  try {
    if (*profiles) return cmd_profiles();
    if (*run) return cmd_run(run_flags);
    if (*demo) return cmd_demo(demo_flags);
  } catch (const ConfigError& e) {
    std::cerr << "iosim: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "iosim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
