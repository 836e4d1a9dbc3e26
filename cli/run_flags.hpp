#pragma once
// The flags that describe one attention call, shared by every subcommand that simulates one.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "api/iosim.hpp"

namespace iosim::cli {

struct RunFlags {
  std::string profile = "h100-sxm5-80gb";
  std::string algorithm = "flash2";
  std::int64_t batch = 1, heads = 1, seq = 0, seq_kv = 0, head_dim = 64;
  std::string dtype = "fp16";
  // Tiling as typed: 0 is the CLI's spelling of "the algorithm's default" (sweep lists use it).
  std::int64_t block_q = 0, block_kv = 0;
  int threads = 0, stages = 0;
  std::string pass = "fwd";
  std::string
      pattern;  // block-sparse: local:W | strided:S | random:DENSITY:SEED | causal | file:PATH
  bool causal = false, mask = false, execute = false, cold_l2 = false;
  double dropout = 0.0, sm_clock_mhz = 0.0;
  std::string l2 = "on";
  std::string format = "table";
  std::uint64_t seed = 1;
  // Decoding; left out: the default applies.
  std::optional<std::int64_t> kv_heads, splits, page_tokens;
  std::string block_table;  // --block-table FILE (paged)
};

/// Adds --profile, --algo, the problem shape, tiling and model flags to `cmd`.
void add_problem_flags(CLI::App& cmd, RunFlags& f);

/// Checks the flags and turns them into a request; throws ConfigError naming a bad flag.
RunRequest to_request(const RunFlags& f);

}  // namespace iosim::cli
