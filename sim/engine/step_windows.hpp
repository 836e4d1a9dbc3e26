#pragma once
// Steady-state extrapolation, steps (sim/engine/steady_state.hpp, Repetition::part_period):
// windows of resident CTAs' steps cut out of the time line once the last windows repeat.
#include <cstddef>
#include <cstdint>
#include <deque>

#include "sim/engine/extrapolator.hpp"
#include "sim/engine/steady_state.hpp"

namespace iosim::detail {

class StepWindows : public Extrapolator {
 public:
  /// Windows of `part_period` parts of every resident CTA.
  explicit StepWindows(std::int64_t part_period) : part_period_(part_period) {}
  void after_event(double now, KernelProgress& run) override {
    if (++window_events_ >= window_length_) end_of_window(now, run);
  }

 private:
  void end_of_window(double now, KernelProgress& run);
  void cut_windows(double now, KernelProgress& run);

  // How far apart (in part periods) resident CTAs may be and still count as in lockstep: a wave
  // dispatched as a wave that straddled two heads finishes starts two parts apart (its two heads'
  // CTAs finish a part apart), and stays so; every CTA advancing exactly a period in each window
  // keeps the spread from growing (sim/engine/steady_state.hpp, condition 1).
  static constexpr std::size_t kLockstepParts = 2;

  // Whether the queue on DRAM and the L2 (KernelProgress::booked_until past the window's end)
  // stayed the same, within kTolerance of a window's time, over the windows compared (queues_:
  // its length at their ends). Windows of the same time and counters may be a transient: the
  // CTAs' pipelines, refilled as a wave starts with the servers idle, run at their compute's
  // pace, faster than DRAM delivers, while the queue grows by the same amount each window, until
  // their stages of slack are used up and DRAM sets the pace (a GEMM's 8-stage K loop, a second
  // wave of 64 CTAs with the L2 off: 18 steps of 0.259 us, then 0.326 us to the end; cut on the
  // first ones, its time came out 5% short; tests/steady_state_test.cpp holds one, with the L2
  // on, that came out 1.65% short).
  bool queue_steady() const;

  std::int64_t part_period_;
  std::int64_t window_events_ = 0, window_length_ = 0;
  RepeatDetector windows_;
  std::deque<double> queues_;
};

}  // namespace iosim::detail
