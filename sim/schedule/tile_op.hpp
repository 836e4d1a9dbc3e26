#pragma once
// The operations a schedule emits for one CTA, in program order. The engine turns them into
// traffic and time; the numeric executor (numerics/numeric_executor.hpp) turns the same
// stream into arithmetic, which proves the emitted loads carry what the math needs.
#include <cstddef>
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

/// What a compute op does to the CTA's on-chip buffers (named by TensorId). sim/ carries the kind
/// as a tag: the engine times an op from its FLOP fields and never asks what it computes. Each
/// kind's meaning (its formula, the buffers it writes, what explain says of it, whether the numeric
/// executor carries it out) is its row in algorithms/compute_ops.cpp, the one place it is written.
enum class ComputeKind : std::uint8_t {
  init_state,
  scores,
  scores_accumulate,
  apply_mask,
  softmax_rows,
  apply_dropout,
  online_softmax,
  accumulate_pv,
  finalize,
  flash1_update,
  // Backward pass.
  zero_grad,
  row_dot,
  recompute_p,
  recompute_p_ml,
  accumulate_dv,
  grad_p,
  grad_p_accumulate,
  dropout_grad,
  grad_s,
  softmax_grad_rows,
  mask_grad,
  accumulate_dq,
  dq_partial,
  accumulate_dk,
  convert_dq,
  // Split-KV decoding (flash-decoding, paged).
  finalize_partial,
  combine_partial,
  // The ops of a transformer layer around attention (transformer/).
  matmul,
  matmul_accumulate,
  norm_rows,
  residual_add,
  activation,
  splitk_reduce,
  kCount  // not a kind: their number
};

inline constexpr std::size_t kComputeKindCount = static_cast<std::size_t>(ComputeKind::kCount);

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
