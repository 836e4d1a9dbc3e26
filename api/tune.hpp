#pragma once
// Tuning: which tiling of one attention call is fastest on one GPU. A tune is a sweep (run_sweep,
// api/sweep.hpp) over the tile axes of one problem, --block-q x --block-kv x --stages x --threads,
// whose feasible points are ranked by simulated time and whose infeasible ones keep their reason.
//
// The default space of each axis, for the algorithm a request runs (its Capabilities):
//   block_q  64, 128, 192, 256, up to the first that covers the query rows of a head (N, times
//            the query group when GQA packing may apply): larger tiles only add masked rows;
//   block_kv 32, 64, 128, 256, up to the first that covers N_kv;
//   stages   2, 3, 4 (K/V buffer pairs, GEMM operand stages); 1, 2, 3 where --stages counts Q/O
//            tiles in flight (FlashAttention-1: its default is 1); 1 alone for a kernel whose
//            copies wait for the compute (Capabilities::one_stage: plain loads);
//   threads  128, 256 for kernels whose warps all compute (mma.sync); for warp-specialized kernels
//            (Capabilities::warpgroups) the algorithm's own rule: one producer warpgroup and one
//            consumer warpgroup per 64 query rows (0 in the list: the algorithm's choice).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/iosim.hpp"
#include "api/sweep.hpp"

namespace iosim {

/// The values of each tile axis; 0 in a list means "the algorithm's own choice" (the axis left
/// out of the request).
struct TuneSpace {
  std::vector<std::int64_t> block_q, block_kv;
  std::vector<int> stages, threads;
};

/// The default space for `request`'s algorithm (see the top of this file). Throws ConfigError as
/// simulate() does for an unknown algorithm or a kernel description `profile` cannot run.
TuneSpace default_tune_space(const HardwareProfile& profile, const RunRequest& request);

/// Checks a space: every axis has values, each in [0, 1048576] (stages: [0, 64], threads:
/// [0, 1024]); throws ConfigError naming the axis as its flag (--block-q).
void check_tune_space(const TuneSpace& space);

/// Most tilings one tune may have: tune() holds every point's report to rank them.
inline constexpr std::size_t kMaxTunePoints = 100'000;

// A point within this fraction of the best is marked as a tie (`tune`, and the sweep report's
// best tiles). 5%: on the H100 tile sweep (docs/accuracy.md, "Which tile is fastest"), of the
// pairs of configurations whose predicted times differed by less than 2% iosim ordered 51% as the
// GPU did, 2-5%: 57%, 5-10%: 67%; below 5% its order is about a coin toss.
inline constexpr double kTieBand = 0.05;

struct TuneOptions {
  double tie_band = kTieBand;
  int jobs = 0;  // threads; 0: all cores
  std::function<void(const SweepProgress&)> on_progress;
};

/// One point of a tune: its place in the space (odometer order, --threads fastest) and its report
/// (report.tiling: the tiling resolved; report.request.tiling: as asked).
struct TunePoint {
  std::size_t index = 0;
  Report report;
};

struct TuneResult {
  TuneSpace space;
  std::size_t points = 0;             // the size of the space
  std::vector<TunePoint> ranked;      // feasible, fastest first (equal times: point order)
  std::vector<TunePoint> infeasible;  // in point order, each with its infeasible_reason
  double tie_band = 0.0;
  /// The request as given (no tile fixed by the space): the algorithm's own tiling, and its rank
  /// (1-based) when a ranked point resolved to the same tiling.
  Report algorithm_default;
  std::optional<std::size_t> default_rank;

  /// The best time (0 when no point is feasible).
  double best_time_s() const { return ranked.empty() ? 0.0 : ranked.front().report.engine.time_s; }
  /// Whether `time_s` is within the tie band of the best.
  bool ties_best(double time_s) const {
    return !ranked.empty() && time_s <= best_time_s() * (1.0 + tie_band);
  }
};

/// Simulates `base` with every tiling of `space` (each axis value set on base.tiling, 0 leaving
/// the field to the algorithm) and the base request itself, and ranks the feasible points. Throws
/// ConfigError for a space check_tune_space() refuses, when the base request is invalid (an unknown
/// algorithm, bad sizes) or when every point is rejected, as run_sweep() does; Stopped when
/// run_control asks to stop.
TuneResult tune(const HardwareProfile& profile, const RunRequest& base, const TuneSpace& space,
                const TuneOptions& options);

}  // namespace iosim
