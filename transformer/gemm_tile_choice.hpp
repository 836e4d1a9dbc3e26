#pragma once
// The tile a Hopper GEMM runs with, chosen as cuBLAS's heuristic chooses among its nvjet kernels:
// the candidate (tile, cluster, split-K) its estimate expects to be fastest. The layer suites
// (cuda_validate/measurements/h200-sxm-141gb/layer_*) show why one default tile cannot serve: a
// decode step's GEMMs (M of 1-256) make too few 128 x 192 tiles to occupy 132 SMs (14 CTAs for
// Llama-3-70B's QKV projection at tp 8), and cuBLAS instead picks narrow tiles (24-160 columns)
// and split-K, so that its grids hold 90-132 CTAs; its prefill tiles are wide (176-320 columns).
//
// The estimate is the engine's own limits in closed form, at the boost clock: a CTA per SM (the
// stages fill shared memory), waves of CTAs each taking the longer of its tensor-core work and its
// bytes through the SM's L2 port, against the L2's bandwidth over every CTA's bytes and HBM's
// over the operands read once; a wave's pipeline fill; split-K's partial outputs and its
// reduction kernel. It ranks candidates. Where the best needs at most two waves (decode steps,
// small prefills), the grid's shape decides more than any closed form sees (how many SMs draw on
// HBM, each through its own port): the best few are timed on the engine, as cuBLAS's users
// autotune, and the fastest runs.
#include <cstdint>
#include <functional>

#include "sim/hardware/profile.hpp"
#include "transformer/gemm_schedule.hpp"

namespace iosim {

struct GemmChoice {
  std::int64_t bm = 128, bn = 128;
  int cluster_m = 1;
  int cluster_n = 1;
  int split_k = 1;
  double estimate_s = 0.0;     // the chosen candidate's estimate
  std::uint64_t l2_bytes = 0;  // bytes its CTAs request from L2 (the tie-break)
  double waves = 0.0;          // waves of one CTA per SM it needs
  double sm_fill = 0.0;        // CTAs over the SM slots of its waves (all of the GPU's SMs)
  double engine_s = 0.0;       // its time on the engine, when the candidates were timed
};

/// A candidate's time on the engine (resolve_gemm_tiling() builds the whole tiling and runs it).
using GemmTimer = std::function<double(const GemmChoice&)>;

/// The estimate of one candidate (see above), in seconds, and its L2 bytes. `split_k` of whole K
/// chunks (a split left with none is not counted).
GemmChoice estimate_gemm_tiling(const HardwareProfile& hw, const GemmProblem& p, std::int64_t bm,
                                std::int64_t bn, std::int64_t bk, int cluster_m, int cluster_n,
                                int split_k);

/// The largest K chunk (BK) the choice can run with on `hw`: two stages of its smallest candidate
/// tile, 8 x 64, fill the shared memory a CTA may have.
std::int64_t max_chosen_gemm_bk(const HardwareProfile& hw, Dtype dtype);

/// The candidate with the least estimate; candidates within 1% of it (the estimate's resolution)
/// count as equal, and of those the one filling the most SM slots, then requesting the fewest L2
/// bytes (the larger tile), then with no split wins. Where that one needs at most two waves and
/// `time` is given, the 8 best so ranked are timed with it and the fastest wins (within 1%: the
/// earlier). Candidates: BM of 8-128 (powers of two, no more than one power past M), BN of 8-256
/// in steps of 8, one side a multiple of 64 (wgmma's M, either way round) and at most 128 x 256
/// accumulators; clusters of 2 along M sharing W where there are two M tiles, times 1, 2 or 4
/// along N sharing X where there are that many N tiles (cuBLAS's names show clusters of 1x2, 2x1,
/// 4x1 and 2x4 CTAs); split-K of 1-16.
/// Throws ConfigError when `bk` leaves no candidate (past max_chosen_gemm_bk()).
GemmChoice choose_gemm_tiling(const HardwareProfile& hw, const GemmProblem& p, std::int64_t bk = 64,
                              const GemmTimer& time = {});

}  // namespace iosim
