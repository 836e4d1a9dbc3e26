// A timeline's replay at another SM clock (sim/engine/timeline.hpp): the event loop's dispatch,
// event order and stage timing over the recorded stages instead of emitted operations and L2
// lookups.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/base/run_control.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/event_queue.hpp"
#include "sim/engine/rates.hpp"
#include "sim/engine/stage_recorder.hpp"
#include "sim/engine/stage_timer.hpp"
#include "sim/engine/timeline.hpp"

namespace iosim {
namespace {

using detail::CtaState;
using detail::Event;
using detail::EventQueue;
using detail::Rates;
using detail::StageTimer;
using detail::WaveTimeline;

// Times kernel `k` of a timeline at `clock_mhz` into kr (its time, launch, tail and wave ends):
// KernelRun's event loop (dispatch, event order, stage timing) over the recorded stages instead of
// emitted operations and L2 lookups.
void replay_kernel(const HardwareProfile& profile, const Timeline::Kernel& k, double clock_mhz,
                   bool l2_on, KernelResult& kr) {
  const KernelSpec& spec = kr.spec;
  StageTimer timer(profile, spec, clock_mhz, l2_on);
  const Rates& rates = timer.rates();
  // Each shape as a stage at these rates (its dependent latencies timed at this clock).
  std::vector<StageTimer::Stage> shapes(k.shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const Timeline::Shape& x = k.shapes[i];
    StageTimer::Stage& s = shapes[i];
    for (const auto& [w, at] : {std::pair{&s.before, 0}, std::pair{&s.after, 9}}) {
      const auto f = static_cast<std::size_t>(at);
      *w = {.tensor_flops = x[f],
            .fp32_flops = x[f + 1],
            .sfu_ops = x[f + 2],
            .int32_ops = x[f + 3],
            .smem_bytes = x[f + 4],
            .chain_s = 0,
            .round_trips = static_cast<std::int64_t>(x[f + 5]),
            .chain_fp32_ops = static_cast<std::int64_t>(x[f + 6]),
            .wgmma_waits = static_cast<std::int64_t>(x[f + 7]),
            .serialized_wgmmas = static_cast<std::int64_t>(x[f + 8])};
      w->time_chain(rates);
    }
    s.loads.requested = x[18];
    s.in_step.requested = x[19];
    s.stores.requested = x[20];
    s.after_in_step = x[21] != 0;
  }
  const auto ctas = static_cast<std::int64_t>(k.ctas.size());
  const std::int64_t slots =
      std::min<std::int64_t>(ctas, static_cast<std::int64_t>(k.sms) * k.ctas_per_sm);
  std::vector<CtaState> states(static_cast<std::size_t>(slots));
  struct Cursor {
    std::uint64_t stage = 0, end = 0, dram = 0;
  };
  std::vector<Cursor> cursors(static_cast<std::size_t>(slots));
  std::vector<int> resident_on_sm(static_cast<std::size_t>(rates.sm_count), 0);
  EventQueue events;
  std::uint64_t seq = 0;  // issue numbers as KernelRun gives them: the same order of ties
  std::int64_t next_cta = 0;
  const auto pipeline = static_cast<std::size_t>(std::max(1, spec.pipeline_stages));
  auto start = [&](std::uint32_t slot, std::int64_t cta, int sm, double t) {
    CtaState& st = states[slot];
    st.cta = cta;
    st.sm = sm;
    st.ring = 0;
    st.compute_end.assign(pipeline, t);
    st.compute_free = t;
    st.pending.fill(0.0);
    st.pending_from = t;
    st.end = t;
    ++resident_on_sm[static_cast<std::size_t>(sm)];
    const Timeline::Cta& c = k.ctas[static_cast<std::size_t>(cta)];
    cursors[slot] = {c.first_stage, c.first_stage + c.stage_count, c.first_dram};
    return Event{t, seq++, slot};
  };
  for (std::int64_t s = 0; s < slots; ++s) {
    events.push(start(static_cast<std::uint32_t>(s), next_cta++, static_cast<int>(s % k.sms), 0.0));
  }
  double last_finish = 0.0;
  std::int64_t finished = 0;
  WaveTimeline waves(ctas, slots);
  timer.place_slots(slots, k.sms);
  std::uint32_t events_run = 0;
  while (!events.empty()) {
    if ((++events_run & 1023u) == 0) run_control::check();
    const Event ev = events.top();
    const double now = ev.t();
    CtaState& st = states[ev.slot()];
    Cursor& c = cursors[ev.slot()];
    const std::uint32_t code = k.stages[c.stage++];
    const StageTimer::Stage& shape = shapes[code >> Timeline::kFlagBits];
    StageTimer::Traffic loads = shape.loads, in_step = shape.in_step, stores = shape.stores;
    loads.missed = (code & Timeline::kLoadsMissed) != 0;
    in_step.missed = (code & Timeline::kInStepMissed) != 0;
    if ((code & Timeline::kLoadsDram) != 0) loads.dram = k.dram[c.dram++];
    if ((code & Timeline::kInStepDram) != 0) in_step.dram = k.dram[c.dram++];
    if ((code & Timeline::kStoresDram) != 0) stores.dram = k.dram[c.dram++];
    timer.time(st, now, loads, in_step, stores, shape.before, shape.after, shape.after_in_step,
               resident_on_sm[static_cast<std::size_t>(st.sm)]);
    if (c.stage < c.end) {
      events.replace_top({timer.next_stage_time(st, now), seq++, ev.slot()});
    } else {
      last_finish = std::max(last_finish, st.end);
      timer.cta_ended(st);
      waves.finished(++finished, st.end);
      --resident_on_sm[static_cast<std::size_t>(st.sm)];
      st.cta = -1;
      if (next_cta < ctas) {
        const double at = next_cta_start(rates, spec, st.end);
        timer.refill(st, at);
        events.replace_top(start(ev.slot(), next_cta++, st.sm, at));
      } else {
        waves.slot_idle(st.end);
        timer.slot_idle(st);
        events.pop();
      }
    }
  }
  waves.close(last_finish, rates.launch_s, kr);
  kr.time_attribution =
      timer.attribution(last_finish, detail::busy_s(kr.counters.hbm, rates.per.hbm_byte),
                        detail::busy_s(kr.counters.l2, rates.per.l2_byte));
  kr.time_s = last_finish + rates.launch_s;
}

}  // namespace

EngineResult replay_timeline(const HardwareProfile& profile, const Timeline& timeline,
                             double clock_mhz) {
  if (!timeline.usable) throw InternalError("replay_timeline: the timeline is not usable");
  EngineResult result = timeline.recorded;
  result.time_s = 0.0;
  result.time_attribution = TimeAttribution{};
  for (std::size_t k = 0; k < result.kernels.size(); ++k) {
    KernelResult& kr = result.kernels[k];
    replay_kernel(profile, timeline.kernels[k], clock_mhz, timeline.l2_on, kr);
    detail::set_rates(kr);
    result.time_s += kr.time_s;
    result.time_attribution += kr.time_attribution;
  }
  return result;
}

}  // namespace iosim
