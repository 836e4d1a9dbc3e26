#pragma once
// Steady-state extrapolation, CTAs (sim/engine/steady_state.hpp, Repetition::cta_period): whole
// periods of the grid left out once the last periods repeat.
#include <cstdint>

#include "sim/engine/extrapolator.hpp"
#include "sim/engine/steady_state.hpp"

namespace iosim::detail {

class CtaPeriods : public Extrapolator {
 public:
  /// Periods of `period` CTAs, whole waves as well as whole repetitions (KernelRun::run).
  explicit CtaPeriods(std::int64_t period) : period_(period) {}
  void before_dispatch(double t, KernelProgress& run) override;

 private:
  void end_of_period(double t, KernelProgress& run);

  std::int64_t period_;            // CTAs per period
  int unsteady_periods_ = 0;       // periods compared and found unsteady since the period doubled
  std::uint64_t period_dram_ = 0;  // DRAM bytes (read + written) at the latest period snapshot
  RepeatDetector periods_;
};

}  // namespace iosim::detail
