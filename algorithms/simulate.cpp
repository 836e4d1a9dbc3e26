#include "algorithms/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "algorithms/numeric_executor.hpp"
#include "sim/block_mask.hpp"
#include "sim/errors.hpp"

namespace iosim {

Report simulate(const HardwareProfile& profile, const RunRequest& request) {
  const auto started = std::chrono::steady_clock::now();
  validate_problem(request.problem);
  if (request.problem.pattern && request.algorithm != "block-sparse") {
    throw ConfigError(
        fmt::format("--pattern applies to --algo block-sparse, not '{}'", request.algorithm));
  }
  if (request.tiling.block_q < 0 || request.tiling.block_kv < 0 || request.tiling.threads < 0 ||
      request.tiling.pipeline_stages < 0) {
    throw ConfigError("block sizes, threads and pipeline stages must be positive");
  }
  const Algorithm& algorithm = builtin_registry().get(request.algorithm);

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
                            report.tiling.block_kv, report.sram_bytes);
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
