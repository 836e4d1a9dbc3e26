#pragma once
// The engine: places CTAs on SMs, sends their loads and stores through the L2 model to HBM,
// and advances time. It is the only code that counts bytes and time.
//
// Timing model (cycle-approximate, per CTA stage):
//   - CTAs are dispatched in blockIdx order to the SM slot that frees first, as occupancy
//     (shared memory, registers, threads, CTA slots) allows; the first wave fills SMs
//     breadth-first. A slot's next CTA starts the profile's cta_dispatch.slot_refill_cycles after
//     its last one ended, except in a persistent kernel (KernelSpec::persistent), whose slots
//     take their next tile without a CTA launch.
//   - A stage is a run of loads followed by the computes (and stores) that use them. Its loads
//     queue on three bandwidth servers: HBM (misses and write-backs, at the achievable
//     bandwidth), the L2 (all requested sectors) and the SM's own L2->SM port; the slowest
//     finishes the copy, plus the L2-hit or DRAM latency.
//   - Compute waits for its copy and the previous compute; tensor-core, FP32 and SFU work are
//     timed apart at the SM's rates divided among the CTAs resident on it; shared-memory
//     traffic bounds the stage from below. How far the pipes overlap is the kernel's declaration
//     (KernelSpec::overlap): by default as far as the compute warps per scheduler allow;
//     under `pingpong` the tensor cores (with the shared-memory operand reads) work
//     asynchronously beside the FP32/SFU/INT32 work of the other consumer warpgroups; under
//     `lockstep` the consumer warpgroups share each phase, so the two sides add. CTAs of one
//     warpgroup issuing wgmma (no producer) are timed as lockstep across the SM: nothing orders
//     one CTA's softmax against another's GEMMs, and measured, it does not hide under them.
//     Producer warps (KernelSpec::producer_warps) only issue copies: they take no pipe time
//     and do not count as warps that overlap the pipes.
//   - With `pipeline_stages` = P, a stage's copy may start once the compute of the stage P
//     back has finished (its buffer is free): P = 1 serializes copy and compute.
//   - Kernel time is the last CTA's finish plus the launch overhead, plus the time of any
//     repetitions left out (sim/engine/steady_state.hpp; EngineOptions::exact simulates all).
#include <map>
#include <string>
#include <vector>

#include "sim/engine/counters.hpp"
#include "sim/engine/steady_state.hpp"
#include "sim/engine/time_attribution.hpp"
#include "sim/hardware/occupancy.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim {

/// Sees each operation as the engine counts it, in the engine's order (`iosim explain` builds its
/// trace from this). Counting never depends on it; a normal run has none.
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  /// Called once `op` of CTA `cta` (kernel `kernel`, on SM `sm`) has been counted: its bytes are in
  /// `kernel_counters`, the kernel's counters so far (a compute's FLOPs are added when its stage
  /// ends, so only the byte counters are current).
  virtual void on_op(std::size_t kernel, std::int64_t cta, int sm, const TileOp& op,
                     const Counters& kernel_counters) = 0;
};

struct EngineOptions {
  bool l2_enabled = true;                 // false: the two-level HBM <-> SRAM model
  bool flush_l2_between_kernels = false;  // true: cold L2 per kernel, as Nsight Compute measures
  double sm_clock_mhz = 0.0;              // 0: the profile's boost clock
  // Registers per thread a compiler reported, by kernel role (KernelSpec::role): they replace the
  // schedule's estimate for the kernels of that role (they set occupancy).
  std::map<std::string, int> registers_by_role;
  OpObserver* observer = nullptr;  // not owned; null: no one watches
  // true: simulate every CTA and step (no steady-state extrapolation, sim/engine/steady_state.hpp).
  // An observer also turns it off: it sees every operation.
  bool exact = false;
  // true: when the power model picks the clock, its trials after the first replay the first
  // run's timeline (sim/engine/timeline.hpp) instead of simulating again: one engine run per
  // answer, its counters the boost-clock run's and its time within 1% of a full simulation at
  // the chosen clock in the tests (issue #33; docs/PERFORMANCE_HISTORY.md). simulate() turns it
  // off for a request with `exact` set (`--exact`: every trial simulated in full).
  bool replay_clock_trials = true;
  // true: a trial of the power model's clock solve that steers the solve and is no answer
  // (run_at_policy_clock() sets it on the first, at the boost clock): a causal head's ramp
  // (sim/engine/ramp_periods.hpp) may be cut where its windows' times scatter about their line
  // within kProbeTimeTolerance and its reads still hit the L2, as they do at the boost clock;
  // Extrapolation::probe_cuts says whether it was.
  bool clock_probe = false;
};

struct KernelResult {
  KernelSpec spec;
  Occupancy occupancy;
  double waves = 0.0;
  double time_s = 0.0;
  Counters counters;
  // "compute" | "memory" | "latency": the class of time_attribution's largest row (bound_of()).
  std::string bound;
  // The kernel's time by the resource that bound it (sim/engine/time_attribution.hpp): the rows
  // sum to time_s.
  TimeAttribution time_attribution;
  double achieved_hbm_gbps = 0.0;
  double achieved_l2_gbps = 0.0;
  double achieved_tensor_tflops = 0.0;  // tensor-core FLOPs per second, in 1e12
  double idle_sm_fraction = 0.0;        // SMs that never receive a CTA
  Extrapolation extrapolation;          // what was simulated and what left out as repetition
  // The kernel's timeline (`iosim run --html`), in seconds from its start, the launch overhead
  // counted first: the launch overhead in time_s; the tail, from the first moment a CTA slot
  // found no CTA left to start to the last CTA's end (the partial wave, and the last full one's
  // stragglers); when each whole wave's worth of CTAs had finished (CTAs left out as repetition
  // count as finished, their time spread evenly over the time left out), only for kernels of
  // at most kMaxWaveEnds whole waves (none beyond).
  double launch_s = 0.0;
  double tail_s = 0.0;
  std::vector<double> wave_end_s;
  static constexpr std::int64_t kMaxWaveEnds = 512;
};

struct EngineResult {
  std::vector<KernelResult> kernels;
  Counters total;
  double time_s = 0.0;
  TimeAttribution time_attribution;  // the kernels' summed: its rows sum to time_s
  Extrapolation extrapolation;
};

struct Timeline;  // sim/engine/timeline.hpp

/// The host memory the L2 model of `profile` takes, as run_schedule() reserves it from the memory
/// budget (sim/base/memory_budget.hpp): its estimate, what it is in a message, and what to change.
struct L2ModelMemory {
  double bytes = 0.0;
  std::string what;
  std::string advice;
};
L2ModelMemory l2_model_memory(const HardwareProfile& profile);

/// Runs every kernel of `schedule` in order on `profile`. L2 contents persist from one kernel
/// to the next unless `flush_l2_between_kernels`. Throws ConfigError when a kernel cannot be
/// placed (one CTA does not fit on an SM). With `record`, also records the run's timeline there,
/// to time it at other clocks (replay_timeline); record->usable says whether it could.
EngineResult run_schedule(const HardwareProfile& profile, const Schedule& schedule,
                          const EngineOptions& options, Timeline* record = nullptr);

/// The roofline's view, kept for comparison (a kernel's `bound` is its attribution's):
/// "memory" | "compute" | "latency" for work that took `time_s`: the larger of the memory floor
/// (DRAM or L2 bytes at full bandwidth) and the compute floor (tensor-core + FP32 + SFU work at
/// peak, added because a CTA issues them in turn) decides, unless both are under half the time.
std::string classify_bound(const HardwareProfile& profile, const Counters& c, double time_s,
                           double sm_clock_mhz, Dtype mma_dtype,
                           TensorInstruction instruction = TensorInstruction::wgmma);

}  // namespace iosim
