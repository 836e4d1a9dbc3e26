#pragma once
// The trace `iosim explain` shows: one step per tile operation a schedule emitted, in the order
// the engine ran them, with the bytes the engine counted for it at each level, what the CTA holds
// on chip after it and (with --execute) the numbers the numeric executor computed. Nothing here
// counts or computes: the steps are recorded from simulate() through the engine's OpObserver and
// the executor's NumericObserver, so the trace is the schedule the totals come from.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/paper_steps.hpp"
#include "api/iosim.hpp"

namespace iosim::teach {

/// The largest problem explain traces: every step of it must fit on a page.
inline constexpr std::int64_t kMaxSeq = 64;      // N and N_kv
inline constexpr std::int64_t kMaxHeadDim = 16;  // d
inline constexpr std::int64_t kMaxMatrices = 4;  // B * H
// Steps (tile operations) a trace holds: each keeps its numbers (~30 KB) and takes ~2 KB of the
// stepper page, so 1x1 blocks inside the limits above (~400,000 steps) would take 11 GB and write
// 700 MB. The default blocks take at most ~1,000 steps; 8x8 blocks at most ~6,500.
inline constexpr std::size_t kMaxSteps = 10000;
// What one recorded step may hold at most (its numbers with --execute), checked against the
// memory budget (sim/base/memory_budget.hpp) as steps are recorded.
inline constexpr std::size_t kStepBytes = 32 * 1024;

/// Throws ConfigError when `request` is larger than explain traces, naming the largest allowed.
void check_explainable(const RunRequest& request);

/// Bytes at the three levels the trace follows.
struct LevelBytes {
  std::uint64_t hbm_two_level = 0;  // HBM <-> SRAM, the FlashAttention paper's model (--l2 off)
  std::uint64_t l2 = 0;             // what the SMs requested from the L2 (--l2 on)
  std::uint64_t hbm = 0;            // DRAM traffic with the L2 on: misses and write-backs
  LevelBytes& operator+=(const LevelBytes& o) {
    hbm_two_level += o.hbm_two_level;
    l2 += o.l2;
    hbm += o.hbm;
    return *this;
  }
};

/// A buffer a CTA holds on chip: the region of a global tensor it holds (or, for a result, the
/// region it will be stored to) and where it sits.
struct OnChipTile {
  TileRef tile;
  OnChip where = OnChip::smem;
  std::vector<TileRef> pieces;  // a gathered tile: the global tiles it was assembled from
};

/// Numbers of one on-chip buffer after a step (row-major, at most kMaxShown x kMaxShown of it).
struct NumberTile {
  std::string name;                 // "S", "m", "rescale e^(m_old - m_new)", "O exact", ...
  std::int64_t rows = 0, cols = 0;  // of the whole buffer
  std::int64_t shown_rows = 0, shown_cols = 0;  // of `values`
  std::vector<double> values;
  // As `values` (or empty): the values that say "no score seen yet" rather than a number to read:
  // a running max m still at its start, -inf, and the rescale factor of such a row, 0 by
  // definition.
  std::vector<bool> unseen;
  std::string note;  // why the unseen values are what they are, or ""
};
inline constexpr std::int64_t kMaxShown = 16;

struct TraceStep {
  std::size_t kernel = 0;  // index into Trace::kernels
  std::int64_t cta = 0;    // linear blockIdx
  int sm = 0;
  std::size_t index = 0;  // the op's position in its CTA's program order
  TileOp op;
  PaperStep paper;
  LevelBytes bytes;                 // this op's traffic (a compute moves none)
  LevelBytes total;                 // the run's totals once this op is counted
  std::vector<OnChipTile> on_chip;  // the CTA's buffers after the op
  std::vector<TensorId> changed;    // the on-chip buffers the op filled or computed
  bool last_of_cta = false;
  std::vector<NumberTile> numbers;  // --execute: the buffers the op wrote
  std::optional<double> max_error;  // --execute, a store of O: max |O - exact| over the tile
};

struct Trace {
  Report report;  // the run at the requested --l2 (its order is the trace's)
  Report other;   // the same run at the other --l2, for the per-step bytes of that view
  std::vector<KernelSpec> kernels;
  std::vector<TraceStep> steps;
  std::optional<double> max_error;  // --execute: max |O - exact| (or of the gradients)
  // Per tensor (by index_of), the extent of its matrices the steps touch: rows, cols, matrices.
  struct Extent {
    std::int64_t rows = 0, cols = 0, matrices = 0;
  };
  std::vector<Extent> extents;
};

/// Simulates `request` on `profile` twice (L2 on and off; with --execute, the first also runs the
/// numbers) and records every operation. Throws ConfigError for a problem explain does not trace
/// or an infeasible tiling.
Trace build_trace(const HardwareProfile& profile, const RunRequest& request);

/// The run's totals at the three levels, as the summary gives them: HBM in the two-level model,
/// the L2's requests and DRAM with the L2 on, DRAM counting the lines still dirty in the L2 at the
/// end (they reach DRAM later; without them DRAM could be below the compulsory bytes).
LevelBytes run_totals(const Trace& trace);

// The words of a step (describe.cpp).

/// The line that describes an op: "load Q rows 0-15, cols 0-15 (512 B): HBM -> shared memory".
std::string describe(const TraceStep& step);

/// A count with thousands separators ("30,208").
std::string thousands(std::uint64_t v);

/// Bytes in a short human form ("512 B", "8.0 KiB").
std::string human_bytes(std::uint64_t bytes);

}  // namespace iosim::teach
