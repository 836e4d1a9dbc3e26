// The best tiling and the time-vs-tile heatmap of each problem of a sweep (reports/sweep_file.hpp).
#include <algorithm>
#include <set>
#include <tuple>

#include "reports/sweep_file.hpp"

namespace iosim {
namespace {

// The problem a row solves, without its tiling: rows with equal keys compete for best block.
// A split count is not tiling here: the report shows each one (a series in the charts).
auto problem_key(const SweepRow& r) {
  return std::tie(r.profile, r.algorithm, r.head_dim, r.seq, r.seq_kv, r.batch, r.heads, r.dtype,
                  r.pass, r.causal, r.mask, r.dropout, r.pattern, r.l2, r.cold_l2,
                  r.requested_clock_mhz, r.kv_heads, r.page_tokens, r.splits, r.window, r.kv_dtype,
                  r.latent_dim);
}

// Whether row `a` is faster than row `b` (ties: fewer HBM bytes).
bool faster(const SweepRow& a, const SweepRow& b) {
  return a.time_s < b.time_s || (a.time_s == b.time_s && a.hbm_bytes() < b.hbm_bytes());
}

// The rows of each problem (equal problem_key()), in best_blocks() order.
std::vector<std::vector<std::size_t>> problem_groups(const SweepData& data) {
  std::vector<std::size_t> order(data.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return problem_key(data.rows[a]) < problem_key(data.rows[b]);
  });
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || problem_key(data.rows[order[k]]) != problem_key(data.rows[order[k - 1]])) {
      out.emplace_back();
    }
    out.back().push_back(order[k]);
  }
  return out;
}

BestBlock best_of(const SweepData& data, const std::vector<std::size_t>& group) {
  BestBlock b;
  b.first = group.front();
  b.rows = group;
  for (const std::size_t i : group) {
    const SweepRow& r = data.rows[i];
    ++b.tried;
    if (!r.feasible) continue;
    if (b.feasible++ == 0) {
      b.by_hbm = b.by_time = i;
      continue;
    }
    const SweepRow& h = data.rows[b.by_hbm];
    if (r.hbm_bytes() < h.hbm_bytes() || (r.hbm_bytes() == h.hbm_bytes() && r.time_s < h.time_s)) {
      b.by_hbm = i;
    }
    if (faster(r, data.rows[b.by_time])) b.by_time = i;
  }
  return b;
}

}  // namespace

std::vector<BestBlock> best_blocks(const SweepData& data) {
  std::vector<BestBlock> out;
  for (const auto& group : problem_groups(data)) out.push_back(best_of(data, group));
  return out;
}

std::vector<TileHeatmap> tile_heatmaps(const SweepData& data) {
  std::vector<TileHeatmap> out;
  for (const auto& group : problem_groups(data)) {
    TileHeatmap h;
    h.best = best_of(data, group);
    std::set<std::int64_t> qs, kvs;
    for (const std::size_t i : group) {
      qs.insert(data.rows[i].block_q);
      kvs.insert(data.rows[i].block_kv);
    }
    h.block_q.assign(qs.begin(), qs.end());
    h.block_kv.assign(kvs.begin(), kvs.end());
    h.cells.resize(h.block_q.size() * h.block_kv.size());
    for (const std::size_t i : group) {
      const SweepRow& r = data.rows[i];
      const auto q = static_cast<std::size_t>(
          std::lower_bound(h.block_q.begin(), h.block_q.end(), r.block_q) - h.block_q.begin());
      const auto kv = static_cast<std::size_t>(
          std::lower_bound(h.block_kv.begin(), h.block_kv.end(), r.block_kv) - h.block_kv.begin());
      TileCell& c = h.cells[q * h.block_kv.size() + kv];
      // A tile's value is its fastest feasible row (other threads or stages may not fit).
      if (!c.tried || (r.feasible && (!c.feasible || faster(r, data.rows[c.row])))) {
        c.row = i;
        c.feasible = r.feasible;
      }
      c.tried = true;
    }
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace iosim
