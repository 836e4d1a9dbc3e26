#include "cli/run_flags.hpp"

#include <fmt/format.h>

#include <memory>
#include <utility>

#include "sim/block_mask.hpp"
#include "sim/block_table.hpp"
#include "sim/errors.hpp"

namespace iosim::cli {

void add_problem_flags(CLI::App& cmd, RunFlags& f) {
  cmd.add_option("--profile", f.profile, "built-in profile name or path to a YAML profile")
      ->capture_default_str();
  cmd.add_option("--algo", f.algorithm,
                 "standard | flash1 | flash2 | block-sparse | flash-decoding | paged")
      ->capture_default_str();
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
  cmd.add_option("--pattern", f.pattern,
                 "block-sparse blocks: local:W | strided:S | random:DENSITY:SEED | causal | "
                 "file:PATH (default: all)");
  cmd.add_flag("--causal", f.causal, "causal mask (bottom-right aligned), masked blocks skipped");
  cmd.add_flag("--mask", f.mask, "an elementwise mask computed from indices");
  cmd.add_option("--dropout", f.dropout, "dropout probability in [0, 1)");
  cmd.add_option("--l2", f.l2, "on: three-level model; off: two-level HBM<->SRAM model")
      ->capture_default_str();
  cmd.add_flag("--cold-l2", f.cold_l2, "flush the L2 before every kernel, as Nsight Compute does");
  cmd.add_option("--sm-clock-mhz", f.sm_clock_mhz, "SM clock (default: the profile's boost clock)");
  cmd.add_flag("--execute", f.execute, "run the schedule numerically and report the max error");
  cmd.add_option("--seed", f.seed, "seed of the random inputs, dropout and the paged block table")
      ->capture_default_str();
  cmd.add_option("--kv-heads", f.kv_heads,
                 "K/V heads H_kv, dividing --heads: grouped-query attention (default: --heads)");
  cmd.add_option("--splits", f.splits,
                 "flash-decoding, paged: K/V chunks per query tile (default: FlashAttention's "
                 "heuristic, filling the SMs)");
  cmd.add_option("--page-tokens", f.page_tokens, "paged: tokens per K/V page (default: 16)");
  cmd.add_option("--block-table", f.block_table,
                 "paged: file of physical page ids, one line per sequence (default: a random "
                 "permutation from --seed)");
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
  if (!f.pattern.empty()) {
    p.pattern = std::make_shared<const BlockPattern>(parse_block_pattern(f.pattern));
  }
  for (auto [name, v] : {std::pair{"--block-q", f.block_q}, std::pair{"--block-kv", f.block_kv},
                         std::pair{"--threads", std::int64_t{f.threads}},
                         std::pair{"--stages", std::int64_t{f.stages}}}) {
    if (v < 0) throw ConfigError(fmt::format("{} {} must be positive", name, v));
  }
  if (f.block_q > (1 << 20) || f.block_kv > (1 << 20)) {
    throw ConfigError(
        fmt::format("block sizes {} x {} are absurd (limit 1048576)", f.block_q, f.block_kv));
  }
  if (f.threads > 1024) throw ConfigError(fmt::format("--threads {} exceeds 1024", f.threads));
  const auto given = [](auto v) { return v > 0 ? std::optional(v) : std::nullopt; };
  r.tiling.block_q = given(f.block_q);
  r.tiling.block_kv = given(f.block_kv);
  r.tiling.threads = given(f.threads);
  r.tiling.pipeline_stages = given(f.stages);
  for (auto [name, v] : {std::pair{"--kv-heads", f.kv_heads}, std::pair{"--splits", f.splits},
                         std::pair{"--page-tokens", f.page_tokens}}) {
    if (v && *v < 1) throw ConfigError(fmt::format("{} {} must be at least 1", name, *v));
  }
  if (f.kv_heads) p.kv_heads = *f.kv_heads;
  r.tiling.splits = f.splits;
  if (f.page_tokens) p.page_tokens = *f.page_tokens;
  if (!f.block_table.empty()) {
    p.block_table = std::make_shared<const BlockTable>(load_block_table(f.block_table));
  }
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

}  // namespace iosim::cli
