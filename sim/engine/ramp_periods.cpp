#include "sim/engine/ramp_periods.hpp"

#include <algorithm>
#include <cmath>

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
  // Parts left out by step windows count as done: their counters are in run.counters.
  steps_.push(t + run.skipped_s, *run.counters,
              run.stats->parts_simulated + run.stats->parts_extrapolated);
  // Up to the run's last CTA, which the slot being refilled takes (a CTA is dispatched there).
  std::int64_t gap = (head + 1) * ramp_run_ - 1 - c;
  if (gap < step_ || !steady_now || !steps_.steady() || !steps_.settled(kSettled)) return;
  // Where the L2's hit rate still moves, only as far as it moves by kRatioDrift: the DRAM reads
  // ahead take the windows' ratio (TrendDetector::add_counters_for). Flash3 causal B=1 H=8
  // N=262144 d=128 on the H100 (K/V of a head 2.6 L2 sizes), cut to each head's last CTA, had
  // its DRAM reads 1.3% and its time 1.4% below the full run's.
  const double reach = steps_.steps_within(kRatioDrift) * static_cast<double>(step_);
  if (reach < static_cast<double>(gap)) gap = static_cast<std::int64_t>(reach);
  if (gap < step_) return;
  const double n = static_cast<double>(gap) / static_cast<double>(step_);
  steps_.add_counters_for(n, *run.counters);
  const double parts = steps_.parts_for(n);
  run.skip(steps_.time_for(n));
  leave_out(gap, parts, run);
  steps_.clear();
}

// Leaves the run's next `ctas` CTAs out, `parts` parts on the line: each resident CTA goes on as
// the CTA `ctas` later, the one a full run would have resident at the gap's end, from the part it
// is at. Those CTAs would have been further along: the parts between are left out at the end of
// their steady parts, so many that the parts simulated and left out add up to the grid's (those
// the line left out, less what the CTAs left out and the residents' growth hold), shared in
// proportion to the part each is at (a resident's progress at a dispatch grows with the CTAs'
// lengths where those grow on a line).
void RampPeriods::leave_out(std::int64_t ctas, double parts, KernelProgress& run) {
  const auto length = [&](std::int64_t cta) {
    return static_cast<double>(schedule_.steady_parts(kernel_, cta).last);
  };
  double owed = parts, at = 0;
  for (std::int64_t k = run.next_cta; k < run.next_cta + ctas; ++k) owed -= length(k) + 1;
  for (const CtaState& st : run.states) {
    if (st.cta < 0) continue;
    owed += length(st.cta + ctas) - length(st.cta);
    at += static_cast<double>(st.part);
  }
  const double share = at > 0 ? std::max(0.0, owed) / at : 0.0;
  for (CtaState& st : run.states) {
    if (st.cta < 0) continue;
    const PartRange next = schedule_.steady_parts(kernel_, st.cta + ctas);
    const std::size_t cut_before = st.steady_last - std::min(st.skip_from, st.steady_last);
    std::size_t ahead =
        static_cast<std::size_t>(std::llround(static_cast<double>(st.part) * share));
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
