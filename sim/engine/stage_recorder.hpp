#pragma once
// What an engine run leaves for later: the stages it timed, recorded for a replay at another clock
// (StageRecorder, sim/engine/timeline.hpp), and its waves and tail as its CTAs finish
// (WaveTimeline), which the event loop and a replay keep alike.
#include <bit>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/engine/stage_timer.hpp"
#include "sim/engine/timeline.hpp"

namespace iosim::detail {

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
  // Whether two shapes are equal bit for bit, as memcmp says, inline (the library's memcmp,
  // called for every stage recorded, was 1.5% of a default flash2 run) and a word at a time with
  // an early exit: `a` was just stored field by field, and the vectorized compare's wide loads
  // of it waited for those stores (no store forwards into a wider load), half of stage()'s time.
  static bool same_bits(const Timeline::Shape& a, const Timeline::Shape& b) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (std::bit_cast<std::uint64_t>(a[i]) != std::bit_cast<std::uint64_t>(b[i])) return false;
    }
    return true;
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

}  // namespace iosim::detail
