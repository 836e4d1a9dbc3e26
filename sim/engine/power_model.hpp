#pragma once
// Board power and the SM clock it allows (issue #13). A Hopper board holds its power limit by
// lowering the SM clock; a tensor-heavy kernel predicted at the boost clock is predicted too fast.
//
// Power at SM clock f of a run that did `c` in `time_s` (profile `power:`, coefficients from our
// microbenchmarks power_clock.cu and traffic_power.cu, cuda_validate/scripts/power_model_fit.py):
//   P(f) = static + s(f) [clock_w f / f_boost + (e_tensor·FLOP_tensor + e_fp32·FLOP_fp32
//          + e_sfu·ops_sfu + e_l2·bytes_L2) / time] + e_hbm·bytes_HBM / time,
//   s(f) = (V(f) / V(f_boost))^2, V(f) / V(f_boost) = 1 - slope (1 - f / f_boost).
// e_tensor by the kernel's tensor instruction (wgmma fp16/bf16/tf32, wgmma fp8, mma.sync).
// The clock of a run is one clock for all its kernels: the board's controller averages over
// far longer than a kernel, so the run's average power is what it holds to the limit.
#include <functional>
#include <optional>

#include "sim/engine/counters.hpp"
#include "sim/engine/engine.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/schedule/dtype.hpp"

namespace iosim {

/// Average board power (W) of work `c` done in `time_s` at SM clock `clock_mhz`, its tensor work
/// issued as `instruction` with operands of `dtype`. Requires profile.power.present.
double board_power_w(const HardwareProfile& profile, const Counters& c, double time_s,
                     double clock_mhz, Dtype dtype,
                     TensorInstruction instruction = TensorInstruction::wgmma);
/// The same for a whole run: each kernel's work at its own tensor instruction, over the run's time.
double board_power_w(const HardwareProfile& profile, const EngineResult& run, double time_s,
                     double clock_mhz, Dtype dtype);

/// What the power model decided for one run.
struct PowerSolution {
  double limit_w = 0.0;
  double watts = 0.0;      // predicted average power at `clock_mhz`
  double clock_mhz = 0.0;  // the clock the run is timed at
  bool binding = false;    // true: the limit lowered the clock below the boost clock
  int engine_runs = 0;     // simulations it took (1: under the limit at the boost clock)
};

/// The highest clock up to the boost clock whose power stays within the limit, for a run whose
/// time depends on the clock through `simulate_at(clock_mhz)`. Starts at the boost clock; when
/// that exceeds the limit, models the time between the clocks simulated so far as
/// time ∝ clock^-g (g from the last two simulations, 1 before the second: compute-bound), solves
/// power = limit for the clock on that model, simulates there, and repeats until the model,
/// refitted to the last simulation, moves the clock by less than 1 MHz: that simulation is the
/// answer (at most 6 simulations; 2 when the first solve lands within 1 MHz). `result` is the
/// simulation at the chosen clock.
PowerSolution solve_power_clock(const HardwareProfile& profile, Dtype dtype,
                                const std::function<EngineResult(double)>& simulate_at,
                                EngineResult& result);

/// A schedule's run at the clock policy's clock, and that clock.
struct ClockedRun {
  EngineResult engine;
  double clock_mhz = 0.0;
  // On a profile with `power:`: the limit and the predicted power at clock_mhz (the solve's when
  // the power model picked the clock, engine_runs 1 when the options gave it); else empty.
  std::optional<PowerSolution> power;
};

/// The one clock policy, for an attention call and a layer's every op alike: `engine.sm_clock_mhz`
/// when set; else, on a profile with a power limit, the clock solve_power_clock allows for this
/// schedule; else the boost clock. The solve's trials after the first replay the first one's
/// timeline when `engine.replay_clock_trials` (sim/engine/timeline.hpp), else each is an engine
/// run. The first trial is a clock probe (EngineOptions::clock_probe), run again without where it
/// took a probe's cut and is the answer (the limit does not bind). An observer in `engine` sees
/// the run at the chosen clock only, run once more for it.
ClockedRun run_at_policy_clock(const HardwareProfile& profile, const Schedule& schedule,
                               const EngineOptions& engine, Dtype dtype);

}  // namespace iosim
