#pragma once
// Steady-state extrapolation, ramps (sim/engine/steady_state.hpp, Repetition::ramp_run): the CTAs
// of a run whose steps grow by a constant number from one CTA to the next (a head's causal query
// blocks) left out once the last periods' work grows on a line.
#include <cstdint>

#include "sim/engine/extrapolator.hpp"
#include "sim/engine/steady_state.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim::detail {

class RampPeriods : public Extrapolator {
 public:
  /// Steps of `step` CTAs, compared over windows of `span` steps (a wave), inside runs of
  /// `ramp_run` CTAs of kernel `kernel` of `schedule`.
  RampPeriods(std::int64_t step, std::size_t span, std::int64_t ramp_run, const Schedule& schedule,
              std::size_t kernel)
      : step_(step), ramp_run_(ramp_run), schedule_(schedule), kernel_(kernel), steps_(span) {}
  void before_dispatch(double t, KernelProgress& run) override;

 private:
  void leave_out(std::int64_t ctas, double parts, KernelProgress& run);

  // How far the ratio of a tensor's DRAM to L2 reads may move over the CTAs left out at once.
  static constexpr double kRatioDrift = 0.005;
  // Left out only where all but this share of every tensor's reads missed the L2 in the windows
  // (K/V of a head far beyond it): where they hit, a head's hit rate moves along the ramp in ways
  // the cut misses (flash3 causal B=1 H=8 N=262144 d=128 on the H100, K/V 2.6 L2 sizes a head:
  // DRAM reads 1.3% below the full run's, cut to each head's end where the hit rate moved).
  static constexpr double kSettled = 0.02;

  std::int64_t step_, ramp_run_;
  const Schedule& schedule_;
  std::size_t kernel_;
  TrendDetector steps_;
};

}  // namespace iosim::detail
