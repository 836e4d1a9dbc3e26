#include "api/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "algorithms/kernel_description.hpp"
#include "algorithms/ragged.hpp"
#include "numerics/numeric_executor.hpp"
#include "sim/base/errors.hpp"
#include "sim/schedule/block_mask.hpp"
#include "sim/schedule/block_table.hpp"

namespace iosim {

namespace {

// Inputs that only some algorithms accept are checked against the algorithm; paged attention gets
// its defaults: 16-token pages, a block table drawn from the seed.
void resolve_algorithm_inputs(const Algorithm& algorithm, const Registry& registry, RunRequest& r) {
  AttentionProblem& p = r.problem;
  check_applicable(algorithm, p, r.tiling, registry);
  if (p.kv_head_count() != p.heads && p.pass != Pass::fwd && !algorithm.capabilities.gqa_backward) {
    throw ConfigError(fmt::format(
        "--kv-heads {} with --pass {}: the backward of --algo {} has one K/V head per query head "
        "(grouped-query backward is modelled for --algo flash3; forward passes for all)",
        p.kv_head_count(), pass_name(p.pass), algorithm.name));
  }
  if (p.pass == Pass::fwdbwd && p.packs_query_group()) {
    // The packed forward lays Q, O and L out per K/V head; the backward per query head.
    throw ConfigError(fmt::format(
        "--kv-heads {} with --pass fwdbwd and a packed query group (--seq 1 or --pack-gqa on): "
        "the backward does not run on packed rows; use --pack-gqa off or --pass bwd",
        p.kv_head_count()));
  }
  if (!algorithm.capabilities.pages) return;
  if (p.page_tokens == 0) p.page_tokens = 16;  // vLLM's default block size
  const std::int64_t pages = pages_for(p.seq_kv, p.page_tokens);
  if (!p.block_table) {
    p.block_table = std::make_shared<const BlockTable>(random_block_table(p.batch, pages, r.seed));
  }
  check_block_table(*p.block_table, p.batch, pages);
}

}  // namespace

Algorithm request_algorithm(const HardwareProfile& profile, const RunRequest& request,
                            const Registry& registry) {
  // A description plans with its dataflows' schedules and its own mechanisms.
  return request.kernel ? described_algorithm(*request.kernel, profile)
                        : registry.get(request.algorithm);
}

Report simulate(const HardwareProfile& profile, const RunRequest& request) {
  return simulate(profile, request, builtin_registry());
}

namespace {

// The request as simulate() plans it, with the algorithm it runs: the checks of every input made
// before anything is planned, so that check_request() refuses what simulate() would.
struct Checked {
  RunRequest request;
  Algorithm algorithm;
};

Checked checked_request(const HardwareProfile& profile, const RunRequest& original,
                        const Registry& registry) {
  RunRequest request = original;
  request.problem = with_defaults(original.problem);
  validate_problem(request.problem);
  Algorithm algorithm = request_algorithm(profile, original, registry);
  if (original.kernel) request.algorithm = original.kernel->name;
  resolve_algorithm_inputs(algorithm, registry, request);
  if (request.problem.dtype == Dtype::fp8 && profile.tensor_flops_per_s(Dtype::fp8) <= 0) {
    throw ConfigError(fmt::format(
        "--dtype fp8: profile '{}' has no FP8 tensor cores (compute.tensor_fp8_tflops is 0); "
        "FP8 runs need a Hopper-class profile",
        profile.name));
  }
  // A built-in algorithm's mechanisms, as a description's are checked (flash3's wgmma and TMA
  // ran on an A100 where the same mechanisms in a file were refused).
  if (!original.kernel) check_preset_runs_on(request.algorithm, profile);
  if (request.problem.ragged()) {
    check_ragged_kernel(request.problem,
                        original.kernel ? *original.kernel : kernel_preset(request.algorithm));
  }
  if (request.execute) check_executable(request.problem);  // before the engine runs
  return {std::move(request), std::move(algorithm)};
}

}  // namespace

void check_request(const HardwareProfile& profile, const RunRequest& request) {
  checked_request(profile, request, builtin_registry());
}

Report simulate(const HardwareProfile& profile, const RunRequest& original,
                const Registry& registry) {
  const auto started = std::chrono::steady_clock::now();
  Checked checked = checked_request(profile, original, registry);
  const RunRequest& request = checked.request;
  const Algorithm& algorithm = checked.algorithm;
  Report report;
  report.profile = profile.name;
  report.profile_description = profile.description;
  report.request = request;
  report.sram_bytes = sram_bytes(profile);
  report.sm_clock_mhz = request.engine.sm_clock_mhz > 0 ? request.engine.sm_clock_mhz
                                                        : profile.sm.boost_clock_mhz.value;
  const AttentionProblem& problem = request.problem;
  Planned planned = problem.ragged() ? plan_ragged(algorithm, problem, profile, request.tiling)
                                     : algorithm.plan(problem, profile, request.tiling);
  report.tiling = planned.tiling;
  if (!planned.feasible()) {
    report.infeasible_reason = planned.infeasible_reason;
    return report;
  }
  if (request.execute) check_executable(request.problem, planned.schedule.get());  // its memory
  // Block-sparse runs are bounded, and executed, under the block mask the plan resolved.
  const BlockMask* mask = planned.blocks.get();
  if (mask) report.density = mask->density();
  report.bounds = problem.ragged()
                      ? ragged_io_bounds(algorithm, problem, report.tiling, report.sram_bytes)
                      : io_bounds(problem, algorithm.closed_form(problem, report.tiling, mask),
                                  report.sram_bytes, mask);
  EngineOptions engine = request.engine;
  if (estimated_work(algorithm, request.problem, request.tiling) < request.extrapolate_above_work) {
    engine.exact = true;
  }
  // A request for `exact` (`--exact`) simulates every trial of the power model's clock in full;
  // engine.exact set for small work alone leaves them replayed.
  if (request.engine.exact) engine.replay_clock_trials = false;
  ClockedRun run = run_at_policy_clock(profile, *planned.schedule, engine, request.problem.dtype);
  report.engine = std::move(run.engine);
  report.sm_clock_mhz = run.clock_mhz;
  report.power = run.power;
  // The run's bound: the class of the largest row of its time (the kernels' attributions summed).
  report.bound = report.engine.kernels.empty()
                     ? "latency"
                     : std::string(bound_of(report.engine.time_attribution.largest()));
  if (report.engine.time_s > 0) {
    const Counters& t = report.engine.total;
    const double s = report.engine.time_s;
    const double at_clock = report.sm_clock_mhz / profile.sm.boost_clock_mhz.value;
    Report::Achieved& a = report.achieved;
    a.tensor_tflops = static_cast<double>(t.tensor_flops) / s / 1e12;
    a.tensor_peak_tflops = profile.tensor_flops_per_s(request.problem.dtype) * at_clock / 1e12;
    a.hbm_gbps = static_cast<double>(t.hbm.read_total() + t.hbm.write_total()) / s / 1e9;
    a.hbm_peak_gbps = profile.hbm.bandwidth_gbps.value;
    a.l2_gbps = static_cast<double>(t.l2.read_total() + t.l2.write_total()) / s / 1e9;
    a.l2_peak_gbps = profile.l2_bytes_per_s(report.sm_clock_mhz) / 1e9;
    a.smem_gbps = static_cast<double>(t.smem_read_bytes + t.smem_write_bytes) / s / 1e9;
    a.smem_peak_gbps = profile.sm.smem_bandwidth_bytes_per_clk.value *
                       static_cast<double>(profile.sm.count.value) * report.sm_clock_mhz / 1e3;
    if (request.engine.l2_enabled && t.l2.read_total() > 0) {
      a.l2_read_hit_rate = std::clamp(
          1.0 - static_cast<double>(t.hbm.read_total()) / static_cast<double>(t.l2.read_total()),
          0.0, 1.0);
    }
  }
  if (request.execute && problem.ragged()) {
    // Each sequence's batch-1 schedule, executed against its own reference: the ragged launch's
    // CTAs emit exactly its operations (the executor's reference and masks are per problem, not
    // per sequence of one). The worst error over the sequences.
    report.numerics.executed = true;
    double worst = 0.0;
    for (std::size_t b = 0; b < problem.seq_lens->size(); ++b) {
      const AttentionProblem one = sequence_problem(problem, b);
      const Planned own = algorithm.plan(one, profile, request.tiling);
      worst = std::max(worst, execute_schedule(*own.schedule, one, request.seed, nullptr,
                                               request.numeric_observer)
                                  .max_abs_error());
    }
    report.numerics.max_abs_error = worst;
  } else if (request.execute) {
    report.numerics.executed = true;
    report.numerics.max_abs_error = execute_schedule(*planned.schedule, request.problem,
                                                     request.seed, mask, request.numeric_observer)
                                        .max_abs_error();
  }
  report.simulation_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace iosim
