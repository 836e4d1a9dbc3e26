#include "algorithms/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "algorithms/numeric_executor.hpp"
#include "sim/block_mask.hpp"
#include "sim/block_table.hpp"
#include "sim/errors.hpp"

namespace iosim {

namespace {

// Decode-only inputs (--splits, --page-tokens, --block-table, --kv-heads) are checked against the
// algorithm; paged attention gets its defaults: 16-token pages, a block table drawn from the seed.
void resolve_decode_inputs(RunRequest& r) {
  AttentionProblem& p = r.problem;
  const bool paged = r.algorithm == "paged";
  const bool split_kv = paged || r.algorithm == "flash-decoding";
  if (r.tiling.splits < 0) {
    throw ConfigError(fmt::format("--splits {} must be positive", r.tiling.splits));
  }
  if (r.tiling.splits > 0 && !split_kv) {
    throw ConfigError(
        fmt::format("--splits applies to --algo flash-decoding and paged, not '{}'", r.algorithm));
  }
  if (!paged && (p.page_tokens > 0 || p.block_table)) {
    throw ConfigError(fmt::format("--page-tokens and --block-table apply to --algo paged, not '{}'",
                                  r.algorithm));
  }
  if (p.kv_head_count() != p.heads && p.pass != Pass::fwd) {
    throw ConfigError(fmt::format(
        "--kv-heads {} with --pass {}: the backward schedules have one K/V head per query head "
        "(grouped-query attention is modelled in forward passes)",
        p.kv_heads, pass_name(p.pass)));
  }
  if (!paged) return;
  if (p.page_tokens == 0) p.page_tokens = 16;  // vLLM's default block size
  const std::int64_t pages = pages_for(p.seq_kv, p.page_tokens);
  if (!p.block_table) {
    p.block_table = std::make_shared<const BlockTable>(random_block_table(p.batch, pages, r.seed));
  }
  check_block_table(*p.block_table, p.batch, pages);
}

}  // namespace

Report simulate(const HardwareProfile& profile, const RunRequest& original) {
  const auto started = std::chrono::steady_clock::now();
  validate_problem(original.problem);
  if (original.problem.pattern && original.algorithm != "block-sparse") {
    throw ConfigError(
        fmt::format("--pattern applies to --algo block-sparse, not '{}'", original.algorithm));
  }
  const Algorithm& algorithm = builtin_registry().get(original.algorithm);
  RunRequest request = original;
  resolve_decode_inputs(request);
  if (request.tiling.block_q < 0 || request.tiling.block_kv < 0 || request.tiling.threads < 0 ||
      request.tiling.pipeline_stages < 0) {
    throw ConfigError("block sizes, threads and pipeline stages must be positive");
  }

  Report report;
  report.profile = profile.name;
  report.profile_description = profile.description;
  report.request = request;
  report.sram_bytes = sram_bytes(profile);
  Planned planned = algorithm.plan(request.problem, profile, request.tiling);
  report.tiling = planned.tiling;
  report.density = planned.density;
  if (!planned.feasible()) {
    report.infeasible_reason = planned.infeasible_reason;
    return report;
  }
  report.bounds = io_bounds(request.algorithm, request.problem, report.tiling.block_q,
                            report.tiling.block_kv, report.sram_bytes, report.tiling.splits);
  report.engine = run_schedule(profile, *planned.schedule, request.engine);
  const auto longest = std::max_element(
      report.engine.kernels.begin(), report.engine.kernels.end(),
      [](const KernelResult& a, const KernelResult& b) { return a.time_s < b.time_s; });
  report.bound = longest != report.engine.kernels.end() ? longest->bound : "latency";
  if (request.execute) {
    report.numerics.executed = true;
    // Block-sparse is compared with dense attention under the same block mask.
    std::optional<BlockMask> blocks;
    if (report.density)
      blocks.emplace(request.problem, report.tiling.block_q, report.tiling.block_kv);
    report.numerics.max_abs_error = execute_schedule(*planned.schedule, request.problem,
                                                     request.seed, blocks ? &*blocks : nullptr)
                                        .max_abs_error();
  }
  report.simulation_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace iosim
