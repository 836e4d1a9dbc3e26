// Paged attention (Kwon et al. 2023) for decoding: the split-KV schedule of decode.hpp with K/V
// in pages of --page-tokens tokens, placed by a per-sequence block table
// (sim/schedule/block_table.hpp). Each split reads its slice of the block table, then gathers every
// K/V tile from the pages it overlaps; pages smaller than a K/V tile mean more, shorter runs
// through the L2.
#include "algorithms/dataflow.hpp"
#include "algorithms/decode.hpp"

namespace iosim {

Algorithm paged_algorithm() {
  Algorithm a;
  a.name = "paged";
  a.summary = "paged attention: split-KV decoding that gathers K/V pages through a block table";
  a.capabilities.splits = true;
  a.capabilities.packs_gqa = true;
  a.capabilities.pages = true;
  a.capabilities.backward = false;  // an inference schedule
  a.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req) {
    return plan_split_kv(p, hw, req, true);
  };
  a.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask*) {
    return split_kv_closed_form(p, t.block_q, t.block_kv, t.splits, true);
  };
  a.paper_step = paper::split_kv;
  return a;
}

Dataflow paged_dataflow() {
  const Algorithm a = paged_algorithm();
  Dataflow f;
  f.name = "paged";
  f.pass = Pass::fwd;
  f.summary = "split-KV over a paged K/V cache gathered through a block table (PagedAttention)";
  // FlashAttention-2's split-KV kernels (ours): mma.sync, cp.async, uniform warps.
  f.mechanisms =
      ResolvedMechanisms{MmaFamily::mma_sync, LoadPath::cp_async, WarpRoles::uniform, false};
  f.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req,
              const DataflowUse&) { return plan_split_kv(p, hw, req, true); };
  f.closed_form = a.closed_form;
  f.paper_step = [](const std::string& kernel, const TileOp& op, const DataflowUse&) {
    return paper::split_kv(kernel, op);
  };
  f.capabilities = a.capabilities;
  return f;
}

}  // namespace iosim
