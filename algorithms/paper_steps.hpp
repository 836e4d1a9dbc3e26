#pragma once
// Where a schedule follows a paper's pseudo-code: for `iosim explain`, the algorithm a kernel
// carries out and the line of it each emitted operation does. The line numbers are those of the
// papers' algorithm boxes: FlashAttention (Dao et al. 2022) Algorithm 0 (standard attention),
// Algorithm 1 (forward), Algorithm 3 (standard backward), Algorithm 4 (backward); FlashAttention-2
// (Dao 2023) Algorithm 1 (forward) and Algorithm 2 (backward). Each algorithm's paper_step hook
// (Algorithm::paper_step, set in its own file) picks among these boxes.
#include <string>

#include "sim/schedule/tile_op.hpp"

namespace iosim {

struct PaperStep {
  std::string algorithm;  // "FlashAttention-2, Algorithm 1"; empty: the kernel follows no paper
  std::string line;       // "line 8", "lines 10-12"; empty: no line of it does this operation
  std::string note;       // where the schedule departs from the line, in a few words (or empty)
};

namespace paper {

/// Whether kernel `kernel` of a schedule belongs to its backward pass (by the names the
/// schedules give their kernels: "*_bwd", "gemm_d*", "dot_do_o", "convert_dq").
bool backward_kernel(const std::string& kernel);

/// FlashAttention, Algorithm 0 (standard attention): the line kernel `kernel` carries out.
PaperStep standard_forward(const std::string& kernel);
/// FlashAttention, Algorithm 3 (standard attention backward): the line kernel `kernel` carries out.
PaperStep standard_backward(const std::string& kernel);
/// FlashAttention, Algorithm 1 (forward): the line `op` carries out.
PaperStep flash1_forward(const TileOp& op);
/// FlashAttention, Algorithm 4 (backward): the line `op` carries out.
PaperStep flash1_backward(const TileOp& op);
/// FlashAttention-2, Algorithm 1 (forward): the line `op` carries out, under the name `algorithm`
/// ("FlashAttention-2, Algorithm 1" and what a schedule changes of it).
PaperStep flash2_forward(const TileOp& op, const std::string& algorithm);
/// FlashAttention-2, Algorithm 2 (backward): the line `op` of kernel `kernel` carries out.
PaperStep flash2_backward(const std::string& kernel, const TileOp& op);
/// Split-KV decoding (flash-decoding, paged): FlashAttention-2's Algorithm 1 on one split of K/V;
/// the reduce kernel follows no line.
PaperStep split_kv(const std::string& kernel, const TileOp& op);

}  // namespace paper
}  // namespace iosim
