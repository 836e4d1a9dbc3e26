#include "sim/engine/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>

#include "sim/base/errors.hpp"
#include "sim/base/memory_budget.hpp"
#include "sim/base/run_control.hpp"
#include "sim/engine/cta_periods.hpp"
#include "sim/engine/event_queue.hpp"
#include "sim/engine/extrapolator.hpp"
#include "sim/engine/ramp_periods.hpp"
#include "sim/engine/rates.hpp"
#include "sim/engine/stage_recorder.hpp"
#include "sim/engine/stage_timer.hpp"
#include "sim/engine/step_windows.hpp"
#include "sim/engine/timeline.hpp"
#include "sim/engine/waves_by_kind.hpp"
#include "sim/memory/address_map.hpp"
#include "sim/memory/l2_system.hpp"

namespace iosim {
namespace {

using detail::AddressMap;
using detail::CtaState;
using detail::Event;
using detail::EventQueue;
using detail::next_cta_start;
using detail::Rates;
using detail::StageRecorder;
using detail::StageTimer;
using detail::WaveTimeline;

// Ramps (sim/engine/ramp_periods.hpp): steps of a wave's CTAs over (at most) this, in runs of at
// least this many waves. Shorter runs came out beyond the tolerance: flash3 causal B=1 H=8
// N=262144 d=128 on the H100 (15.5 waves a head) with DRAM reads 0.6% over the full run's,
// though its cuts were taken where 98% of the K/V reads missed; flash2 causal N=1,048,576 (31
// waves a head) within 0.1% in every counter and time.
constexpr std::int64_t kRampStepsAWave = 4;
constexpr std::int64_t kRampWaves = 24;

class KernelRun {
 public:
  KernelRun(const HardwareProfile& profile, const Schedule& schedule, std::size_t kernel_index,
            const KernelSpec& spec, const Occupancy& occ, const AddressMap& addresses, L2System* l2,
            double clock_mhz, OpObserver* observer, bool extrapolate, bool clock_probe,
            StageRecorder* recorder)
      : schedule_(schedule),
        kernel_index_(kernel_index),
        spec_(spec),
        addresses_(addresses),
        l2_(l2),
        timer_(profile, spec, clock_mhz, l2 != nullptr),
        rates_(timer_.rates()),
        ctas_per_sm_(occ.ctas_per_sm),
        sms_(occ.sms),
        observer_(observer),
        recorder_(recorder),
        clock_probe_(clock_probe),
        repetition_(extrapolate ? schedule.repetition(kernel_index) : Repetition{}) {
    run_.resident_on_sm.assign(static_cast<std::size_t>(rates_.sm_count), 0);
    run_.l2_on = l2 != nullptr;
    run_.l2_bytes = static_cast<std::uint64_t>(profile.l2.size_bytes.value);
  }

  /// Simulates the kernel into `kr`'s counters and returns its time; kr.extrapolation says what
  /// was left out; kr's launch, tail and wave ends are set.
  double run(KernelResult& kr) {
    run_.counters = &kr.counters;
    run_.stats = &kr.extrapolation;
    run_.ctas = spec_.grid.count();
    const std::int64_t slots =
        std::min<std::int64_t>(run_.ctas, static_cast<std::int64_t>(sms_) * ctas_per_sm_);
    waves_ = WaveTimeline(run_.ctas, slots);
    if (repetition_.alike_run > slots && slots > 0) {
      // Runs of alike CTAs longer than a wave: waves by kind, in place of periods, which would
      // be whole runs and waves (sim/engine/steady_state.hpp).
      extrapolators_.push_back(std::make_unique<detail::WavesByKind>(slots, repetition_.alike_run));
    } else if (repetition_.ramp_run >= kRampWaves * slots && repetition_.part_period > 0 &&
               slots > 0) {
      // Runs of CTAs that grow by a step each (causal heads) long enough for the periods a line
      // needs and a gap: in place of periods of the grid, which would be whole runs and waves.
      std::int64_t span = kRampStepsAWave;
      while (slots % span != 0) --span;
      extrapolators_.push_back(std::make_unique<detail::RampPeriods>(
          slots / span, static_cast<std::size_t>(span), repetition_.ramp_run,
          repetition_.cta_period == repetition_.ramp_run, clock_probe_, schedule_, kernel_index_));
    } else if (repetition_.cta_period > 0 && slots > 0) {
      // Whole waves as well as whole repetitions: where waves start together, leaving out a
      // period that is not whole waves moves the final partial wave (standard B=4 H=16 N=2048
      // d=64 Bc=64, periods of heads rounded up to a wave: gemm_qk's time off by 5.8% after
      // three periods that agreed within 0.1%).
      extrapolators_.push_back(
          std::make_unique<detail::CtaPeriods>(std::lcm(repetition_.cta_period, slots)));
    }
    if (repetition_.part_period > 0) {
      extrapolators_.push_back(std::make_unique<detail::StepWindows>(repetition_.part_period));
    }
    if (slots >= (std::int64_t{1} << Event::kSlotBits)) {
      throw ConfigError(
          fmt::format("kernel '{}': {} resident CTAs, more than the engine tracks ({})", spec_.name,
                      slots, std::int64_t{1} << Event::kSlotBits));
    }
    run_.states.resize(static_cast<std::size_t>(slots));
    timer_.place_slots(slots, sms_);
    // First wave: breadth-first over SMs (CTA i on SM i mod #SMs).
    for (std::int64_t s = 0; s < slots; ++s) {
      events_.push(start_cta(static_cast<std::uint32_t>(s), run_.next_cta++,
                             static_cast<int>(s % sms_), 0.0));
    }
    double last_finish = 0.0;
    std::int64_t finished = 0;  // CTAs simulated to their end, for run_control's progress
    const std::int64_t extrapolated_before = run_.stats->ctas_extrapolated;
    std::uint32_t events_run = 0;
    while (!events_.empty()) {
      // Stops are honoured between waves and, within a wave that runs long (a CTA of a
      // million-token split), every 1024 events: a few microseconds each.
      if ((++events_run & 1023u) == 0) run_control::check();
      const Event ev = events_.top();
      const double now = ev.t();
      CtaState& st = run_.states[ev.slot()];
      run_stage(st, now);
      next_part(st);
      if (st.pc < st.ops.size()) {
        events_.replace_top({next_stage_time(st, now), issue(), ev.slot()});
      } else {
        last_finish = std::max(last_finish, st.end);
        timer_.cta_ended(st);
        const std::int64_t done = ++finished + run_.stats->ctas_extrapolated - extrapolated_before;
        if (finished % slots == 0) run_control::wave_done(spec_.name, done, run_.ctas);
        waves_.finished(done, st.end + run_.skipped_s);
        if (recorder_ != nullptr) recorder_->cta_done(ev.slot(), st.cta);
        --run_.resident;
        --run_.resident_on_sm[static_cast<std::size_t>(st.sm)];
        st.cta = -1;
        if (run_.next_cta < run_.ctas) {
          for (const auto& x : extrapolators_) x->before_dispatch(st.end, run_);
          attribute_skipped();
          const double start = next_cta_start(rates_, spec_, st.end);
          timer_.refill(st, start);
          events_.replace_top(start_cta(ev.slot(), run_.next_cta++, st.sm, start));
        } else {
          waves_.slot_idle(st.end + run_.skipped_s);
          timer_.slot_idle(st);
          events_.pop();
        }
      }
      run_.booked_until = timer_.servers_booked_until();
      for (const auto& x : extrapolators_) x->after_event(now, run_);
      attribute_skipped();
    }
    run_.stats->ctas_simulated += run_.next_cta - run_.stats->ctas_extrapolated;
    const double end = last_finish + run_.skipped_s;
    waves_.close(end, rates_.launch_s, kr);
    kr.time_attribution =
        timer_.attribution(end, detail::busy_s(kr.counters.hbm, rates_.per.hbm_byte),
                           detail::busy_s(kr.counters.l2, rates_.per.l2_byte));
    return end + rates_.launch_s;
  }

 private:
  // Time the extrapolators left out since the last call, to the attribution.
  void attribute_skipped() {
    if (run_.skipped_s != attributed_skipped_s_) {
      timer_.skipped(run_.skipped_s - attributed_skipped_s_);
      attributed_skipped_s_ = run_.skipped_s;
    }
  }

  // The next event's issue number.
  std::uint64_t issue() {
    if (seq_ == Event::kMaxIssue) [[unlikely]] {
      throw InternalError(
          fmt::format("kernel '{}': more than {} engine events", spec_.name, Event::kMaxIssue));
    }
    return seq_++;
  }

  // Places CTA `cta` in `slot` on `sm` at time `t`; returns its first stage's event. Dispatched
  // before `t` (a slot's refill), it already counts as resident on its SM: the refill is short
  // beside a stage, and a stage's share of the SM's pipes is fixed when the stage starts, so
  // counting it only from its first stage gave a neighbour's whole stage the SM to itself.
  Event start_cta(std::uint32_t slot, std::int64_t cta, int sm, double t) {
    CtaState& st = run_.states[slot];
    st.cta = cta;
    st.sm = sm;
    st.ops.clear();
    st.part = 0;
    st.skip_from = ~std::size_t{0};
    if (repetition_.part_period > 0) {
      const PartRange steady = schedule_.steady_parts(kernel_index_, cta);
      st.steady_first = steady.first;
      st.steady_last = steady.last;
    }
    ++run_.stats->parts_simulated;
    st.more_parts = schedule_.emit_cta_part(kernel_index_, cta, 0, st.ops);
    st.pc = 0;
    next_part(st);
    st.ring = 0;
    st.compute_end.assign(static_cast<std::size_t>(std::max(1, spec_.pipeline_stages)), t);
    st.compute_free = t;
    st.pending.fill(0.0);
    st.pending_from = t;
    st.end = t;
    ++run_.resident;
    ++run_.resident_on_sm[static_cast<std::size_t>(sm)];
    run_.at_cta_start = {run_.counters->hbm.read_total(), run_.counters->l2.write_total()};
    return {t, issue(), slot};
  }

  // Once a CTA's operations are used up, emits its next part, skipping empty ones.
  void next_part(CtaState& st) {
    while (st.pc == st.ops.size() && st.more_parts) {
      st.ops.clear();
      st.pc = 0;
      if (++st.part == st.skip_from) st.part = st.steady_last;  // past the parts a cut left out
      ++run_.stats->parts_simulated;
      st.more_parts = schedule_.emit_cta_part(kernel_index_, st.cta, st.part, st.ops);
    }
  }

  double next_stage_time(const CtaState& st, double now) const {
    return timer_.next_stage_time(st, now);
  }

  using Traffic = StageTimer::Traffic;
  using Work = StageTimer::Work;

  // The tile's runs, in order, into runs_ (with the L2 on); returns its exact bytes.
  std::uint64_t gather_runs(const TileRef& tile) {
    runs_.clear();
    return addresses_.for_each_run(tile, [&](const L2System::Run& run) {
      if (l2_ != nullptr) runs_.push_back(run);
    });
  }

  void load(const TileOp& op, int sm, Traffic& tr) {
    const std::size_t ti = index_of(op.tile.tensor);
    const std::uint64_t exact = gather_runs(op.tile);
    if (l2_ != nullptr) {
      const L2Cache::ReadOutcome r =
          l2_->read(runs_, op.tile.tensor, sm, run_.counters->hbm.write_bytes);
      run_.counters->l2.read_bytes[ti] += r.requested_bytes;
      run_.counters->hbm.read_bytes[ti] += r.miss_bytes;
      tr.requested += static_cast<double>(r.requested_bytes);
      tr.dram += static_cast<double>(r.miss_bytes);
      tr.missed = tr.missed || r.miss_bytes > 0;
    } else {
      run_.counters->hbm.read_bytes[ti] += exact;
      tr.requested += static_cast<double>(exact);
      tr.dram += static_cast<double>(exact);
      tr.missed = true;
    }
    if (op.on_chip == OnChip::smem) run_.counters->smem_write_bytes += exact;
  }

  void store(const TileOp& op, int sm, Traffic& tr) {
    const std::size_t ti = index_of(op.tile.tensor);
    const std::uint64_t exact = gather_runs(op.tile);
    if (l2_ != nullptr) {
      const std::uint64_t bytes =
          l2_->write(runs_, op.tile.tensor, sm, run_.counters->hbm.write_bytes);
      run_.counters->l2.write_bytes[ti] += bytes;
      tr.requested += static_cast<double>(bytes);
    } else {
      run_.counters->hbm.write_bytes[ti] += exact;
      tr.requested += static_cast<double>(exact);
      tr.dram += static_cast<double>(exact);
    }
    if (op.on_chip == OnChip::smem) run_.counters->smem_read_bytes += exact;
  }

  // An fp32 atomic add (RED) done by the L2: the old value is read there (fetched from DRAM on
  // a miss) and the sum kept dirty. Counted as one L2 read and one L2 write of the tile, so the
  // three-level counts stay comparable with the two-level ones (an HBM read and write); the
  // addends cross the SM's port once.
  void reduce(const TileOp& op, int sm, Traffic& tr) {
    const std::size_t ti = index_of(op.tile.tensor);
    const std::uint64_t exact = addresses_.for_each_run(op.tile, [&](const L2System::Run& run) {
      if (l2_ == nullptr) return;
      // Each piece (of every block of rows) is read, then written, before the next.
      run.for_each_piece([&](std::uint64_t a) {
        const L2Cache::ReadOutcome r =
            l2_->read(a, run.len, op.tile.tensor, sm, run_.counters->hbm.write_bytes);
        run_.counters->l2.read_bytes[ti] += r.requested_bytes;
        run_.counters->hbm.read_bytes[ti] += r.miss_bytes;
        tr.dram += static_cast<double>(r.miss_bytes);
        const std::uint64_t bytes =
            l2_->write(a, run.len, op.tile.tensor, sm, run_.counters->hbm.write_bytes);
        run_.counters->l2.write_bytes[ti] += bytes;
        tr.requested += static_cast<double>(bytes);
      });
    });
    if (l2_ == nullptr) {
      run_.counters->hbm.read_bytes[ti] += exact;
      run_.counters->hbm.write_bytes[ti] += exact;
      tr.requested += static_cast<double>(exact);
      tr.dram += 2.0 * static_cast<double>(exact);
    }
  }

  // Runs one stage: the loads the pipeline prefetches, then the computes and stores that use
  // them, with any in-step loads (TileOp::in_step) among the computes.
  void run_stage(CtaState& st, double t) {
    // (Copied from a blank member: GCC value-initializes the 240-byte Stage with `rep stos`,
    // slower than the copy's vector moves.)
    StageTimer::Stage stage = blank_stage_;
    Traffic& loads = stage.loads;
    Traffic& stores = stage.stores;
    Traffic& in_step = stage.in_step;
    Work& before = stage.before;  // compute before / from the first in-step load on
    Work& after = stage.after;
    bool& after_in_step = stage.after_in_step;
    const std::uint64_t written_back_before = l2_ != nullptr ? l2_->written_back_bytes() : 0;
    const std::uint64_t smem_before =
        run_.counters->smem_write_bytes + run_.counters->smem_read_bytes;
    auto is_prefetched_load = [&](std::size_t pc) {
      return st.ops[pc].kind == OpKind::load && !st.ops[pc].in_step;
    };
    // The threads that issue a load compute its addresses (TileOp::int_ops, e.g. page lookups).
    while (st.pc < st.ops.size() && is_prefetched_load(st.pc)) {
      before.int32_ops += static_cast<double>(st.ops[st.pc].int_ops);
      load(st.ops[st.pc], st.sm, loads);
      observe(st, st.ops[st.pc++]);
    }
    // Dirty lines evicted by this stage's loads go to DRAM alongside its misses.
    std::uint64_t written_back = l2_ != nullptr ? l2_->written_back_bytes() : 0;
    loads.dram += static_cast<double>(written_back - written_back_before);
    while (st.pc < st.ops.size() && !is_prefetched_load(st.pc)) {
      const TileOp& op = st.ops[st.pc++];
      if (op.kind == OpKind::load) {  // in-step
        after.int32_ops += static_cast<double>(op.int_ops);
        load(op, st.sm, in_step);
        const std::uint64_t now = l2_ != nullptr ? l2_->written_back_bytes() : 0;
        in_step.dram += static_cast<double>(now - written_back);
        written_back = now;
        after_in_step = true;
      } else if (op.kind == OpKind::store) {
        store(op, st.sm, stores);
      } else if (op.kind == OpKind::reduce) {
        reduce(op, st.sm, stores);
      } else {
        (after_in_step ? after : before).add(op, rates_);
      }
      observe(st, op);
    }
    if (l2_ != nullptr) {
      stores.dram += static_cast<double>(l2_->written_back_bytes() - written_back);
    }
    // Shared-memory bytes the loads wrote and the stores read belong to the stage's start.
    before.smem_bytes += static_cast<double>(run_.counters->smem_write_bytes +
                                             run_.counters->smem_read_bytes - smem_before);
    const double compute_smem_read =
        before.smem_bytes + after.smem_bytes -
        static_cast<double>(run_.counters->smem_write_bytes + run_.counters->smem_read_bytes -
                            smem_before);
    for (const Work* w : {&before, &after}) {
      run_.counters->tensor_flops += static_cast<std::uint64_t>(w->tensor_flops);
      run_.counters->fp32_flops += static_cast<std::uint64_t>(w->fp32_flops);
      run_.counters->sfu_ops += static_cast<std::uint64_t>(w->sfu_ops);
      run_.counters->int32_ops += static_cast<std::uint64_t>(w->int32_ops);
    }
    run_.counters->smem_read_bytes += static_cast<std::uint64_t>(compute_smem_read);

    timer_.time(st, t, loads, in_step, stores, before, after, after_in_step,
                run_.resident_on_sm[static_cast<std::size_t>(st.sm)]);
    if (recorder_ != nullptr) {
      recorder_->stage(static_cast<std::uint32_t>(&st - run_.states.data()), stage);
    }
  }

  void observe(const CtaState& st, const TileOp& op) const {
    if (observer_ != nullptr) observer_->on_op(kernel_index_, st.cta, st.sm, op, *run_.counters);
  }

  const Schedule& schedule_;
  std::size_t kernel_index_;
  const KernelSpec& spec_;
  const AddressMap& addresses_;
  L2System* l2_;
  StageTimer timer_;
  Rates rates_;  // (a copy: the timer's, read in the loop without an indirection)
  int ctas_per_sm_;
  int sms_;  // the SMs that hold this kernel's CTAs (Occupancy::sms)
  EventQueue events_;
  std::uint64_t seq_ = 0;  // events issued
  // Runs of the tile being moved: sums of per-run bytes in doubles are exact (integers far
  // below 2^53), so sending a tile's runs to the L2 together counts what run-by-run did.
  std::vector<L2System::Run> runs_;
  StageTimer::Stage blank_stage_;  // run_stage()'s start, never written
  OpObserver* observer_;
  StageRecorder* recorder_;  // null: no timeline is recorded
  // Steady-state extrapolation (sim/engine/steady_state.hpp): the kinds this kernel uses, and
  // the state of the run they see.
  bool clock_probe_;  // EngineOptions::clock_probe
  Repetition repetition_;
  std::vector<std::unique_ptr<detail::Extrapolator>> extrapolators_;
  detail::KernelProgress run_;
  WaveTimeline waves_;                 // the kernel's waves and tail, as its CTAs finish
  double attributed_skipped_s_ = 0.0;  // of run_.skipped_s, what attribute_skipped() has charged
};

}  // namespace

namespace detail {

void set_rates(KernelResult& kr) {
  // The bound is the class of the largest row of the kernel's time (TimeAttribution).
  kr.bound = std::string(bound_of(kr.time_attribution.largest()));
  kr.achieved_hbm_gbps =
      static_cast<double>(kr.counters.hbm.read_total() + kr.counters.hbm.write_total()) /
      kr.time_s / 1e9;
  kr.achieved_l2_gbps =
      static_cast<double>(kr.counters.l2.read_total() + kr.counters.l2.write_total()) / kr.time_s /
      1e9;
  kr.achieved_tensor_tflops = static_cast<double>(kr.counters.tensor_flops) / kr.time_s / 1e12;
}

}  // namespace detail

std::string classify_bound(const HardwareProfile& p, const Counters& c, double time_s,
                           double sm_clock_mhz, Dtype mma_dtype, TensorInstruction instruction) {
  const Rates r(p, sm_clock_mhz > 0 ? sm_clock_mhz : p.sm.boost_clock_mhz.value, mma_dtype,
                instruction);
  const double sms = r.sm_count;
  const double t_memory =
      std::max(static_cast<double>(c.hbm.read_total() + c.hbm.write_total()) / r.hbm_bps,
               static_cast<double>(c.l2.read_total() + c.l2.write_total()) / r.l2_bps);
  // The engine runs a CTA's tensor-core, FP32 and SFU work one after another, so their floors add.
  const double t_compute = static_cast<double>(c.tensor_flops) / (r.tensor_per_sm * sms) +
                           static_cast<double>(c.fp32_flops) / (r.fp32_per_sm * sms) +
                           static_cast<double>(c.int32_ops) / (r.int32_per_sm * sms) +
                           static_cast<double>(c.sfu_ops) / (r.sfu_per_sm * sms);
  if (std::max(t_memory, t_compute) < 0.5 * time_s) return "latency";
  return t_memory >= t_compute ? "memory" : "compute";
}

L2ModelMemory l2_model_memory(const HardwareProfile& profile) {
  // The L2 model's arrays grow with the profile's L2 size over its sector size; a what-if L2
  // (--set l2.size_bytes=...) can ask for more than the machine has.
  return {L2System::memory_bytes(profile.l2.size_bytes.value, profile.l2.sector_bytes.value,
                                 profile.l2.partitions.value),
          fmt::format("the L2 model of {} ({} bytes in {}-byte sectors)", profile.name,
                      profile.l2.size_bytes.value, profile.l2.sector_bytes.value),
          "use a smaller l2.size_bytes or larger l2.sector_bytes, or raise --max-memory"};
}

EngineResult run_schedule(const HardwareProfile& profile, const Schedule& schedule,
                          const EngineOptions& options, Timeline* record) {
  const double clock_mhz =
      options.sm_clock_mhz > 0 ? options.sm_clock_mhz : profile.sm.boost_clock_mhz.value;
  const AddressMap addresses(schedule.tensors());
  std::optional<memory_budget::Reservation> held;
  std::optional<L2System> l2;
  if (options.l2_enabled) {
    const L2ModelMemory m = l2_model_memory(profile);
    held.emplace(m.bytes, m.what, m.advice);
    l2.emplace(profile.l2.size_bytes.value, profile.l2.sector_bytes.value,
               profile.l2.partitions.value, profile.l2.max_dirty_fraction.value);
  }

  EngineResult result;
  const std::vector<KernelSpec> specs = schedule.kernels();
  if (record != nullptr) {
    *record = Timeline{};
    record->usable = options.observer == nullptr;
    record->l2_on = options.l2_enabled;
    record->kernels.resize(specs.size());
  }
  for (std::size_t k = 0; k < specs.size(); ++k) {
    KernelSpec spec = specs[k];
    if (const auto it = options.registers_by_role.find(spec.role);
        !spec.role.empty() && it != options.registers_by_role.end()) {
      spec.registers_per_thread = it->second;
    }
    KernelResult kr;
    kr.spec = spec;
    kr.occupancy = occupancy(profile, spec);
    if (kr.occupancy.ctas_per_sm == 0) {
      throw ConfigError(fmt::format("kernel '{}' does not fit on an SM of {}: {}", spec.name,
                                    profile.name, kr.occupancy.limiter));
    }
    if (l2 && options.flush_l2_between_kernels) {
      PerTensor discarded{};  // a flush's write-backs belong to no kernel
      l2->flush(discarded);
    }
    const double slots = static_cast<double>(kr.occupancy.sms) * kr.occupancy.ctas_per_sm;
    kr.waves = static_cast<double>(spec.grid.count()) / slots;
    kr.idle_sm_fraction =
        1.0 - static_cast<double>(std::min<std::int64_t>(spec.grid.count(), kr.occupancy.sms)) /
                  profile.sm.count.value;
    std::optional<StageRecorder> recorder;
    if (record != nullptr && record->usable &&
        static_cast<std::uint64_t>(spec.grid.count()) <= Timeline::kMaxStages) {
      record->kernels[k].ctas_per_sm = kr.occupancy.ctas_per_sm;
      record->kernels[k].sms = kr.occupancy.sms;
      recorder.emplace(*record, record->kernels[k], spec.grid.count(),
                       static_cast<std::size_t>(std::min<std::int64_t>(
                           spec.grid.count(), static_cast<std::int64_t>(kr.occupancy.sms) *
                                                  kr.occupancy.ctas_per_sm)));
    } else if (record != nullptr) {
      record->usable = false;
    }
    KernelRun run(profile, schedule, k, spec, kr.occupancy, addresses, l2 ? &*l2 : nullptr,
                  clock_mhz, options.observer, !options.exact && options.observer == nullptr,
                  options.clock_probe, recorder ? &*recorder : nullptr);
    kr.time_s = run.run(kr);
    // A run that left work out measured what it left out at its own clock (steady_state.hpp).
    if (record != nullptr && kr.extrapolation.applied()) record->usable = false;
    kr.counters.l2_dirty_at_end_bytes = l2 ? l2->dirty_bytes() : 0;
    kr.counters.l2_dirty_at_end = l2 ? l2->dirty_bytes_by_tensor() : PerTensor{};
    detail::set_rates(kr);
    result.total += kr.counters;
    result.extrapolation += kr.extrapolation;
    result.time_s += kr.time_s;
    result.time_attribution += kr.time_attribution;
    result.kernels.push_back(std::move(kr));
  }
  if (record != nullptr) {
    if (record->usable) {
      record->recorded = result;
    } else {
      *record = Timeline{};  // its memory back
    }
  }
  return result;
}

}  // namespace iosim
