#pragma once
// The one interface between the engine's event loop (KernelRun in sim/engine/engine.cpp) and the
// kinds of steady-state extrapolation (sim/engine/steady_state.hpp says what each leaves out and
// why it may): CTA periods (cta_periods.hpp), waves by kind (waves_by_kind.hpp) and step windows
// (step_windows.hpp). The loop calls every kind its kernel uses at each CTA dispatch and after
// each event; a kind leaves work out through the KernelProgress it is handed (the next CTA to
// dispatch, the resident CTAs' parts, the counters, the time).
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/engine/counters.hpp"
#include "sim/engine/steady_state.hpp"
#include "sim/engine/time_attribution.hpp"
#include "sim/schedule/tile_op.hpp"

namespace iosim::detail {

/// DRAM bytes a period or wave must move, in L2 sizes, before it is compared with the L2 on, and
/// that DRAM must have fetched since the latest CTA start before steps are left out
/// (sim/engine/steady_state.hpp).
inline constexpr std::uint64_t kTurnover = 2;

/// A CTA resident in one of the kernel's slots (cta < 0: the slot is free).
struct CtaState {
  std::int64_t cta = -1;
  int sm = 0;
  std::vector<TileOp> ops;  // the current part of the CTA's operations
  std::size_t part = 0;
  bool more_parts = false;
  std::size_t pc = 0;
  std::size_t ring = 0;             // the stage's slot in compute_end: stage number % its size
  std::vector<double> compute_end;  // ring of the last `pipeline_stages` compute ends
  double compute_free = 0.0;
  double end = 0.0;
  TimeRow end_by = TimeRow::latency;  // what set `end` past the compute (its stores' server)
  // The last stage's compute, not yet charged (StageTimer): from pending_from to compute_free,
  // by TimeRow.
  std::array<double, kTimeRows> pending{};
  double pending_from = 0.0;
  // Steady-state extrapolation (sim/engine/steady_state.hpp): the CTA's steady parts [steady_first,
  // steady_last) as the schedule declared them; a cut leaves out parts [skip_from, steady_last),
  // so that the part after skip_from - 1 is steady_last. Its part and CTA at the last window.
  std::size_t steady_first = 0, steady_last = 0;
  std::size_t skip_from = ~std::size_t{0};
  std::int64_t window_cta = -1;
  std::size_t window_part = 0;
};

/// The state of a kernel's run that the event loop shares with its extrapolators.
struct KernelProgress {
  Counters* counters = nullptr;  // the kernel's so far
  Extrapolation* stats = nullptr;
  std::int64_t ctas = 0;  // CTAs in the grid
  std::int64_t next_cta = 0;
  std::vector<CtaState> states;  // by slot
  std::vector<int> resident_on_sm;
  int resident = 0;
  bool l2_on = false;
  std::uint64_t l2_bytes = 0;  // the L2's capacity
  // DRAM bytes read and L2 bytes written up to the latest CTA start.
  struct {
    std::uint64_t hbm_read = 0, l2_written = 0;
  } at_cta_start;
  double skipped_s = 0.0;  // time of the windows, periods and waves left out
  // The time up to which the transfers requested so far keep DRAM or the L2 busy (at the event
  // just run): past it, the queue a window leaves behind.
  double booked_until = 0.0;

  /// DRAM bytes read and written so far.
  std::uint64_t dram_bytes() const {
    return counters->hbm.read_total() + counters->hbm.write_total();
  }
  /// Adds `dt` left out to the kernel's time.
  void skip(double dt) {
    skipped_s += dt;
    stats->time_extrapolated_s += dt;
  }
};

/// One kind of steady-state extrapolation, as the event loop calls it.
class Extrapolator {
 public:
  virtual ~Extrapolator() = default;
  /// A CTA ended at `t` and CTA `run.next_cta` (< run.ctas) is dispatched next in its slot: may
  /// leave CTAs out of the grid by advancing run.next_cta.
  virtual void before_dispatch(double /*t*/, KernelProgress& /*run*/) {}
  /// After each event, at `now`: may leave out parts of the resident CTAs.
  virtual void after_event(double /*now*/, KernelProgress& /*run*/) {}
};

}  // namespace iosim::detail
