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
  void leave_out(std::int64_t ctas, KernelProgress& run);

  std::int64_t step_, ramp_run_;
  const Schedule& schedule_;
  std::size_t kernel_;
  TrendDetector steps_;
};

}  // namespace iosim::detail
