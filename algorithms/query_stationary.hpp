#pragma once
// The query-stationary forward dataflow (FlashAttention-2's loop order, Dao 2023): one CTA per
// (query block, batch, head), grid (Tr, B, H) so that the CTAs of a head run side by side and
// share K/V in L2. A CTA loads its Q tile once, streams K_j, V_j (causal: up to the diagonal;
// under a block mask: its nonzero blocks), keeps m, l and O on chip, and writes O and L once.
// flash2, block-sparse and flash3 are this dataflow with different mechanisms; a kernel
// description names it `query_stationary`.
#include <memory>
#include <string>

#include "algorithms/algorithm.hpp"
#include "algorithms/dataflow.hpp"
#include "algorithms/kernel_description.hpp"

namespace iosim {

class BlockMask;

/// What the query-stationary forward needs besides the problem and the tiling.
struct QueryStationaryKernel {
  std::string name;  // the kernel's name ("flash2_fwd", "flash3_fwd", "<description>_fwd")
  ResolvedMechanisms mechanisms;
  std::int64_t smem_bytes = 0;
  int registers = 0;
  int local_bytes = 0;          // per thread: register spills (TilingRequest)
  int consumer_warpgroups = 0;  // wgmma: warpgroups that compute, at most one per 64-row group
  // Uniform wgmma warpgroups sharing a row group (more warpgroups than 64-row groups): each
  // computes the row group's whole score tile and softmax (replicated), and they split the
  // columns of its P V product. 1 where every warpgroup has rows of its own.
  std::int64_t score_replicas = 1;
  KvOrder kv_order = KvOrder::ascending;
};

/// The forward schedule of the query-stationary dataflow for `kernel`'s mechanisms.
std::unique_ptr<Schedule> make_query_stationary_forward(const AttentionProblem& p, const Tiling& t,
                                                        const QueryStationaryKernel& kernel,
                                                        std::shared_ptr<const BlockMask> blocks);

/// Plans the forward alone (p.pass == fwd) with `mech`: tiles from `req`, else FlashAttention-3's
/// table for warp-specialized kernels (producer_consumer, pingpong) and FlashAttention-2's
/// otherwise; checks what the mechanisms require (wgmma's 64-row warpgroup tiles, a producer
/// warpgroup's threads, registers under setmaxnreg, shared memory). `algo` names the kernel in
/// messages; the kernel is called `kernel_name`. `smem_override`: a compiler's report.
Planned plan_query_stationary_forward(const AttentionProblem& p, const HardwareProfile& hw,
                                      const TilingRequest& req, const ResolvedMechanisms& mech,
                                      const std::string& algo, const std::string& kernel_name,
                                      bool block_sparse, KvOrder kv_order = KvOrder::ascending);

/// The mechanisms of the flash2 preset (mma.sync, cp.async, uniform warps) and of the flash3
/// preset (wgmma with P from registers, TMA, a producer warpgroup; consumers ping-pong or
/// cooperate), as kernel_presets() states them.
ResolvedMechanisms flash2_mechanisms();
ResolvedMechanisms flash3_mechanisms(bool pingpong);

/// The lines of FlashAttention-2's Algorithms 1 and 2 each operation of its kernels carries out
/// (flash2.cpp); under a block mask, block-sparse FlashAttention's.
PaperStep flash2_family_paper_step(const std::string& kernel, const TileOp& op,
                                   const DataflowUse& use);

}  // namespace iosim
