#include "sim/engine/ramp_periods.hpp"

#include <algorithm>
#include <cmath>

namespace iosim::detail {

// At the dispatch of every period's first CTA (at `t`), a snapshot, while every resident CTA
// belongs to the run being dispatched (the previous run's last CTAs, much longer, outlive many
// of its first ones and bend its line); once the last periods lie on a line, the CTAs up to the
// run's end are left out.
void RampPeriods::before_dispatch(double t, KernelProgress& run) {
  // Steps counted from each run's first CTA, so that two runs' steps are the same CTAs of a run.
  std::int64_t c = run.next_cta;
  if (c % ramp_run_ % step_ != 0) return;
  std::int64_t head = c / ramp_run_;
  // Parts left out by step windows count as done: their counters are in run.counters.
  const Mark m{t + run.skipped_s, *run.counters,
               run.stats->parts_simulated + run.stats->parts_extrapolated};
  if (runs_alike_ && !runs_left_out_ &&
      alike_runs(head, static_cast<std::size_t>(c % ramp_run_ / step_), m, run)) {
    c = run.next_cta;
    head = c / ramp_run_;
  }
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
  steps_.push(m.t, m.c, m.parts);
  // Up to the run's last CTA, which the slot being refilled takes (a CTA is dispatched there).
  std::int64_t gap = (head + 1) * ramp_run_ - 1 - c;
  // A clock probe also cuts where only its looser test holds (kProbeTimeTolerance), and says so.
  const bool strict = steady_now && steps_.steady() && steps_.settled(kSettled);
  if (gap < step_ || !(strict || (probe_ && steady_now && steps_.steady(kProbeTimeTolerance)))) {
    held_ = 0;
    return;
  }
  // The second of runs alike goes on until the third can be compared with it over as many steps
  // (alike_runs): the third's windows agree with the second's only once both settled.
  if (runs_alike_ && !runs_left_out_ && head == 1 && run.ctas / ramp_run_ >= 4 &&
      ++held_ <= static_cast<std::int64_t>(kWindows + span_)) {
    return;
  }
  // Where the L2's hit rate still moves, only as far as it moves by kRatioDrift: the DRAM reads
  // ahead take the windows' ratio (TrendDetector::add_counters_for). Flash3 causal B=1 H=8
  // N=262144 d=128 on the H100 (K/V of a head 2.6 L2 sizes), cut to each head's last CTA, had
  // its DRAM reads 1.3% and its time 1.4% below the full run's.
  const double reach = steps_.steps_within(kRatioDrift) * static_cast<double>(step_);
  if (reach < static_cast<double>(gap)) gap = static_cast<std::int64_t>(reach);
  if (gap < step_) return;
  if (!strict) run.stats->probe_cuts = true;
  const double n = static_cast<double>(gap) / static_cast<double>(step_);
  steps_.add_counters_for(n, *run.counters);
  const double parts = steps_.parts_for(n);
  run.skip(steps_.time_for(n));
  leave_out(gap, parts, run);
  steps_.clear();
  cut_run_ = head;
}

// Runs alike up to an address offset (heads). The first run starts on idle SMs and an empty L2,
// every later one among the previous run's last CTAs, the longest, which outlive its first ones:
// the second run is the first that starts as the later ones do, so its marks (at every step of
// the run, up to its cut) are the reference, and the third run's are compared with them at the
// same steps. Once the third run's last kWindows + 1 windows of a wave agree with the second's at
// the same CTAs and its reads miss the L2 (all but kSettled: what the L2 holds, the previous
// addresses' lines, matters no more than the ramps allow), the third run goes on as the second
// did from there, and so does every later one: the work from the second run's mark to the third's
// is one run's, moved along. The runs up to the last are left out with that period's time and
// counters; each resident CTA goes on as the one that many runs later, at the same part (the
// same CTA of its run: the same steady parts), and the last run is simulated from there, its
// ramp's windows those the third run took, moved along.
bool RampPeriods::alike_runs(std::int64_t run_index, std::size_t j, const Mark& m,
                             KernelProgress& run) {
  if (run_index < 1 || run_index > 2 || cut_run_ == run_index) return false;
  std::vector<Mark>& marks = run_index == 1 ? first_ : second_;
  if (marks.size() <= j) marks.resize(j + 1);
  marks[j] = m;
  if (run_index == 1) return false;
  const std::size_t back = kWindows + span_;  // steps the windows cover
  if (j < back || first_.size() <= j) return false;
  for (std::size_t k = j - back; k <= j; ++k) {
    if (!first_[k].taken() || !second_[k].taken()) return false;
  }
  const bool reads_settled = settled(second_[j - back], m, kSettled);
  if (!reads_settled && !probe_) return false;
  for (std::size_t k = j - kWindows; k <= j; ++k) {
    if (!windows_alike(second_[k - span_], second_[k], first_[k - span_], first_[k])) {
      return false;
    }
  }
  // The windows compared lie where every read misses; the L2's hits of the run come where runs
  // meet, and what it holds there depends on the runs' addresses: the third run's first CTAs must
  // hit it as the second's did, within kTolerance of a run's reads.
  if (!hits_alike(second_[0], m, first_[0], first_[j], first_[j], m)) return false;
  const std::int64_t n = run.ctas / ramp_run_ - run_index - 1;
  if (n < 1) return false;
  if (!reads_settled) run.stats->probe_cuts = true;
  const Mark& from = first_[j];
  const double dt = m.t - from.t;
  const std::int64_t parts = m.parts - from.parts;
  add_times(n, m.c, from.c, *run.counters);
  run.skip(static_cast<double>(n) * dt);
  steps_.shift(n, dt, m.c, from.c, parts);
  run.stats->parts_extrapolated += n * parts;
  run.stats->ctas_extrapolated += n * ramp_run_;
  run.next_cta += n * ramp_run_;
  for (CtaState& st : run.states) {
    if (st.cta >= 0) st.cta += n * ramp_run_;
  }
  runs_left_out_ = true;
  first_.clear();
  second_.clear();
  return true;
}

// The parts of CTA `cta`: its steady ones, those before them, and every one after them up to the
// last (emit_cta_part says which is the last). After the steady ones there may be more than the
// last (O's write): flash2's 128-row query blocks over 64-key blocks cross the diagonal in two
// blocks, and counted as one, a cut of flash2 causal B=1 H=5 N=57344 d=128 on 8 SMs left out a part
// too many for every CTA it left out (its flops 0.13% below --exact's, its DRAM reads 0.55%).
std::size_t RampPeriods::parts_of(std::int64_t cta) {
  std::size_t part = schedule_.steady_parts(kernel_, cta).last;
  for (ops_.clear(); schedule_.emit_cta_part(kernel_, cta, part, ops_); ops_.clear()) ++part;
  return part + 1;
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
  for (std::int64_t k = run.next_cta; k < run.next_cta + ctas; ++k) {
    owed -= static_cast<double>(parts_of(k));
  }
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
