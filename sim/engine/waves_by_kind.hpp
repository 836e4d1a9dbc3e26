#pragma once
// Steady-state extrapolation, waves (sim/engine/steady_state.hpp, Repetition::alike_run, when a
// run of alike CTAs is longer than a wave): waves left out by kind once the last waves of their
// kind repeat.
#include <cstdint>
#include <map>

#include "sim/engine/counters.hpp"
#include "sim/engine/extrapolator.hpp"
#include "sim/engine/steady_state.hpp"

namespace iosim::detail {

class WavesByKind : public Extrapolator {
 public:
  /// Waves of `wave_ctas` CTAs (the resident ones) in a grid of runs of `alike_run` alike CTAs.
  WavesByKind(std::int64_t wave_ctas, std::int64_t alike_run)
      : wave_ctas_(wave_ctas), alike_run_(alike_run) {}
  void before_dispatch(double t, KernelProgress& run) override;

 private:
  void start_of_wave(double t, KernelProgress& run);

  // Kinds of waves: inside one run of alike CTAs, or straddling two at an offset (>= 0); the
  // records also hold every straddling wave together (kAnyStraddle).
  static constexpr std::int64_t kInner = -1, kAnyStraddle = -2, kNone = -3;

  // A wave's kind: kInner, or where it straddles (its first CTA modulo the run).
  std::int64_t kind_of(std::int64_t first) const {
    return first / alike_run_ == (first + wave_ctas_ - 1) / alike_run_ ? kInner
                                                                       : first % alike_run_;
  }
  std::int64_t steady_record(std::int64_t kind) const;

  // CTAs a wave and a run, the kinds' records, and the open wave's first CTA (-1: none yet),
  // time, counters and DRAM bytes at its dispatch.
  std::int64_t wave_ctas_, alike_run_;
  std::map<std::int64_t, WaveRecord> kinds_;
  std::int64_t open_wave_ = -1;
  double open_t_ = 0.0;
  Counters open_counters_{};
  std::uint64_t open_dram_ = 0;
};

}  // namespace iosim::detail
