#pragma once
// The engine's time model of one kernel at one clock (StageTimer): what a stage's work and traffic
// take on the bandwidth servers and the SMs' pipes, and when a slot's next CTA starts. The event
// loop (sim/engine/engine.cpp) and a timeline's replay (sim/engine/replay.cpp) time stages through
// it alike. Header-only: it is the loop's innermost code, inlined where it is called.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/engine/extrapolator.hpp"
#include "sim/engine/rates.hpp"
#include "sim/engine/time_attribution.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim::detail {

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

  // Time the CTA's warps take for `w` on an SM shared by `share` resident CTAs, by TimeRow.
  using Parts = std::array<double, kTimeRows>;

  // Time the CTA's warps take for `w` on an SM shared by `share` resident CTAs; `parts` gets
  // that time split among the rows (sim/engine/time_attribution.hpp): each term of the branch
  // that decides it to the pipe (or latency) it times, rescaled to sum to the time exactly.
  double compute_time(const Work& w, double share, Parts& parts) const {
    parts.fill(0.0);
    const double t = compute_time_of(w, share, parts);
    double sum = 0.0;
    for (double x : parts) sum += x;
    if (sum > 0.0) {
      for (double& x : parts) x *= t / sum;
    } else if (t > 0.0) {
      parts[static_cast<std::size_t>(TimeRow::latency)] = t;
    }
    return t;
  }

  double compute_time(const Work& w, double share) const {
    Parts parts{};
    return compute_time(w, share, parts);
  }

 private:
  double compute_time_of(const Work& w, double share, Parts& parts) const {
    // The SM's pipes (tensor cores, FP32, SFU, INT32, shared memory) are shared by the CTAs
    // resident on it. One warp uses them one after another (an mma waits for its ldmatrix, the
    // softmax for the mma); other warps on the same scheduler fill the gaps. With w warps per
    // scheduler the pipes overlap that far: all of them at once as w grows (the busiest pipe
    // decides), none with one warp (their times add). A warp's own chain of dependent latencies
    // is filled the same way: fully exposed with one warp per scheduler.
    double pipes[] = {w.tensor_flops * rates_.per.tensor_flop, w.fp32_flops * rates_.per.fp32_flop,
                      w.sfu_ops * rates_.per.sfu_op, w.int32_ops * rates_.per.int32_op,
                      w.smem_bytes * rates_.per.smem_byte};
    // The row each pipe's time is charged to.
    std::array<TimeRow, 5> row = {TimeRow::tensor, TimeRow::fp32_sfu, TimeRow::fp32_sfu,
                                  TimeRow::fp32_sfu, TimeRow::smem};
    if (spec_.overlap == PipeOverlap::async_tensor || spec_.overlap == PipeOverlap::lockstep) {
      // The tensor cores' operand reads are their own: one pipe, the busier of the two.
      if (pipes[4] > pipes[0]) row[0] = TimeRow::smem;
      pipes[0] = std::max(pipes[0], pipes[4]);
      pipes[4] = 0.0;
    }
    auto charge = [&](TimeRow r, double dt) { parts[static_cast<std::size_t>(r)] += dt; };
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
    // overlapped()'s terms: the busiest pipe whole, the others divided by the warps per scheduler.
    auto overlapped_parts = [&](double warps, double scale) {
      const double per_scheduler = std::max(1.0, warps / kSchedulersPerSm);
      const std::size_t b = static_cast<std::size_t>(std::max_element(pipes, pipes + 5) - pipes);
      for (std::size_t i = 0; i < 5; ++i) {
        charge(row[i], scale * (i == b ? pipes[i] : pipes[i] / per_scheduler));
      }
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
    // (The softmax's part, one_warp_sync, is FP32/SFU work however it is timed: issued one
    // dependent latency apart or at the pipes' rate.)
    auto warpgroup_chain_parts = [&](double scale) {
      charge(row[0], scale * pipes[0] / groups);
      charge(TimeRow::fp32_sfu, scale * one_warp_sync);
      charge(TimeRow::latency, scale * w.chain_s);
    };
    // The tensor pipe (operand reads included), then the FP32, SFU and INT32 work, which
    // overlap one another as the warps per scheduler allow.
    const double sync_total = pipes[1] + pipes[2] + pipes[3];
    const double sync_busiest = std::max({pipes[1], pipes[2], pipes[3]});
    auto lockstep = [&](double warps) {
      const double per_scheduler = std::max(1.0, warps / kSchedulersPerSm);
      return pipes[0] + sync_busiest + (sync_total - sync_busiest) / per_scheduler;
    };
    auto lockstep_parts = [&](double warps, double scale) {
      const double per_scheduler = std::max(1.0, warps / kSchedulersPerSm);
      charge(row[0], scale * pipes[0]);
      charge(TimeRow::fp32_sfu,
             scale * (sync_busiest + (sync_total - sync_busiest) / per_scheduler));
    };
    if (spec_.overlap == PipeOverlap::lockstep) {
      const double shared = share * lockstep(share * warps_per_cta_);
      const double own = lockstep(warps_per_cta_) + w.chain_s;
      if (shared >= own) {
        lockstep_parts(share * warps_per_cta_, share);
      } else {
        lockstep_parts(warps_per_cta_, 1.0);
        charge(TimeRow::latency, w.chain_s);
      }
      return std::max(shared, own);
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
      auto pingpong_parts = [&](double warps, double scale) {
        const double per_scheduler = std::max(1.0, warps / kSchedulersPerSm);
        const double sync = sync_busiest + (sync_total - sync_busiest) / per_scheduler;
        if (async >= sync && async >= warpgroup_chain) {
          charge(pipes[4] > pipes[0] ? TimeRow::smem : row[0], scale * async);
        } else if (sync >= warpgroup_chain) {
          charge(TimeRow::fp32_sfu, scale * sync);
        } else {
          warpgroup_chain_parts(scale);
        }
      };
      const double shared = share * pingpong(share * warps_per_cta_);
      const double own = pingpong(warps_per_cta_);
      if (shared >= own) {
        pingpong_parts(share * warps_per_cta_, share);
      } else {
        pingpong_parts(warps_per_cta_, 1.0);
      }
      return std::max(shared, own);
    }
    if (spec_.consumer_warpgroups >= 1 && spec_.producer_warps == 0 &&
        spec_.tensor_instruction == TensorInstruction::wgmma) {
      // Warpgroups issuing wgmma side by side on an SM, with no producer to order them: CTAs of
      // one warpgroup, or the uniform warpgroups of one CTA (each its own 64-row groups, as
      // Triton's 8 warps on a 128-row tile). cuda_validate/microbench/coresident.cu measured them
      // (the wg1 forward's compute loop with W = 1..4 CTAs per SM, no memory traffic;
      // cuda_validate/measurements/*/coresident_2026-11-27): per SM, a step takes
      // P + L / W, P the SM's pipes for one CTA's step and L the latency of a CTA's own chain
      // beyond them (fitted per tile on the clean rows within 5%; d = 64, 64 x 64: 894, 585, 498,
      // 479 cycles at W = 1..4). Each CTA's step is its own chain plus the pipe time of the
      // W - 1 others' steps, which its chain does not overlap: the latency is hidden once per
      // round of the W CTAs, not once per CTA. P: the busier of the tensor pipe and the FP32,
      // SFU and INT32 pipes together (the softmax-only loop saturates at their sum: 330 cycles
      // against 80 + 260, W = 3; the full loop runs the two sides under each other's CTAs). The
      // chain is the warpgroups' GEMMs, all of them (warpgroups of one CTA start a step
      // together: one's GEMM does not run under another's softmax), then one warpgroup's
      // softmax and its dependent latencies. (That chain is 1.2-1.4x the microbenchmark's loop
      // at W = 1, and the tile sweep's kernels at one CTA per SM take about as much beyond their
      // loop: cuda_validate/measurements/CALIBRATION.md, issue #46.)
      const double chain = pipes[0] + one_warp_sync + w.chain_s;
      const double round = std::max(pipes[0], sync_total);
      const double exposed = std::max(0.0, chain - round);
      if (pipes[0] >= sync_total) {
        charge(row[0], share * round);
      } else {
        charge(TimeRow::fp32_sfu, share * round);
      }
      if (exposed > 0.0) {
        const double softmax = std::min(exposed, one_warp_sync);
        charge(TimeRow::fp32_sfu, softmax);
        charge(TimeRow::latency, exposed - softmax);
      }
      return share * round + exposed;
    }
    if (spec_.consumer_warpgroups > 0) {
      // Cooperative warpgroups issuing mma.sync: the SM's pipes as the warps per scheduler
      // overlap them, and at least one warpgroup's own chain.
      const double shared = share * overlapped(share * warps_per_cta_);
      if (shared >= warpgroup_chain) {
        overlapped_parts(share * warps_per_cta_, share);
      } else {
        warpgroup_chain_parts(1.0);
      }
      return std::max(shared, warpgroup_chain);
    }
    // Its share of the SM's pipes, and at least its own critical path: its work with only its
    // own warps to overlap it, plus the dependent latencies of its warps.
    const double shared = share * overlapped(share * warps_per_cta_);
    const double own = overlapped(warps_per_cta_) + w.chain_s;
    if (shared >= own) {
      overlapped_parts(share * warps_per_cta_, share);
    } else {
      overlapped_parts(warps_per_cta_, 1.0);
      charge(TimeRow::latency, w.chain_s);
    }
    return std::max(shared, own);
  }

 public:
  /// The time up to which transfers already requested keep DRAM or the L2 busy.
  double servers_booked_until() const { return std::max(hbm_.busy_until, l2_server_.busy_until); }

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
  // loads), issued at `t` on an SM shared by `share` CTAs. Charges the slot the time from the
  // CTA's compute cursor (st.compute_free) to the stage's compute end (TimeAttribution): the wait
  // for each copy to the server that finished it last and then to its latency, the compute to
  // its rows; the stage's stores drain to the server that finished them (charged at the CTA's end,
  // cta_ended(), if they end it).
  void time(CtaState& st, double t, const Traffic& loads, const Traffic& in_step,
            const Traffic& stores, const Work& before, const Work& after, bool after_in_step,
            double share) {
    const double weight = weight_[static_cast<std::size_t>(st.sm)];
    double copy_end = t, copy_done = t;
    TimeRow copy_by = TimeRow::latency;
    if (loads.requested > 0) {
      copy_done = transfer(t, st.sm, loads, copy_by);
      copy_end = copy_done + latency_of(loads);
    }
    // The previous stage's compute, where this copy was in flight under it and ended after it:
    // hidden under the copy, charged to the copy's server.
    settle_pending(st, weight, copy_end > st.compute_free ? t : st.compute_free, copy_done,
                   copy_by);
    const double compute_start = std::max(st.compute_free, copy_end);
    charge_wait(weight, st.compute_free, copy_done, copy_by, copy_end);
    double compute_end = compute_start + cached_compute_time(before, share);
    st.pending = memo_parts_;
    st.pending_from = compute_start;
    if (after_in_step) {
      // Issued when the step starts; bandwidth is reserved now, in event order.
      TimeRow in_step_by = TimeRow::latency;
      const double delivered = std::max(transfer(t, st.sm, in_step, in_step_by), compute_start);
      const double arrival = delivered + latency_of(in_step);
      if (arrival > compute_end) {
        const double bandwidth = std::max(0.0, delivered - compute_end);
        st.pending[static_cast<std::size_t>(in_step_by)] += bandwidth;
        st.pending[static_cast<std::size_t>(TimeRow::latency)] +=
            arrival - std::max(delivered, compute_end);
      }
      compute_end = std::max(compute_end, arrival) + cached_compute_time(after, share);
      for (std::size_t i = 0; i < kTimeRows; ++i) st.pending[i] += memo_parts_[i];
    }
    st.compute_free = compute_end;
    st.compute_end[st.ring] = compute_end;
    double end = compute_end;
    TimeRow end_by = TimeRow::latency;
    if (stores.requested > 0) {
      // Stores drain after the compute; their bandwidth is reserved now, in event order.
      TimeRow drained_by = TimeRow::latency;
      const double drained = transfer(t, st.sm, stores, drained_by);
      const double sent = compute_end + stores.requested * rates_.per.port_byte;
      end = std::max(sent, drained);
      end_by = sent >= drained ? TimeRow::l2 : drained_by;
    }
    if (end > st.end) st.end_by = end_by;
    st.end = std::max(st.end, end);
    if (++st.ring == st.compute_end.size()) st.ring = 0;
  }

  // Attribution (sim/engine/time_attribution.hpp). The kernel's `slots` CTA slots, slot s on SM
  // s mod `sms` (the event loop's placement): each SM's time is split evenly among its slots.
  void place_slots(std::int64_t slots, int sms) {
    std::vector<int> on_sm(static_cast<std::size_t>(rates_.sm_count), 0);
    for (std::int64_t s = 0; s < slots; ++s) ++on_sm[static_cast<std::size_t>(s % sms)];
    used_sms_ = 0;
    weight_.assign(on_sm.size(), 0.0);
    for (std::size_t m = 0; m < on_sm.size(); ++m) {
      if (on_sm[m] > 0) {
        weight_[m] = 1.0 / on_sm[m];
        ++used_sms_;
      }
    }
  }
  // The CTA in `st` ended (at st.end): its last compute and the drain of its stores past it are
  // charged.
  void cta_ended(CtaState& st) {
    const double weight = weight_[static_cast<std::size_t>(st.sm)];
    settle_pending(st, weight, st.compute_free, st.compute_free, TimeRow::latency);
    charge(st.end_by, weight * (st.end - st.compute_free));
  }
  // The slot of the CTA in `st` takes its next CTA at `start`: the refill is charged to launch.
  void refill(const CtaState& st, double start) {
    charge(TimeRow::launch, weight_[static_cast<std::size_t>(st.sm)] * (start - st.end));
  }
  // The slot of the CTA in `st` has no CTA left to start: idle from st.end to the kernel's end.
  void slot_idle(const CtaState& st) { idle_from_.emplace_back(st.sm, st.end); }
  // `dt` of the kernel's time left out as repetition: charged as the time charged so far was.
  void skipped(double dt) {
    double busy = 0.0;
    for (double x : charged_) busy += x;
    const double used = used_sms_;
    if (busy > 0.0) {
      const double f = 1.0 + dt * used / busy;
      for (double& x : charged_) x *= f;
    } else {
      charge(TimeRow::latency, dt * used);
    }
    skipped_s_ += dt;
  }
  // The kernel's attribution: its last CTA ended at `end` (time left out included, launch not),
  // its DRAM and L2 servers were busy `hbm_busy_s` and `l2_busy_s` of it. The SMs' time averaged
  // over the GPU's SMs, plus the launch overhead. An SM that never holds a CTA is idle, but for
  // the share of the time the busier memory server was busy: more CTAs there would have queued
  // on it.
  TimeAttribution attribution(double end, double hbm_busy_s, double l2_busy_s) {
    for (const auto& [sm, from] : idle_from_) {
      charge(TimeRow::idle, weight_[static_cast<std::size_t>(sm)] * (end - skipped_s_ - from));
    }
    idle_from_.clear();
    if (const double unused = rates_.sm_count - used_sms_; unused > 0 && end > 0) {
      const bool hbm = hbm_busy_s >= l2_busy_s;
      const double busy = std::min(1.0, std::max(hbm_busy_s, l2_busy_s) / end);
      charge(hbm ? TimeRow::hbm : TimeRow::l2, unused * end * busy);
      charge(TimeRow::idle, unused * end * (1.0 - busy));
    }
    TimeAttribution a;
    double sum = 0.0;
    for (std::size_t i = 0; i < kTimeRows; ++i) {
      a.seconds[i] = charged_[i] / rates_.sm_count;
      sum += a.seconds[i];
    }
    // The rows sum to `end` but for rounding (each interval is a difference of the times the
    // loop computed); anything more is a fault of the accounting.
    if (std::abs(sum - end) > 1e-6 * end) {
      throw InternalError(
          fmt::format("kernel '{}': time attributed {} s, timed {} s", spec_.name, sum, end));
    }
    if (sum > 0.0) {
      for (double& x : a.seconds) x *= end / sum;
    }
    a[TimeRow::launch] += rates_.launch_s;
    return a;
  }

  double next_stage_time(const CtaState& st, double now) const {
    // The next stage's buffer is the one the stage `pipeline_stages` back computed from.
    return std::max(now, st.compute_end[st.ring]);
  }

 private:
  // compute_time(w, share), remembered for the last work and share it was asked: a kernel's
  // CTAs mostly run stages of the same work on equally shared SMs (every step of a K/V loop),
  // and compute_time() is a pure function of them, so the answer is the one it would compute.
  // Compared bit for bit (Work is doubles and 64-bit integers, no padding), a word at a time
  // with an early exit: `w` was just summed field by field, and reading it back in wider loads
  // (a copy of it, or a vectorized compare) waits for those stores to retire (the CPU cannot
  // forward several stores into one load).
  double cached_compute_time(const Work& w, double share) {
    static_assert(sizeof(Work) == 10 * sizeof(std::uint64_t));
    bool same = memo_valid_ && std::bit_cast<std::uint64_t>(share) == memo_share_;
    for (std::size_t i = 0; same && i < memo_work_.size(); ++i) {
      std::uint64_t word;
      std::memcpy(&word, reinterpret_cast<const char*>(&w) + i * sizeof(word), sizeof(word));
      same = word == memo_work_[i];
    }
    if (!same) {
      memo_time_ = compute_time(w, share, memo_parts_);
      std::memcpy(memo_work_.data(), &w, sizeof(Work));
      memo_share_ = std::bit_cast<std::uint64_t>(share);
      memo_valid_ = true;
    }
    return memo_time_;
  }

  // Time at which `bytes` requested at `t` by a CTA on `sm` have all arrived; `by`: the server
  // that finished last (HBM, else the L2 or the SM's L2 port: TimeRow::l2).
  double transfer(double t, int sm, const Traffic& tr, TimeRow& by) {
    const double hbm_done = hbm_.reserve(t, tr.dram * rates_.per.hbm_byte);
    const double l2_done = l2_on_ ? l2_server_.reserve(t, tr.requested * rates_.per.l2_byte) : t;
    const double port_done =
        ports_[static_cast<std::size_t>(sm)].reserve(t, tr.requested * rates_.per.port_byte);
    by = hbm_done >= l2_done && hbm_done >= port_done ? TimeRow::hbm : TimeRow::l2;
    return std::max({hbm_done, l2_done, port_done});
  }

  void charge(TimeRow r, double dt) { charged_[static_cast<std::size_t>(r)] += dt; }
  // Charges the CTA's pending compute (from st.pending_from to st.compute_free, by row in
  // st.pending): the part of it under [copy_from, copy_done), a copy that the CTA waited for
  // after it, to the copy's server `by`; the rest as its rows say.
  void settle_pending(CtaState& st, double weight, double copy_from, double copy_done, TimeRow by) {
    const double span = st.compute_free - st.pending_from;
    if (span > 0.0) {
      const double hidden = std::clamp(
          std::min(st.compute_free, copy_done) - std::max(st.pending_from, copy_from), 0.0, span);
      const double keep = weight * (1.0 - hidden / span);
      for (std::size_t i = 0; i < kTimeRows; ++i) charged_[i] += keep * st.pending[i];
      charge(by, weight * hidden);
    }
    st.pending.fill(0.0);
    st.pending_from = st.compute_free;
  }
  void charge_parts(double weight, const Parts& parts) {
    for (std::size_t i = 0; i < kTimeRows; ++i) charged_[i] += weight * parts[i];
  }
  // A wait from `from` for data delivered at `delivered` by server `by`, usable at `until` (its
  // latency after): the part before delivery to the server, the rest to latency.
  void charge_wait(double weight, double from, double delivered, TimeRow by, double until) {
    if (until <= from) return;
    const double bandwidth = std::max(0.0, delivered - from);
    charge(by, weight * bandwidth);
    charge(TimeRow::latency, weight * (until - std::max(delivered, from)));
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
  Parts memo_parts_{};
  bool memo_valid_ = false;
  // The attribution so far: each row's time summed over the SMs (a slot's intervals weighted by
  // its SM's share of it), the SMs holding slots, the slots gone idle (SM, since when), the time
  // left out as repetition.
  Parts charged_{};
  std::vector<double> weight_;
  int used_sms_ = 0;
  std::vector<std::pair<int, double>> idle_from_;
  double skipped_s_ = 0.0;
};

// The time a bandwidth server moving `traffic` at `per_byte` seconds a byte is busy.
inline double busy_s(const LevelTraffic& traffic, double per_byte) {
  return static_cast<double>(traffic.read_total() + traffic.write_total()) * per_byte;
}

// When a slot's next CTA starts, its last having ended at `end` (HardwareProfile::cta_dispatch,
// measured in cuda_validate/measurements/h200-sxm-141gb/cta_dispatch_2026-11-28/): after the
// slot's refill, unless the kernel is persistent (KernelSpec::persistent: its slots take their next
// tile without a CTA launch). Without the profile section a CTA starts the moment its slot frees.
inline double next_cta_start(const Rates& r, const KernelSpec& spec, double end) {
  return spec.persistent ? end : end + r.cta_refill_s;
}

}  // namespace iosim::detail
