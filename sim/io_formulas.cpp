#include "sim/io_formulas.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/errors.hpp"

namespace iosim {
namespace {

using u64 = std::uint64_t;

u64 cdiv(std::int64_t n, std::int64_t b) { return static_cast<u64>((n + b - 1) / b); }
u64 u(std::int64_t v) { return static_cast<u64>(v); }

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

}  // namespace

IoBounds io_bounds(const std::string& algorithm, const AttentionProblem& p, std::int64_t block_q,
                   std::int64_t block_kv, std::int64_t sram_bytes) {
  ReadWrite rw;
  if (algorithm == "standard") {
    rw = standard(p, block_q, block_kv);
  } else if (algorithm == "flash1") {
    rw = flash1(p, block_q, block_kv);
  } else if (algorithm == "flash2") {
    rw = flash2(p, block_q, block_kv);
  } else {
    throw ConfigError(fmt::format("no closed form for algorithm '{}'", algorithm));
  }
  const u64 bh = u(p.bh()), eb = u(p.elem_bytes());
  IoBounds b;
  b.closed_form_read_bytes = bh * rw.read;
  b.closed_form_write_bytes = bh * rw.write;
  b.closed_form_bytes = b.closed_form_read_bytes + b.closed_form_write_bytes;
  b.compulsory_bytes = bh * eb * u(p.head_dim) * (2 * u(p.seq) + 2 * u(p.seq_kv));

  const double m = static_cast<double>(sram_bytes) / static_cast<double>(eb);  // elements
  const double n = static_cast<double>(p.seq), nk = static_cast<double>(p.seq_kv);
  const double d = static_cast<double>(p.head_dim);
  double elems;
  if (m >= d * d) {
    elems = n * nk * d * d / m;
    b.lower_bound_formula = "N*N_kv*d^2/M";
  } else {
    elems = n * nk * d / std::sqrt(m);
    b.lower_bound_formula = "N*N_kv*d/sqrt(M)";
  }
  b.lower_bound_bytes =
      std::max(b.compulsory_bytes, static_cast<u64>(elems * static_cast<double>(bh * eb)));
  return b;
}

}  // namespace iosim
