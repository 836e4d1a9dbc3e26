#pragma once
// What the closed forms of several algorithms share (what a closed form counts:
// algorithms/io_formulas.hpp): byte counts in 64-bit unsigned arithmetic, the causal rule of which
// K/V rows and blocks a query block meets, and the passes of a schedule whose every (batch, head)
// moves the same bytes. Each closed form itself lives in its algorithm's file.
#include <algorithm>
#include <cstdint>

#include "algorithms/io_formulas.hpp"
#include "sim/schedule/block_mask.hpp"
#include "sim/schedule/problem.hpp"

namespace iosim::closed_form_parts {

using u64 = std::uint64_t;

inline u64 cdiv(std::int64_t n, std::int64_t b) {
  return static_cast<u64>((n + b - 1) / b);
}
inline u64 u(std::int64_t v) {
  return static_cast<u64>(v);
}

// Rows of K/V visible to query block [q0, q0 + qr) under bottom-right causal masking and a
// sliding window, counted in whole K/V blocks (a block is loaded when any of its keys is
// visible): from the block of the first row's first key to that of the last row's last key.
inline u64 visible_kv_rows(const AttentionProblem& p, std::int64_t q0, std::int64_t qr,
                           std::int64_t bc) {
  if (!p.causal && p.window == 0) return u(p.seq_kv);
  const std::int64_t first_block = visible_keys(p, q0).first / bc;
  const std::int64_t last_block = visible_keys(p, q0 + qr - 1).last / bc;
  return u(std::min((last_block + 1) * bc, p.seq_kv) - first_block * bc);
}

// The dense causal and window rule, or a block mask: whether query block i (rows
// [q0, q0 + qr)) meets key block j.
struct MeetsBlock {
  const AttentionProblem& p;
  std::int64_t block_kv;
  const BlockMask* blocks;
  bool operator()(std::int64_t i, std::int64_t q0, std::int64_t qr, std::int64_t j) const {
    if (blocks) return blocks->at(i, j);
    if (p.window > 0) {
      return j * block_kv <= visible_keys(p, q0 + qr - 1).last &&
             std::min(p.seq_kv, (j + 1) * block_kv) - 1 >= visible_keys(p, q0).first;
    }
    return !p.causal || j * block_kv <= q0 + qr - 1 + (p.seq_kv - p.seq);
  }
};

inline ReadWriteBytes times(u64 matrices, const ReadWriteBytes& rw) {
  return {matrices * rw.read, matrices * rw.write};
}

// The passes p.pass runs of a schedule whose every (batch, head) moves the same bytes.
using PerHead = ReadWriteBytes (*)(const AttentionProblem&, std::int64_t, std::int64_t);
inline ReadWriteBytes every_head(const AttentionProblem& p, std::int64_t block_q,
                                 std::int64_t block_kv, PerHead forward, PerHead backward) {
  ReadWriteBytes rw;
  if (runs_forward(p.pass)) rw += forward(p, block_q, block_kv);
  if (runs_backward(p.pass)) rw += backward(p, block_q, block_kv);
  return times(u(p.bh()), rw);
}

}  // namespace iosim::closed_form_parts
