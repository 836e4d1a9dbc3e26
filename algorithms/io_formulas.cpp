#include "algorithms/io_formulas.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/engine/run_control.hpp"
#include "sim/schedule/block_mask.hpp"

namespace iosim {
namespace {

using u64 = std::uint64_t;

u64 cdiv(std::int64_t n, std::int64_t b) {
  return static_cast<u64>((n + b - 1) / b);
}
u64 u(std::int64_t v) {
  return static_cast<u64>(v);
}

// Rows of K/V visible to query block [q0, q0 + qr) under bottom-right causal masking, counted in
// whole K/V blocks (a block is loaded when any of its keys is visible).
u64 visible_kv_rows(const AttentionProblem& p, std::int64_t q0, std::int64_t qr, std::int64_t bc) {
  if (!p.causal) return u(p.seq_kv);
  const std::int64_t last_key = q0 + qr - 1 + (p.seq_kv - p.seq);
  const std::int64_t blocks = std::min<std::int64_t>(last_key / bc + 1, (p.seq_kv + bc - 1) / bc);
  return u(std::min(blocks * bc, p.seq_kv));
}

struct ReadWrite {
  u64 read = 0, write = 0;
  ReadWrite& operator+=(const ReadWrite& o) {
    read += o.read;
    write += o.write;
    return *this;
  }
};

// Per (batch, head), in bytes.
ReadWrite standard(const AttentionProblem& p, std::int64_t bq, std::int64_t bk) {
  const u64 eb = u(p.elem_bytes()), n = u(p.seq), nk = u(p.seq_kv), d = u(p.head_dim);
  const u64 scores = n * nk * eb;
  ReadWrite rw;
  // gemm_qk: every output tile reads its Q rows and K rows in full.
  rw.read += n * d * eb * cdiv(p.seq_kv, bk) + nk * d * eb * cdiv(p.seq, bq);
  rw.write += scores;
  if (p.causal || p.mask) {  // mask pass
    rw.read += scores;
    rw.write += scores;
  }
  rw.read += scores;  // softmax: S in, P out
  rw.write += scores;
  if (p.dropout > 0) {  // dropout pass: P in, P and the keep mask out
    rw.read += scores;
    rw.write += scores + n * nk;
  }
  // gemm_pv: P once, V once per query tile, O once.
  rw.read += scores + nk * d * eb * cdiv(p.seq, bq);
  rw.write += n * d * eb;
  return rw;
}

ReadWrite flash2(const AttentionProblem& p, std::int64_t bq, std::int64_t bk) {
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim);
  ReadWrite rw;
  rw.read += u(p.seq) * d * eb;  // Q once
  for (std::int64_t q0 = 0; q0 < p.seq; q0 += bq) {
    const std::int64_t qr = std::min(bq, p.seq - q0);
    rw.read += 2 * visible_kv_rows(p, q0, qr, bk) * d * eb;  // K and V
  }
  rw.write += u(p.seq) * d * eb + u(p.seq) * 4;  // O and L (fp32)
  return rw;
}

ReadWrite flash1(const AttentionProblem& p, std::int64_t bq, std::int64_t bk) {
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim);
  ReadWrite rw;
  rw.read += 2 * u(p.seq_kv) * d * eb;  // K and V once each
  const std::int64_t offset = p.seq_kv - p.seq;
  for (std::int64_t k0 = 0; k0 < p.seq_kv; k0 += bk) {
    run_control::check();  // blocks squared: minutes at N = 2^24, so SIGINT and budgets apply
    for (std::int64_t q0 = 0; q0 < p.seq; q0 += bq) {
      const u64 qr = u(std::min(bq, p.seq - q0));
      if (p.causal && k0 > q0 + static_cast<std::int64_t>(qr) - 1 + offset) continue;
      const u64 state = qr * d * eb + 2 * qr * 4;  // O tile plus l and m (fp32)
      rw.read += qr * d * eb + (k0 > 0 ? state : 0);
      rw.write += state;
    }
  }
  return rw;
}

// Key blocks query block [q0, q0 + qr) meets: all of them, or under bottom-right causal masking
// those up to the block of the last row's diagonal key.
u64 visible_kv_blocks(const AttentionProblem& p, std::int64_t q0, std::int64_t qr,
                      std::int64_t bc) {
  const std::int64_t tc = (p.seq_kv + bc - 1) / bc;
  if (!p.causal) return u(tc);
  return u(std::min<std::int64_t>((q0 + qr - 1 + (p.seq_kv - p.seq)) / bc + 1, tc));
}

// Standard backward: the unfused kernels of autograd (algorithms/standard_bwd.cpp's list),
// each reading its operands from HBM and writing its result there.
ReadWrite standard_bwd(const AttentionProblem& p, std::int64_t bq, std::int64_t bk) {
  const u64 eb = u(p.elem_bytes()), n = u(p.seq), nk = u(p.seq_kv), d = u(p.head_dim);
  const u64 scores = n * nk * eb, tq = cdiv(p.seq, bq), tk = cdiv(p.seq_kv, bk);
  ReadWrite rw;
  // dP = dO V^T: every output tile reads its dO rows and V rows in full.
  rw.read += n * d * eb * tk + nk * d * eb * tq;
  rw.write += scores;
  // dV = X^T dO: X once, dO once per key tile.
  rw.read += scores + n * d * eb * tk;
  rw.write += nk * d * eb;
  if (p.dropout > 0) {  // dP and the 1-byte keep mask in, dP out
    rw.read += scores + n * nk;
    rw.write += scores;
  }
  rw.read += 2 * scores;  // softmax gradient: P and dP in, dS out
  rw.write += scores;
  if (p.causal || p.mask) {  // masked_fill's gradient: dS in and out
    rw.read += scores;
    rw.write += scores;
  }
  // dQ = scale dS K: dS once, K once per query tile; dK = scale dS^T Q: dS once, Q once per key
  // tile.
  rw.read += scores + nk * d * eb * tq + scores + n * d * eb * tk;
  rw.write += n * d * eb + nk * d * eb;
  return rw;
}

// FlashAttention-1 backward, Algorithm 4: per K/V block j (K_j, V_j in, dK_j, dV_j out once),
// per query block i it meets: Q_i, O_i, dO_i, l_i, m_i in; dQ_i in (except on j = 0) and out.
ReadWrite flash1_bwd(const AttentionProblem& p, std::int64_t bq, std::int64_t bk) {
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim);
  ReadWrite rw;
  rw.read += 2 * u(p.seq_kv) * d * eb;
  rw.write += 2 * u(p.seq_kv) * d * eb;
  for (std::int64_t q0 = 0; q0 < p.seq; q0 += bq) {
    const std::int64_t qr = std::min(bq, p.seq - q0);
    const u64 visits = visible_kv_blocks(p, q0, qr, bk);  // always includes j = 0
    rw.read += visits * (3 * u(qr) * d * eb + 2 * u(qr) * 4) + (visits - 1) * u(qr) * d * eb;
    rw.write += visits * u(qr) * d * eb;
  }
  return rw;
}

// Forward and backward of FlashAttention-2 over the blocks `meets(i, j)` says are computed: the
// dense causal rule, or a block mask. Counted from the query side (the backward loops over K/V
// blocks): a query block i, for each block j it meets, costs the forward K_j and V_j and the
// backward Q_i, dO_i, L_i, D_i and an atomic add of its fp32 dQ share (read and write).
template <typename Meets>
ReadWrite flash2_family(const AttentionProblem& p, std::int64_t bq, std::int64_t bk, bool forward,
                        Meets&& meets) {
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim), n = u(p.seq);
  const std::int64_t tc = (p.seq_kv + bk - 1) / bk;
  ReadWrite rw;
  std::vector<bool> column_used(static_cast<std::size_t>(tc), false);
  for (std::int64_t q0 = 0, i = 0; q0 < p.seq; q0 += bq, ++i) {
    run_control::check();  // blocks squared: see flash1's
    const u64 qr = u(std::min(bq, p.seq - q0));
    u64 met = 0;
    for (std::int64_t j = 0; j < tc; ++j) {
      if (!meets(i, q0, static_cast<std::int64_t>(qr), j)) continue;
      ++met;
      column_used[static_cast<std::size_t>(j)] = true;
      const u64 kr = u(std::min(bk, p.seq_kv - j * bk));
      if (forward) {
        rw.read += 2 * kr * d * eb;
      } else {
        rw.read += 2 * qr * d * eb + 2 * qr * 4 + qr * d * 4;
        rw.write += qr * d * 4;
      }
    }
    if (forward && met > 0) rw.read += qr * d * eb;  // Q_i, unless the block meets no key
  }
  if (forward) {
    rw.write += n * d * eb + n * 4;  // O and L for every row
    return rw;
  }
  for (std::int64_t j = 0; j < tc; ++j) {  // K_j, V_j once if any query block meets them
    if (column_used[static_cast<std::size_t>(j)])
      rw.read += 2 * u(std::min(bk, p.seq_kv - j * bk)) * d * eb;
  }
  rw.read += 2 * n * d * eb;             // pre-pass: O and dO
  rw.write += n * 4 + n * d * 4;         // pre-pass: D, and dQaccum zeroed
  rw.read += n * d * 4;                  // convert: dQaccum in
  rw.write += n * d * eb;                // convert: dQ out
  rw.write += 2 * u(p.seq_kv) * d * eb;  // dK, dV for every key block (zeros where unmet)
  return rw;
}

// Split-KV decoding (flash-decoding, paged), all heads together. Per query tile (a head's query
// block, or a packed group's) and split s of the Tc K/V blocks, ceil(Tc/S) blocks each: Q in,
// the split's K and V rows in, (paged) the int32 ids of the pages those rows lie on, and out
// either O and L (S = 1) or the fp32 partial O and lse (also for a split left without blocks).
// With S > 1 the reduce kernel reads all S partials of every row once and writes O and L.
ReadWrite split_kv(const AttentionProblem& p, std::int64_t bq, std::int64_t bk, std::int64_t splits,
                   bool paged) {
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim);
  const bool packed = p.packs_query_group();
  const u64 tiles_per_row = u(p.batch * (packed ? p.kv_head_count() : p.heads));
  const std::int64_t rows = packed ? p.group() * p.seq : p.seq;
  const std::int64_t tc = (p.seq_kv + bk - 1) / bk, per_split = (tc + splits - 1) / splits;
  ReadWrite one;  // one query matrix (a head, or a packed group)
  for (std::int64_t q0 = 0; q0 < rows; q0 += bq) {
    const std::int64_t last_row = std::min(bq, rows - q0) + q0 - 1;
    const u64 qr = u(last_row - q0 + 1);
    // Causal: blocks up to the one holding the last row's diagonal key (a packed group is one
    // query position, which sees every key).
    const std::int64_t reach =
        p.causal && !packed ? std::min(tc, (last_row + p.seq_kv - p.seq) / bk + 1) : tc;
    for (std::int64_t s = 0; s < splits; ++s) {
      const std::int64_t first = s * per_split;
      const std::int64_t end = std::min({tc, first + per_split, reach});
      if (first < end) {
        const std::int64_t k_begin = first * bk, k_end = std::min(end * bk, p.seq_kv);
        one.read += qr * d * eb + 2 * u(k_end - k_begin) * d * eb;
        if (paged) one.read += 4 * u((k_end - 1) / p.page_tokens - k_begin / p.page_tokens + 1);
      }
      one.write += splits > 1 ? qr * d * 4 + qr * 4 : qr * d * eb + qr * 4;
    }
  }
  ReadWrite rw{one.read * tiles_per_row, one.write * tiles_per_row};
  if (splits > 1) {
    const u64 r = u(p.bh() * p.seq);
    rw.read += u(splits) * r * (d * 4 + 4);
    rw.write += r * (d * eb + 4);
  }
  return rw;
}

// The dense causal rule, or a block mask: whether query block i (rows [q0, q0 + qr)) meets key
// block j.
struct MeetsBlock {
  const AttentionProblem& p;
  std::int64_t block_kv;
  const BlockMask* blocks;
  bool operator()(std::int64_t i, std::int64_t q0, std::int64_t qr, std::int64_t j) const {
    if (blocks) return blocks->at(i, j);
    return !p.causal || j * block_kv <= q0 + qr - 1 + (p.seq_kv - p.seq);
  }
};

ReadWriteBytes times(u64 matrices, const ReadWrite& rw) {
  return {matrices * rw.read, matrices * rw.write};
}

// The passes p.pass runs of a schedule whose every (batch, head) moves the same bytes.
using PerHead = ReadWrite (*)(const AttentionProblem&, std::int64_t, std::int64_t);
ReadWriteBytes every_head(const AttentionProblem& p, std::int64_t block_q, std::int64_t block_kv,
                          PerHead forward, PerHead backward) {
  ReadWrite rw;
  if (runs_forward(p.pass)) rw += forward(p, block_q, block_kv);
  if (runs_backward(p.pass)) rw += backward(p, block_q, block_kv);
  return times(u(p.bh()), rw);
}

}  // namespace

ReadWriteBytes standard_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                    std::int64_t block_kv) {
  return every_head(p, block_q, block_kv, standard, standard_bwd);
}

ReadWriteBytes flash1_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                  std::int64_t block_kv) {
  return every_head(p, block_q, block_kv, flash1, flash1_bwd);
}

ReadWriteBytes flash2_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                  std::int64_t block_kv, const BlockMask* blocks) {
  const MeetsBlock meets{p, block_kv, blocks};
  ReadWriteBytes out;
  if (runs_forward(p.pass)) {
    if (!blocks && p.packs_query_group()) {
      // A K/V head's g queries form one g-row query "head": the same schedule over the view.
      AttentionProblem view = p;
      view.heads = p.kv_head_count();
      view.kv_heads = 0;
      view.seq = p.group() * p.seq;
      view.causal = false;  // one query position sees every key
      out += times(u(view.bh()), flash2(view, block_q, block_kv));
    } else {
      out += times(u(p.bh()), blocks ? flash2_family(p, block_q, block_kv, true, meets)
                                     : flash2(p, block_q, block_kv));
    }
  }
  if (runs_backward(p.pass)) {
    out += times(u(p.bh()), flash2_family(p, block_q, block_kv, false, meets));
  }
  return out;
}

ReadWriteBytes two_pass_backward_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                             std::int64_t block_kv) {
  // Per (batch, head), every load and store reaching HBM, as the header lists them.
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim);
  const MeetsBlock meets{p, block_kv, nullptr};
  const auto tr = static_cast<std::int64_t>(cdiv(p.seq, block_q));
  const auto tc = static_cast<std::int64_t>(cdiv(p.seq_kv, block_kv));
  ReadWriteBytes head;
  head.read += 2 * u(p.seq) * d * eb;  // pre-pass: O, dO
  head.write += u(p.seq) * 4;          // D
  for (std::int64_t j = 0; j < tc; ++j) {
    const u64 kr = u(std::min(block_kv, p.seq_kv - j * block_kv));
    head.read += 2 * kr * d * eb;   // K_j, V_j
    head.write += 2 * kr * d * eb;  // dK_j, dV_j
  }
  for (std::int64_t i = 0; i < tr; ++i) {
    const std::int64_t qr_i = std::min(block_q, p.seq - i * block_q);
    const u64 qr = u(qr_i);
    const u64 query_tiles = 2 * qr * d * eb + 2 * qr * 4;  // Q_i, dO_i, L_i, D_i
    head.read += query_tiles;                              // pass 2, once
    head.write += qr * d * eb;                             // dQ_i
    for (std::int64_t j = 0; j < tc; ++j) {
      if (!meets(i, i * block_q, qr_i, j)) continue;
      const u64 kr = u(std::min(block_kv, p.seq_kv - j * block_kv));
      head.read += query_tiles;      // pass 1 streams query block i past key block j
      head.read += 2 * kr * d * eb;  // pass 2 streams key block j past query block i
    }
  }
  ReadWriteBytes out;
  out.read = head.read * u(p.bh());
  out.write = head.write * u(p.bh());
  return out;
}

ReadWriteBytes flash3_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                  std::int64_t block_kv, std::int64_t backward_block_q,
                                  std::int64_t backward_block_kv) {
  ReadWriteBytes out;
  if (runs_backward(p.pass)) {
    const std::int64_t bq = backward_block_q > 0 ? backward_block_q : block_q;
    const std::int64_t bk = backward_block_kv > 0 ? backward_block_kv : block_kv;
    out += times(u(p.bh()), flash2_family(p, bq, bk, false, MeetsBlock{p, bk, nullptr}));
    if (p.group() > 1) {
      // Grouped-query heads: each query head adds its fp32 dK and dV into its K/V head's dKaccum
      // and dVaccum (read and write) instead of writing them in the element type; per K/V head
      // the accumulators are zeroed, then read and written as dK and dV once.
      const u64 eb = u(p.elem_bytes()), kd = u(p.seq_kv) * u(p.head_dim);
      out.write -= u(p.bh()) * 2 * kd * eb;
      out.read += u(p.bh()) * 2 * kd * 4;
      out.write += u(p.bh()) * 2 * kd * 4;
      out.write += u(p.bh_kv()) * 2 * kd * 4;   // zero_dkv_accum
      out.read += u(p.bh_kv()) * 2 * kd * 4;    // convert_dkv: in
      out.write += u(p.bh_kv()) * 2 * kd * eb;  // convert_dkv: out
    }
  }
  if (!runs_forward(p.pass)) return out;
  // With one query position per head, a K/V head's g query heads are one g-row block of queries
  // (they see every key).
  AttentionProblem view = p;
  if (p.packs_query_group()) {
    view.heads = p.kv_head_count();
    view.kv_heads = 0;
    view.seq = p.group() * p.seq;
    view.causal = false;
  }
  const u64 eb = u(view.elem_bytes()), d = u(view.head_dim), rows = u(view.seq);
  u64 per_head_read = rows * d * eb;  // Q, once per tile, all tiles
  for (std::int64_t q0 = 0; q0 < view.seq; q0 += block_q) {
    const std::int64_t qr = std::min(block_q, view.seq - q0);
    per_head_read += 2 * visible_kv_rows(view, q0, qr, block_kv) * d * eb;  // K and V blocks
  }
  // O (bf16 when the inputs are fp8, as FlashAttention-3's FP8 forward writes it), L in fp32.
  const u64 per_head_write = rows * d * u(view.out_elem_bytes()) + rows * 4;
  out.read += u(view.bh()) * per_head_read;
  out.write += u(view.bh()) * per_head_write;
  return out;
}

ReadWriteBytes split_kv_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                    std::int64_t block_kv, std::int64_t splits, bool paged) {
  if (!runs_forward(p.pass)) return {};
  const ReadWrite rw = split_kv(p, block_q, block_kv, std::max<std::int64_t>(splits, 1), paged);
  return {rw.read, rw.write};
}

IoBounds io_bounds(const AttentionProblem& p, const ReadWriteBytes& closed_form,
                   std::int64_t sram_bytes, const BlockMask* blocks) {
  const bool fwd = runs_forward(p.pass), bwd = runs_backward(p.pass);
  const u64 bh = u(p.bh()), bh_kv = u(p.bh_kv()), eb = u(p.elem_bytes()), d = u(p.head_dim);
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
  }
  const u64 n = u(p.seq), nk = u(p.seq_kv);
  // K and V (and, backward, dK and dV) once per K/V head.
  // O in its own element size (bf16 for an fp8 forward).
  const u64 fwd_compulsory =
      eb * d * (bh * q_rows + bh_kv * 2 * kv_rows) + u(p.out_elem_bytes()) * d * bh * n;
  const u64 bwd_compulsory = eb * d * (bh * (q_rows + n + n) + bh_kv * (2 * kv_rows + 2 * nk));

  // Lower bound per pass (Theorem 5: the backward has the forward's order), on the computed
  // fraction of the scores for block-sparse (Proposition 4's s).
  const double m = static_cast<double>(sram_bytes) / static_cast<double>(eb);  // elements
  const double nd = static_cast<double>(p.seq), nkd = static_cast<double>(p.seq_kv);
  const double dd = static_cast<double>(p.head_dim);
  double elems;
  if (m >= dd * dd) {
    elems = covered * nd * nkd * dd * dd / m;
    b.lower_bound_formula = blocks ? "s*N*N_kv*d^2/M" : "N*N_kv*d^2/M";
  } else {
    elems = covered * nd * nkd * dd / std::sqrt(m);
    b.lower_bound_formula = blocks ? "s*N*N_kv*d/sqrt(M)" : "N*N_kv*d/sqrt(M)";
  }
  const u64 pass_bound = static_cast<u64>(elems * static_cast<double>(bh * eb));
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
