#pragma once
// Steady-state extrapolation, ramps (sim/engine/steady_state.hpp, Repetition::ramp_run): the CTAs
// of a run whose steps grow by a constant number from one CTA to the next (a head's causal query
// blocks) left out once the last periods' work grows on a line; and where runs are alike up to an
// address offset (Repetition::cta_period, a head), the runs between the third and the last left
// out once the third's windows repeat the second's at the same CTAs of the run.
#include <cstdint>
#include <vector>

#include "sim/engine/extrapolator.hpp"
#include "sim/engine/steady_state.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim::detail {

class RampPeriods : public Extrapolator {
 public:
  /// Steps of `step` CTAs, compared over windows of `span` steps (a wave), inside runs of
  /// `ramp_run` CTAs of kernel `kernel` of `schedule`; runs alike when `runs_alike`; a clock
  /// probe's looser cuts when `probe` (EngineOptions::clock_probe).
  RampPeriods(std::int64_t step, std::size_t span, std::int64_t ramp_run, bool runs_alike,
              bool probe, const Schedule& schedule, std::size_t kernel)
      : step_(step),
        ramp_run_(ramp_run),
        runs_alike_(runs_alike),
        probe_(probe),
        schedule_(schedule),
        kernel_(kernel),
        span_(span),
        steps_(span) {}
  void before_dispatch(double t, KernelProgress& run) override;

 private:
  void leave_out(std::int64_t ctas, double parts, KernelProgress& run);
  // The parts CTA `cta` of the kernel has in all.
  std::size_t parts_of(std::int64_t cta);
  // Records `m`, taken at step `j` of run `run_index`; leaves runs out when the third run's
  // windows repeat the second's (returns whether it did).
  bool alike_runs(std::int64_t run_index, std::size_t j, const Mark& m, KernelProgress& run);

  // How far the ratio of a tensor's DRAM to L2 reads may move over the CTAs left out at once.
  static constexpr double kRatioDrift = 0.005;
  // Left out only where all but this share of every tensor's reads missed the L2 in the windows
  // (K/V of a head far beyond it): where they hit, a head's hit rate moves along the ramp in ways
  // the cut misses (flash3 causal B=1 H=8 N=262144 d=128 on the H100, K/V 2.6 L2 sizes a head:
  // DRAM reads 1.3% below the full run's, cut to each head's end where the hit rate moved).
  static constexpr double kSettled = 0.02;
  // A clock probe's (EngineOptions::clock_probe) cuts: the windows' times on their line within
  // this (their counts as for any cut), and no share of the reads that must miss. At the boost
  // clock a head's ramp neither settles nor lies on a line in time: a quarter of the H100 (33
  // SMs, 12 MB L2, 838 GB/s), flash2 causal B=1 H=8 N=262144 d=128, memory-bound at 1980 MHz,
  // had 8-9% of its K reads hit the L2 in every window of a head (under 1% at 1523.58 MHz) and
  // its windows' times 1-2e-3 off their line while every count lay on it; cut so, it came out
  // within 1.0e-3 of --exact in time and 8.7e-4 in every counter (dirty at the end aside), but
  // on 8 SMs with a 4 MB L2 and HBM per SM as the H100's (tests/steady_state_test.cpp) 3.9% off
  // in time and beyond 0.5% in K/V reads: rough, so a probe is no answer.
  static constexpr double kProbeTimeTolerance = 5e-3;

  std::int64_t step_, ramp_run_;
  bool runs_alike_;
  bool probe_;
  const Schedule& schedule_;
  std::size_t kernel_;
  std::size_t span_;
  TrendDetector steps_;
  // Runs alike: the second run's marks and the third's, by step of the run (taken while no cut
  // had been made in that run), and whether runs were left out; the run last cut.
  std::int64_t cut_run_ = -1;
  std::vector<Mark> first_, second_;
  bool runs_left_out_ = false;
  std::int64_t held_ = 0;    // steps the second run's cut has waited
  std::vector<TileOp> ops_;  // parts_of's emission
};

}  // namespace iosim::detail
