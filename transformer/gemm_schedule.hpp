#pragma once
// A tiled GEMM Y[M x N] = X[M x K] W[N x K]^T (+ bias), the projections and MLP of a transformer
// layer, as a schedule on the attention engine (sim/schedule/schedule.hpp). Weights are stored
// N x K, as torch.nn.Linear stores them. One CTA per BM x BN output tile, the M-tile index
// fastest (cuBLAS's launch order: CTAs that run together share a W tile column); the K loop is
// one part per BK chunk: load the X and W chunks to shared memory, one tensor-core product;
// Y is stored once at the end. Split K ways (split-K), each output tile is S CTAs, each over
// 1/S of K, that store fp32 partial tiles; a second kernel sums them into Y (cuBLAS's
// splitKreduce_kernel). A batch of GEMMs (GemmProblem::batch, torch.bmm's) is one launch whose
// grid holds every member's tiles, member after member; each member has its own X, W and Y.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "sim/hardware/profile.hpp"
#include "sim/schedule/dtype.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim {

struct GemmProblem {
  std::string name = "gemm";  // the kernel's name in reports ("qkv_proj", "down_proj", ...)
  std::int64_t m = 0, n = 0, k = 0;
  Dtype dtype = Dtype::bf16;
  bool bias = false;  // the epilogue adds a bias vector of N (Qwen2's q, k, v projections)
  // Independent GEMMs of these sizes in one launch, each with its own X, W, Y (and bias) in
  // memory, as torch.bmm runs them: multi-head latent attention's per-head products with the
  // up-projections (transformer/decoder_layer.hpp). 1: one GEMM.
  std::int64_t batch = 1;
};

struct GemmTiling {
  std::int64_t bm = 128, bn = 128, bk = 64;
  int threads = 128;
  int pipeline_stages = 4;
  TensorInstruction instruction = TensorInstruction::wgmma;
  // CTA order: 0, the M tile fastest over the whole of M (W is read from HBM about once, X once
  // per column of tiles when it does not fit in L2); G > 0, grouped (the swizzle of CUTLASS and
  // Triton, Triton's GROUP_SIZE_M): CTAs walk G M tiles, then the next N tile, so that the X rows
  // of G tiles stay in L2 while W streams past them (X about once, W once per group).
  std::int64_t group_m = 0;
  // CTAs of one thread-block cluster along M (adjacent M tiles of one N tile) that share their W
  // tile through TMA multicast, as cuBLAS's Hopper kernels do (their names' "1x2" clusters): each
  // loads 1/cluster_m of every W chunk and the copy engine delivers it to all of them, so W is
  // read from L2 once per cluster instead of once per CTA. 1: no multicast.
  int cluster_m = 1;
  // CTAs of the cluster along N (adjacent N tiles of one M tile) that share their X tile the same
  // way (cuBLAS's "4x1" and "2x4" clusters multicast the activations to the CTAs of several weight
  // tiles): each loads 1/cluster_n of every X chunk, so X is read from L2 once per cluster. A
  // cluster is cluster_m x cluster_n CTAs. 1: no multicast of X.
  int cluster_n = 1;
  // CTAs per output tile, each over 1/split_k of K (at most one per K chunk); > 1 adds the
  // reduction kernel.
  int split_k = 1;
};

/// Overrides of the default tiling; fields left out keep the default.
struct GemmTilingRequest {
  std::int64_t bm = 0, bn = 0, bk = 0;  // 0: default
  int threads = 0;
  int pipeline_stages = 0;
  std::int64_t group_m = 0;  // 0: M tile fastest over the whole of M
  int cluster_m = 0;         // 0: the default (GemmTiling::cluster_m)
  int cluster_n = 0;         // 0: the default (GemmTiling::cluster_n)
  int split_k = 0;           // 0: the default
};

/// The tiling a GEMM runs with on `hw`. Without wgmma (Ampere): 128 x 128 x 64 tiles, 128 threads,
/// mma.sync, as many pipeline stages (up to 4) as shared memory holds, the M tile fastest.
/// On Hopper, cuBLAS's nvjet kernels as the layer suites measured them (cuda_validate/
/// measurements/CALIBRATION.md, "GEMMs as cuBLAS runs them", "Tiles that fill the GPU"): the
/// tile, cluster and split-K of choose_gemm_tiling() (transformer/gemm_tile_choice.hpp) unless
/// requested, K chunks of 64, stages filling shared memory less a 16 KiB epilogue buffer (at most
/// 16), and CTAs walked in groups of 8 M tiles.
/// Throws ConfigError when a requested tile is not positive, one stage does not fit (a chosen
/// tile: a K chunk past max_gemm_bk()), the split exceeds the K chunks, or the cluster is more
/// than one CTA on a GPU without clusters (no wgmma: Ampere) or more than kMaxClusterCtas.
GemmTiling resolve_gemm_tiling(const HardwareProfile& hw, const GemmProblem& p,
                               const GemmTilingRequest& req = {});

/// The most CTAs a thread-block cluster holds: CUDA's portable cluster size on Hopper. (16 needs a
/// non-portable launch; the profiles' cluster placement, HardwareProfile::clusters, is measured
/// up to 8.)
inline constexpr int kMaxClusterCtas = 8;

/// The largest K chunk (BK) `req` can run with on `hw`: where the tile is chosen (Hopper, no tile
/// or split requested), two stages of the smallest candidate tile must fit in a CTA's shared
/// memory (max_chosen_gemm_bk()); otherwise one stage of the requested (or default) tile.
std::int64_t max_gemm_bk(const HardwareProfile& hw, Dtype dtype, const GemmTilingRequest& req);

/// CTAs a cluster of `cluster` along one side holds where that side has `tiles` tiles (a cluster
/// wider than the grid holds only its tiles; 0 counts as 1).
inline std::int64_t cluster_members(int cluster, std::int64_t tiles) {
  return std::min<std::int64_t>(std::max(1, cluster), tiles);
}

/// Shared memory of one CTA: `pipeline_stages` buffers of an X chunk and a W chunk.
std::int64_t gemm_smem_bytes(const GemmTiling& t, Dtype dtype);

/// The schedule (one kernel). Throws ConfigError on a non-positive size, batch, split or cluster.
std::unique_ptr<Schedule> make_gemm_schedule(const GemmProblem& p, const GemmTiling& t);

/// HBM bytes of the schedule in the two-level model (L2 off), written from the dataflow, not from
/// the schedule: each output tile reads its rows of X and of W in full, so X is read once per
/// column of tiles (ceil(N / BN)) and W once per row of tiles (ceil(M / BM)), or once per
/// cluster of them where a cluster multicasts it; Y is written once;
/// the bias, once per row of tiles. Split K ways, each split writes its fp32 partial of Y and the
/// reduction reads them all back, with the bias once per row of its 16-row tiles. A batch moves
/// `batch` times one member's bytes (the members share nothing).
struct GemmBytes {
  std::uint64_t read = 0, write = 0;
};
GemmBytes gemm_closed_form(const GemmProblem& p, const GemmTiling& t);

}  // namespace iosim
