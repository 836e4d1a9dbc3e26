#include "transformer/gemm_tile_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "algorithms/algorithm.hpp"
#include "sim/base/errors.hpp"
#include "sim/engine/rates.hpp"

namespace iosim {
namespace {

constexpr std::int64_t kMaxAccumulators = 128 * 256;  // fp32 accumulators of two warpgroups
constexpr int kMaxSplit = 16;
constexpr double kTie = 0.01;        // candidates this close to the best estimate are equal to it
constexpr std::size_t kTimed = 8;    // candidates timed on the engine
constexpr double kTimedWaves = 2.0;  // ... where the best needs at most this many waves
// The smallest candidate: 8 x 64 (or 64 x 8), one side wgmma's M.
constexpr std::int64_t kSmallestTileRowsPlusCols = 8 + 64;

}  // namespace

std::int64_t max_chosen_gemm_bk(const HardwareProfile& hw, Dtype dtype) {
  // Two stages of the smallest candidate, as the candidate loop below requires of every tile.
  return hw.sm.smem_per_cta_max_bytes.value / (2 * kSmallestTileRowsPlusCols * dtype_bytes(dtype));
}

GemmChoice estimate_gemm_tiling(const HardwareProfile& hw, const GemmProblem& p, std::int64_t bm,
                                std::int64_t bn, std::int64_t bk, int cluster_m, int cluster_n,
                                int split_k) {
  const detail::Rates r(hw, hw.sm.boost_clock_mhz.value, p.dtype, TensorInstruction::wgmma);
  const double eb = static_cast<double>(dtype_bytes(p.dtype));
  const std::int64_t tm = ceil_div(p.m, bm), tn = ceil_div(p.n, bn);
  const std::int64_t chunks = ceil_div(p.k, bk);
  const std::int64_t per_split = ceil_div(chunks, std::max(1, split_k));
  const std::int64_t splits = ceil_div(chunks, per_split);
  // A batch (GemmProblem::batch) is its members' CTAs in one grid, each member's bytes its own.
  const std::int64_t ctas = tm * tn * splits * p.batch;
  const double members = static_cast<double>(p.batch);
  const std::int64_t members_m = cluster_members(cluster_m, tm);
  const std::int64_t members_n = cluster_members(cluster_n, tn);
  // A cluster of more than 2 CTAs runs on the SMs its placement leaves (HardwareProfile::clusters).
  const std::int64_t sms =
      hw.clusters.sms_for(static_cast<int>(members_m * members_n), static_cast<int>(r.sm_count));
  const double waves = static_cast<double>(ceil_div(ctas, sms));
  const double rows = static_cast<double>(std::min(bm, p.m));
  const double cols = static_cast<double>(std::min(bn, p.n));
  const double kc = static_cast<double>(std::min(per_split * bk, p.k));
  const double cta_bytes =
      (rows / static_cast<double>(members_n) + cols / static_cast<double>(members_m)) * kc * eb;
  const double cta_time = std::max(2.0 * rows * cols * kc * r.per.tensor_flop,
                                   cta_bytes * r.per.port_byte) +
                          r.l2_latency_s;  // the pipeline's first chunk
  const double m = static_cast<double>(p.m), n = static_cast<double>(p.n);
  // Every CTA's loads: X once per cluster of N tiles and W once per cluster of M tiles, counting
  // the smaller last cluster of each side (3 M tiles in clusters of 2 read W twice, not 1.5x).
  const double l2_bytes = (m * static_cast<double>(ceil_div(tn, std::max(1, cluster_n))) +
                           n * static_cast<double>(ceil_div(tm, std::max(1, cluster_m)))) *
                          static_cast<double>(p.k) * eb * members;
  double hbm_bytes =
      (m * static_cast<double>(p.k) + n * static_cast<double>(p.k) + m * n) * eb * members;
  double reduce = 0.0;
  if (splits > 1) {
    // The partials go out and come back through L2 (HBM where they outgrow half of it), then the
    // reduction kernel's launch and its Y.
    const double partials = static_cast<double>(splits) * m * n * 4.0 * members;
    if (partials > 0.5 * static_cast<double>(hw.l2.size_bytes.value)) hbm_bytes += 2.0 * partials;
    reduce = (partials + m * n * eb * members) * r.per.l2_byte + r.l2_latency_s + r.launch_s;
  }
  GemmChoice c;
  c.bm = bm;
  c.bn = bn;
  c.cluster_m = cluster_m;
  c.cluster_n = cluster_n;
  c.split_k = static_cast<int>(splits);
  c.l2_bytes = static_cast<std::uint64_t>(l2_bytes);
  c.waves = waves;
  c.sm_fill = static_cast<double>(ctas) / (waves * r.sm_count);
  c.estimate_s =
      std::max({waves * cta_time, l2_bytes * r.per.l2_byte, hbm_bytes * r.per.hbm_byte}) +
      r.hbm_latency_s + reduce;
  return c;
}

GemmChoice choose_gemm_tiling(const HardwareProfile& hw, const GemmProblem& p, std::int64_t bk,
                              const GemmTimer& time) {
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  const std::int64_t eb = dtype_bytes(p.dtype);
  const std::int64_t chunks = ceil_div(p.k, bk);
  std::vector<GemmChoice> all;
  for (std::int64_t bm = 8; bm <= 128; bm *= 2) {
    if (bm / 2 >= p.m && bm > 8) break;  // a tile more than twice M's rows
    for (std::int64_t bn = 8; bn <= 256; bn += 8) {
      if (bm % 64 != 0 && bn % 64 != 0) continue;  // wgmma's M is 64 on one side
      if (bm * bn > kMaxAccumulators) continue;
      if (2 * (bm + bn) * bk * eb > limit) continue;  // two stages (max_chosen_gemm_bk)
      const int cluster_m = ceil_div(p.m, bm) >= 2 ? 2 : 1;
      for (const int cluster_n : {1, 2, 4}) {
        if (cluster_n > 1 && ceil_div(p.n, bn) < cluster_n) break;
        int last_splits = 0;
        for (int split = 1; split <= std::min<std::int64_t>(kMaxSplit, chunks); ++split) {
          GemmChoice c = estimate_gemm_tiling(hw, p, bm, bn, bk, cluster_m, cluster_n, split);
          if (c.split_k == last_splits) continue;  // the same whole-chunk split as the last
          last_splits = c.split_k;
          all.push_back(c);
        }
      }
    }
  }
  // A K chunk past max_chosen_gemm_bk() leaves no candidate (resolve_gemm_tiling() refuses it
  // first; --gemm-bk 1024 once reached the ranking below with none and crashed).
  if (all.empty()) {
    throw ConfigError(fmt::format(
        "GEMM {}: with a K chunk (BK) of {}, no tile's two stages fit in {}'s {} bytes of shared "
        "memory per CTA (BK at most {})",
        p.name, bk, hw.name, limit, max_chosen_gemm_bk(hw, p.dtype)));
  }
  // Ranked: estimates within kTie of the best are equal; then the fullest SMs, the fewest L2
  // bytes, no split, the earlier candidate (a total order: the choice does not depend on sort).
  double best = all.front().estimate_s;
  for (const GemmChoice& c : all) best = std::min(best, c.estimate_s);
  const auto tied = [&](const GemmChoice& c) { return c.estimate_s <= best * (1.0 + kTie); };
  // The SMs' fill at the estimate's resolution: whole percent, so that 98.1% and 98.8% (518 and
  // 5,344 CTAs of an LM head) do not decide between tiles whose L2 bytes differ by 2x.
  const auto fill_percent = [](const GemmChoice& c) { return std::floor(c.sm_fill / kTie); };
  std::stable_sort(all.begin(), all.end(), [&](const GemmChoice& a, const GemmChoice& b) {
    if (tied(a) != tied(b)) return tied(a);
    if (!tied(a) && a.estimate_s != b.estimate_s) return a.estimate_s < b.estimate_s;
    if (fill_percent(a) != fill_percent(b)) return fill_percent(a) > fill_percent(b);
    if (a.l2_bytes != b.l2_bytes) return a.l2_bytes < b.l2_bytes;
    return a.split_k < b.split_k;
  });
  if (!time || all.front().waves > kTimedWaves) return all.front();
  const std::size_t timed = std::min(kTimed, all.size());
  for (std::size_t i = 0; i < timed; ++i) all[i].engine_s = time(all[i]);
  std::size_t pick = 0;
  for (std::size_t i = 1; i < timed; ++i) {
    if (all[i].engine_s < all[pick].engine_s * (1.0 - kTie)) pick = i;
  }
  return all[pick];
}

}  // namespace iosim
