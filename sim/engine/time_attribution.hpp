#pragma once
// Where a kernel's time goes (issue #51): its time split among the resources that bound it, as
// the engine times it (sim/engine/stage_timer.hpp charges every interval it times to one row).
//
// The time of a kernel is the launch overhead plus the time from its first CTA's start to its
// last CTA's end. Over that span every SM of the GPU is accounted for at every moment: an SM that
// holds no CTA is idle; an SM holding CTAs splits the moment evenly among its CTA slots, and each
// slot is, at each moment, in exactly one of
//   - a stage's compute: the stage's compute time, split among the pipes (tensor cores, FP32 +
//     SFU + INT32, shared memory) as the time model adds and overlaps them, and the dependent
//     latencies no other warp hides (latency);
//   - a wait for its data: the bandwidth server that delivered the copy last (HBM, the L2 or the
//     SM's L2 port: l2), queueing behind other CTAs' requests included, then the L2-hit or DRAM
//     latency (latency);
//   - the drain of its last stores (the server that finished them);
//   - the refill between one CTA's end and the next CTA's start in the slot (launch);
//   - nothing left to start: the slot waits for the kernel's last CTA (idle: the partial last
//     wave, stragglers).
// The rows are those intervals averaged over the GPU's SMs, so they sum to the kernel's time by
// construction. Time left out as repetition (sim/engine/steady_state.hpp) is charged as the time
// simulated before it was. The bound of a kernel is the class of its largest row (bound_of()).
#include <array>
#include <cstddef>
#include <string_view>

namespace iosim {

enum class TimeRow : std::size_t { tensor, fp32_sfu, smem, l2, hbm, latency, idle, launch };
inline constexpr std::size_t kTimeRows = 8;

inline constexpr std::array<TimeRow, kTimeRows> kAllTimeRows = {
    TimeRow::tensor, TimeRow::fp32_sfu, TimeRow::smem, TimeRow::l2,
    TimeRow::hbm,    TimeRow::latency,  TimeRow::idle, TimeRow::launch};

/// The row's key in JSON: "tensor", "fp32_sfu", "smem", "l2", "hbm", "latency", "idle", "launch".
constexpr std::string_view time_row_key(TimeRow r) {
  constexpr std::array<std::string_view, kTimeRows> keys = {"tensor", "fp32_sfu", "smem", "l2",
                                                            "hbm",    "latency",  "idle", "launch"};
  return keys[static_cast<std::size_t>(r)];
}

/// The row's name in tables and on the run page.
constexpr std::string_view time_row_label(TimeRow r) {
  constexpr std::array<std::string_view, kTimeRows> labels = {
      "tensor pipe", "FP32/SFU (softmax)",    "shared memory", "L2", "HBM",
      "latency",     "idle SMs (tail/waves)", "launch"};
  return labels[static_cast<std::size_t>(r)];
}

/// The bound a row names: "compute" (the SM's pipes), "memory" (L2, HBM) or "latency" (waits no
/// other work hides, idle SMs, launches).
constexpr std::string_view bound_of(TimeRow r) {
  switch (r) {
    case TimeRow::tensor:
    case TimeRow::fp32_sfu:
    case TimeRow::smem:
      return "compute";
    case TimeRow::l2:
    case TimeRow::hbm:
      return "memory";
    default:
      return "latency";
  }
}

/// A kernel's (or a run's) time by row, in seconds.
struct TimeAttribution {
  std::array<double, kTimeRows> seconds{};

  double& operator[](TimeRow r) { return seconds[static_cast<std::size_t>(r)]; }
  double operator[](TimeRow r) const { return seconds[static_cast<std::size_t>(r)]; }
  double total() const {
    double s = 0.0;
    for (double x : seconds) s += x;
    return s;
  }
  /// The largest row (the first of equals, in kAllTimeRows' order).
  TimeRow largest() const {
    std::size_t best = 0;
    for (std::size_t i = 1; i < kTimeRows; ++i) {
      if (seconds[i] > seconds[best]) best = i;
    }
    return static_cast<TimeRow>(best);
  }
  TimeAttribution& operator+=(const TimeAttribution& o) {
    for (std::size_t i = 0; i < kTimeRows; ++i) seconds[i] += o.seconds[i];
    return *this;
  }
};

}  // namespace iosim
