#pragma once
// Where a schedule follows a paper's pseudo-code: for `iosim explain`, the algorithm a kernel
// carries out and the line of it each emitted operation does. The line numbers are those of the
// papers' algorithm boxes: FlashAttention (Dao et al. 2022) Algorithm 0 (standard attention),
// Algorithm 1 (forward), Algorithm 3 (standard backward), Algorithm 4 (backward); FlashAttention-2
// (Dao 2023) Algorithm 1 (forward) and Algorithm 2 (backward).
#include <string>

#include "sim/schedule/tile_op.hpp"

namespace iosim {

struct PaperStep {
  std::string algorithm;  // "FlashAttention-2, Algorithm 1"; empty: the kernel follows no paper
  std::string line;       // "line 8", "lines 10-12"; empty: no line of it does this operation
  std::string note;       // where the schedule departs from the line, in a few words (or empty)
};

/// The paper's algorithm that kernel `kernel_name` of algorithm `algorithm` (a registry name)
/// follows, and the line `op` carries out.
PaperStep paper_step(const std::string& algorithm, const std::string& kernel_name,
                     const TileOp& op);

}  // namespace iosim
