#pragma once
// The operations a schedule emits for one CTA, in program order. The engine turns them into
// traffic and time; the numeric executor (numerics/numeric_executor.hpp) turns the same
// stream into arithmetic, which proves the emitted loads carry what the math needs.
#include <cstdint>

#include "sim/schedule/tensor.hpp"

namespace iosim {

// reduce: an fp32 atomic add (RED) of an on-chip tile into a global tile. The L2 performs it:
// the SM sends the addends, the L2 reads the old value (from DRAM on a miss) and keeps the sum
// dirty. The engine counts it as one L2 read and one L2 write of the tile (with --l2 off: an HBM
// read and an HBM write), the read-modify-write the hardware does.
enum class OpKind : std::uint8_t { load, store, compute, reduce };

/// Where a loaded tile lands on chip (or a stored tile comes from).
enum class OnChip : std::uint8_t { smem, reg };

/// What a compute op does to the CTA's on-chip buffers (named by TensorId). The numeric
/// executor defines the exact semantics; counts come from the op's FLOP fields.
enum class ComputeKind : std::uint8_t {
  init_state,         // O := 0, m := -inf, l := 0 for the tile's query rows
  scores,             // S := scale * Q K^T
  scores_accumulate,  // S += scale * Q K^T (a further chunk of the head dimension)
  apply_mask,         // S := -inf where the causal / index mask hides a score
  softmax_rows,       // P := softmax(S) over complete rows (unfused kernel)
  apply_dropout,      // P_drop := P * keep / (1 - p); also fills the dropout_mask buffer
  online_softmax,     // FA2: m, l updated; P := exp(S - m_new); O rescaled
  accumulate_pv,      // O += X V (X: P_drop with dropout, else P)
  finalize,           // FA2: O := O / l; L := m + log l
  flash1_update,      // FA1 Algorithm 1 lines 9-13: combine (O, l, m) with this K/V block
  // Backward pass. The tile is the score tile (query rows x key columns) unless said otherwise.
  // With dropout, X below is P_drop (P o keep / (1 - p)), else P.
  zero_grad,          // buffer of the tile's tensor := 0, tile.rows x d (dQ, dK, dV, dQaccum)
  row_dot,            // D := rowsum(dO o O) for the tile's query rows (tile: O rows)
  recompute_p,        // P := exp(S - L) (FA2: from the saved log-sum-exp)
  recompute_p_ml,     // P := exp(S - m) / l (FA1 Algorithm 4: from the saved max and sum)
  accumulate_dv,      // dV += X^T dO
  grad_p,             // dP := dO V^T (over the head-dimension chunk on chip)
  grad_p_accumulate,  // dP += dO V^T (a further chunk of the head dimension)
  dropout_grad,       // dP := dP o keep / (1 - p), keep from the mask on chip or regenerated
  grad_s,             // dS := P o (dP - D) (D from the pre-pass or computed on chip)
  softmax_grad_rows,  // dS := P o (dP - rowsum(P o dP)) over complete rows (unfused kernel)
  mask_grad,          // dS := 0 where the causal / index mask hides a score
  accumulate_dq,      // dQ += scale * dS K
  dq_partial,         // dQaccum := scale * dS K (this K/V block's share, fp32, for a reduce)
  accumulate_dk,      // dK += scale * dS^T Q
  convert_dq,         // dQ := dQaccum, dK := dKaccum, dV := dVaccum (fp32 to the element type;
                      // tile: the gradient's rows)
  // Split-KV decoding (flash-decoding, paged). The tile is the O tile (query rows x d).
  finalize_partial,  // partial_O := O / l, partial_lse := m + log l (a split that saw no key: 0,
                     // -inf)
  combine_partial,   // one split's partial_O, partial_lse on chip: m := max(m, lse), then
                     // l := l e^(m_old - m) + e^(lse - m), O := O e^(m_old - m) + e^(lse - m)
                     // partial_O
  // The ops of a transformer layer around attention (transformer/). The tile is the output tile.
  // The numeric executor gives them no meaning: they never run in an attention schedule.
  matmul,             // Y := X W^T over a chunk of K (tile: Y rows x cols)
  matmul_accumulate,  // Y += X W^T (a further chunk of K)
  norm_rows,          // Y := norm(X) row by row, scaled by the weight vector W
  residual_add,       // Y := X + R
  activation,         // Y := act(X) or, gated, SiLU(X gate half) * (X up half)
  splitk_reduce,      // Y := the sum of a split-K GEMM's Y_partial slices (+ bias)
};

/// A rectangle of one matrix of a tensor: rows [row0, row0+rows), cols [col0, col0+cols).
/// For compute ops it carries the coordinates of the score tile: query rows and key columns.
struct TileRef {
  TensorId tensor{};
  std::int64_t matrix = 0;
  std::int64_t row0 = 0, rows = 0;
  std::int64_t col0 = 0, cols = 0;
};

struct TileOp {
  OpKind kind = OpKind::compute;
  TileRef tile;
  OnChip on_chip = OnChip::smem;
  ComputeKind compute = ComputeKind::scores;
  // Work of a compute op, as the kernel's instructions do it.
  std::int64_t tensor_flops = 0;     // matrix FLOPs on tensor cores (2 per multiply-add)
  std::int64_t fp32_flops = 0;       // CUDA-core FP32 work
  std::int64_t sfu_ops = 0;          // exp / log on the special-function units
  std::int64_t int_ops = 0;          // INT32-pipe operations, one per lane per instruction (index
                                     // arithmetic, compares, predicate logic, selects)
  std::int64_t smem_read_bytes = 0;  // operand bytes the warps read from shared memory
  // The op's chain of dependent latencies in one warp, which no work of its own overlaps:
  // round trips through the shared-memory datapath it makes one after another (a shared load
  // whose value is stored back or combined before the next issues; a shuffle round; a barrier)
  // and the dependent FP32 instructions between them. The CTA cannot finish the op faster than
  // its own work plus this chain, however idle the SM.
  std::int64_t smem_round_trips = 0;
  std::int64_t chain_fp32_ops = 0;
  // Waits on the op's own wgmma result before the warpgroup can go on (wgmma.wait_group 0 on a
  // product whose accumulators the next phase reads): each the profile's wgmma latency.
  std::int64_t wgmma_waits = 0;
  // wgmma instructions the compiler serialized: each waits for its own result before the next
  // issues (ptxas does so when the kernel spills, warning C7512), adding the instruction's fixed
  // latency beyond its tensor time to the warpgroup's chain (Rates::wgmma_serial_gap_s).
  std::int64_t serialized_wgmmas = 0;
  // A load that gathers: its rows go below the tile of the same tensor already on chip instead
  // of replacing it (paged K/V: one K/V tile assembled from several pages). Counted as any load.
  bool append = false;
  // A load the step issues itself, after the barrier that starts it, instead of prefetching it a
  // stage ahead (FlashAttention-1's row statistics m and l: plain loads of what the previous
  // outer iteration stored). The schedule emits it just before the compute that first uses it;
  // the engine starts it when the step's compute starts, and that compute waits for it.
  bool in_step = false;

  static TileOp load(TileRef t, OnChip dest = OnChip::smem) {
    TileOp op;
    op.kind = OpKind::load;
    op.tile = t;
    op.on_chip = dest;
    return op;
  }
  static TileOp gather(TileRef t, OnChip dest = OnChip::smem) {
    TileOp op = load(t, dest);
    op.append = true;
    return op;
  }
  static TileOp load_in_step(TileRef t, OnChip dest = OnChip::reg) {
    TileOp op = load(t, dest);
    op.in_step = true;
    return op;
  }
  static TileOp store(TileRef t, OnChip src = OnChip::reg) {
    TileOp op;
    op.kind = OpKind::store;
    op.tile = t;
    op.on_chip = src;
    return op;
  }
  static TileOp reduce(TileRef t) {
    TileOp op;
    op.kind = OpKind::reduce;
    op.tile = t;
    op.on_chip = OnChip::reg;
    return op;
  }
};

}  // namespace iosim
