// Paged attention (Kwon et al. 2023) for decoding: the split-KV schedule of decode.hpp with K/V
// in pages of --page-tokens tokens, placed by a per-sequence block table
// (sim/schedule/block_table.hpp). Each split reads its slice of the block table, then gathers every
// K/V tile from the pages it overlaps; pages smaller than a K/V tile mean more, shorter runs
// through the L2.
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

}  // namespace iosim
