// The words of a trace: the line that describes each op, and the numbers in it.
#include <fmt/format.h>

#include "teach/trace.hpp"

namespace iosim::teach {

std::string thousands(std::uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string s;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 10 * 1024) return fmt::format("{} B", bytes);
  if (bytes < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

namespace {

std::string region(const TileRef& t) {
  std::string s = fmt::format("{}[{}:{}, {}:{}]", tensor_name(t.tensor), t.row0, t.row0 + t.rows,
                              t.col0, t.col0 + t.cols);
  if (t.matrix > 0) s += fmt::format(" of matrix {}", t.matrix);
  return s;
}

std::string compute_words(const TileOp& op) {
  const TileRef& t = op.tile;
  const std::string rows = fmt::format("query rows {}:{}", t.row0, t.row0 + t.rows);
  const std::string tile = fmt::format("{} x key columns {}:{}", rows, t.col0, t.col0 + t.cols);
  switch (op.compute) {
    case ComputeKind::init_state:
      return "O := 0, m := -inf, l := 0 for " + rows;
    case ComputeKind::scores:
      return "S = scale * Q K^T for " + tile;
    case ComputeKind::scores_accumulate:
      return "S += scale * Q K^T (a further slice of the head dimension) for " + tile;
    case ComputeKind::apply_mask:
      return "mask: S := -inf where a score is hidden, " + tile;
    case ComputeKind::softmax_rows:
      return "P = softmax(S) over whole rows, " + rows;
    case ComputeKind::apply_dropout:
      return "dropout: P_drop = P * keep / (1 - p), " + tile;
    case ComputeKind::online_softmax:
      return "online softmax: m_new = max(m, rowmax S), P = e^(S - m_new), "
             "l = e^(m - m_new) l + rowsum P, O *= e^(m - m_new); " +
             tile;
    case ComputeKind::accumulate_pv:
      return "O += P V, " + tile;
    case ComputeKind::finalize:
      return "O := O / l, L := m + log l for " + rows;
    case ComputeKind::flash1_update:
      return "combine with this K/V block: m_new = max(m, rowmax S), "
             "l_new = e^(m - m_new) l + rowsum e^(S - m_new), "
             "O = (l e^(m - m_new) O + e^(S - m_new) V) / l_new; " +
             tile;
    case ComputeKind::zero_grad:
      return fmt::format("{} := 0 on chip, rows {}:{}", tensor_name(t.tensor), t.row0,
                         t.row0 + t.rows);
    case ComputeKind::row_dot:
      return "D = rowsum(dO * O) for " + rows;
    case ComputeKind::recompute_p:
      return "P = e^(S - L), recomputed from the saved log-sum-exp, " + tile;
    case ComputeKind::recompute_p_ml:
      return "P = e^(S - m) / l, recomputed from the saved m and l, " + tile;
    case ComputeKind::accumulate_dv:
      return "dV += P^T dO, " + tile;
    case ComputeKind::grad_p:
      return "dP = dO V^T, " + tile;
    case ComputeKind::grad_p_accumulate:
      return "dP += dO V^T (a further slice of the head dimension), " + tile;
    case ComputeKind::dropout_grad:
      return "dP := dP * keep / (1 - p), " + tile;
    case ComputeKind::grad_s:
      return "dS = P * (dP - D), " + tile;
    case ComputeKind::softmax_grad_rows:
      return "dS = P * (dP - rowsum(P * dP)) over whole rows, " + rows;
    case ComputeKind::mask_grad:
      return "dS := 0 where a score is hidden, " + tile;
    case ComputeKind::accumulate_dq:
      return "dQ += scale * dS K, " + tile;
    case ComputeKind::dq_partial:
      return "dQaccum = scale * dS K (this K/V block's share), " + tile;
    case ComputeKind::accumulate_dk:
      return "dK += scale * dS^T Q, " + tile;
    case ComputeKind::convert_dq:
      return fmt::format("dQ := dQaccum (fp32 to the element type), rows {}:{}", t.row0,
                         t.row0 + t.rows);
    case ComputeKind::finalize_partial:
      return "partial_O = O / l, partial_lse = m + log l for " + rows;
    case ComputeKind::combine_partial:
      return "combine a split: m_new = max(m, lse), O and l rescaled by e^(m - m_new) and "
             "the split's e^(lse - m_new) partial_O added, " +
             rows;
    // A layer's other ops (transformer/) are not traced by explain; worded for completeness.
    case ComputeKind::matmul:
      return fmt::format("Y = X W^T, rows {}:{}", t.row0, t.row0 + t.rows);
    case ComputeKind::matmul_accumulate:
      return fmt::format("Y += X W^T (a further chunk of K), rows {}:{}", t.row0, t.row0 + t.rows);
    case ComputeKind::norm_rows:
      return fmt::format("Y = norm(X) * W, rows {}:{}", t.row0, t.row0 + t.rows);
    case ComputeKind::residual_add:
      return fmt::format("Y = X + R, rows {}:{}", t.row0, t.row0 + t.rows);
    case ComputeKind::activation:
      return fmt::format("Y = act(X), rows {}:{}", t.row0, t.row0 + t.rows);
    case ComputeKind::splitk_reduce:
      return fmt::format("Y = sum of the split-K partials, rows {}:{}", t.row0, t.row0 + t.rows);
  }
  return "compute";
}

}  // namespace

std::string describe(const TraceStep& step) {
  const TileOp& op = step.op;
  const char* chip = op.on_chip == OnChip::smem ? "shared memory" : "registers";
  const std::uint64_t bytes = step.bytes.hbm_two_level;
  switch (op.kind) {
    case OpKind::load:
      return fmt::format("load {} ({} x {}, {}): HBM -> {}{}{}", region(op.tile), op.tile.rows,
                         op.tile.cols, human_bytes(bytes), chip,
                         op.append ? ", below the rows already there (a gather)" : "",
                         op.in_step ? ", issued inside the step" : "");
    case OpKind::store:
      return fmt::format("store {} ({} x {}, {}): {} -> HBM", region(op.tile), op.tile.rows,
                         op.tile.cols, human_bytes(bytes), chip);
    case OpKind::reduce:
      return fmt::format(
          "atomic add into {} ({} x {}): the L2 reads the old value and keeps the sum "
          "(two-level: {} read + written)",
          region(op.tile), op.tile.rows, op.tile.cols, human_bytes(bytes / 2));
    case OpKind::compute: {
      std::string s = compute_words(op);
      if (op.tensor_flops > 0) s += fmt::format(" ({} tensor-core FLOPs)", op.tensor_flops);
      return s;
    }
  }
  return {};
}

}  // namespace iosim::teach
