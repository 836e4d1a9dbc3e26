#pragma once
// Compute ops with the work a CUDA kernel spends on them. Per-element FP32 costs count the
// instructions of a straightforward implementation: a row max (1), the subtraction (1), the
// row sum (1) and the scaling (1) per score; one SFU exp per score; one FMA-free multiply per
// output element to rescale. These constants are the model's only arithmetic assumptions.
#include <algorithm>
#include <cstdint>

#include "sim/schedule/tile_op.hpp"

namespace iosim::costs {

// Each cost below comes in two forms: one fills `op`, a default TileOp (say one just appended to a
// part's vector: `costs::scores(emplace_op(out), ...)`, algorithms/passes.hpp, which builds no
// temporary to copy) and returns it; the other returns a new op.

inline TileOp& compute(TileOp& op, ComputeKind kind, const TileRef& tile) {
  op.kind = OpKind::compute;
  op.compute = kind;
  op.tile = tile;
  return op;
}
inline TileOp compute(ComputeKind kind, const TileRef& tile) {
  TileOp op;
  compute(op, kind, tile);
  return op;
}

/// S = scale * Q K^T over `k` of the head dimension (2 FLOPs per multiply-add).
inline TileOp& scores(TileOp& op, const TileRef& s_tile, std::int64_t k,
                      std::int64_t smem_read_bytes, ComputeKind kind = ComputeKind::scores) {
  compute(op, kind, s_tile);
  op.tensor_flops = 2 * s_tile.rows * s_tile.cols * k;
  op.smem_read_bytes = smem_read_bytes;
  return op;
}
inline TileOp scores(const TileRef& s_tile, std::int64_t k, std::int64_t smem_read_bytes,
                     ComputeKind kind = ComputeKind::scores) {
  TileOp op;
  scores(op, s_tile, k, smem_read_bytes, kind);
  return op;
}

/// Integer/predicate instructions per score of an index-computed mask: the key column, two
/// compares (past the end, above the diagonal), the predicate logic and a select. nvcc's PTX
/// of our kernels' warp_scale_mask spends 4.7 (flash2, d = 64), 5.4 (flash2, d = 128) and 5.2
/// (flash1) such instructions per score besides the scaling multiply.
inline constexpr std::int64_t kMaskIntOpsPerScore = 5;

inline TileOp& mask(TileOp& op, const TileRef& s_tile) {
  compute(op, ComputeKind::apply_mask, s_tile);
  op.int_ops = kMaskIntOpsPerScore * s_tile.rows * s_tile.cols;
  return op;
}
inline TileOp mask(const TileRef& s_tile) {
  TileOp op;
  mask(op, s_tile);
  return op;
}

inline TileOp& online_softmax(TileOp& op, const TileRef& s_tile, std::int64_t d) {
  compute(op, ComputeKind::online_softmax, s_tile);
  op.fp32_flops = 4 * s_tile.rows * s_tile.cols + s_tile.rows * d + 2 * s_tile.rows;
  op.sfu_ops = s_tile.rows * s_tile.cols + s_tile.rows;
  return op;
}
inline TileOp online_softmax(const TileRef& s_tile, std::int64_t d) {
  TileOp op;
  online_softmax(op, s_tile, d);
  return op;
}

/// A softmax over whole rows by a CTA of `threads` threads (one row at a time): three passes
/// over the row in shared memory (max, sum of exponentials, normalized write) with a CTA-wide
/// reduction after each of the first two: log2(32) shuffle rounds, a barrier and a round
/// through shared memory for the warps' partials, then a dependent combine of the `threads` / 32
/// partials. Each pass is a shared-memory round trip followed by a dependent chain over the
/// elements a thread holds (16-byte chunks of 8, at least one chunk).
inline TileOp softmax_rows(const TileRef& s_tile, std::int64_t threads = 256) {
  TileOp op = compute(ComputeKind::softmax_rows, s_tile);
  op.fp32_flops = 4 * s_tile.rows * s_tile.cols + s_tile.rows;
  op.sfu_ops = s_tile.rows * s_tile.cols + s_tile.rows;
  const std::int64_t per_thread = std::max<std::int64_t>(8, (s_tile.cols + threads - 1) / threads);
  const std::int64_t reduction_trips = 5 + 1 + 1, reduction_ops = 5 + threads / 32;
  op.smem_round_trips = s_tile.rows * (3 + 2 * reduction_trips);
  op.chain_fp32_ops = s_tile.rows * (3 * per_thread + 2 * reduction_ops);
  return op;
}

inline TileOp& dropout(TileOp& op, const TileRef& p_tile) {
  compute(op, ComputeKind::apply_dropout, p_tile);
  op.fp32_flops = 2 * p_tile.rows * p_tile.cols;  // random draw compare + scale
  return op;
}
inline TileOp dropout(const TileRef& p_tile) {
  TileOp op;
  dropout(op, p_tile);
  return op;
}

/// FP32-pipe operations a warp spends per fp8 (e4m3) element it converts to fp16 or bf16 in
/// registers before an MMA (a K/V cache stored in fp8, --kv-dtype fp8). cvt.rn.f16x2.e4m3x2
/// converts two elements per lane, and the CUDA C++ Programming Guide's throughput table
/// (arithmetic instructions, compute capability 8.9 and 9.0) gives "all other type conversions"
/// 16 results per clock per SM against 128 for FP32 add and multiply: one conversion takes the
/// issue slots of 8 FP32 instructions, which the ops here count as one fp32 flop each, so 8 / 2
/// = 4 per element. (bf16 has no direct e4m3 conversion on sm_90; kernels go through f16x2 and
/// bit manipulation, at least as many instructions: the same count is a floor.) The per-tensor
/// scale is folded into the softmax scale (K) and the output (V), as vLLM and FlashInfer do: no
/// per-element multiply. The count is Hopper's (and Ada's) ratio; Ampere has no e4m3 conversion
/// instruction (cvt's .e4m3x2 needs sm_89) and converts with integer and FP16 bit operations, at
/// half the FP32 lanes per SM: there it is an estimate, not derived. Not yet measured on our GPUs.
inline constexpr std::int64_t kFp8ConvertFp32OpsPerElement = 4;

/// The FP32-pipe work of converting `elements` fp8 values on chip (see above), added to the
/// fp32_flops of the MMA op that consumes them: the conversion runs on the FP pipe beside the
/// softmax, not on the tensor cores, and the engine times it as any FP32 work of that op.
inline TileOp& convert_fp8_operand(TileOp& op, std::int64_t elements) {
  op.fp32_flops += kFp8ConvertFp32OpsPerElement * elements;
  return op;
}

/// O += P V for a score tile of rows x cols and head dimension `d`.
inline TileOp& pv(TileOp& op, const TileRef& s_tile, std::int64_t d, std::int64_t smem_read_bytes) {
  compute(op, ComputeKind::accumulate_pv, s_tile);
  op.tensor_flops = 2 * s_tile.rows * s_tile.cols * d;
  op.smem_read_bytes = smem_read_bytes;
  return op;
}
inline TileOp pv(const TileRef& s_tile, std::int64_t d, std::int64_t smem_read_bytes) {
  TileOp op;
  pv(op, s_tile, d, smem_read_bytes);
  return op;
}

inline TileOp& init_state(TileOp& op, const TileRef& o_tile) {
  return compute(op, ComputeKind::init_state, o_tile);
}
inline TileOp init_state(const TileRef& o_tile) {
  return compute(ComputeKind::init_state, o_tile);
}

inline TileOp& finalize(TileOp& op, const TileRef& o_tile, std::int64_t d) {
  compute(op, ComputeKind::finalize, o_tile);
  op.fp32_flops = o_tile.rows * d + o_tile.rows;
  op.sfu_ops = 2 * o_tile.rows;  // reciprocal and log per row
  return op;
}
inline TileOp finalize(const TileRef& o_tile, std::int64_t d) {
  TileOp op;
  finalize(op, o_tile, d);
  return op;
}

/// FlashAttention-1's combine step, PV product included. `smem_round_trips` is what one warp
/// spends on the read-modify-write of its rows of O in shared memory, one round trip per
/// 32-bit pair of O it rescales (see flash1.cpp).
inline TileOp flash1_update(const TileRef& s_tile, std::int64_t d, std::int64_t smem_read_bytes,
                            std::int64_t smem_round_trips = 0) {
  TileOp op = compute(ComputeKind::flash1_update, s_tile);
  op.tensor_flops = 2 * s_tile.rows * s_tile.cols * d;
  op.fp32_flops = 4 * s_tile.rows * s_tile.cols + 4 * s_tile.rows * d + 6 * s_tile.rows;
  op.sfu_ops = s_tile.rows * s_tile.cols + 2 * s_tile.rows;
  op.smem_read_bytes = smem_read_bytes;
  // Between a round trip's load and its store: unpack to fp32, FMA with P V, scale by 1/l, pack.
  op.smem_round_trips = smem_round_trips;
  op.chain_fp32_ops = 4 * smem_round_trips;
  return op;
}

// Backward pass. Matrix products count 2 FLOPs per multiply-add; elementwise steps one FP32
// instruction per element per operation named in the kind's formula (algorithms/compute_ops.cpp).

inline TileOp zero_grad(const TileRef& grad_tile) {
  return compute(ComputeKind::zero_grad, grad_tile);
}

/// D = rowsum(dO o O) for the tile's rows: a multiply and an add per element.
inline TileOp row_dot(const TileRef& o_tile, std::int64_t d) {
  TileOp op = compute(ComputeKind::row_dot, o_tile);
  op.fp32_flops = 2 * o_tile.rows * d;
  return op;
}

/// P = exp(S - L): a subtraction and an exp per score.
inline TileOp recompute_p(const TileRef& s_tile) {
  TileOp op = compute(ComputeKind::recompute_p, s_tile);
  op.fp32_flops = s_tile.rows * s_tile.cols;
  op.sfu_ops = s_tile.rows * s_tile.cols;
  return op;
}

/// P = exp(S - m) / l: a subtraction, an exp and a multiply per score, a reciprocal per row.
inline TileOp recompute_p_ml(const TileRef& s_tile) {
  TileOp op = compute(ComputeKind::recompute_p_ml, s_tile);
  op.fp32_flops = 2 * s_tile.rows * s_tile.cols;
  op.sfu_ops = s_tile.rows * s_tile.cols + s_tile.rows;
  return op;
}

/// Shared-memory operand reads of an (m x k)(k x n) product on `warps` warps in a wm x wn grid:
/// each A row is read by the wn warps along n, each B column by the wm warps along m. The grid is
/// the one that reads least, with warp tiles of at least 16 x 8 (an mma.sync atom); that choice
/// reproduces FlashAttention-2's backward layouts (AtomLayoutMSdP, NdKV, MdQ) for d = 64 and 128.
inline std::int64_t warp_tiled_smem_bytes(std::int64_t m, std::int64_t n, std::int64_t k,
                                          std::int64_t warps, std::int64_t elem_bytes) {
  std::int64_t best = -1;
  for (std::int64_t wm = 1; wm <= warps; wm *= 2) {
    const std::int64_t wn = warps / wm;
    if (wm * wn != warps) continue;
    if ((wm > 1 && m < 16 * wm) || (wn > 1 && n < 8 * wn)) continue;
    const std::int64_t reads = (wn * m + wm * n) * k;
    if (best < 0 || reads < best) best = reads;
  }
  if (best < 0) best = (warps * m + n) * k;  // tiny tiles: every warp reads all of A
  return best * elem_bytes;
}

/// A tensor-core product of 2 * rows * cols * d FLOPs over a score tile (dV, dP, dQ or dK).
inline TileOp grad_matmul(ComputeKind kind, const TileRef& s_tile, std::int64_t d,
                          std::int64_t smem_read_bytes) {
  TileOp op = compute(kind, s_tile);
  op.tensor_flops = 2 * s_tile.rows * s_tile.cols * d;
  op.smem_read_bytes = smem_read_bytes;
  return op;
}

inline TileOp dropout_grad(const TileRef& s_tile) {
  TileOp op = compute(ComputeKind::dropout_grad, s_tile);
  op.fp32_flops = 2 * s_tile.rows * s_tile.cols;  // keep test (or mask read) + scale
  return op;
}

/// dS = P o (dP - D), the softmax scale folded in: three FP32 operations per score.
inline TileOp grad_s(const TileRef& s_tile) {
  TileOp op = compute(ComputeKind::grad_s, s_tile);
  op.fp32_flops = 3 * s_tile.rows * s_tile.cols;
  return op;
}

/// dS = P o (dP - rowsum(P o dP)) over whole rows: multiply, add, subtract, multiply per score.
inline TileOp softmax_grad_rows(const TileRef& s_tile) {
  TileOp op = compute(ComputeKind::softmax_grad_rows, s_tile);
  op.fp32_flops = 4 * s_tile.rows * s_tile.cols;
  return op;
}

inline TileOp mask_grad(const TileRef& s_tile) {
  TileOp op = compute(ComputeKind::mask_grad, s_tile);
  op.fp32_flops = s_tile.rows * s_tile.cols;
  return op;
}

/// dQ = dQaccum: one conversion per element.
inline TileOp convert_dq(const TileRef& dq_tile, std::int64_t d) {
  TileOp op = compute(ComputeKind::convert_dq, dq_tile);
  op.fp32_flops = dq_tile.rows * d;
  return op;
}

// Split-KV decoding.

/// partial_O = O / l and partial_lse = m + log l: as finalize.
inline TileOp finalize_partial(const TileRef& o_tile, std::int64_t d) {
  TileOp op = finalize(o_tile, d);
  op.compute = ComputeKind::finalize_partial;
  return op;
}

/// One split into the running result: a max, two exps, and a scale-and-add of d elements per row.
inline TileOp combine_partial(const TileRef& o_tile, std::int64_t d) {
  TileOp op = compute(ComputeKind::combine_partial, o_tile);
  op.fp32_flops = 3 * o_tile.rows * d + 4 * o_tile.rows;
  op.sfu_ops = 2 * o_tile.rows;
  return op;
}

}  // namespace iosim::costs
