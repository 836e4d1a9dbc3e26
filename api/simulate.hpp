#pragma once
// The public entry point: one attention call on one GPU profile, simulated end to end.
// The CLI, the tests, the benchmarks and the report writers all go through simulate().
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/algorithm.hpp"
#include "algorithms/io_formulas.hpp"
#include "algorithms/kernel_description.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/power_model.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/schedule/problem.hpp"

namespace iosim {

class NumericObserver;  // numerics/numeric_executor.hpp

struct RunRequest {
  std::string algorithm = "flash2";
  // A kernel description (algorithms/kernel_description.hpp) to run instead of the built-in
  // algorithm `algorithm`; the report names it by its name.
  std::shared_ptr<const KernelDescription> kernel;
  AttentionProblem problem;
  TilingRequest tiling;  // fields left out: the algorithm's defaults
  EngineOptions engine;  // L2 on/off, cold L2 per kernel, SM clock
  bool execute = false;  // run the schedule numerically and report the error
  std::uint64_t seed = 1;
  // Watches the numbers of an executed run (`iosim explain`); not owned, null: no one watches.
  // The engine's watcher is engine.observer.
  NumericObserver* numeric_observer = nullptr;
  // Steady-state extrapolation (sim/engine/steady_state.hpp) is an approximation (counters within
  // 0.5%, time within 1%), worth it only where full simulation is slow: runs whose estimated work
  // (Algorithm::estimated_work) is below this are simulated in full, so that small runs (the
  // README's tables, the tutorial, tests of the closed forms) stay exact. 2e7 units is about a
  // second of simulation on the 2-core reference machine (flash2 B4 H16 N8192 d64: 5.2e6 units,
  // 0.33 s with the L2 on). 0: extrapolate whatever the size (tests of the extrapolation).
  double extrapolate_above_work = 2e7;
};

struct Numerics {
  bool executed = false;
  std::optional<double> max_abs_error;
};

/// Everything one run produced. When `infeasible_reason` is set, only the request fields and
/// the resolved tiling are meaningful.
struct Report {
  std::string profile;
  std::string profile_description;
  RunRequest request;
  Tiling tiling;                  // resolved
  std::optional<double> density;  // block-sparse only: s, the fraction of blocks computed
  std::int64_t sram_bytes = 0;    // M of the IO analysis, bytes per CTA
  // The SM clock timed at: the request's; else, on a profile with a power limit, the clock the
  // power model allows (`power`); else the boost clock.
  double sm_clock_mhz = 0.0;
  // On a profile with `power:` only: the limit, the predicted average power at sm_clock_mhz, and
  // whether the limit set the clock (false when the request gave the clock).
  std::optional<PowerSolution> power;
  std::string infeasible_reason;
  EngineResult engine;
  std::string bound;  // of the whole run: the kernel that took longest decides
  // What a feasible run achieved against the machine at sm_clock_mhz: tensor-core FLOP/s against
  // the profile's dense tensor peak for the dtype at that clock; HBM bytes moved during the run
  // per second against the datasheet bandwidth; L2 bytes per second against the L2 bandwidth at
  // that clock (the L2 runs in the SM clock domain); shared-memory bytes (read and written) per
  // second against all SMs' shared-memory bandwidth at that clock. In TFLOP/s and GB/s. The L2's
  // hit rate of reads: the share of the bytes SMs read from the L2 that it did not fetch from HBM
  // (with the L2 off, 0).
  struct Achieved {
    double tensor_tflops = 0, tensor_peak_tflops = 0;
    double hbm_gbps = 0, hbm_peak_gbps = 0;
    double l2_gbps = 0, l2_peak_gbps = 0;
    double smem_gbps = 0, smem_peak_gbps = 0;
    double l2_read_hit_rate = 0;
  } achieved;
  IoBounds bounds;
  Numerics numerics;
  double simulation_wall_s = 0.0;  // how long iosim itself took

  bool feasible() const { return infeasible_reason.empty(); }
};

/// The algorithm `request` runs with the algorithms of `registry`: its kernel description's
/// (described_algorithm, checked against `profile`), else the one called request.algorithm.
/// Throws ConfigError as simulate() does for either.
Algorithm request_algorithm(const HardwareProfile& profile, const RunRequest& request,
                            const Registry& registry);

/// Plans, simulates and (on request) executes `request` on `profile`. Throws ConfigError for
/// invalid input (unknown algorithm, bad sizes, unsupported pass); an infeasible tiling is
/// returned as a Report with `infeasible_reason` set.
Report simulate(const HardwareProfile& profile, const RunRequest& request);
/// The same with the algorithms of `registry` (a test's own, say) instead of the built-in ones.
Report simulate(const HardwareProfile& profile, const RunRequest& request,
                const Registry& registry);

/// Throws the ConfigError simulate() would throw for `request` before it plans (bad sizes, an
/// input its algorithm does not take, a preset the profile cannot run), without planning or
/// running anything: a comparison checks every kernel before it runs the first.
void check_request(const HardwareProfile& profile, const RunRequest& request);

}  // namespace iosim
