// Paged attention (Kwon et al. 2023) for decoding: the split-KV schedule of decode.hpp with K/V
// in pages of --page-tokens tokens, placed by a per-sequence block table
// (sim/schedule/block_table.hpp). Each split reads its slice of the block table, then gathers every
// K/V tile from the pages it overlaps; pages smaller than a K/V tile mean more, shorter runs
// through the L2.
#include "algorithms/dataflow.hpp"
#include "algorithms/decode.hpp"

namespace iosim {

Dataflow paged_dataflow() {
  Dataflow f;
  f.name = "paged";
  f.pass = Pass::fwd;
  f.summary = "split-KV over a paged K/V cache gathered through a block table (PagedAttention)";
  f.mechanisms = kOurMmaSyncMechanisms;
  f.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req,
              const DataflowUse&) { return plan_split_kv(p, hw, req, true); };
  f.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask*) {
    return split_kv_closed_form(p, t.block_q, t.block_kv, t.splits, true);
  };
  f.paper_step = [](const std::string& kernel, const TileOp& op, const DataflowUse&) {
    return paper::split_kv(kernel, op);
  };
  f.capabilities.splits = true;
  f.capabilities.packs_gqa = true;
  f.capabilities.kv_dtype = true;  // --kv-dtype fp8: an FP8 K/V cache (decode.hpp)
  f.capabilities.latent = true;    // --latent-dim: V read from a latent K cache (decode.hpp)
  f.capabilities.pages = true;
  return f;
}

}  // namespace iosim
