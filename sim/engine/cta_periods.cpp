#include "sim/engine/cta_periods.hpp"

namespace iosim::detail {

void CtaPeriods::before_dispatch(double t, KernelProgress& run) {
  if (run.next_cta % period_ == 0) end_of_period(t, run);
}

// At the dispatch of every period's first CTA (at `t`), a snapshot; once periods repeat, whole
// periods are left out of the grid, keeping two and the final drain to simulate.
void CtaPeriods::end_of_period(double t, KernelProgress& run) {
  // With the L2 on, a period must move kTurnover L2 sizes through DRAM before it is compared:
  // a shorter one's DRAM writes are the few write-backs its loads happened to evict (+-6% of a
  // 16-CTA period's on 8 SMs), and periods that agreed by chance left out CTAs with O's
  // write-backs off by more than 0.5% (tests/steady_state_test.cpp, whole periods).
  const std::uint64_t dram = run.dram_bytes();
  const bool too_short =
      run.l2_on && !periods_.empty() && dram - period_dram_ < kTurnover * run.l2_bytes;
  period_dram_ = dram;
  periods_.push(t + run.skipped_s, *run.counters);
  if (too_short || !periods_.steady()) {
    // Periods of a wave or two may not agree even in a steady state (the write-backs above;
    // dispatch times jitter by 0.15% with the L2 off). Longer periods average them out: a
    // period too short, or after kWindows comparisons that failed, doubles (still whole
    // periods of heads and whole waves) while the rest of the grid has room for the doubled
    // one: kWindows + 1 snapshots, one period left out, two after.
    const bool failed = too_short || (periods_.full() && ++unsteady_periods_ >= kWindows);
    if (failed && 2 * period_ * (kWindows + 4) <= run.ctas - run.next_cta) {
      period_ *= 2;
      periods_.clear();
      unsteady_periods_ = 0;
    }
    if (too_short) periods_.clear();  // not comparable to longer ones
    return;
  }
  const std::int64_t n = (run.ctas - run.next_cta) / period_ - 2;
  if (n < 1) return;
  // The CTAs after the gap are the grid's last ones, so that the L2 holds at the kernel's end
  // what it would have held for the next kernel.
  periods_.add_counters_for(n, *run.counters);
  run.skip(periods_.time_for(n));
  run.stats->ctas_extrapolated += n * period_;
  run.next_cta += n * period_;
  periods_.clear();
  unsteady_periods_ = 0;
}

}  // namespace iosim::detail
