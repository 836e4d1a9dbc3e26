#include "teach/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "algorithms/compute_ops.hpp"
#include "numerics/numeric_executor.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/memory_budget.hpp"
#include "sim/base/run_control.hpp"

namespace iosim::teach {
namespace {

using Key = std::pair<std::size_t, std::int64_t>;  // (kernel, cta)

LevelBytes level_totals(const Counters& c, bool l2_on) {
  LevelBytes b;
  if (l2_on) {
    b.l2 = c.l2.read_total() + c.l2.write_total();
    b.hbm = c.hbm.read_total() + c.hbm.write_total();
  } else {
    b.hbm_two_level = c.hbm.read_total() + c.hbm.write_total();
  }
  return b;
}

LevelBytes minus(const LevelBytes& a, const LevelBytes& b) {
  return {a.hbm_two_level - b.hbm_two_level, a.l2 - b.l2, a.hbm - b.hbm};
}

// Called by the recorders before they keep step `recorded` (0-based): a stop (Ctrl-C, SIGTERM)
// is honoured here, and a trace past kMaxSteps or the memory budget is refused before it fills
// memory.
void count_step(std::size_t recorded) {
  run_control::check();
  if (recorded >= kMaxSteps) {
    throw ConfigError(fmt::format(
        "explain traces at most {} steps (tile operations); this problem has more: use larger "
        "--block-q / --block-kv, a shorter --seq, fewer heads or --pass fwd",
        kMaxSteps));
  }
  memory_budget::check(static_cast<double>((recorded + 1) * kStepBytes),
                       fmt::format("a trace of {} steps", recorded + 1),
                       "use larger --block-q / --block-kv, a shorter --seq, or raise --max-memory");
}

// Records the engine's operations in its order, each with the bytes it added at each level.
class EngineRecorder final : public OpObserver {
 public:
  explicit EngineRecorder(bool l2_on) : l2_on_(l2_on) {}

  struct Seen {
    std::size_t kernel;
    std::int64_t cta;
    int sm;
    std::size_t index;
    TileOp op;
    LevelBytes bytes;
  };
  std::vector<Seen> seen;

  void on_op(std::size_t kernel, std::int64_t cta, int sm, const TileOp& op,
             const Counters& kernel_counters) override {
    count_step(seen.size());
    if (kernel != kernel_) {  // a kernel's counters start at zero
      kernel_ = kernel;
      last_ = {};
    }
    const LevelBytes now = level_totals(kernel_counters, l2_on_);
    std::size_t& next = next_index_[{kernel, cta}];
    seen.push_back({kernel, cta, sm, next++, op, minus(now, last_)});
    last_ = now;
  }

 private:
  bool l2_on_;
  std::size_t kernel_ = static_cast<std::size_t>(-1);
  LevelBytes last_;
  std::map<Key, std::size_t> next_index_;
};

// The global region a buffer written by `op` corresponds to: score tiles (query rows x key
// columns) for S-shaped results, the query rows for per-row results, the key rows for dK, dV.
// O and its partials are value_dim() wide (a latent cache's latent_dim), the rest head_dim.
TileRef region_of(TensorId t, const TileOp& op, const AttentionProblem& p) {
  using T = TensorId;
  const TileRef& s = op.tile;
  const std::int64_t head_dim = p.head_dim;
  switch (t) {
    case T::S:
    case T::P:
    case T::P_drop:
    case T::dropout_mask:
    case T::dP:
    case T::dS:
      return {t, s.matrix, s.row0, s.rows, s.col0, s.cols};
    case T::m:
    case T::l:
    case T::L:
    case T::D:
    case T::partial_lse:
      return {t, s.matrix, s.row0, s.rows, 0, 1};
    case T::dK:
    case T::dV:
      // An op that writes its own tile's tensor (zeroing or converting a gradient) holds that
      // tile, the gradient's rows; the others' tile is the score tile, whose key columns are dK's
      // and dV's rows.
      if (compute_op_def(op.compute).writes_own_tile) {
        return {t, s.matrix, s.row0, s.rows, 0, head_dim};
      }
      return {t, s.matrix, s.col0, s.cols, 0, head_dim};
    case T::O:
    case T::partial_O:
      return {t, s.matrix, s.row0, s.rows, 0, p.value_dim()};
    default:
      return {t, s.matrix, s.row0, s.rows, 0, head_dim};
  }
}

// The outputs whose final stores are checked against the FP64 reference.
bool is_checked_output(TensorId t) {
  return t == TensorId::O || t == TensorId::dQ || t == TensorId::dK || t == TensorId::dV;
}

// Records, with --execute, the buffers each op wrote (and, for a store of O, the error).
class NumberRecorder final : public NumericObserver {
 public:
  struct Seen {
    std::vector<NumberTile> numbers;
    std::optional<double> max_error;
  };
  std::map<std::tuple<std::size_t, std::int64_t, std::size_t>, Seen> seen;
  struct Reference {
    std::vector<double> values;  // row-major
    std::int64_t cols = 0;
  };
  std::map<std::pair<TensorId, std::int64_t>, Reference> reference;  // (tensor, bh)
  // Rows of each matrix of O as the schedule declares it: N, or a packed group's g x N (the
  // reference is per query head, N rows; both lie in one flat row space).
  std::int64_t o_rows_per_matrix = 0;

  void on_reference(TensorId t, std::int64_t bh, const std::vector<double>& values, std::int64_t,
                    std::int64_t cols) override {
    reference[{t, bh}] = {values, cols};
  }

  // The exact value of element (row, col) of matrix `matrix` of output `t`, or none where no
  // reference holds it.
  std::optional<double> exact(TensorId t, std::int64_t matrix, std::int64_t row,
                              std::int64_t col) const {
    std::int64_t bh = matrix;
    if (t == TensorId::O && o_rows_per_matrix > 0) {
      const auto first = reference.find({t, 0});
      if (first == reference.end() || first->second.cols == 0) return std::nullopt;
      const std::int64_t head_rows =
          static_cast<std::int64_t>(first->second.values.size()) / first->second.cols;
      if (head_rows == 0) return std::nullopt;
      const std::int64_t flat = matrix * o_rows_per_matrix + row;
      bh = flat / head_rows;
      row = flat % head_rows;
    }
    const auto ref = reference.find({t, bh});
    if (ref == reference.end()) return std::nullopt;
    const Reference& r = ref->second;
    const std::int64_t at = row * r.cols + col;
    if (row < 0 || col < 0 || col >= r.cols || at >= static_cast<std::int64_t>(r.values.size())) {
      return std::nullopt;
    }
    return r.values[static_cast<std::size_t>(at)];
  }

  void on_op(std::size_t kernel, std::int64_t cta, std::size_t index, const TileOp& op,
             const std::function<MatrixView(TensorId)>& on_chip) override {
    count_step(ops_++);
    Seen s;
    const MatrixView m_now = on_chip(TensorId::m);
    std::vector<double>& m_before = m_[{kernel, cta}];
    if (index == 0) m_before.clear();
    if (op.kind == OpKind::compute) {
      const ComputeOpDef& def = compute_op_def(op.compute);
      const bool rescales = def.rescales;
      if (rescales) {
        s.numbers.push_back(mark_unseen(tile("m before", m_before, m_now.rows, 1), m_before));
      }
      for (TensorId t : def.fills_constants ? std::vector<TensorId>{} : written_by(op)) {
        const MatrixView v = on_chip(t);
        NumberTile written = tile(std::string(tensor_name(t)), v);
        if (t == TensorId::m) {
          const std::vector<double> m_shown = written.values;
          written = mark_unseen(std::move(written), m_shown);
        }
        if (v.rows > 0) s.numbers.push_back(std::move(written));
        if (t == TensorId::m && rescales &&
            static_cast<std::int64_t>(m_before.size()) == m_now.rows) {
          // The factor O and l were multiplied by: e^(m_old - m_new) (0 when m was -inf).
          std::vector<double> factor;
          for (std::int64_t i = 0; i < m_now.rows; ++i) {
            factor.push_back(std::exp(m_before[static_cast<std::size_t>(i)] - m_now.at(i, 0)));
          }
          NumberTile rescale =
              mark_unseen(tile("rescale e^(m before - m)", factor, m_now.rows, 1), m_before);
          if (std::find(rescale.unseen.begin(), rescale.unseen.end(), true) !=
              rescale.unseen.end()) {
            rescale.note =
                "'-' = no score seen yet in the row: m starts at -inf and l at 0, so the "
                "first rescale factor e^(m before - m) is 0 by definition (nothing to rescale)";
          }
          s.numbers.push_back(std::move(rescale));
        }
      }
    }
    const TensorId out = op.tile.tensor;
    if (op.kind == OpKind::store && is_checked_output(out)) {
      const MatrixView v = on_chip(out);
      std::vector<double> exact_values;
      double err = 0.0;
      bool all_known = v.rows == op.tile.rows && v.cols == op.tile.cols;
      for (std::int64_t i = 0; all_known && i < op.tile.rows; ++i) {
        for (std::int64_t j = 0; all_known && j < op.tile.cols; ++j) {
          const std::optional<double> x =
              exact(out, op.tile.matrix, op.tile.row0 + i, op.tile.col0 + j);
          all_known = x.has_value();
          if (!all_known) break;
          exact_values.push_back(*x);
          err = std::max(err, std::fabs(static_cast<double>(v.at(i, j)) - *x));
        }
      }
      if (all_known) {
        const std::string name(tensor_name(out));
        s.numbers.push_back(tile(name, v));
        s.numbers.push_back(tile(name + " exact (FP64)", exact_values, op.tile.rows, op.tile.cols));
        s.max_error = err;
      }
    }
    m_before.assign(static_cast<std::size_t>(m_now.rows), 0.0);
    for (std::int64_t i = 0; i < m_now.rows; ++i) {
      m_before[static_cast<std::size_t>(i)] = m_now.at(i, 0);
    }
    if (!s.numbers.empty()) seen[{kernel, cta, index}] = std::move(s);
  }

 private:
  static NumberTile tile(std::string name, const MatrixView& v) {
    std::vector<double> all;
    for (std::int64_t i = 0; i < v.rows; ++i)
      for (std::int64_t j = 0; j < v.cols; ++j) all.push_back(v.at(i, j));
    return tile(std::move(name), all, v.rows, v.cols);
  }
  static NumberTile tile(std::string name, const std::vector<double>& row_major, std::int64_t rows,
                         std::int64_t cols) {
    NumberTile t;
    t.name = std::move(name);
    t.rows = rows;
    t.cols = cols;
    t.shown_rows = std::min(rows, kMaxShown);
    t.shown_cols = std::min(cols, kMaxShown);
    if (static_cast<std::int64_t>(row_major.size()) < rows * cols) {
      t.shown_rows = t.shown_cols = 0;  // nothing there yet (m before the first block)
      return t;
    }
    for (std::int64_t i = 0; i < t.shown_rows; ++i)
      for (std::int64_t j = 0; j < t.shown_cols; ++j)
        t.values.push_back(row_major[static_cast<std::size_t>(i * cols + j)]);
    return t;
  }
  // Marks the shown values of a column tile whose row's running max in `m` (row-major, one
  // value a row) is still -inf: no score of that row seen yet.
  static NumberTile mark_unseen(NumberTile t, const std::vector<double>& m) {
    if (t.values.empty() || t.cols != 1) return t;
    t.unseen.assign(t.values.size(), false);
    bool any = false;
    for (std::size_t i = 0; i < t.values.size() && i < m.size(); ++i) {
      t.unseen[i] = std::isinf(m[i]) && m[i] < 0;
      any = any || t.unseen[i];
    }
    if (!any) t.unseen.clear();
    return t;
  }
  std::map<Key, std::vector<double>> m_;
  std::size_t ops_ = 0;
};

// What a CTA holds on chip after `op`, given what it held before.
void track_on_chip(std::vector<OnChipTile>& held, const TileOp& op, const AttentionProblem& p) {
  auto find = [&](TensorId t) {
    return std::find_if(held.begin(), held.end(),
                        [&](const OnChipTile& h) { return h.tile.tensor == t; });
  };
  if (op.kind == OpKind::load) {
    const auto it = find(op.tile.tensor);
    if (it == held.end()) {
      held.push_back({op.tile, op.on_chip, {op.tile}});
    } else if (op.append) {
      it->tile.rows += op.tile.rows;  // a gathered page goes below the rows on chip
      it->pieces.push_back(op.tile);
    } else {
      *it = {op.tile, op.on_chip, {op.tile}};
    }
    return;
  }
  if (op.kind != OpKind::compute) return;
  for (TensorId t : written_by(op)) {
    const TileRef region = region_of(t, op, p);
    const auto it = find(t);
    if (it == held.end()) {
      held.push_back({region, OnChip::reg, {region}});
    } else {
      it->tile = region;
      it->pieces = {region};
    }
  }
}

}  // namespace

void check_explainable(const RunRequest& r) {
  const AttentionProblem& p = r.problem;
  auto refuse = [](const std::string& flag, std::int64_t value, std::int64_t limit) {
    throw ConfigError(fmt::format(
        "explain traces tiny problems, one step per tile operation: {} {} is larger than the "
        "{} allowed",
        flag, value, limit));
  };
  if (p.seq > kMaxSeq) refuse("--seq", p.seq, kMaxSeq);
  if (p.seq_kv > kMaxSeq) refuse("--seq-kv", p.seq_kv, kMaxSeq);
  if (p.head_dim > kMaxHeadDim) refuse("--head-dim", p.head_dim, kMaxHeadDim);
  if (p.bh() > kMaxMatrices) refuse("--batch x --heads", p.bh(), kMaxMatrices);
  // A ragged run executes each sequence's own schedule (api/simulate.cpp), whose tiles are not
  // the traced launch's: the per-tile errors would be put on the wrong steps.
  if (p.ragged() && r.execute) {
    throw ConfigError(
        "explain --execute with --seq-lens: a ragged batch is executed per sequence, not step by "
        "step; trace it without --execute, or run it with iosim run --execute");
  }
}

Trace build_trace(const HardwareProfile& profile, const RunRequest& request) {
  check_explainable(request);
  const bool l2_on = request.engine.l2_enabled;
  EngineRecorder main_run(l2_on), other_run(!l2_on);
  NumberRecorder numbers;
  const AttentionProblem& problem = request.problem;
  numbers.o_rows_per_matrix =
      problem.packs_query_group() ? problem.group() * problem.seq : problem.seq;
  RunRequest main_request = request;
  main_request.engine.observer = &main_run;
  main_request.numeric_observer = &numbers;
  RunRequest other_request = request;
  other_request.engine.l2_enabled = !l2_on;
  other_request.engine.observer = &other_run;
  other_request.execute = false;

  Trace trace;
  trace.report = simulate(profile, main_request);
  if (!trace.report.feasible()) {
    throw ConfigError("infeasible configuration: " + trace.report.infeasible_reason);
  }
  trace.other = simulate(profile, other_request);
  // Observers are not owned by the reports: forget them.
  trace.report.request.engine.observer = nullptr;
  trace.report.request.numeric_observer = nullptr;
  trace.other.request.engine.observer = nullptr;
  for (const KernelResult& k : trace.report.engine.kernels) trace.kernels.push_back(k.spec);
  if (trace.report.numerics.executed) trace.max_error = trace.report.numerics.max_abs_error;

  // The other view's bytes of each op, by (kernel, CTA, index): the same op in both runs.
  std::map<std::tuple<std::size_t, std::int64_t, std::size_t>, LevelBytes> other_bytes;
  for (const auto& s : other_run.seen) other_bytes[{s.kernel, s.cta, s.index}] = s.bytes;
  ensure(other_run.seen.size() == main_run.seen.size(),
         "the L2-on and L2-off runs emitted {} and {} operations", main_run.seen.size(),
         other_run.seen.size());

  std::map<Key, std::size_t> last_index;
  for (const auto& s : main_run.seen) {
    std::size_t& last = last_index[{s.kernel, s.cta}];
    last = std::max(last, s.index);
  }
  // A store of an output is checked against the exact one only where it is final:
  // FlashAttention-1 stores each O tile once per K/V block (and its backward each dQ tile), and
  // only the last holds the result.
  using Region = std::tuple<TensorId, std::int64_t, std::int64_t, std::int64_t>;
  auto region = [](const TileOp& op) {
    return Region{op.tile.tensor, op.tile.matrix, op.tile.row0, op.tile.col0};
  };
  std::map<Region, std::size_t> last_store;
  for (std::size_t i = 0; i < main_run.seen.size(); ++i) {
    const TileOp& op = main_run.seen[i].op;
    if (op.kind == OpKind::store && is_checked_output(op.tile.tensor)) last_store[region(op)] = i;
  }
  std::map<Key, std::vector<OnChipTile>> held;
  trace.extents.resize(kTensorCount);
  LevelBytes total;
  // The paper's lines are the hook's of the algorithm that ran (a kernel description's: those of
  // the built-in algorithm its dataflows follow).
  const Algorithm algorithm = request_algorithm(profile, request, builtin_registry());
  for (std::size_t i = 0; i < main_run.seen.size(); ++i) {
    const EngineRecorder::Seen& s = main_run.seen[i];
    TraceStep step;
    step.kernel = s.kernel;
    step.cta = s.cta;
    step.sm = s.sm;
    step.index = s.index;
    step.op = s.op;
    if (algorithm.paper_step) step.paper = algorithm.paper_step(trace.kernels[s.kernel].name, s.op);
    step.bytes = s.bytes;
    step.bytes += other_bytes.at({s.kernel, s.cta, s.index});
    total += step.bytes;
    step.total = total;
    std::vector<OnChipTile>& on_chip = held[{s.kernel, s.cta}];
    track_on_chip(on_chip, s.op, request.problem);
    if (s.op.kind == OpKind::load) step.changed = {s.op.tile.tensor};
    if (s.op.kind == OpKind::compute) step.changed = written_by(s.op);
    step.on_chip = on_chip;
    step.last_of_cta = s.index == last_index[{s.kernel, s.cta}];
    if (step.last_of_cta) held.erase({s.kernel, s.cta});
    if (const auto it = numbers.seen.find({s.kernel, s.cta, s.index}); it != numbers.seen.end()) {
      step.numbers = it->second.numbers;
      step.max_error = it->second.max_error;
      if (step.max_error && last_store.at(region(s.op)) != i) {
        step.max_error.reset();  // not final yet: drop the comparison
        std::erase_if(step.numbers, [](const NumberTile& t) {
          return t.name.find(" exact") != std::string::npos;
        });
      }
    }
    if (s.op.kind != OpKind::compute) {
      Trace::Extent& e = trace.extents[index_of(s.op.tile.tensor)];
      e.rows = std::max(e.rows, s.op.tile.row0 + s.op.tile.rows);
      e.cols = std::max(e.cols, s.op.tile.col0 + s.op.tile.cols);
      e.matrices = std::max(e.matrices, s.op.tile.matrix + 1);
    }
    trace.steps.push_back(std::move(step));
  }
  return trace;
}

LevelBytes run_totals(const Trace& trace) {
  const bool on = trace.report.request.engine.l2_enabled;
  const Counters& c2 = (on ? trace.other : trace.report).engine.total;
  const Counters& c3 = (on ? trace.report : trace.other).engine.total;
  return {c2.hbm.read_total() + c2.hbm.write_total(), c3.l2.read_total() + c3.l2.write_total(),
          c3.hbm.read_total() + c3.hbm.write_total() + c3.l2_dirty_at_end_bytes};
}

}  // namespace iosim::teach
