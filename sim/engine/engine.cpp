#include "sim/engine/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <optional>

#include "sim/base/errors.hpp"
#include "sim/engine/event_queue.hpp"
#include "sim/engine/rates.hpp"
#include "sim/engine/run_control.hpp"
#include "sim/engine/steady_state.hpp"
#include "sim/memory/address_map.hpp"
#include "sim/memory/l2_system.hpp"

namespace iosim {
namespace {

using detail::AddressMap;
using detail::Event;
using detail::EventQueue;
using detail::Rates;

// A bandwidth resource served first come, first served. Requests arrive in non-decreasing
// time (the event loop guarantees it), so a single "busy until" cursor is exact for FIFO.
struct Server {
  double busy_until = 0.0;
  double reserve(double t, double duration) {
    busy_until = std::max(t, busy_until) + duration;
    return busy_until;
  }
};

// Warp schedulers (SM sub-partitions) per SM on Ampere and Hopper: the A100 and H100
// whitepapers' SM diagrams show four processing blocks, each with its own scheduler, issuing one
// warp instruction per clock.
constexpr double kSchedulersPerSm = 4.0;
constexpr double kWarpThreads = 32.0;

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
  // Steady-state extrapolation (sim/engine/steady_state.hpp): the CTA's steady parts [steady_first,
  // steady_last) as the schedule declared them; a cut leaves out parts [skip_from, steady_last),
  // so that the part after skip_from - 1 is steady_last. Its part and CTA at the last window.
  std::size_t steady_first = 0, steady_last = 0;
  std::size_t skip_from = ~std::size_t{0};
  std::int64_t window_cta = -1;
  std::size_t window_part = 0;
};

class KernelRun {
 public:
  KernelRun(const HardwareProfile& profile, const Schedule& schedule, std::size_t kernel_index,
            const KernelSpec& spec, const Occupancy& occ, const AddressMap& addresses, L2System* l2,
            double clock_mhz, OpObserver* observer, bool extrapolate)
      : schedule_(schedule),
        kernel_index_(kernel_index),
        spec_(spec),
        addresses_(addresses),
        l2_(l2),
        rates_(profile, clock_mhz, spec.mma_dtype, spec.tensor_instruction),
        ctas_per_sm_(occ.ctas_per_sm),
        warps_per_cta_((spec.threads_per_cta + 31) / 32 - spec.producer_warps),
        ports_(static_cast<std::size_t>(rates_.sm_count)),
        resident_on_sm_(static_cast<std::size_t>(rates_.sm_count), 0),
        observer_(observer),
        repetition_(extrapolate ? schedule.repetition(kernel_index) : Repetition{}),
        l2_bytes_(static_cast<std::uint64_t>(profile.l2.size_bytes.value)) {}

  /// Simulates the kernel into `c` and returns its time; `extrapolated` says what was left out.
  double run(Counters& c, Extrapolation& extrapolated) {
    counters_ = &c;
    stats_ = &extrapolated;
    ctas_ = spec_.grid.count();
    const std::int64_t slots =
        std::min<std::int64_t>(ctas_, static_cast<std::int64_t>(rates_.sm_count) * ctas_per_sm_);
    if (repetition_.cta_period > 0 && slots > 0) {
      // Whole waves as well as whole repetitions: where waves start together, leaving out a
      // period that is not whole waves moves the final partial wave (standard B=4 H=16 N=2048
      // d=64 Bc=64, periods of heads rounded up to a wave: gemm_qk's time off by 5.8% after
      // three periods that agreed within 0.1%).
      period_ = std::lcm(repetition_.cta_period, slots);
    }
    if (repetition_.alike_run > slots && slots > 0) {
      // Runs of alike CTAs longer than a wave: waves by kind, in place of periods, which would
      // be whole runs and waves (sim/engine/steady_state.hpp).
      wave_ctas_ = slots;
      period_ = 0;
    }
    if (slots >= (std::int64_t{1} << Event::kSlotBits)) {
      throw ConfigError(
          fmt::format("kernel '{}': {} resident CTAs, more than the engine tracks ({})", spec_.name,
                      slots, std::int64_t{1} << Event::kSlotBits));
    }
    states_.resize(static_cast<std::size_t>(slots));
    // First wave: breadth-first over SMs (CTA i on SM i mod #SMs).
    for (std::int64_t s = 0; s < slots; ++s) {
      events_.push(start_cta(static_cast<std::uint32_t>(s), next_cta_++,
                             static_cast<int>(s % rates_.sm_count), 0.0));
    }
    double last_finish = 0.0;
    std::int64_t finished = 0;  // CTAs simulated to their end, for run_control's progress
    const std::int64_t extrapolated_before = stats_->ctas_extrapolated;
    while (!events_.empty()) {
      const Event ev = events_.top();
      const double now = ev.t();
      CtaState& st = states_[ev.slot()];
      run_stage(st, now);
      next_part(st);
      if (st.pc < st.ops.size()) {
        events_.replace_top({next_stage_time(st, now), issue(), ev.slot()});
      } else {
        last_finish = std::max(last_finish, st.end);
        if (++finished % slots == 0) {
          run_control::wave_done(spec_.name,
                                 finished + stats_->ctas_extrapolated - extrapolated_before, ctas_);
        }
        --resident_;
        --resident_on_sm_[static_cast<std::size_t>(st.sm)];
        st.cta = -1;
        if (period_ > 0 && next_cta_ < ctas_ && next_cta_ % period_ == 0) {
          end_of_period(st.end);
        }
        if (wave_ctas_ > 0 && next_cta_ < ctas_ && next_cta_ % wave_ctas_ == 0) {
          start_of_wave(st.end);
        }
        if (next_cta_ < ctas_) {
          events_.replace_top(start_cta(ev.slot(), next_cta_++, st.sm, st.end));
        } else {
          events_.pop();
        }
      }
      if (repetition_.part_period > 0 && ++window_events_ >= window_length_) end_of_window(now);
    }
    stats_->ctas_simulated += next_cta_ - stats_->ctas_extrapolated;
    return last_finish + skipped_s_ + rates_.launch_s;
  }

 private:
  // The next event's issue number.
  std::uint64_t issue() {
    if (seq_ == Event::kMaxIssue) [[unlikely]] {
      throw InternalError(
          fmt::format("kernel '{}': more than {} engine events", spec_.name, Event::kMaxIssue));
    }
    return seq_++;
  }

  // Steady-state extrapolation (sim/engine/steady_state.hpp), CTAs: at the dispatch of every
  // period's first CTA (at `t`), a snapshot; once periods repeat, whole periods are left out of the
  // grid, keeping two and the final drain to simulate.
  void end_of_period(double t) {
    // With the L2 on, a period must move kTurnover L2 sizes through DRAM before it is compared:
    // a shorter one's DRAM writes are the few write-backs its loads happened to evict (+-6% of a
    // 16-CTA period's on 8 SMs), and periods that agreed by chance left out CTAs with O's
    // write-backs off by more than 0.5% (tests/steady_state_test.cpp, whole periods).
    const std::uint64_t dram = counters_->hbm.read_total() + counters_->hbm.write_total();
    const bool too_short =
        l2_ != nullptr && !periods_.empty() && dram - period_dram_ < kTurnover * l2_bytes_;
    period_dram_ = dram;
    periods_.push(t + skipped_s_, *counters_);
    if (too_short || !periods_.steady()) {
      // Periods of a wave or two may not agree even in a steady state (the write-backs above;
      // dispatch times jitter by 0.15% with the L2 off). Longer periods average them out: a
      // period too short, or after kWindows comparisons that failed, doubles (still whole
      // periods of heads and whole waves) while the rest of the grid has room for the doubled
      // one: kWindows + 1 snapshots, one period left out, two after.
      const bool failed = too_short || (periods_.full() && ++unsteady_periods_ >= detail::kWindows);
      if (failed && 2 * period_ * (detail::kWindows + 4) <= ctas_ - next_cta_) {
        period_ *= 2;
        periods_.clear();
        unsteady_periods_ = 0;
      }
      if (too_short) periods_.clear();  // not comparable to longer ones
      return;
    }
    const std::int64_t n = (ctas_ - next_cta_) / period_ - 2;
    if (n < 1) return;
    // The CTAs after the gap are the grid's last ones, so that the L2 holds at the kernel's end
    // what it would have held for the next kernel.
    periods_.add_counters_for(n, *counters_);
    const double dt = periods_.time_for(n);
    skipped_s_ += dt;
    stats_->time_extrapolated_s += dt;
    stats_->ctas_extrapolated += n * period_;
    next_cta_ += n * period_;
    periods_.clear();
    unsteady_periods_ = 0;
  }

  // Steady-state extrapolation, waves: at the dispatch of a wave's first CTA (at `t`), closes
  // the previous wave's record of its kind, leaves out the waves ahead whose kinds repeat (short
  // of the grid's last two full waves and its partial one), and opens the next wave's record.
  void start_of_wave(double t) {
    const std::uint64_t dram = counters_->hbm.read_total() + counters_->hbm.write_total();
    // The second wave is not recorded either: its time and counters hold what was left of the
    // first when it began, and the first wave, started at once on idle SMs, ends otherwise than
    // the later ones (flash2 B=1 H=64 N=65536 d=64, L2 off: K/V reads 0.03% short, 1e-5 of
    // them in all, where it was).
    if (open_wave_ >= 2 * wave_ctas_) {
      const std::int64_t kind = kind_of(open_wave_);
      const std::array<std::int64_t, 2> records = {kind, kAnyStraddle};
      for (std::size_t i = 0; i < (kind == kInner ? 1 : 2); ++i) {
        const std::int64_t record = records[i];
        // With the L2 on, only a wave that turned it over: else what it left (K/V that fits in
        // the L2) is what the next one hits, and a left-out stretch would leave other data behind.
        if (l2_ != nullptr && dram - open_dram_ < kTurnover * l2_bytes_) {
          kinds_[record].clear();
        } else {
          kinds_[record].add(t + skipped_s_ - open_t_, *counters_, open_counters_);
        }
      }
    }
    std::map<std::int64_t, std::int64_t> left_out;  // record -> waves
    std::int64_t k = next_cta_;
    for (; k + 3 * wave_ctas_ <= ctas_; k += wave_ctas_) {
      const std::int64_t record = steady_record(kind_of(k));
      if (record == kNone) break;
      ++left_out[record];
    }
    if (k > next_cta_) {
      double dt = 0.0;
      for (const auto& [record, waves] : left_out) {
        dt += kinds_[record].time_for(waves);
        kinds_[record].add_counters_for(waves, *counters_);
      }
      skipped_s_ += dt;
      stats_->time_extrapolated_s += dt;
      stats_->ctas_extrapolated += k - next_cta_;
      next_cta_ = k;
    }
    open_wave_ = next_cta_;
    open_t_ = t + skipped_s_;
    open_counters_ = *counters_;
    open_dram_ = counters_->hbm.read_total() + counters_->hbm.write_total();
  }

  // Kinds of waves: inside one run of alike CTAs, or straddling two at an offset (>= 0); the
  // records also hold every straddling wave together (kAnyStraddle).
  static constexpr std::int64_t kInner = -1, kAnyStraddle = -2, kNone = -3;

  // A wave's kind: kInner, or where it straddles (its first CTA modulo the run).
  std::int64_t kind_of(std::int64_t first) const {
    const std::int64_t run = repetition_.alike_run;
    return first / run == (first + wave_ctas_ - 1) / run ? kInner : first % run;
  }

  // The record whose waves stand for those of `kind`: its own once its last waves agree, or for
  // a straddling wave all straddling waves once the last ones, at other offsets, agree (where
  // the split between the two runs changes nothing, as in a grid of alike CTAs streaming their
  // runs' K/V in lockstep, a head's straddling waves cost one kind, not one per offset); kNone.
  std::int64_t steady_record(std::int64_t kind) const {
    const auto own = kinds_.find(kind);
    if (own != kinds_.end() && own->second.steady()) return kind;
    if (kind == kInner) return kNone;
    const auto any = kinds_.find(kAnyStraddle);
    return any != kinds_.end() && any->second.steady() ? kAnyStraddle : kNone;
  }

  // Steady-state extrapolation, steps: at the end of a window (`now`), a snapshot; when every
  // resident CTA advanced part_period parts in each of the last windows and they repeat, a cut.
  // With the L2 on, only CTAs in lockstep on equally shared SMs (sim/engine/steady_state.hpp says
  // why).
  void end_of_window(double now) {
    const auto q = static_cast<std::size_t>(repetition_.part_period);
    bool uniform = resident_ > 0;
    std::size_t lowest = ~std::size_t{0}, highest = 0;
    for (CtaState& st : states_) {
      if (st.cta < 0) continue;
      uniform = uniform && st.cta == st.window_cta && st.part == st.window_part + q &&
                st.window_part >= st.steady_first && st.part + 1 < st.skip_from &&
                st.part + 1 < st.steady_last;
      st.window_cta = st.cta;
      st.window_part = st.part;
      lowest = std::min(lowest, st.part);
      highest = std::max(highest, st.part);
    }
    if (l2_ != nullptr && uniform) {
      uniform = highest - lowest <= kLockstepParts * q && equally_shared() &&
                counters_->l2.write_total() == wave_.l2_written &&
                counters_->hbm.read_total() - wave_.hbm_read >= kTurnover * l2_bytes_;
    }
    window_events_ = 0;
    window_length_ = static_cast<std::int64_t>(resident_) * repetition_.part_period;
    if (!uniform) windows_.clear();
    windows_.push(now + skipped_s_, *counters_);
    if (uniform && windows_.steady()) cut_windows(now);
  }

  // How far apart (in part periods) resident CTAs may be and still count as in lockstep: a wave
  // dispatched as a wave that straddled two heads finishes starts two parts apart (its two heads'
  // CTAs finish a part apart), and stays so; every CTA advancing exactly a period in each window
  // keeps the spread from growing (sim/engine/steady_state.hpp, condition 1).
  static constexpr std::size_t kLockstepParts = 2;

  // DRAM bytes fetched since the latest CTA start, in L2 sizes, before steps are left out with
  // the L2 on (sim/engine/steady_state.hpp).
  static constexpr std::uint64_t kTurnover = 2;

  // Whether every SM that holds resident CTAs holds as many as every other.
  bool equally_shared() const {
    int shared = 0;
    for (const int n : resident_on_sm_) {
      if (n == 0) continue;
      if (shared != 0 && n != shared) return false;
      shared = n;
    }
    return true;
  }

  // Leaves m windows out of the time line: each resident CTA m x part_period parts at the end of
  // its steady range, keeping at least one window of steady parts after the cut.
  void cut_windows(double now) {
    const auto q = static_cast<std::size_t>(repetition_.part_period);
    std::size_t m = ~std::size_t{0};
    for (const CtaState& st : states_) {
      if (st.cta < 0) continue;
      const std::size_t last = std::min(st.skip_from, st.steady_last);
      const std::size_t kept = st.part + 1 + q;
      if (last < kept + q) return;
      m = std::min(m, (last - kept) / q);
    }
    windows_.add_counters_for(static_cast<std::int64_t>(m), *counters_);
    const double dt = windows_.time_for(static_cast<std::int64_t>(m));
    skipped_s_ += dt;
    stats_->time_extrapolated_s += dt;
    for (CtaState& st : states_) {
      if (st.cta < 0) continue;
      st.skip_from = std::min(st.skip_from, st.steady_last) - m * q;
      stats_->parts_extrapolated += static_cast<std::int64_t>(m * q);
    }
    windows_.clear();
    windows_.push(now + skipped_s_, *counters_);
  }

  // Places CTA `cta` in `slot` on `sm` at time `t`; returns its first stage's event.
  Event start_cta(std::uint32_t slot, std::int64_t cta, int sm, double t) {
    CtaState& st = states_[slot];
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
    ++stats_->parts_simulated;
    st.more_parts = schedule_.emit_cta_part(kernel_index_, cta, 0, st.ops);
    st.pc = 0;
    next_part(st);
    st.ring = 0;
    st.compute_end.assign(static_cast<std::size_t>(std::max(1, spec_.pipeline_stages)), t);
    st.compute_free = t;
    st.end = t;
    ++resident_;
    ++resident_on_sm_[static_cast<std::size_t>(sm)];
    wave_ = {counters_->hbm.read_total(), counters_->l2.write_total()};
    return {t, issue(), slot};
  }

  // Once a CTA's operations are used up, emits its next part, skipping empty ones.
  void next_part(CtaState& st) {
    while (st.pc == st.ops.size() && st.more_parts) {
      st.ops.clear();
      st.pc = 0;
      if (++st.part == st.skip_from) st.part = st.steady_last;  // past the parts a cut left out
      ++stats_->parts_simulated;
      st.more_parts = schedule_.emit_cta_part(kernel_index_, st.cta, st.part, st.ops);
    }
  }

  double next_stage_time(const CtaState& st, double now) const {
    // The next stage's buffer is the one the stage `pipeline_stages` back computed from.
    return std::max(now, st.compute_end[st.ring]);
  }

  // Moves a tile between HBM/L2 and the chip; returns {requested, missed + written back} bytes.
  struct Traffic {
    double requested = 0, dram = 0;
    bool missed = false;
  };

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
          l2_->read(runs_, op.tile.tensor, sm, counters_->hbm.write_bytes);
      counters_->l2.read_bytes[ti] += r.requested_bytes;
      counters_->hbm.read_bytes[ti] += r.miss_bytes;
      tr.requested += static_cast<double>(r.requested_bytes);
      tr.dram += static_cast<double>(r.miss_bytes);
      tr.missed = tr.missed || r.miss_bytes > 0;
    } else {
      counters_->hbm.read_bytes[ti] += exact;
      tr.requested += static_cast<double>(exact);
      tr.dram += static_cast<double>(exact);
      tr.missed = true;
    }
    if (op.on_chip == OnChip::smem) counters_->smem_write_bytes += exact;
  }

  void store(const TileOp& op, int sm, Traffic& tr) {
    const std::size_t ti = index_of(op.tile.tensor);
    const std::uint64_t exact = gather_runs(op.tile);
    if (l2_ != nullptr) {
      const std::uint64_t bytes = l2_->write(runs_, op.tile.tensor, sm, counters_->hbm.write_bytes);
      counters_->l2.write_bytes[ti] += bytes;
      tr.requested += static_cast<double>(bytes);
    } else {
      counters_->hbm.write_bytes[ti] += exact;
      tr.requested += static_cast<double>(exact);
      tr.dram += static_cast<double>(exact);
    }
    if (op.on_chip == OnChip::smem) counters_->smem_read_bytes += exact;
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
            l2_->read(a, run.len, op.tile.tensor, sm, counters_->hbm.write_bytes);
        counters_->l2.read_bytes[ti] += r.requested_bytes;
        counters_->hbm.read_bytes[ti] += r.miss_bytes;
        tr.dram += static_cast<double>(r.miss_bytes);
        const std::uint64_t bytes =
            l2_->write(a, run.len, op.tile.tensor, sm, counters_->hbm.write_bytes);
        counters_->l2.write_bytes[ti] += bytes;
        tr.requested += static_cast<double>(bytes);
      });
    });
    if (l2_ == nullptr) {
      counters_->hbm.read_bytes[ti] += exact;
      counters_->hbm.write_bytes[ti] += exact;
      tr.requested += static_cast<double>(exact);
      tr.dram += 2.0 * static_cast<double>(exact);
    }
  }

  // Time at which `bytes` requested at `t` by a CTA on `sm` have all arrived.
  double transfer(double t, int sm, const Traffic& tr) {
    const double hbm_done = hbm_.reserve(t, tr.dram * rates_.per.hbm_byte);
    const double l2_done =
        l2_ != nullptr ? l2_server_.reserve(t, tr.requested * rates_.per.l2_byte) : t;
    const double port_done =
        ports_[static_cast<std::size_t>(sm)].reserve(t, tr.requested * rates_.per.port_byte);
    return std::max({hbm_done, l2_done, port_done});
  }

  // The work of a run of compute ops, as the SM's pipes see it.
  struct Work {
    double tensor_flops = 0, fp32_flops = 0, sfu_ops = 0, int32_ops = 0, smem_bytes = 0;
    double chain_s = 0;  // latency one warp waits through in sequence (shared-memory round trips)
    void add(const TileOp& op, const Rates& r) {
      tensor_flops += static_cast<double>(op.tensor_flops);
      fp32_flops += static_cast<double>(op.fp32_flops);
      sfu_ops += static_cast<double>(op.sfu_ops);
      int32_ops += static_cast<double>(op.int_ops);
      smem_bytes += static_cast<double>(op.smem_read_bytes);
      chain_s += static_cast<double>(op.smem_round_trips) * r.smem_latency_s +
                 static_cast<double>(op.chain_fp32_ops) * r.fp32_latency_s +
                 static_cast<double>(op.wgmma_waits) * r.wgmma_latency_s;
    }
  };

  // Time the CTA's warps take for `w` on an SM shared by `share` resident CTAs.
  double compute_time(const Work& w, double share) const {
    // The SM's pipes (tensor cores, FP32, SFU, INT32, shared memory) are shared by the CTAs
    // resident on it. One warp uses them one after another (an mma waits for its ldmatrix, the
    // softmax for the mma); other warps on the same scheduler fill the gaps. With w warps per
    // scheduler the pipes overlap that far: all of them at once as w grows (the busiest pipe
    // decides), none with one warp (their times add). A warp's own chain of dependent latencies
    // is filled the same way: fully exposed with one warp per scheduler.
    double pipes[] = {w.tensor_flops * rates_.per.tensor_flop, w.fp32_flops * rates_.per.fp32_flop,
                      w.sfu_ops * rates_.per.sfu_op, w.int32_ops * rates_.per.int32_op,
                      w.smem_bytes * rates_.per.smem_byte};
    if (spec_.overlap == PipeOverlap::async_tensor || spec_.overlap == PipeOverlap::lockstep) {
      // The tensor cores' operand reads are their own: one pipe, the busier of the two.
      pipes[0] = std::max(pipes[0], pipes[4]);
      pipes[4] = 0.0;
    }
    double busiest = 0.0, total = 0.0;
    for (double pipe : pipes) {
      busiest = std::max(busiest, pipe);
      total += pipe;
    }
    auto overlapped = [&](double warps) {
      const double per_scheduler = std::max(1.0, warps / kSchedulersPerSm);
      // (x / 1 is x: no division with one warp per scheduler, as FlashAttention's 4-warp CTAs.)
      return busiest + (per_scheduler == 1.0 ? total - busiest : (total - busiest) / per_scheduler);
    };
    // Warp-specialized kernels (consumer warpgroups issuing wgmma): a warpgroup's own iteration
    // is its share of the GEMMs at the full tensor rate (one warpgroup saturates the tensor
    // cores: cuda_validate/measurements/*/wgmma_2026-11-23), then its share of the FP32/SFU/INT32
    // work, issued by the one warp it has on each scheduler, then its warps' other dependent
    // latencies (TileOp::smem_round_trips, chain_fp32_ops: shuffle rounds). A warp alone on its
    // scheduler cannot hide one instruction's latency behind another warp's work: the softmax's
    // instructions (max, scale, exp2, sum, convert, rescale, one per element each, as the ops
    // count them) issue one per dependent FP32 latency, while a pipe slower than that (the SFU's
    // share) may take longer still. However the warpgroups share the tensor cores, no iteration
    // is shorter than this chain.
    const double groups = std::max(1, spec_.consumer_warpgroups);
    const double warp_instructions =
        (w.fp32_flops + w.sfu_ops + w.int32_ops) / (groups * kSchedulersPerSm * kWarpThreads);
    const double one_warp_sync = std::max(warp_instructions * rates_.fp32_latency_s,
                                          std::max({pipes[1], pipes[2], pipes[3]}) / groups);
    const double warpgroup_chain = pipes[0] / groups + one_warp_sync + w.chain_s;
    // The tensor pipe (operand reads included), then the FP32, SFU and INT32 work, which
    // overlap one another as the warps per scheduler allow.
    const double sync_total = pipes[1] + pipes[2] + pipes[3];
    const double sync_busiest = std::max({pipes[1], pipes[2], pipes[3]});
    auto lockstep = [&](double warps) {
      const double per_scheduler = std::max(1.0, warps / kSchedulersPerSm);
      return pipes[0] + sync_busiest + (sync_total - sync_busiest) / per_scheduler;
    };
    if (spec_.overlap == PipeOverlap::lockstep) {
      return std::max(share * lockstep(share * warps_per_cta_),
                      lockstep(warps_per_cta_) + w.chain_s);
    }
    if (spec_.overlap == PipeOverlap::pingpong) {
      // wgmma runs asynchronously and reads its operands from shared memory as it goes: the
      // tensor cores and the shared-memory pipe are the asynchronous unit. The FP32, SFU and
      // INT32 work overlap one another as the warps per scheduler allow, as above. With W
      // consumer warpgroups taking turns, one's softmax runs under the others' GEMMs: the stage
      // takes the busier of the two sides, and at least one warpgroup's own chain (above).
      const double async = std::max(pipes[0], pipes[4]);
      auto pingpong = [&](double warps) {
        const double per_scheduler = std::max(1.0, warps / kSchedulersPerSm);
        const double sync = sync_busiest + (sync_total - sync_busiest) / per_scheduler;
        return std::max({async, sync, warpgroup_chain});
      };
      return std::max(share * pingpong(share * warps_per_cta_), pingpong(warps_per_cta_));
    }
    if (spec_.consumer_warpgroups == 1 && spec_.producer_warps == 0 &&
        spec_.tensor_instruction == TensorInstruction::wgmma) {
      // CTAs of one warpgroup issuing wgmma side by side on an SM: nothing orders one CTA's
      // softmax against another's GEMMs, and the softmax does not run under them. Measured by
      // cuda_validate/microbench/coresident.cu (the wg1 forward's compute loop with W = 1..4
      // CTAs per SM, no memory traffic): with 2-4 CTAs a step took 0.79-0.99 (median 0.90) of
      // the sum of the tensor-only loop's time and the softmax-only loop's at the same W, where
      // hiding each pipe under the others would give 0.56-0.76 of it, alike on an H100 and an
      // H200 (cuda_validate/measurements/*/coresident_2026-11-27). So the SM's tensor
      // work and its FP32/SFU/INT32 work add, as under lockstep, and no step is shorter than the
      // warpgroup's own chain. Warpgroups of one warp-specialized CTA (cuDNN's, FlashAttention-3's)
      // are ordered by their kernel and keep the rule below: cuDNN's Hopper forward overlaps
      // them as it says (its validated set, accuracy_levels_cudnn.json).
      return std::max(share * lockstep(share * warps_per_cta_), warpgroup_chain);
    }
    if (spec_.consumer_warpgroups > 0) {
      // Cooperative warpgroups issuing mma.sync: the SM's pipes as the warps per scheduler
      // overlap them, and at least one warpgroup's own chain.
      return std::max(share * overlapped(share * warps_per_cta_), warpgroup_chain);
    }
    // Its share of the SM's pipes, and at least its own critical path: its work with only its
    // own warps to overlap it, plus the dependent latencies of its warps.
    return std::max(share * overlapped(share * warps_per_cta_),
                    overlapped(warps_per_cta_) + w.chain_s);
  }

  // Runs one stage: the loads the pipeline prefetches, then the computes and stores that use
  // them, with any in-step loads (TileOp::in_step) among the computes.
  void run_stage(CtaState& st, double t) {
    Traffic loads, stores, in_step;
    Work before, after;  // compute before / from the first in-step load on
    bool after_in_step = false;
    const std::uint64_t written_back_before = l2_ != nullptr ? l2_->written_back_bytes() : 0;
    const std::uint64_t smem_before = counters_->smem_write_bytes + counters_->smem_read_bytes;
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
    before.smem_bytes +=
        static_cast<double>(counters_->smem_write_bytes + counters_->smem_read_bytes - smem_before);
    const double compute_smem_read =
        before.smem_bytes + after.smem_bytes -
        static_cast<double>(counters_->smem_write_bytes + counters_->smem_read_bytes - smem_before);
    for (const Work* w : {&before, &after}) {
      counters_->tensor_flops += static_cast<std::uint64_t>(w->tensor_flops);
      counters_->fp32_flops += static_cast<std::uint64_t>(w->fp32_flops);
      counters_->sfu_ops += static_cast<std::uint64_t>(w->sfu_ops);
      counters_->int32_ops += static_cast<std::uint64_t>(w->int32_ops);
    }
    counters_->smem_read_bytes += static_cast<std::uint64_t>(compute_smem_read);

    double copy_end = t;
    if (loads.requested > 0) copy_end = transfer(t, st.sm, loads) + latency_of(loads);
    const double share = resident_on_sm_[static_cast<std::size_t>(st.sm)];
    const double compute_start = std::max(st.compute_free, copy_end);
    double compute_end = compute_start + compute_time(before, share);
    if (after_in_step) {
      // Issued when the step starts; bandwidth is reserved now, in event order.
      const double arrival =
          std::max(transfer(t, st.sm, in_step), compute_start) + latency_of(in_step);
      compute_end = std::max(compute_end, arrival) + compute_time(after, share);
    }
    st.compute_free = compute_end;
    st.compute_end[st.ring] = compute_end;
    double end = compute_end;
    if (stores.requested > 0) {
      // Stores drain after the compute; their bandwidth is reserved now, in event order.
      const double drained = transfer(t, st.sm, stores);
      end = std::max(compute_end + stores.requested * rates_.per.port_byte, drained);
    }
    st.end = std::max(st.end, end);
    if (++st.ring == st.compute_end.size()) st.ring = 0;
  }

  void observe(const CtaState& st, const TileOp& op) const {
    if (observer_ != nullptr) observer_->on_op(kernel_index_, st.cta, st.sm, op, *counters_);
  }

  double latency_of(const Traffic& tr) const {
    return (tr.missed || l2_ == nullptr) ? rates_.hbm_latency_s : rates_.l2_latency_s;
  }

  const Schedule& schedule_;
  std::size_t kernel_index_;
  const KernelSpec& spec_;
  const AddressMap& addresses_;
  L2System* l2_;
  Rates rates_;
  int ctas_per_sm_;
  double warps_per_cta_;
  Counters* counters_ = nullptr;
  Server hbm_, l2_server_;
  std::vector<Server> ports_;
  std::vector<int> resident_on_sm_;
  int resident_ = 0;
  std::vector<CtaState> states_;
  EventQueue events_;
  std::uint64_t seq_ = 0;  // events issued
  std::int64_t next_cta_ = 0;
  std::int64_t ctas_ = 0;  // CTAs in the grid
  // Runs of the tile being moved: sums of per-run bytes in doubles are exact (integers far
  // below 2^53), so sending a tile's runs to the L2 together counts what run-by-run did.
  std::vector<L2System::Run> runs_;
  OpObserver* observer_;
  // Steady-state extrapolation (sim/engine/steady_state.hpp).
  Repetition repetition_;
  std::int64_t period_ = 0;        // CTAs per period (0: none)
  int unsteady_periods_ = 0;       // periods compared and found unsteady since the period doubled
  std::uint64_t period_dram_ = 0;  // DRAM bytes (read + written) at the latest period snapshot
  detail::RepeatDetector periods_, windows_;
  // Waves by kind (0: not used): CTAs a wave, the kinds' records, and the open wave's first CTA
  // (-1: none yet), time, counters and DRAM bytes at its dispatch.
  std::int64_t wave_ctas_ = 0;
  std::map<std::int64_t, detail::WaveRecord> kinds_;
  std::int64_t open_wave_ = -1;
  double open_t_ = 0.0;
  Counters open_counters_{};
  std::uint64_t open_dram_ = 0;
  std::int64_t window_events_ = 0, window_length_ = 0;
  // DRAM bytes read and L2 bytes written up to the latest CTA start.
  struct {
    std::uint64_t hbm_read = 0, l2_written = 0;
  } wave_;
  std::uint64_t l2_bytes_;  // the L2's capacity
  double skipped_s_ = 0.0;  // time of the windows and periods left out
  Extrapolation* stats_ = nullptr;
};

}  // namespace

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

EngineResult run_schedule(const HardwareProfile& profile, const Schedule& schedule,
                          const EngineOptions& options) {
  const double clock_mhz =
      options.sm_clock_mhz > 0 ? options.sm_clock_mhz : profile.sm.boost_clock_mhz.value;
  const AddressMap addresses(schedule.tensors());
  std::optional<L2System> l2;
  if (options.l2_enabled) {
    l2.emplace(profile.l2.size_bytes.value, profile.l2.sector_bytes.value,
               profile.l2.partitions.value, profile.l2.max_dirty_fraction.value);
  }

  EngineResult result;
  const std::vector<KernelSpec> specs = schedule.kernels();
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
    const double slots = static_cast<double>(profile.sm.count.value) * kr.occupancy.ctas_per_sm;
    kr.waves = static_cast<double>(spec.grid.count()) / slots;
    kr.idle_sm_fraction = 1.0 - static_cast<double>(std::min<std::int64_t>(
                                    spec.grid.count(), profile.sm.count.value)) /
                                    profile.sm.count.value;
    KernelRun run(profile, schedule, k, spec, kr.occupancy, addresses, l2 ? &*l2 : nullptr,
                  clock_mhz, options.observer, !options.exact && options.observer == nullptr);
    kr.time_s = run.run(kr.counters, kr.extrapolation);
    kr.counters.l2_dirty_at_end_bytes = l2 ? l2->dirty_bytes() : 0;
    kr.bound = classify_bound(profile, kr.counters, kr.time_s, clock_mhz, spec.mma_dtype,
                              spec.tensor_instruction);
    kr.achieved_hbm_gbps =
        static_cast<double>(kr.counters.hbm.read_total() + kr.counters.hbm.write_total()) /
        kr.time_s / 1e9;
    kr.achieved_l2_gbps =
        static_cast<double>(kr.counters.l2.read_total() + kr.counters.l2.write_total()) /
        kr.time_s / 1e9;
    result.total += kr.counters;
    result.extrapolation += kr.extrapolation;
    result.time_s += kr.time_s;
    result.kernels.push_back(std::move(kr));
  }
  return result;
}

}  // namespace iosim
