#include "transformer/gemm_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "algorithms/algorithm.hpp"
#include "algorithms/standard_tiles.hpp"
#include "sim/base/errors.hpp"
#include "sim/engine/engine.hpp"
#include "sim/memory/address_map.hpp"
#include "transformer/gemm_tile_choice.hpp"

namespace iosim {
namespace {

constexpr std::int64_t kReduceRows = 16, kReduceCols = 32;  // the split-K reduction's tile
constexpr std::int64_t kEpilogueSmemBytes = 16 * 1024;      // what nvjet's stages leave free
constexpr std::int64_t kMaxHopperStages = 16;               // the most an nvjet name shows

class GemmSchedule final : public Schedule {
 public:
  GemmSchedule(const GemmProblem& p, const GemmTiling& t)
      : p_(p),
        t_(t),
        tm_(ceil_div(p.m, t.bm)),
        tn_(ceil_div(p.n, t.bn)),
        chunks_(ceil_div(p.k, t.bk)),
        split_chunks_(ceil_div(chunks_, std::max(1, t.split_k))),
        split_(ceil_div(chunks_, split_chunks_)) {}

  std::vector<TensorDecl> tensors() const override {
    // A batch's member b is matrix b of each tensor (of the partials: matrices b * split_ on).
    const std::int64_t eb = dtype_bytes(p_.dtype), b = p_.batch;
    std::vector<TensorDecl> out = {{TensorId::X, b, p_.m, p_.k, eb},
                                   {TensorId::W, b, p_.n, p_.k, eb},
                                   {TensorId::Y, b, p_.m, p_.n, eb}};
    if (p_.bias) out.push_back({TensorId::bias, b, 1, p_.n, eb});
    if (split_ > 1) out.push_back({TensorId::Y_partial, b * split_, p_.m, p_.n, 4});
    return out;
  }

  std::vector<KernelSpec> kernels() const override {
    KernelSpec s;
    s.name = p_.name;
    s.role = "gemm";
    s.main_loop = true;
    // x (the M tile) fastest, as cuBLAS launches; a grouped order is the same grid walked in
    // groups (tile_of). z: the splits of a batch's first member, then of the next.
    s.grid = {tm_, tn_, split_ * p_.batch};
    s.threads_per_cta = t_.threads;
    s.smem_bytes_per_cta = gemm_smem_bytes(t_, p_.dtype);
    s.registers_per_thread = standard_tiles::gemm_regs(t_.bm * t_.bn, t_.threads);
    s.pipeline_stages = t_.pipeline_stages;
    s.mma_dtype = p_.dtype;
    s.tensor_instruction = t_.instruction;
    if (t_.instruction == TensorInstruction::wgmma) {
      // cuBLAS's nvjet kernels are persistent: the layer suites' grids are 120-132 CTAs
      // (cuda_validate/measurements/h200-sxm-141gb/layer_*/gemm_ncu.csv.gz, launch__grid_size).
      s.persistent = true;
      // The cluster as launched: its CTAs along M times along N, where each side has that many
      // tiles.
      s.cluster_ctas =
          static_cast<int>(cluster_members(t_.cluster_m, tm_) * cluster_members(t_.cluster_n, tn_));
      s.overlap = PipeOverlap::async_tensor;
      s.producer_warps = 4;
      s.consumer_warpgroups = 2;
      s.threads_per_cta = 384;
      const int consumer = std::min(232, standard_tiles::gemm_regs(t_.bm * t_.bn, 256));
      s.registers_per_thread = (256 * consumer + 128 * 40 + 383) / 384;
    }
    if (split_ == 1) return {s};
    // cuBLAS's splitKreduce_kernel: 32 x 16 threads, one output each, over a 16-row x 32-column
    // tile of Y (its grid in the layer suite: N / 32 x M / 16).
    KernelSpec r;
    r.name = p_.name + "_splitk_reduce";
    r.role = "reduce";
    r.grid = {ceil_div(p_.n, kReduceCols), ceil_div(p_.m, kReduceRows), p_.batch};
    r.threads_per_cta = kReduceCols * kReduceRows;
    r.registers_per_thread = 32;
    r.tensor_instruction = t_.instruction;
    r.mma_dtype = p_.dtype;
    return {s, r};
  }

  // The K loop repeats (sim/engine/steady_state.hpp, steps): part c + 1 loads the next K chunk of
  // the same X rows and W rows and accumulates the same product, and a cut that leaves out a
  // CTA's last steady chunks leaves every remaining part as it was (each names its own chunk).
  // The CTAs that share a chunk of X or W (a row or column of tiles, the members of a cluster)
  // read it at the same part; a cut leaves out the same chunks of each, so they still meet on
  // every chunk in the same order. A cluster's member loads the same share every chunk. CTAs of
  // ragged tiles, and members of clusters cut short, load less or more a chunk and go at their
  // own pace: step windows are cut only where every resident CTA advanced a period in each
  // window, and DRAM's queue stayed the same (sim/engine/step_windows.hpp), which both catch.
  //
  // Split-K declares nothing: its reduction kernel reads the partials back through the L2 the
  // main kernel leaves, and a cut moves what that holds (128 x 768 x 16384 in 3 splits on the
  // 4 MB L2: the reduction's DRAM writes and dirty bytes beyond 0.5% of full simulation's). Its
  // GEMMs are decode steps' and small: short to simulate in full.
  //
  // The period is the chunks that fill the width of one L2 region of X and W: rows of 4 KiB or
  // more, a multiple of 1 KiB, are laid out in blocks of 4 rows x 1 KiB (sim/memory/
  // address_map.hpp), so that 8 chunks of 64 bf16 columns share each region. A cut of whole
  // regions moves what the L2 holds by whole regions, as a K/V block does; a cut of one chunk
  // moved where the chunks fall in their regions, and with them which reads hit (on the 4 MB L2:
  // X's or W's DRAM reads beyond 0.5% of full simulation's). Where the chunks do not tile the
  // regions (rows shorter than 4 KiB, or not of whole blocks, or a chunk that does not divide
  // 1 KiB), nothing is declared.
  //
  // Nothing of the grid repeats as whole CTAs: every group of M tiles (or column of tiles,
  // ungrouped) reads the same W (or X) as the others, so no period of CTAs holds the data it
  // shares (Repetition::cta_period, alike_run: 0). The reduction kernel is one part a CTA.
  //
  // A batch of several GEMMs declares nothing either: its members' CTAs share no operand, so the
  // argument above (the CTAs that share a chunk meet on it at the same part) says nothing of
  // them, and a batch's GEMMs (multi-head latent attention's per-head products) are decode
  // steps' and small: exact simulation costs little.
  Repetition repetition(std::size_t kernel) const override {
    Repetition r;
    if (kernel == 0 && split_ == 1 && p_.batch == 1) r.part_period = region_parts();
    return r;
  }
  // The chunks after the first (whose product initializes the accumulators) but the last (the
  // bias and the store of Y).
  PartRange steady_parts(std::size_t kernel, std::int64_t /*cta*/) const override {
    if (kernel != 0 || split_ > 1 || p_.batch > 1 || region_parts() == 0 || chunks_ < 3) {
      return {};
    }
    return {1, static_cast<std::size_t>(chunks_ - 1)};
  }

  // Part c loads chunk c of K and multiplies it into the accumulators; the last part also stores
  // Y (with the bias, loaded beside the last chunk, added in the epilogue).
  bool emit_cta_part(std::size_t kernel, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    if (kernel == 1) {
      emit_reduce(cta, out);
      return false;
    }
    // Split s of the tile of member b: chunks [s * split_chunks_, ...) of K.
    const std::int64_t tiles = tm_ * tn_, z = cta / tiles, b = z / split_, s = z % split_;
    const auto [i, j] = tile_of(cta % tiles);
    const std::int64_t m0 = i * t_.bm, mr = std::min(t_.bm, p_.m - m0);
    const std::int64_t n0 = j * t_.bn, nr = std::min(t_.bn, p_.n - n0);
    const std::int64_t c = s * split_chunks_ + static_cast<std::int64_t>(part);
    const std::int64_t k0 = c * t_.bk, kr = std::min(t_.bk, p_.k - k0);
    const bool last = c + 1 == std::min(chunks_, (s + 1) * split_chunks_);
    const bool first = c == s * split_chunks_;
    const bool bias = p_.bias && split_ == 1;  // split: the reduction adds it
    const TileRef y{TensorId::Y, b, m0, mr, n0, nr};
    // sX (mr, kr) and sW (nr, kr); in a cluster, this CTA's share of each operand its partners
    // also use (their shares arrive by multicast): X along N, W along M.
    load_share(TensorId::X, b, m0, mr, k0, kr, j, tn_, t_.cluster_n, out);
    load_share(TensorId::W, b, n0, nr, k0, kr, i, tm_, t_.cluster_m, out);
    if (last && bias) out.push_back(TileOp::load({TensorId::bias, b, 0, 1, n0, nr}, OnChip::reg));
    TileOp mma;
    mma.kind = OpKind::compute;
    mma.compute = first ? ComputeKind::matmul : ComputeKind::matmul_accumulate;
    mma.tile = y;
    mma.tensor_flops = 2 * mr * nr * kr;
    mma.smem_read_bytes = smem_reads(mr, nr, kr);
    if (last && bias) mma.fp32_flops = mr * nr;  // one add per output in the epilogue
    out.push_back(mma);
    if (!last) return true;
    if (split_ == 1) {
      out.push_back(TileOp::store(y, OnChip::smem));  // epilogue through shared memory
    } else {
      out.push_back(
          TileOp::store({TensorId::Y_partial, b * split_ + s, m0, mr, n0, nr}, OnChip::smem));
    }
    return false;
  }

 private:
  // Rows [r0, r0 + rows) of matrix `b` of operand `id` (X or W) over K chunk [k0, k0 + kr), used
  // alike by the CTAs of a cluster along the other side: tile `pos` of `tiles` there, `cluster` a
  // cluster.
  // The members split the rows evenly; the last cluster may be smaller, and a member left with
  // no rows loads none.
  static void load_share(TensorId id, std::int64_t b, std::int64_t r0, std::int64_t rows,
                         std::int64_t k0, std::int64_t kr, std::int64_t pos, std::int64_t tiles,
                         int cluster, std::vector<TileOp>& out) {
    const std::int64_t members = std::min<std::int64_t>(cluster, tiles - (pos / cluster) * cluster);
    if (members <= 1) {
      out.push_back(TileOp::load({id, b, r0, rows, k0, kr}));
      return;
    }
    const std::int64_t share = ceil_div(rows, members), s0 = (pos % cluster) * share;
    if (s0 < rows)
      out.push_back(TileOp::load({id, b, r0 + s0, std::min(share, rows - s0), k0, kr}));
  }

  // K chunks a period of the K loop (repetition()): those that fill the width of an L2 region
  // of X's and W's rows, blocked as sim/memory/address_map.hpp lays them out; 0 where they do not
  // tile it.
  std::int64_t region_parts() const {
    using Map = detail::AddressMap;
    const auto block = static_cast<std::int64_t>(Map::kBlockChunk);
    const std::int64_t pitch = p_.k * dtype_bytes(p_.dtype), chunk = t_.bk * dtype_bytes(p_.dtype);
    const bool blocked =
        pitch >= static_cast<std::int64_t>(Map::kBlockRows) * block && pitch % block == 0;
    return blocked && block % chunk == 0 ? block / chunk : 0;
  }

  // The reduction's CTA: every split's partial of its 16 x 32 tile of Y (of member b, the grid's
  // z), summed (and the bias added) in registers, then Y.
  void emit_reduce(std::int64_t cta, std::vector<TileOp>& out) const {
    const std::int64_t cols_tiles = ceil_div(p_.n, kReduceCols);
    const std::int64_t per_member = cols_tiles * ceil_div(p_.m, kReduceRows);
    const std::int64_t b = cta / per_member, t = cta % per_member;
    const std::int64_t m0 = (t / cols_tiles) * kReduceRows, n0 = (t % cols_tiles) * kReduceCols;
    const std::int64_t mr = std::min(kReduceRows, p_.m - m0), nr = std::min(kReduceCols, p_.n - n0);
    for (std::int64_t s = 0; s < split_; ++s) {
      out.push_back(
          TileOp::load({TensorId::Y_partial, b * split_ + s, m0, mr, n0, nr}, OnChip::reg));
    }
    if (p_.bias) out.push_back(TileOp::load({TensorId::bias, b, 0, 1, n0, nr}, OnChip::reg));
    TileOp sum;
    sum.kind = OpKind::compute;
    sum.compute = ComputeKind::splitk_reduce;
    sum.tile = {TensorId::Y, b, m0, mr, n0, nr};
    sum.fp32_flops = (split_ - 1 + (p_.bias ? 1 : 0)) * mr * nr;
    out.push_back(sum);
    out.push_back(TileOp::store(sum.tile, OnChip::reg));
  }

  // The (M tile, N tile) CTA `cta` computes. Ungrouped, the M tile is fastest. Grouped by G, the
  // CTAs run through groups of G rows of tiles (the last group may be shorter), each group's
  // tiles with its M tile fastest: a group is G x tn CTAs, then the next.
  std::pair<std::int64_t, std::int64_t> tile_of(std::int64_t cta) const {
    if (t_.group_m <= 0 || t_.group_m >= tm_) return {cta % tm_, cta / tm_};
    const std::int64_t per_group = t_.group_m * tn_, first = (cta / per_group) * t_.group_m;
    const std::int64_t rows = std::min(t_.group_m, tm_ - first), in_group = cta % per_group;
    return {first + in_group % rows, in_group / rows};
  }

  // Operand bytes the tensor cores read from shared memory for an (m x k)(k x n) chunk. wgmma
  // (one warpgroup, m64 instructions across the tile's N): every 64-row slice of X is read once
  // and the W chunk once per slice. mma.sync: warp tiles of 64 x 32, as the standard attention
  // GEMMs (algorithms/standard_tiles.hpp).
  std::int64_t smem_reads(std::int64_t m, std::int64_t n, std::int64_t k) const {
    const std::int64_t eb = dtype_bytes(p_.dtype);
    if (t_.instruction == TensorInstruction::wgmma) return (m + n * ceil_div(m, 64)) * k * eb;
    return standard_tiles::gemm_smem_reads(m, n, k, eb);
  }

  GemmProblem p_;
  GemmTiling t_;
  std::int64_t tm_, tn_, chunks_;
  std::int64_t split_chunks_;  // K chunks per split (the last split may have fewer)
  std::int64_t split_;         // splits of whole chunks: none is left empty
};

void check_positive(const char* what, std::int64_t v) {
  if (v <= 0) throw ConfigError(fmt::format("GEMM {} must be positive, got {}", what, v));
}

}  // namespace

std::int64_t gemm_smem_bytes(const GemmTiling& t, Dtype dtype) {
  return t.pipeline_stages * (t.bm + t.bn) * t.bk * dtype_bytes(dtype);
}

namespace {

// A tiling whose tile, cluster and split are set, completed: splits of whole K chunks, the
// pipeline stages (`stages` when requested), the shared-memory check.
GemmTiling completed(const HardwareProfile& hw, const GemmProblem& p, GemmTiling t, int stages) {
  check_positive("tile rows (BM)", t.bm);
  check_positive("tile columns (BN)", t.bn);
  check_positive("K chunk (BK)", t.bk);
  check_positive("threads per CTA", t.threads);
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  const std::int64_t chunks = ceil_div(p.k, t.bk);
  if (t.split_k > chunks) {
    throw ConfigError(fmt::format("GEMM {}: split-K {} exceeds the {} K chunks of {}", p.name,
                                  t.split_k, chunks, t.bk));
  }
  // Splits of whole chunks: ceil(chunks / split) each, so a split that would be left with none
  // is not one.
  t.split_k = static_cast<int>(ceil_div(chunks, ceil_div(chunks, std::max(1, t.split_k))));
  if (stages != 0) {
    t.pipeline_stages = stages;
    check_positive("pipeline stages", t.pipeline_stages);
  } else if (t.instruction == TensorInstruction::wgmma) {
    // cuBLAS's nvjet kernels fill shared memory with stages, less an epilogue buffer: their names
    // in the layer suites give 2-16 stages, each the most that fit in 227 KiB less 16 KiB.
    GemmTiling one_stage = t;
    one_stage.pipeline_stages = 1;
    t.pipeline_stages = static_cast<int>(std::clamp<std::int64_t>(
        (limit - kEpilogueSmemBytes) / gemm_smem_bytes(one_stage, p.dtype), 1, kMaxHopperStages));
  } else {
    // cuBLAS fills shared memory with stages; four 128 x 128 x 64 bf16 stages (128 KiB) fit on
    // the A100 and the H100 alike.
    while (t.pipeline_stages > 1 && gemm_smem_bytes(t, p.dtype) > limit) --t.pipeline_stages;
  }
  if (gemm_smem_bytes(t, p.dtype) > limit) {
    throw ConfigError(fmt::format(
        "GEMM {}: {} x {} x {} tiles with {} stage(s) need {} bytes of shared memory; {} allows {}",
        p.name, t.bm, t.bn, t.bk, t.pipeline_stages, gemm_smem_bytes(t, p.dtype), hw.name, limit));
  }
  return t;
}

// The tile choice of one GEMM on one machine, remembered for the process: on Hopper a small GEMM's
// choice times up to 8 candidates on the engine (about 0.1 s each for a decode step's GEMMs), and
// a layer sweep over context or batch, a Python session, or the tests ask for the same GEMMs again
// and again. The key is everything the choice reads: the profile's values (not its name), the
// problem's sizes (its batch too), type and bias, and the tiling fixed before the choice.
class GemmChoiceMemo {
 public:
  using Key = std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int,
                         bool, std::int64_t, int, std::int64_t, int, int, int>;

  // The cluster and `stages` as requested (0: chosen with the tile, or filling shared memory).
  static Key key(const HardwareProfile& hw, const GemmProblem& p, const GemmTiling& t,
                 int cluster_m, int cluster_n, int stages) {
    return {profile_fingerprint(hw),
            p.batch,
            p.m,
            p.n,
            p.k,
            static_cast<int>(p.dtype),
            p.bias,
            t.bk,
            t.threads,
            t.group_m,
            cluster_m,
            cluster_n,
            stages};
  }

  template <typename Choose>
  GemmChoice get(const Key& k, Choose&& choose) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = memo_.find(k); it != memo_.end()) return it->second;
    }
    const GemmChoice c = choose();  // outside the lock: sweeps choose on several threads
    const std::lock_guard<std::mutex> lock(mutex_);
    if (memo_.size() >= kMaxEntries) memo_.clear();  // a bound, not a cache policy
    memo_.emplace(k, c);
    return c;
  }

 private:
  static constexpr std::size_t kMaxEntries = 4096;
  std::mutex mutex_;
  std::map<Key, GemmChoice> memo_;
};

GemmChoiceMemo& gemm_choice_memo() {
  static GemmChoiceMemo memo;
  return memo;
}

}  // namespace

namespace {

// A GPU with wgmma (Hopper) chooses the tile, cluster and split-K as cuBLAS does unless the tile or
// the split is requested.
bool chooses_tile(const HardwareProfile& hw, const GemmTilingRequest& req) {
  return hw.compute.wgmma_latency_cycles.value > 0 && req.bm == 0 && req.bn == 0 &&
         req.split_k == 0;
}

}  // namespace

std::int64_t max_gemm_bk(const HardwareProfile& hw, Dtype dtype, const GemmTilingRequest& req) {
  if (chooses_tile(hw, req)) return max_chosen_gemm_bk(hw, dtype);
  const GemmTiling defaults;
  const std::int64_t bm = req.bm > 0 ? req.bm : defaults.bm, bn = req.bn > 0 ? req.bn : defaults.bn;
  return hw.sm.smem_per_cta_max_bytes.value / ((bm + bn) * dtype_bytes(dtype));  // one stage
}

GemmTiling resolve_gemm_tiling(const HardwareProfile& hw, const GemmProblem& p,
                               const GemmTilingRequest& req) {
  GemmTiling t;
  if (req.group_m < 0) {
    throw ConfigError(
        fmt::format("GEMM M-tile group must be 0 (the default) or positive, got {}", req.group_m));
  }
  if (req.cluster_m < 0) {
    throw ConfigError(fmt::format(
        "GEMM cluster along M must be 0 (the default) or positive, got {}", req.cluster_m));
  }
  if (req.cluster_n < 0) {
    throw ConfigError(fmt::format(
        "GEMM cluster along N must be 0 (the default) or positive, got {}", req.cluster_n));
  }
  if (req.split_k < 0) {
    throw ConfigError(
        fmt::format("GEMM split-K must be 0 (the default) or positive, got {}", req.split_k));
  }
  // A GPU without wgmma (Ampere: its profile gives no wgmma latency) runs mma.sync.
  t.instruction = hw.compute.wgmma_latency_cycles.value > 0 ? TensorInstruction::wgmma
                                                            : TensorInstruction::mma_sync;
  // cuBLAS's persistent Hopper kernels walk their tiles in swizzled groups: with 8 M tiles a
  // group, the layer suites' 8192-token GEMMs read 0.9-1.5x the DRAM bytes measured, against
  // 1.5-3.6x with the M tile fastest over the whole of M (CALIBRATION.md, "Tiles that fill the
  // GPU").
  if (t.instruction == TensorInstruction::wgmma) t.group_m = 8;
  if (req.group_m != 0) t.group_m = req.group_m;
  if (req.bk != 0) t.bk = req.bk;
  if (req.threads != 0) t.threads = req.threads;
  if (req.cluster_m != 0) t.cluster_m = req.cluster_m;
  if (req.cluster_n != 0) t.cluster_n = req.cluster_n;
  if (chooses_tile(hw, req)) {
    check_positive("K chunk (BK)", t.bk);
    if (t.bk > max_chosen_gemm_bk(hw, p.dtype)) {
      throw ConfigError(fmt::format(
          "GEMM {}: a K chunk (BK) of {} leaves no tile whose two stages fit in {}'s {} bytes of "
          "shared memory per CTA (BK at most {})",
          p.name, t.bk, hw.name, hw.sm.smem_per_cta_max_bytes.value,
          max_chosen_gemm_bk(hw, p.dtype)));
    }
    // A side of the cluster requested, the chosen other side is what a cluster leaves it
    // (--gemm-cluster-m 8 with the choice's 4 along N was a cluster of 32 CTAs).
    const auto side = [](int requested, int chosen, int other_requested) {
      if (requested != 0) return requested;
      return other_requested > 0 ? std::min(chosen, std::max(1, kMaxClusterCtas / other_requested))
                                 : chosen;
    };
    const GemmTimer engine_time = [&](const GemmChoice& c) {
      GemmTiling x = t;
      x.bm = c.bm;
      x.bn = c.bn;
      x.cluster_m = side(req.cluster_m, c.cluster_m, req.cluster_n);
      x.cluster_n = side(req.cluster_n, c.cluster_n, req.cluster_m);
      x.split_k = c.split_k;
      EngineOptions boost;
      boost.sm_clock_mhz = hw.sm.boost_clock_mhz.value;
      // Simulated in full: candidates within 1% count as equal, and the extrapolation of their
      // K loops may move a time by up to that much, which would change the tile chosen.
      boost.exact = true;
      return run_schedule(hw, *make_gemm_schedule(p, completed(hw, p, x, req.pipeline_stages)),
                          boost)
          .time_s;
    };
    const GemmChoice c = gemm_choice_memo().get(
        GemmChoiceMemo::key(hw, p, t, req.cluster_m, req.cluster_n, req.pipeline_stages),
        [&] { return choose_gemm_tiling(hw, p, t.bk, engine_time); });
    t.bm = c.bm;
    t.bn = c.bn;
    t.cluster_m = side(req.cluster_m, c.cluster_m, req.cluster_n);
    t.cluster_n = side(req.cluster_n, c.cluster_n, req.cluster_m);
    t.split_k = c.split_k;
  }
  if (req.bm != 0) t.bm = req.bm;
  if (req.bn != 0) t.bn = req.bn;
  if (req.split_k != 0) t.split_k = req.split_k;
  // Clusters and their TMA multicast are Hopper's: on a GPU without them each CTA loads its own
  // operands (the schedule would share them).
  if (t.instruction != TensorInstruction::wgmma && (t.cluster_m > 1 || t.cluster_n > 1)) {
    throw ConfigError(fmt::format(
        "GEMM {}: a cluster of {} x {} CTAs, but {} has no thread-block clusters (no TMA "
        "multicast: a Hopper feature); clusters must be 1",
        p.name, t.cluster_m, t.cluster_n, hw.name));
  }
  if (static_cast<std::int64_t>(t.cluster_m) * t.cluster_n > kMaxClusterCtas) {
    throw ConfigError(fmt::format(
        "GEMM {}: a cluster of {} x {} CTAs; a thread-block cluster holds at most {} (CUDA's "
        "portable size)",
        p.name, t.cluster_m, t.cluster_n, kMaxClusterCtas));
  }
  return completed(hw, p, t, req.pipeline_stages);
}

std::unique_ptr<Schedule> make_gemm_schedule(const GemmProblem& p, const GemmTiling& t) {
  check_positive("M", p.m);
  check_positive("N", p.n);
  check_positive("K", p.k);
  check_positive("batch", p.batch);
  check_positive("split-K", t.split_k);
  check_positive("cluster along M", t.cluster_m);  // the CTA's share divides by them
  check_positive("cluster along N", t.cluster_n);
  return std::make_unique<GemmSchedule>(p, t);
}

GemmBytes gemm_closed_form(const GemmProblem& p, const GemmTiling& t) {
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  const std::uint64_t eb = u(dtype_bytes(p.dtype));
  const std::uint64_t row_tiles = u(ceil_div(p.m, t.bm)), col_tiles = u(ceil_div(p.n, t.bn));
  GemmBytes b;
  // W once per cluster of M tiles and X once per cluster of N tiles (the members' shares
  // together make one tile).
  const std::uint64_t cm = u(std::max(1, t.cluster_m)), cn = u(std::max(1, t.cluster_n));
  const std::uint64_t w_reads = (row_tiles + cm - 1) / cm, x_reads = (col_tiles + cn - 1) / cn;
  b.read = u(p.m) * u(p.k) * eb * x_reads + u(p.n) * u(p.k) * eb * w_reads;
  b.write = u(p.m) * u(p.n) * eb;
  const std::uint64_t chunks = u(ceil_div(p.k, t.bk));
  const std::uint64_t per_split =
      (chunks + u(std::max(1, t.split_k)) - 1) / u(std::max(1, t.split_k));
  const std::uint64_t splits = (chunks + per_split - 1) / per_split;
  if (splits == 1) {
    if (p.bias) b.read += u(p.n) * eb * row_tiles;
  } else {
    // Each split's fp32 partial, written and read back by the reduction, whose 16-row tiles read
    // the bias once each.
    const std::uint64_t partials = splits * u(p.m) * u(p.n) * 4;
    b.read += partials;
    b.write += partials;
    if (p.bias) b.read += u(p.n) * eb * u(ceil_div(p.m, kReduceRows));
  }
  // A batch: its members share nothing.
  b.read *= u(p.batch);
  b.write *= u(p.batch);
  return b;
}

}  // namespace iosim
