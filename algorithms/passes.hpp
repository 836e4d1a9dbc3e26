#pragma once
// Forward, backward, or both: how an algorithm turns its forward and backward schedules into the
// one schedule a --pass asks for, and the backward schedules themselves (one file each).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>

#include "algorithms/algorithm.hpp"
#include "algorithms/tile_costs.hpp"

namespace iosim {

class BlockMask;  // sim/schedule/block_mask.hpp

/// The kernels of `first` then those of `second`, as one schedule. Tensors both declare (Q, K,
/// V, O, ...) are one allocation, so the L2 state carries over from the forward to the backward
/// as on a real GPU. Tensors declared by both must have the same shape.
std::unique_ptr<Schedule> sequence(std::unique_ptr<Schedule> first,
                                   std::unique_ptr<Schedule> second);

/// The schedule for `pass`: forward(), backward(), or forward() then backward().
std::unique_ptr<Schedule> for_pass(Pass pass,
                                   const std::function<std::unique_ptr<Schedule>()>& forward,
                                   const std::function<std::unique_ptr<Schedule>()>& backward);

/// A forward's query side: B x `heads` matrices of `rows` rows. Grouped-query attention with one
/// query position (AttentionProblem::packs_query_group) views a K/V head's g query heads as one
/// head of g rows: the same bytes as [B*H][N][d], since a group's heads are adjacent.
struct QueryView {
  std::int64_t heads = 0, rows = 0;
  bool packed = false;
  static QueryView of(const AttentionProblem& p, bool packed) {
    return packed ? QueryView{p.kv_head_count(), p.group() * p.seq, true}
                  : QueryView{p.heads, p.seq, false};
  }
  /// A forward kernel's grid over this view: one CTA per (query block, batch, head), x fastest.
  Dim3 grid(const AttentionProblem& p, std::int64_t block_q) const {
    return {ceil_div(rows, block_q), p.batch, heads};
  }
  /// The query tile CTA `cta` of that grid works on.
  struct Tile {
    std::int64_t qb;      // query block
    std::int64_t q;       // query matrix (a packed group: its K/V head's)
    std::int64_t kv;      // K/V matrix
    std::int64_t q0, qr;  // rows [q0, q0 + qr)
  };
  Tile tile(const AttentionProblem& p, std::int64_t block_q, std::int64_t cta) const {
    const std::int64_t tr = ceil_div(rows, block_q);
    const std::int64_t qb = cta % tr, b = (cta / tr) % p.batch, h = cta / (tr * p.batch);
    const std::int64_t q = b * heads + h;
    const std::int64_t q0 = qb * block_q;
    return {qb, q, packed ? q : q / p.group(), q0, std::min(block_q, rows - q0)};
  }
  /// The forward's tensors: Q, K, V, O and L (fp32) over this view.
  std::vector<TensorDecl> tensors(const AttentionProblem& p) const {
    const std::int64_t eb = p.elem_bytes(), d = p.head_dim, qm = p.batch * heads;
    return {{TensorId::Q, qm, rows, d, eb},
            {TensorId::K, p.bh_kv(), p.seq_kv, d, eb},
            {TensorId::V, p.bh_kv(), p.seq_kv, d, eb},
            {TensorId::O, qm, rows, d, p.out_elem_bytes()},
            {TensorId::L, qm, rows, 1, 4}};
  }
};

/// The end of a forward query tile (flash2, flash3): O normalized and written through shared
/// memory (coalesced 16-byte stores), L straight from registers.
/// A default TileOp appended to `out`, to be filled in place (costs' filling forms,
/// emplace_load, emplace_store): a dataflow's inner loop emits without a temporary op to copy. It
/// is copied from a constant, which GCC does in vector moves, where value-initializing the
/// 144-byte op in place (out.emplace_back()) is a `rep stos`, a third of a part's emission.
inline constexpr TileOp kDefaultOp{};
inline TileOp& emplace_op(std::vector<TileOp>& out) {
  return out.emplace_back(kDefaultOp);
}

/// TileOp::load(t, dest) and TileOp::store(t, src), built in place at the end of `out`.
inline TileOp& emplace_load(std::vector<TileOp>& out, const TileRef& t,
                            OnChip dest = OnChip::smem) {
  TileOp& op = emplace_op(out);
  op.kind = OpKind::load;
  op.tile = t;
  op.on_chip = dest;
  return op;
}
inline TileOp& emplace_store(std::vector<TileOp>& out, const TileRef& t, OnChip src = OnChip::reg) {
  TileOp& op = emplace_op(out);
  op.kind = OpKind::store;
  op.tile = t;
  op.on_chip = src;
  return op;
}

/// (Built in place at the end of `out`.)
inline void finish_forward_tile(const TileRef& o, std::int64_t head_dim, std::vector<TileOp>& out) {
  costs::finalize(emplace_op(out), o, head_dim);
  emplace_store(out, o, OnChip::smem);
  emplace_store(out, {TensorId::L, o.matrix, o.row0, o.rows, 0, 1}, OnChip::reg);
}

/// Key blocks [first, last] a dense forward tile of rows [q0, q0 + qr) computes: every block
/// holding a key one of its rows sees (visible_keys): all of them, or under bottom-right causal
/// masking those up to the block of its last row's diagonal key, and with a sliding window from
/// the block of its first row's first key.
struct KvBlockRange {
  std::int64_t first = 0, last = -1;
  std::int64_t count() const { return last - first + 1; }
};
inline KvBlockRange dense_kv_blocks(const AttentionProblem& p, std::int64_t q0, std::int64_t qr,
                                    std::int64_t block_kv) {
  const std::int64_t tc = ceil_div(p.seq_kv, block_kv);
  if (!p.causal && p.window == 0) return {0, tc - 1};
  return {visible_keys(p, q0).first / block_kv, visible_keys(p, q0 + qr - 1).last / block_kv};
}

/// Whether the tile of rows [q0, q0 + qr) and keys [k0, k0 + kr) holds a score the causal mask
/// or the window hides: a key past its first row's last, or before its last row's first (both
/// ends of a row's keys move right with the row). Such a tile is computed whole and masked.
inline bool tile_hides_scores(const AttentionProblem& p, std::int64_t q0, std::int64_t qr,
                              std::int64_t k0, std::int64_t kr) {
  if (!p.causal && p.window == 0) return false;
  return k0 + kr - 1 > visible_keys(p, q0).last || k0 < visible_keys(p, q0 + qr - 1).first;
}

/// How a dense forward over `view` repeats (flash2, flash3; sim/engine/steady_state.hpp): heads, or
/// with grouped-query heads sharing K/V unpacked, a group of heads of every batch; inside a CTA one
/// K/V block per part. Without causal masking every query block of a head does the same, so a
/// head's CTAs are alike unless its last query block is ragged; with it, they ramp.
inline Repetition forward_repetition(const AttentionProblem& p, const QueryView& view,
                                     std::int64_t block_q) {
  const std::int64_t tr = ceil_div(view.rows, block_q);
  const std::int64_t shared = view.packed || p.group() == 1 ? 1 : p.batch * p.group();
  const bool whole = view.rows % block_q == 0;
  // Under a sliding window a head's query blocks read different K/V and, past the first window,
  // the same number of blocks: neither alike nor a ramp (none declared).
  const bool alike = !p.causal && whole && p.window == 0;
  // Under causal masking a query block has a fixed number of K/V blocks more than the one before.
  // (A packed query group's rows are several heads' positions: its blocks do not ramp.)
  const bool ramp = p.causal && whole && (!view.packed || p.group() == 1) && p.window == 0;
  return {tr * shared, 1, alike ? tr : 0, ramp ? tr : 0};
}

/// The K/V blocks of a dense forward tile of rows [q0, q0 + qr) that repeat, as parts 1 + k:
/// all but the last (which also writes O), and under causal masking those before the first
/// block that crosses the diagonal (masked).
inline PartRange forward_steady_parts(const AttentionProblem& p, std::int64_t q0, std::int64_t qr,
                                      std::int64_t block_kv) {
  std::int64_t blocks = dense_kv_blocks(p, q0, qr, block_kv).count() - 1;
  if (p.causal) {
    // Blocks whose last key row q0 sees: (k + 1) * block_kv - 1 <= q0 + seq_kv - seq.
    const std::int64_t seen = q0 + p.seq_kv - p.seq + 1;
    blocks = std::min(blocks, seen > 0 ? seen / block_kv : 0);
  }
  return {1, static_cast<std::size_t>(1 + std::max<std::int64_t>(0, blocks))};
}

/// flash2's planning (flash2.cpp), shared with block-sparse, which adds the block mask of
/// `p.pattern` for the resolved blocks (and returns it in Planned::blocks).
Planned plan_flash2_family(const AttentionProblem& p, const HardwareProfile& hw,
                           const TilingRequest& req, bool block_sparse);

// FlashAttention-2 backward (flash2_bwd.cpp), also block-sparse's when `blocks` is set: a pre-pass
// D = rowsum(dO o O) that also zeroes dQaccum, the main kernel with one CTA per (K/V block,
// batch, head), and a kernel converting dQaccum to dQ.
std::unique_ptr<Schedule> make_flash2_backward(const AttentionProblem& p, const Tiling& t,
                                               std::shared_ptr<const BlockMask> blocks);
/// Shared memory of flash2's main backward kernel per CTA, bytes.
std::int64_t flash2_backward_smem_bytes(const AttentionProblem& p, const Tiling& t);

/// The tensors of a backward that accumulates dQ in fp32 (dQaccum) and converts it after the
/// main kernel (FlashAttention-2's and -3's backwards): the forward's Q, K, V, O, L, the incoming
/// dO, D = rowsum(dO * O), and the gradients. K, V, dK and dV have one matrix per K/V head; with
/// grouped-query heads (g = H / Hkv > 1) also the fp32 dKaccum and dVaccum the g query heads of
/// a K/V head add their shares into.
inline std::vector<TensorDecl> dq_accum_backward_tensors(const AttentionProblem& p) {
  const std::int64_t eb = p.elem_bytes(), bh = p.bh(), kv = p.bh_kv(), d = p.head_dim;
  std::vector<TensorDecl> out = {
      {TensorId::Q, bh, p.seq, d, eb},    {TensorId::K, kv, p.seq_kv, d, eb},
      {TensorId::V, kv, p.seq_kv, d, eb}, {TensorId::O, bh, p.seq, d, eb},
      {TensorId::L, bh, p.seq, 1, 4},     {TensorId::dO, bh, p.seq, d, eb},
      {TensorId::D, bh, p.seq, 1, 4},     {TensorId::dQaccum, bh, p.seq, d, 4},
      {TensorId::dQ, bh, p.seq, d, eb},   {TensorId::dK, kv, p.seq_kv, d, eb},
      {TensorId::dV, kv, p.seq_kv, d, eb}};
  if (p.group() > 1) {
    out.push_back({TensorId::dKaccum, kv, p.seq_kv, d, 4});
    out.push_back({TensorId::dVaccum, kv, p.seq_kv, d, 4});
  }
  return out;
}

/// The tile of a FlashAttention backward main kernel (flash2, flash3): one K/V block of one query
/// head, CTA `cta` of the grid (Tc, B, H), x fastest.
struct KvBlockTile {
  std::int64_t j = 0;           // K/V block
  std::int64_t q = 0;           // query matrix b * H + h: Q, dO, L, D, dQaccum
  std::int64_t kv = 0;          // its K/V matrix b * Hkv + h / g: K, V, dK, dV, dKaccum, dVaccum
  std::int64_t k0 = 0, kr = 0;  // key rows [k0, k0 + kr)
  static KvBlockTile of(const AttentionProblem& p, std::int64_t block_kv, std::int64_t cta) {
    const std::int64_t tc = ceil_div(p.seq_kv, block_kv), j = cta % tc;
    const std::int64_t q = (cta / tc) % p.batch * p.heads + cta / (tc * p.batch);
    const std::int64_t k0 = j * block_kv;
    // b * H + h = g (b * Hkv + h / g) + h % g, as H = g * Hkv.
    return {j, q, q / p.group(), k0, std::min(block_kv, p.seq_kv - k0)};
  }
};

/// The end of a backward main kernel's K/V tile: dK_j and dV_j (fp32 on chip) leave once through
/// shared memory, or with grouped-query heads are added into dKaccum and dVaccum of their K/V
/// head (FlashAttention-3's GQA epilogue: an fp32 reduce-add, performed in L2 as dQaccum's).
inline void finish_kv_tile(const AttentionProblem& p, const KvBlockTile& t,
                           std::vector<TileOp>& out) {
  const std::int64_t d = p.head_dim;
  if (p.group() == 1) {
    out.push_back(TileOp::store({TensorId::dK, t.kv, t.k0, t.kr, 0, d}, OnChip::smem));
    out.push_back(TileOp::store({TensorId::dV, t.kv, t.k0, t.kr, 0, d}, OnChip::smem));
    return;
  }
  out.push_back(TileOp::reduce({TensorId::dKaccum, t.kv, t.k0, t.kr, 0, d}));  // (kr, d) fp32
  out.push_back(TileOp::reduce({TensorId::dVaccum, t.kv, t.k0, t.kr, 0, d}));  // (kr, d) fp32
}

/// The row-wise kernels around a FlashAttention backward's main kernel (flash2, flash3), one CTA
/// per `block_q` query rows of a (batch, head), grid (Tr, B, H):
///  - dot_do_o: D = rowsum(dO o O) written per row (fp32), and the fp32 dQaccum rows zeroed;
///  - convert_dq: dQ = dQaccum in the element type.
enum class BackwardRows { dot_do_o, convert_dq };
void emit_backward_rows(const AttentionProblem& p, std::int64_t block_q, std::int64_t cta,
                        BackwardRows kernel, std::vector<TileOp>& out);

/// With grouped-query heads, the kernels around the main kernel that own dKaccum and dVaccum, one
/// CTA per `block_kv` key rows of a (batch, K/V head), grid (Tc, B, Hkv), as FlashAttention-3's
/// (its dk_accum and dv_accum are allocated zeroed, and a postprocess kernel converts them):
///  - zero_dkv: dKaccum and dVaccum rows zeroed (the memset);
///  - convert_dkv: dK = dKaccum and dV = dVaccum in the element type.
enum class BackwardKeys { zero_dkv, convert_dkv };
void emit_backward_keys(const AttentionProblem& p, std::int64_t block_kv, std::int64_t cta,
                        BackwardKeys kernel, std::vector<TileOp>& out);
/// The KernelSpec of those kernels (named "zero_dkv_accum" and "convert_dkv").
KernelSpec backward_keys_kernel(const AttentionProblem& p, std::int64_t block_kv,
                                BackwardKeys kernel);

/// FlashAttention-3 backward (flash3_bwd.cpp): the pre-pass and the dQ conversion as flash2's
/// around a warp-specialized main kernel (one tile per K/V block of `block_kv` keys, query blocks
/// of `block_q` rows streamed through `stages` buffers, `consumers` warpgroups of 64 keys).
struct Flash3BackwardTiles {
  std::int64_t block_q = 0, block_kv = 0;
  int stages = 0, consumers = 0, threads = 0, registers = 0;
  std::int64_t smem_bytes = 0;
};
std::unique_ptr<Schedule> make_flash3_backward(const AttentionProblem& p,
                                               const Flash3BackwardTiles& t);

// FlashAttention-1 backward, Algorithm 4 of Dao et al. 2022 (flash1_bwd.cpp).
std::unique_ptr<Schedule> make_flash1_backward(const AttentionProblem& p, const Tiling& t);
/// Shared memory of flash1's backward kernel per CTA, bytes.
std::int64_t flash1_backward_smem_bytes(const AttentionProblem& p, std::int64_t block_q,
                                        std::int64_t block_kv);

// Standard (unfused) backward (standard_bwd.cpp): GEMMs and elementwise kernels through HBM.
// `persistent_gemms`: its GEMMs are persistent kernels (KernelSpec::persistent), as cuBLAS's
// Hopper kernels are.
std::unique_ptr<Schedule> make_standard_backward(const AttentionProblem& p, const Tiling& t,
                                                 bool persistent_gemms);

}  // namespace iosim
