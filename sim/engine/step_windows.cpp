#include "sim/engine/step_windows.hpp"

#include <algorithm>
#include <vector>

namespace iosim::detail {
namespace {

// Whether every SM that holds resident CTAs holds as many as every other.
bool equally_shared(const std::vector<int>& resident_on_sm) {
  int shared = 0;
  for (const int n : resident_on_sm) {
    if (n == 0) continue;
    if (shared != 0 && n != shared) return false;
    shared = n;
  }
  return true;
}

}  // namespace

// At the end of a window (`now`), a snapshot; when every resident CTA advanced part_period parts
// in each of the last windows and they repeat, a cut. With the L2 on, only CTAs in lockstep on
// equally shared SMs (sim/engine/steady_state.hpp says why).
void StepWindows::end_of_window(double now, KernelProgress& run) {
  const auto q = static_cast<std::size_t>(part_period_);
  bool uniform = run.resident > 0;
  std::size_t lowest = ~std::size_t{0}, highest = 0;
  for (CtaState& st : run.states) {
    if (st.cta < 0) continue;
    uniform = uniform && st.cta == st.window_cta && st.part == st.window_part + q &&
              st.window_part >= st.steady_first && st.part + 1 < st.skip_from &&
              st.part + 1 < st.steady_last;
    st.window_cta = st.cta;
    st.window_part = st.part;
    lowest = std::min(lowest, st.part);
    highest = std::max(highest, st.part);
  }
  if (run.l2_on && uniform) {
    uniform =
        highest - lowest <= kLockstepParts * q && equally_shared(run.resident_on_sm) &&
        run.counters->l2.write_total() == run.at_cta_start.l2_written &&
        run.counters->hbm.read_total() - run.at_cta_start.hbm_read >= kTurnover * run.l2_bytes;
  }
  window_events_ = 0;
  window_length_ = static_cast<std::int64_t>(run.resident) * part_period_;
  if (!uniform) {
    windows_.clear();
    queues_.clear();
  }
  windows_.push(now + run.skipped_s, *run.counters);
  queues_.push_back(std::max(0.0, run.booked_until - now));
  if (queues_.size() > static_cast<std::size_t>(kWindows) + 1) queues_.pop_front();
  if (uniform && windows_.steady() && queue_steady()) cut_windows(now, run);
}

bool StepWindows::queue_steady() const {
  const auto [lo, hi] = std::minmax_element(queues_.begin(), queues_.end());
  return *hi - *lo <= kTolerance * windows_.time_for(1);
}

// Leaves m windows out of the time line: each resident CTA m x part_period parts at the end of
// its steady range, keeping at least one window of steady parts after the cut.
void StepWindows::cut_windows(double now, KernelProgress& run) {
  const auto q = static_cast<std::size_t>(part_period_);
  std::size_t m = ~std::size_t{0};
  for (const CtaState& st : run.states) {
    if (st.cta < 0) continue;
    const std::size_t last = std::min(st.skip_from, st.steady_last);
    const std::size_t kept = st.part + 1 + q;
    if (last < kept + q) return;
    m = std::min(m, (last - kept) / q);
  }
  windows_.add_counters_for(static_cast<std::int64_t>(m), *run.counters);
  run.skip(windows_.time_for(static_cast<std::int64_t>(m)));
  for (CtaState& st : run.states) {
    if (st.cta < 0) continue;
    st.skip_from = std::min(st.skip_from, st.steady_last) - m * q;
    run.stats->parts_extrapolated += static_cast<std::int64_t>(m * q);
  }
  windows_.clear();
  windows_.push(now + run.skipped_s, *run.counters);
  queues_.assign(1, std::max(0.0, run.booked_until - now));
}

}  // namespace iosim::detail
