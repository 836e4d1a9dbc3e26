#include "algorithms/io_formulas.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "algorithms/closed_form_parts.hpp"
#include "sim/schedule/block_mask.hpp"

namespace iosim {
namespace {

using closed_form_parts::u;
using closed_form_parts::u64;

}  // namespace

IoBounds io_bounds(const AttentionProblem& p, const ReadWriteBytes& closed_form,
                   std::int64_t sram_bytes, const BlockMask* blocks) {
  const bool fwd = runs_forward(p.pass), bwd = runs_backward(p.pass);
  const u64 bh = u(p.bh()), bh_kv = u(p.bh_kv()), eb = u(p.elem_bytes()), d = u(p.head_dim);
  const u64 kv_eb = u(p.kv_elem_bytes());  // K and V as stored (--kv-dtype; else eb)
  IoBounds b;
  b.closed_form_read_bytes = closed_form.read;
  b.closed_form_write_bytes = closed_form.write;
  b.closed_form_bytes = b.closed_form_read_bytes + b.closed_form_write_bytes;

  // Compulsory: a forward reads Q, K, V and writes O; a backward reads Q, K, V, dO and writes
  // dQ, dK, dV. Block-sparse needs only the Q rows and K/V rows some nonzero block touches.
  u64 q_rows = u(p.seq), kv_rows = u(p.seq_kv);
  double covered = 1.0;  // fraction of the N x N_kv scores inside computed blocks
  if (blocks) {
    const std::int64_t block_q = blocks->block_q(), block_kv = blocks->block_kv();
    q_rows = kv_rows = 0;
    u64 scores = 0;
    std::vector<bool> column_used(static_cast<std::size_t>(blocks->cols()), false);
    for (std::int64_t i = 0; i < blocks->rows(); ++i) {
      bool row_used = false;
      const u64 qr = u(std::min(block_q, p.seq - i * block_q));
      for (std::int64_t j = 0; j < blocks->cols(); ++j) {
        if (!blocks->at(i, j)) continue;
        row_used = true;
        column_used[static_cast<std::size_t>(j)] = true;
        scores += qr * u(std::min(block_kv, p.seq_kv - j * block_kv));
      }
      if (row_used) q_rows += qr;
    }
    for (std::int64_t j = 0; j < blocks->cols(); ++j) {
      if (column_used[static_cast<std::size_t>(j)])
        kv_rows += u(std::min(block_kv, p.seq_kv - j * block_kv));
    }
    covered =
        static_cast<double>(scores) / (static_cast<double>(p.seq) * static_cast<double>(p.seq_kv));
  } else if (p.window > 0) {
    // A sliding window: the keys some row sees (one interval, the ends of a row's keys moving
    // right with the row), and the fraction of the scores inside the window as a block mask's s
    // (every row sees a key: validate_problem()).
    kv_rows = u(visible_keys(p, p.seq - 1).last - visible_keys(p, 0).first + 1);
    u64 scores = 0;
    for (std::int64_t i = 0; i < p.seq; ++i) {
      const KeyRange keys = visible_keys(p, i);
      scores += u(keys.last - keys.first + 1);
    }
    covered =
        static_cast<double>(scores) / (static_cast<double>(p.seq) * static_cast<double>(p.seq_kv));
  }
  const u64 n = u(p.seq), nk = u(p.seq_kv);
  // K and V (and, backward, dK and dV) once per K/V head, K and V in their stored type.
  // O in its own element size (bf16 for an fp8 forward). A latent cache (--latent-dim) is K alone
  // (V is its first value_dim() columns) and O has value_dim() columns.
  const u64 kv_tensors = p.latent() ? 1 : 2, dv = u(p.value_dim());
  const u64 fwd_compulsory = eb * d * bh * q_rows + kv_eb * d * bh_kv * kv_tensors * kv_rows +
                             u(p.out_elem_bytes()) * dv * bh * n;
  const u64 bwd_compulsory = eb * d * (bh * (q_rows + n + n) + bh_kv * (2 * kv_rows + 2 * nk));

  // Lower bound per pass (Theorem 5: the backward has the forward's order), on the computed
  // fraction of the scores for block-sparse (Proposition 4's s). Its elements are one size; with
  // K/V stored narrower than Q (--kv-dtype fp8) the narrower size, which gives the smaller bound
  // (SRAM holds more elements, each moves fewer bytes): still a bound on either operand's traffic.
  const u64 lb_eb = std::min(eb, kv_eb);
  const double m = static_cast<double>(sram_bytes) / static_cast<double>(lb_eb);  // elements
  const double nd = static_cast<double>(p.seq), nkd = static_cast<double>(p.seq_kv);
  const double dd = static_cast<double>(p.head_dim);
  double elems;
  if (m >= dd * dd) {
    elems = covered * nd * nkd * dd * dd / m;
    b.lower_bound_formula = blocks || p.window > 0 ? "s*N*N_kv*d^2/M" : "N*N_kv*d^2/M";
  } else {
    elems = covered * nd * nkd * dd / std::sqrt(m);
    b.lower_bound_formula = blocks || p.window > 0 ? "s*N*N_kv*d/sqrt(M)" : "N*N_kv*d/sqrt(M)";
  }
  const u64 pass_bound = static_cast<u64>(elems * static_cast<double>(bh * lb_eb));
  if (fwd) {
    b.lower_bound_formula_bytes += pass_bound;
    b.compulsory_bytes += fwd_compulsory;
    b.lower_bound_bytes += std::max(fwd_compulsory, pass_bound);
  }
  if (bwd) {
    b.lower_bound_formula_bytes += pass_bound;
    b.compulsory_bytes += bwd_compulsory;
    b.lower_bound_bytes += std::max(bwd_compulsory, pass_bound);
  }
  return b;
}

}  // namespace iosim
