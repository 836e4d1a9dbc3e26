#include "sim/engine/ramp_periods.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace iosim::detail {

// At the dispatch of every period's first CTA (at `t`), a snapshot, while every resident CTA
// belongs to the run being dispatched (the previous run's last CTAs, much longer, outlive many
// of its first ones and bend its line); once the last periods lie on a line, the CTAs up to the
// run's end are left out.
void RampPeriods::before_dispatch(double t, KernelProgress& run) {
  const std::int64_t c = run.next_cta;
  if (c % step_ != 0) return;
  const std::int64_t head = c / ramp_run_;
  bool inside = c % ramp_run_ != 0;
  bool steady_now = true;  // every resident CTA in its steady parts or before them
  for (const CtaState& st : run.states) {
    if (st.cta < 0) continue;
    inside = inside && st.cta / ramp_run_ == head;
    steady_now = steady_now && st.part < st.steady_last;
  }
  if (!inside) {
    steps_.clear();
    return;
  }
  steps_.push(t + run.skipped_s, *run.counters);
  if (std::getenv("IOSIM_DEBUG_RAMP")) std::fprintf(stderr, "c=%ld steady_now=%d steady=%d\n", (long)c, (int)steady_now, (int)steps_.steady());
  // Up to the run's last CTA, which the slot being refilled takes (a CTA is dispatched there).
  const std::int64_t gap = (head + 1) * ramp_run_ - 1 - c;
  if (gap < step_ || !steady_now || !steps_.steady()) return;
  const double n = static_cast<double>(gap) / static_cast<double>(step_);
  steps_.add_counters_for(n, *run.counters);
  run.skip(steps_.time_for(n));
  leave_out(gap, run);
  steps_.clear();
}

// Leaves the run's next `ctas` CTAs out: each resident CTA goes on as the CTA `ctas` later, the
// one a full run would have resident at the gap's end, from the part it is at. That CTA would
// have been further along, in proportion to its length (a resident's progress scales with the
// CTAs' lengths where those grow on a line), so the steps between are left out at the end of its
// steady parts: the resident CTAs then hold the work in flight that they would have.
void RampPeriods::leave_out(std::int64_t ctas, KernelProgress& run) {
  for (CtaState& st : run.states) {
    if (st.cta < 0) continue;
    const PartRange next = schedule_.steady_parts(kernel_, st.cta + ctas);
    const std::size_t cut_before = st.steady_last - std::min(st.skip_from, st.steady_last);
    const double grown = static_cast<double>(next.last) / static_cast<double>(st.steady_last);
    std::size_t ahead = static_cast<std::size_t>(
        std::llround(static_cast<double>(st.part) * std::max(0.0, grown - 1.0)));
    const std::size_t room = next.last - cut_before - std::min(next.last - cut_before, st.part + 1);
    ahead = std::min(ahead, room);
    st.cta += ctas;
    st.steady_first = next.first;
    st.steady_last = next.last;
    st.skip_from = next.last - cut_before - ahead;
    run.stats->parts_extrapolated += static_cast<std::int64_t>(ahead);
  }
  run.stats->ctas_extrapolated += ctas;
  run.next_cta += ctas;
}

}  // namespace iosim::detail
