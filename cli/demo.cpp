// The README's first command: standard vs FlashAttention-1/2 on one GPU, both IO models.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/flag_options.hpp"
#include "cli/output_file.hpp"
#include "reports/writers.hpp"

namespace iosim::cli {

Action add_demo_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("demo", "standard vs FlashAttention-1/2 on one profile");
  auto f = std::make_shared<RunFlags>();
  f->batch = 4;
  f->heads = 16;
  f->seq = 4096;
  add_problem_flags(
      *cmd, *f, {"--profile", "--batch", "--heads", "--seq", "--head-dim", "--dtype", "--causal"});
  // Six engine runs: at --seq 65536 the standard schedule's alone take minutes (issue #50's fourth
  // probe), and a script needs a bound it can state, as run's.
  auto max_seconds = std::make_shared<MaxSecondsFlag>();
  max_seconds->add_to(*cmd);
  return [f, max_seconds] {
    max_seconds->apply();
    const HardwareProfile profile = load_profile(f->profile);
    std::vector<Report> two_level, three_level;
    RunFlags flags = *f;
    for (const char* algo : {"standard", "flash1", "flash2"}) {
      flags.algorithm = algo;
      RunRequest req = to_request(flags);
      req.engine.l2_enabled = false;
      two_level.push_back(simulate(profile, req));
      req.engine.l2_enabled = true;
      three_level.push_back(simulate(profile, req));
    }
    const AttentionProblem& p = three_level.front().request.problem;
    fmt::print("iosim demo: attention forward on {} ({})\n", profile.description, profile.name);
    fmt::print("problem: B={} H={} N={} d={} {}{}\n\n", p.batch, p.heads, p.seq, p.head_dim,
               dtype_name(p.dtype), p.causal ? " causal" : "");
    write_stdout(format_comparison(two_level, three_level));
    fmt::print(
        "\nHBM (2-level) is the FlashAttention paper's model (every load and store reaches HBM);\n"
        "HBM (L2 on) counts only L2 misses and write-backs (with the lines still dirty in L2 at "
        "the\n"
        "end as written), so re-reads of K/V that hit in L2 drop out.\nTry: iosim run --algo "
        "flash2 --seq 4096 --batch 4 --heads 16 --head-dim 64\n");
    return 0;
  };
}

}  // namespace iosim::cli
