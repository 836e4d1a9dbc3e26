// Block-sparse FlashAttention (Dao et al. 2022, section 3.3 and Proposition 4): FlashAttention-2's
// kernels, forward and backward, over the nonzero blocks of a block_q x block_kv block mask chosen
// with --pattern (sim/schedule/block_mask.hpp). Zero blocks are skipped entirely: no loads, no
// FLOPs. With no --pattern every block is computed (s = 1).
#include "algorithms/passes.hpp"

namespace iosim {

Algorithm block_sparse_algorithm() {
  Algorithm a;
  a.name = "block-sparse";
  a.summary = "block-sparse FlashAttention: FlashAttention-2 over the nonzero blocks of --pattern";
  a.capabilities.block_pattern = true;
  a.capabilities.packs_gqa = true;  // without --pattern: flash2's
  a.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req) {
    return plan_flash2_family(p, hw, req, true);
  };
  a.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask* blocks) {
    return flash2_closed_form(p, t.block_q, t.block_kv, blocks);
  };
  a.paper_step = [](const std::string& kernel, const TileOp& op) {
    if (paper::backward_kernel(kernel)) return paper::flash2_backward(kernel, op);
    return paper::flash2_forward(op,
                                 "FlashAttention-2, Algorithm 1, over the nonzero blocks only (as "
                                 "FlashAttention's Algorithm 5 skips the zero blocks)");
  };
  return a;
}

}  // namespace iosim
