#include "sim/engine/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <utility>

#include "sim/base/errors.hpp"
#include "sim/base/memory_budget.hpp"
#include "sim/base/run_control.hpp"
#include "sim/engine/cta_periods.hpp"
#include "sim/engine/event_queue.hpp"
#include "sim/engine/extrapolator.hpp"
#include "sim/engine/rates.hpp"
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

// The engine's time model of one kernel at one clock: the bandwidth servers, the SMs' pipes, and
// what a stage's work and traffic take on them. The event loop (KernelRun) and a timeline's replay
// (replay_timeline) time stages through it alike.
class StageTimer {
 public:
  // Moves a tile between HBM/L2 and the chip; returns {requested, missed + written back} bytes.
  struct Traffic {
    double requested = 0, dram = 0;
    bool missed = false;
  };

  // The work of a run of compute ops, as the SM's pipes see it.
  struct Work {
    double tensor_flops = 0, fp32_flops = 0, sfu_ops = 0, int32_ops = 0, smem_bytes = 0;
    double chain_s = 0;  // latency one warp waits through in sequence (shared-memory round trips)
    // The dependent latencies chain_s sums, counted: what a timeline records of them.
    std::int64_t round_trips = 0, chain_fp32_ops = 0, wgmma_waits = 0, serialized_wgmmas = 0;
    void add(const TileOp& op, const Rates& r) {
      tensor_flops += static_cast<double>(op.tensor_flops);
      fp32_flops += static_cast<double>(op.fp32_flops);
      sfu_ops += static_cast<double>(op.sfu_ops);
      int32_ops += static_cast<double>(op.int_ops);
      smem_bytes += static_cast<double>(op.smem_read_bytes);
      chain_s += static_cast<double>(op.smem_round_trips) * r.smem_latency_s +
                 static_cast<double>(op.chain_fp32_ops) * r.fp32_latency_s +
                 static_cast<double>(op.wgmma_waits) * r.wgmma_latency_s +
                 static_cast<double>(op.serialized_wgmmas) * r.wgmma_serial_gap_s;
      round_trips += op.smem_round_trips;
      chain_fp32_ops += op.chain_fp32_ops;
      wgmma_waits += op.wgmma_waits;
      serialized_wgmmas += op.serialized_wgmmas;
    }
    // chain_s from the counts at rates `r` (a replay's; it can differ from the sum add() makes
    // op by op in the last bits).
    void time_chain(const Rates& r) {
      chain_s = static_cast<double>(round_trips) * r.smem_latency_s +
                static_cast<double>(chain_fp32_ops) * r.fp32_latency_s +
                static_cast<double>(wgmma_waits) * r.wgmma_latency_s +
                static_cast<double>(serialized_wgmmas) * r.wgmma_serial_gap_s;
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
    if (spec_.consumer_warpgroups >= 1 && spec_.producer_warps == 0 &&
        spec_.tensor_instruction == TensorInstruction::wgmma) {
      // Warpgroups issuing wgmma side by side on an SM, with no producer to order them: CTAs of
      // one warpgroup, or the uniform warpgroups of one CTA (each its own 64-row groups, as
      // Triton's 8 warps on a 128-row tile), which nothing orders either. Nothing orders one's
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

  // What one stage of a CTA moved and computed: everything its timing depends on.
  struct Stage {
    Traffic loads, stores, in_step;
    Work before, after;  // compute before / from the first in-step load on
    bool after_in_step = false;
  };

  StageTimer(const HardwareProfile& profile, const KernelSpec& spec, double clock_mhz, bool l2_on)
      : spec_(spec),
        rates_(profile, clock_mhz, spec.mma_dtype, spec.tensor_instruction),
        warps_per_cta_((spec.threads_per_cta + 31) / 32 - spec.producer_warps),
        l2_on_(l2_on),
        ports_(static_cast<std::size_t>(rates_.sm_count)) {}

  const Rates& rates() const { return rates_; }

  // Times a stage of the CTA in `st` (its traffic, and its work before and after any in-step
  // loads), issued at `t` on an SM shared by `share` CTAs.
  void time(CtaState& st, double t, const Traffic& loads, const Traffic& in_step,
            const Traffic& stores, const Work& before, const Work& after, bool after_in_step,
            double share) {
    double copy_end = t;
    if (loads.requested > 0) copy_end = transfer(t, st.sm, loads) + latency_of(loads);
    const double compute_start = std::max(st.compute_free, copy_end);
    double compute_end = compute_start + cached_compute_time(before, share);
    if (after_in_step) {
      // Issued when the step starts; bandwidth is reserved now, in event order.
      const double arrival =
          std::max(transfer(t, st.sm, in_step), compute_start) + latency_of(in_step);
      compute_end = std::max(compute_end, arrival) + cached_compute_time(after, share);
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

  double next_stage_time(const CtaState& st, double now) const {
    // The next stage's buffer is the one the stage `pipeline_stages` back computed from.
    return std::max(now, st.compute_end[st.ring]);
  }

 private:
  // compute_time(w, share), remembered for the last work and share it was asked: a kernel's
  // CTAs mostly run stages of the same work on equally shared SMs (every step of a K/V loop),
  // and compute_time() is a pure function of them, so the answer is the one it would compute.
  // Compared bit for bit (Work is doubles and 64-bit integers, no padding).
  double cached_compute_time(const Work& w, double share) {
    static_assert(sizeof(Work) == 10 * sizeof(std::uint64_t));
    std::array<std::uint64_t, 10> bits;
    std::memcpy(bits.data(), &w, sizeof(Work));
    std::uint64_t differ = std::bit_cast<std::uint64_t>(share) ^ memo_share_;
    for (std::size_t i = 0; i < bits.size(); ++i) differ |= bits[i] ^ memo_work_[i];
    if (differ != 0 || !memo_valid_) {
      memo_time_ = compute_time(w, share);
      memo_work_ = bits;
      memo_share_ = std::bit_cast<std::uint64_t>(share);
      memo_valid_ = true;
    }
    return memo_time_;
  }

  // Time at which `bytes` requested at `t` by a CTA on `sm` have all arrived.
  double transfer(double t, int sm, const Traffic& tr) {
    const double hbm_done = hbm_.reserve(t, tr.dram * rates_.per.hbm_byte);
    const double l2_done = l2_on_ ? l2_server_.reserve(t, tr.requested * rates_.per.l2_byte) : t;
    const double port_done =
        ports_[static_cast<std::size_t>(sm)].reserve(t, tr.requested * rates_.per.port_byte);
    return std::max({hbm_done, l2_done, port_done});
  }

  double latency_of(const Traffic& tr) const {
    return (tr.missed || !l2_on_) ? rates_.hbm_latency_s : rates_.l2_latency_s;
  }

  const KernelSpec& spec_;
  Rates rates_;
  double warps_per_cta_;
  bool l2_on_;
  Server hbm_, l2_server_;
  std::vector<Server> ports_;
  // cached_compute_time()'s last question and answer.
  std::array<std::uint64_t, 10> memo_work_{};
  std::uint64_t memo_share_ = 0;
  double memo_time_ = 0.0;
  bool memo_valid_ = false;
};

// Records a kernel's stages into its Timeline::Kernel (sim/engine/timeline.hpp) as the event loop
// times them: each resident CTA's stages in its slot, moved to the kernel's record when it ends,
// so that the record is by CTA whatever order the CTAs ran in.
class StageRecorder {
 public:
  StageRecorder(Timeline& timeline, Timeline::Kernel& kernel, std::int64_t ctas, std::size_t slots)
      : timeline_(timeline), kernel_(kernel), slots_(slots) {
    kernel_.ctas.resize(static_cast<std::size_t>(ctas));
  }

  // (Not inlined: the event loop that calls it runs unrecorded far more often.)
  [[gnu::noinline]] void stage(std::uint32_t slot, const StageTimer::Stage& s) {
    if (!timeline_.usable) return;
    if (++timeline_.stages > Timeline::kMaxStages) {  // too long to keep: simulate again instead
      timeline_.usable = false;
      slots_.clear();
      slots_.shrink_to_fit();
      return;
    }
    const StageTimer::Work& b = s.before;
    const StageTimer::Work& a = s.after;
    auto d = [](std::int64_t n) { return static_cast<double>(n); };
    const Timeline::Shape shape = {b.tensor_flops,
                                   b.fp32_flops,
                                   b.sfu_ops,
                                   b.int32_ops,
                                   b.smem_bytes,
                                   d(b.round_trips),
                                   d(b.chain_fp32_ops),
                                   d(b.wgmma_waits),
                                   d(b.serialized_wgmmas),
                                   a.tensor_flops,
                                   a.fp32_flops,
                                   a.sfu_ops,
                                   a.int32_ops,
                                   a.smem_bytes,
                                   d(a.round_trips),
                                   d(a.chain_fp32_ops),
                                   d(a.wgmma_waits),
                                   d(a.serialized_wgmmas),
                                   s.loads.requested,
                                   s.in_step.requested,
                                   s.stores.requested,
                                   s.after_in_step ? 1.0 : 0.0};
    Slot& x = slots_[slot];
    // A CTA's stages mostly repeat the one before (every step of a K/V loop): one compare.
    if (x.last_id == kNone || !same_bits(x.last, shape)) {
      const auto [it, added] = ids_.try_emplace(shape, static_cast<std::uint32_t>(ids_.size()));
      if (added) kernel_.shapes.push_back(shape);
      x.last = shape;
      x.last_id = it->second;
    }
    std::uint32_t code = x.last_id << Timeline::kFlagBits;
    if (s.loads.missed) code |= Timeline::kLoadsMissed;
    if (s.in_step.missed) code |= Timeline::kInStepMissed;
    if (s.loads.dram != 0) {
      code |= Timeline::kLoadsDram;
      x.dram.push_back(s.loads.dram);
    }
    if (s.in_step.dram != 0) {
      code |= Timeline::kInStepDram;
      x.dram.push_back(s.in_step.dram);
    }
    if (s.stores.dram != 0) {
      code |= Timeline::kStoresDram;
      x.dram.push_back(s.stores.dram);
    }
    x.stages.push_back(code);
  }

  [[gnu::noinline]] void cta_done(std::uint32_t slot, std::int64_t cta) {
    if (!timeline_.usable) return;
    Slot& x = slots_[slot];
    Timeline::Cta& c = kernel_.ctas[static_cast<std::size_t>(cta)];
    c.first_stage = kernel_.stages.size();
    c.first_dram = kernel_.dram.size();
    c.stage_count = static_cast<std::uint32_t>(x.stages.size());
    kernel_.stages.insert(kernel_.stages.end(), x.stages.begin(), x.stages.end());
    kernel_.dram.insert(kernel_.dram.end(), x.dram.begin(), x.dram.end());
    x.stages.clear();
    x.dram.clear();
  }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  // Whether two shapes are equal bit for bit, as memcmp says, inline and without branches (the
  // library's memcmp, called for every stage recorded, was 1.5% of a default flash2 run).
  static bool same_bits(const Timeline::Shape& a, const Timeline::Shape& b) {
    std::uint64_t differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      differ |= std::bit_cast<std::uint64_t>(a[i]) ^ std::bit_cast<std::uint64_t>(b[i]);
    }
    return differ == 0;
  }
  struct Slot {
    std::vector<std::uint32_t> stages;
    std::vector<double> dram;
    Timeline::Shape last{};
    std::uint32_t last_id = kNone;
  };
  struct ShapeHash {
    std::size_t operator()(const Timeline::Shape& shape) const {
      std::uint64_t h = 0;
      for (const double v : shape)
        h = (h ^ std::bit_cast<std::uint64_t>(v)) * 0x9e3779b97f4a7c15ULL;
      return static_cast<std::size_t>(h ^ (h >> 32));
    }
  };
  struct ShapeEqual {
    bool operator()(const Timeline::Shape& a, const Timeline::Shape& b) const {
      return std::memcmp(&a, &b, sizeof(a)) == 0;
    }
  };
  Timeline& timeline_;
  Timeline::Kernel& kernel_;
  std::vector<Slot> slots_;
  std::unordered_map<Timeline::Shape, std::uint32_t, ShapeHash, ShapeEqual> ids_;
};

// The timeline a kernel's run leaves (KernelResult's launch_s, tail_s and wave_end_s), from its
// CTAs' finishes in event order. The event loop and a timeline's replay record it alike, so that a
// run whose clock the power model chose by replay keeps its waves and tail (the run page draws
// them).
class WaveTimeline {
 public:
  WaveTimeline() = default;
  WaveTimeline(std::int64_t ctas, std::int64_t slots) : ctas_(ctas), slots_(slots) {}

  // After a CTA finished at `t` (time left out included), `done` CTAs of the grid have: the
  // whole waves (of `slots` CTAs) completed since the previous finish end at `t`, or, where CTAs
  // were left out as repetition in between, spread evenly from the previous finish to `t`.
  void finished(std::int64_t done, double t) {
    if (slots_ <= 0 || ctas_ / slots_ > KernelResult::kMaxWaveEnds) return;
    t = std::max(t, last_t_);
    for (std::int64_t b = slots_ * static_cast<std::int64_t>(wave_end_s_.size() + 1); b <= done;
         b += slots_) {
      wave_end_s_.push_back(last_t_ + (t - last_t_) * static_cast<double>(b - last_done_) /
                                          static_cast<double>(done - last_done_));
    }
    last_done_ = done;
    last_t_ = t;
  }
  // A CTA slot found no CTA left to start at `t`: the tail starts at the first such moment.
  void slot_idle(double t) {
    if (tail_start_ < 0) tail_start_ = t;
  }
  // The kernel's last CTA ended at `end` (launch not included): sets `kr`'s timeline fields.
  void close(double end, double launch_s, KernelResult& kr) {
    kr.launch_s = launch_s;
    kr.tail_s = tail_start_ >= 0 ? end - tail_start_ : 0.0;
    kr.wave_end_s = std::move(wave_end_s_);
    for (double& t : kr.wave_end_s) t += launch_s;
  }

 private:
  std::int64_t ctas_ = 0, slots_ = 0;
  std::vector<double> wave_end_s_;
  double tail_start_ = -1.0;  // -1: no slot idle yet
  std::int64_t last_done_ = 0;
  double last_t_ = 0.0;
};

// When a slot's next CTA starts, its last having ended at `end` (HardwareProfile::cta_dispatch,
// measured in cuda_validate/measurements/h200-sxm-141gb/cta_dispatch_2026-11-28/): after the
// slot's refill, unless the kernel is persistent (KernelSpec::persistent: its slots take their next
// tile without a CTA launch). Without the profile section a CTA starts the moment its slot frees.
double next_cta_start(const Rates& r, const KernelSpec& spec, double end) {
  return spec.persistent ? end : end + r.cta_refill_s;
}

class KernelRun {
 public:
  KernelRun(const HardwareProfile& profile, const Schedule& schedule, std::size_t kernel_index,
            const KernelSpec& spec, const Occupancy& occ, const AddressMap& addresses, L2System* l2,
            double clock_mhz, OpObserver* observer, bool extrapolate, StageRecorder* recorder)
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
        const std::int64_t done = ++finished + run_.stats->ctas_extrapolated - extrapolated_before;
        if (finished % slots == 0) run_control::wave_done(spec_.name, done, run_.ctas);
        waves_.finished(done, st.end + run_.skipped_s);
        if (recorder_ != nullptr) recorder_->cta_done(ev.slot(), st.cta);
        --run_.resident;
        --run_.resident_on_sm[static_cast<std::size_t>(st.sm)];
        st.cta = -1;
        if (run_.next_cta < run_.ctas) {
          for (const auto& x : extrapolators_) x->before_dispatch(st.end, run_);
          events_.replace_top(
              start_cta(ev.slot(), run_.next_cta++, st.sm, next_cta_start(rates_, spec_, st.end)));
        } else {
          waves_.slot_idle(st.end + run_.skipped_s);
          events_.pop();
        }
      }
      for (const auto& x : extrapolators_) x->after_event(now, run_);
    }
    run_.stats->ctas_simulated += run_.next_cta - run_.stats->ctas_extrapolated;
    const double end = last_finish + run_.skipped_s;
    waves_.close(end, rates_.launch_s, kr);
    return end + rates_.launch_s;
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
    StageTimer::Stage stage;
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
  OpObserver* observer_;
  StageRecorder* recorder_;  // null: no timeline is recorded
  // Steady-state extrapolation (sim/engine/steady_state.hpp): the kinds this kernel uses, and
  // the state of the run they see.
  Repetition repetition_;
  std::vector<std::unique_ptr<detail::Extrapolator>> extrapolators_;
  detail::KernelProgress run_;
  WaveTimeline waves_;  // the kernel's waves and tail, as its CTAs finish
};

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
      waves.finished(++finished, st.end);
      --resident_on_sm[static_cast<std::size_t>(st.sm)];
      st.cta = -1;
      if (next_cta < ctas) {
        events.replace_top(
            start(ev.slot(), next_cta++, st.sm, next_cta_start(rates, spec, st.end)));
      } else {
        waves.slot_idle(st.end);
        events.pop();
      }
    }
  }
  waves.close(last_finish, rates.launch_s, kr);
  kr.time_s = last_finish + rates.launch_s;
}

// A kernel's time-dependent results at `clock_mhz` from its time and counters.
void set_rates(const HardwareProfile& profile, KernelResult& kr, double clock_mhz) {
  kr.bound = classify_bound(profile, kr.counters, kr.time_s, clock_mhz, kr.spec.mma_dtype,
                            kr.spec.tensor_instruction);
  kr.achieved_hbm_gbps =
      static_cast<double>(kr.counters.hbm.read_total() + kr.counters.hbm.write_total()) /
      kr.time_s / 1e9;
  kr.achieved_l2_gbps =
      static_cast<double>(kr.counters.l2.read_total() + kr.counters.l2.write_total()) / kr.time_s /
      1e9;
  kr.achieved_tensor_tflops = static_cast<double>(kr.counters.tensor_flops) / kr.time_s / 1e12;
}

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
                          const EngineOptions& options, Timeline* record) {
  const double clock_mhz =
      options.sm_clock_mhz > 0 ? options.sm_clock_mhz : profile.sm.boost_clock_mhz.value;
  const AddressMap addresses(schedule.tensors());
  std::optional<memory_budget::Reservation> held;
  std::optional<L2System> l2;
  if (options.l2_enabled) {
    // The L2 model's arrays grow with the profile's L2 size over its sector size; a what-if L2
    // (--set l2.size_bytes=...) can ask for more than the machine has.
    held.emplace(L2System::memory_bytes(profile.l2.size_bytes.value, profile.l2.sector_bytes.value,
                                        profile.l2.partitions.value),
                 fmt::format("the L2 model of {} ({} bytes in {}-byte sectors)", profile.name,
                             profile.l2.size_bytes.value, profile.l2.sector_bytes.value),
                 "use a smaller l2.size_bytes or larger l2.sector_bytes, or raise --max-memory");
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
                  recorder ? &*recorder : nullptr);
    kr.time_s = run.run(kr);
    // A run that left work out measured what it left out at its own clock (steady_state.hpp).
    if (record != nullptr && kr.extrapolation.applied()) record->usable = false;
    kr.counters.l2_dirty_at_end_bytes = l2 ? l2->dirty_bytes() : 0;
    set_rates(profile, kr, clock_mhz);
    result.total += kr.counters;
    result.extrapolation += kr.extrapolation;
    result.time_s += kr.time_s;
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

EngineResult replay_timeline(const HardwareProfile& profile, const Timeline& timeline,
                             double clock_mhz) {
  if (!timeline.usable) throw InternalError("replay_timeline: the timeline is not usable");
  EngineResult result = timeline.recorded;
  result.time_s = 0.0;
  for (std::size_t k = 0; k < result.kernels.size(); ++k) {
    KernelResult& kr = result.kernels[k];
    replay_kernel(profile, timeline.kernels[k], clock_mhz, timeline.l2_on, kr);
    set_rates(profile, kr, clock_mhz);
    result.time_s += kr.time_s;
  }
  return result;
}

}  // namespace iosim
