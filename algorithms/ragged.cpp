#include "algorithms/ragged.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "algorithms/kernel_description.hpp"
#include "algorithms/passes.hpp"
#include "sim/base/errors.hpp"

namespace iosim {
namespace {

// Sequences with the same lengths share one planned schedule.
using Lengths = std::pair<std::int64_t, std::int64_t>;

class RaggedForward final : public Schedule {
 public:
  RaggedForward(const AttentionProblem& p, const Tiling& t,
                std::vector<std::unique_ptr<Schedule>> plans, std::vector<std::size_t> plan_of)
      : p_(p),
        t_(t),
        plans_(std::move(plans)),
        plan_of_(std::move(plan_of)),
        view_(QueryView::of(p, sequence_problem(p, 0).packs_query_group())),
        tiles_(ceil_div(view_.rows, t.block_q)) {}

  // Padded (B, H, max N, d) and (B, H_kv, max N_kv, d): see AttentionProblem::seq_lens. Packed
  // decode rows (every sequence one row): (B, H_kv, g, d), as a batched run at N = 1.
  std::vector<TensorDecl> tensors() const override { return view_.tensors(p_); }

  std::vector<KernelSpec> kernels() const override {
    KernelSpec k = plans_.front()->kernels().front();
    k.grid = view_.grid(p_, t_.block_q);
    return {k};
  }

  // No Repetition or steady parts: sequences differ, and the engine simulates every CTA and step.
  bool emit_cta_part(std::size_t, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    const std::int64_t qb = cta % tiles_, b = (cta / tiles_) % p_.batch;
    const std::int64_t h = cta / (tiles_ * p_.batch);
    const auto sb = static_cast<std::size_t>(b);
    const std::int64_t rows = (*p_.seq_lens)[sb] * (view_.packed ? p_.group() : 1);
    const std::int64_t own_tiles = ceil_div(rows, t_.block_q);
    if (qb >= own_tiles) return false;  // past its sequence's end: an empty CTA
    // The batch-1 schedule's grid is (own_tiles, 1, view heads): head h's query block qb.
    const std::size_t first = out.size();
    const bool more = plans_[plan_of_[sb]]->emit_cta_part(0, h * own_tiles + qb, part, out);
    // Its tensors' matrices are sequence 0's: move them to sequence b's.
    const std::int64_t q_shift = b * view_.heads, kv_shift = b * p_.kv_head_count();
    for (std::size_t i = first; i < out.size(); ++i) {
      TileRef& r = out[i].tile;
      r.matrix += r.tensor == TensorId::K || r.tensor == TensorId::V ? kv_shift : q_shift;
    }
    return more;
  }

 private:
  AttentionProblem p_;
  Tiling t_;
  std::vector<std::unique_ptr<Schedule>> plans_;
  std::vector<std::size_t> plan_of_;  // sequence -> its lengths' plan
  QueryView view_;                    // the query matrices: per query head, or packed per K/V head
  std::int64_t tiles_;                // query blocks of the longest sequence
};

bool same_tiles(const Tiling& a, const Tiling& b) {
  return a.block_q == b.block_q && a.block_kv == b.block_kv && a.threads == b.threads &&
         a.pipeline_stages == b.pipeline_stages && a.registers_per_thread == b.registers_per_thread;
}

}  // namespace

void check_ragged_kernel(const AttentionProblem& p, const KernelDescription& kernel) {
  if (!p.ragged()) return;
  if (p.pass != Pass::fwd) {
    throw ConfigError(fmt::format(
        "--seq-lens with --pass {}: a ragged batch is modelled for the forward only for now "
        "(--pass fwd)",
        pass_name(p.pass)));
  }
  if (kernel.forward != "query_stationary" || kernel.block_mask) {
    throw ConfigError(fmt::format(
        "--seq-lens: '{}' has no ragged (varlen) forward here; a ragged batch runs the "
        "query-stationary forward (flash2, flash3, or a kernel description whose forward is "
        "query_stationary, without a block mask)",
        kernel.name));
  }
}

Planned plan_ragged(const Algorithm& algorithm, const AttentionProblem& p,
                    const HardwareProfile& hw, const TilingRequest& req) {
  Planned out;
  std::map<Lengths, std::size_t> index;
  std::vector<std::unique_ptr<Schedule>> plans;
  std::vector<std::size_t> plan_of;
  for (std::size_t b = 0; b < p.seq_lens->size(); ++b) {
    const AttentionProblem one = sequence_problem(p, b);
    const auto [at, added] = index.try_emplace({one.seq, one.seq_kv}, plans.size());
    plan_of.push_back(at->second);
    if (!added) continue;
    Planned planned = algorithm.plan(one, hw, req);
    if (!planned.feasible()) {
      out.tiling = planned.tiling;
      out.infeasible_reason =
          fmt::format("sequence {} of the ragged batch (--seq {}, --seq-kv {}): {}", b, one.seq,
                      one.seq_kv, planned.infeasible_reason);
      return out;
    }
    if (plans.empty()) {
      out.tiling = planned.tiling;
    } else if (!same_tiles(planned.tiling, out.tiling)) {
      // One launch has one tiling; a planner that tiles by length has no varlen kernel here.
      out.infeasible_reason = fmt::format(
          "{} tiles sequence {} of the ragged batch ({} x {}) unlike the first ({} x {}): one "
          "varlen launch has one tiling; give --block-q and --block-kv",
          algorithm.name, b, planned.tiling.block_q, planned.tiling.block_kv, out.tiling.block_q,
          out.tiling.block_kv);
      return out;
    }
    const std::vector<KernelSpec> kernels = planned.schedule->kernels();
    const QueryView view = QueryView::of(one, one.packs_query_group());
    ensure(kernels.size() == 1 &&
               kernels.front().grid.count() == ceil_div(view.rows, out.tiling.block_q) * view.heads,
           "ragged: {}'s forward is not one kernel of a CTA per (query block, head)",
           algorithm.name);
    plans.push_back(std::move(planned.schedule));
  }
  out.schedule =
      std::make_unique<RaggedForward>(p, out.tiling, std::move(plans), std::move(plan_of));
  return out;
}

ReadWriteBytes ragged_closed_form(const Algorithm& algorithm, const AttentionProblem& p,
                                  const Tiling& t) {
  ReadWriteBytes total;
  for (std::size_t b = 0; b < p.seq_lens->size(); ++b) {
    total += algorithm.closed_form(sequence_problem(p, b), t, nullptr);
  }
  return total;
}

IoBounds ragged_io_bounds(const Algorithm& algorithm, const AttentionProblem& p, const Tiling& t,
                          std::int64_t sram_bytes) {
  IoBounds total;
  for (std::size_t b = 0; b < p.seq_lens->size(); ++b) {
    const AttentionProblem one = sequence_problem(p, b);
    const IoBounds s = io_bounds(one, algorithm.closed_form(one, t, nullptr), sram_bytes);
    total.compulsory_bytes += s.compulsory_bytes;
    total.closed_form_read_bytes += s.closed_form_read_bytes;
    total.closed_form_write_bytes += s.closed_form_write_bytes;
    total.closed_form_bytes += s.closed_form_bytes;
    total.lower_bound_bytes += s.lower_bound_bytes;
    total.lower_bound_formula_bytes += s.lower_bound_formula_bytes;
    // The regime is M against d^2, the same for every sequence.
    total.lower_bound_formula = "sum over sequences of " + s.lower_bound_formula;
  }
  return total;
}

}  // namespace iosim
