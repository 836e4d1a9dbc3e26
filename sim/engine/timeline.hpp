#pragma once
// A run's timeline: what each stage of each CTA moved and computed, as far as the engine's time
// model depends on it, recorded by one engine run (run_schedule with a Timeline to fill) so that
// the same schedule can be timed at another SM clock by replaying it (replay_timeline) instead of
// simulating the L2 and emitting the operations again (issue #33: the power model's clock solve
// took a second engine run; the L2's lookups were 46% of one, the event loop 29%).
//
// What a replay keeps from the recorded run: every counter (bytes per level and tensor, work),
// and per stage the L2's outcomes (bytes requested, bytes from DRAM including the write-backs the
// stage's accesses caused, whether a load missed). What it computes again at the new clock: the
// rates, the dependent latencies of each stage (counted, not timed, in the record), the bandwidth
// servers, the dispatch of CTAs to SMs and the event order. A full simulation at the new clock
// can differ from the replay where its other event order changes which CTA's access hits in the
// L2 (a few KB of write-backs in 10^8 bytes, flash2 B4 H16 N8192 d64 at 1980 vs 1830 MHz); the
// replay times the recorded outcomes instead. tests/timeline_test.cpp holds replays against full
// simulations over many shapes; docs/model.md states the tolerance.
//
// Only runs that simulated every CTA and step are recorded (steady-state extrapolation decides
// what to leave out from the times it measures, which a replay at another clock would not see),
// and only up to kMaxStages stages; otherwise `usable` is false and callers simulate again.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/engine/engine.hpp"

namespace iosim {

struct Timeline {
  /// The most stages recorded (4 bytes each, 8 more per nonzero DRAM figure, and a shape per
  /// distinct stage: under 60 MB); a longer run is not.
  static constexpr std::size_t kMaxStages = std::size_t{1} << 21;

  /// A stage's work and requested bytes: the same for most stages of a CTA, so stored once.
  /// Work before the first in-step load: tensor FLOPs, FP32 FLOPs, SFU ops, INT32 ops, shared-
  /// memory bytes, shared-memory round trips, dependent FP32 ops, wgmma waits, serialized wgmmas;
  /// the same from the
  /// first in-step load on; then bytes requested by the prefetched loads, the in-step loads and
  /// the stores; 1 when the stage has in-step loads.
  using Shape = std::array<double, 22>;
  struct Cta {
    std::uint64_t first_stage = 0;  // into stages
    std::uint64_t first_dram = 0;   // into dram
    std::uint32_t stage_count = 0;
  };
  struct Kernel {
    int ctas_per_sm = 0;
    int sms = 0;  // the SMs holding its CTAs (Occupancy::sms)
    std::vector<Shape> shapes;
    // By CTA, in order: shape index << kFlagBits | flags (kLoadsMissed, kInStepMissed and which
    // of the DRAM bytes below are nonzero).
    std::vector<std::uint32_t> stages;
    // The nonzero DRAM bytes of the stages (prefetched loads, in-step loads, stores), in order.
    std::vector<double> dram;
    std::vector<Cta> ctas;
  };
  static constexpr int kFlagBits = 5;
  static constexpr std::uint32_t kLoadsMissed = 1, kInStepMissed = 2, kLoadsDram = 4,
                                 kInStepDram = 8, kStoresDram = 16;

  bool usable = false;
  bool l2_on = false;
  std::vector<Kernel> kernels;
  EngineResult recorded;  // the run's result, its counters what a replay reports
  std::size_t stages = 0;
};

/// The recorded run timed at `clock_mhz`: its counters, its kernels' times, bounds and achieved
/// rates at that clock. Requires timeline.usable and the profile it was recorded on.
EngineResult replay_timeline(const HardwareProfile& profile, const Timeline& timeline,
                             double clock_mhz);

}  // namespace iosim
