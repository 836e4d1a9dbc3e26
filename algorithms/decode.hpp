#pragma once
// Split-KV decoding (flash_decoding.cpp): flash-decoding over contiguous K/V and paged attention
// over a block table share one schedule, FlashAttention-2's split-KV kernels
// (flash_fwd_splitkv_kernel + flash_fwd_splitkv_combine_kernel):
//   split kernel, grid (Tr, S, query heads): CTA (i, s, head) takes query block i of one head
//     (with a packed query group, AttentionProblem::packs_query_group: the g heads of one K/V
//     head as g rows) and K/V blocks [s * ceil(Tc/S), (s+1) * ceil(Tc/S)) of its K/V head. It
//     writes its normalized partial output (fp32) and log-sum-exp per row to partial_O and
//     partial_lse ([S][B*H*N][d] and [S][B*H*N][1], FlashAttention's oaccum/lseaccum layout).
//     A split with no block writes O = 0 and lse = -inf. With S = 1 it writes O and L directly
//     and there is no reduce kernel.
//   reduce kernel, grid ceil(B*H*N / R): CTA r reads, for R rows, every split's lse and partial
//     output once and writes O and L (R = 4 for d a multiple of 128, 8 of 64, else 16, as
//     FlashAttention's combine kernel).
// Paged: K and V are a pool of pages (sim/schedule/block_table.hpp); a split first reads its slice
// of the block table (int32), then gathers each K/V tile from the pages it overlaps (one load per
// page piece); the last page of a sequence may be partly filled and only its tokens are read.
// An FP8 K/V cache (--kv-dtype fp8, AttentionProblem::kv_dtype): K and V are copied to shared
// memory as stored, one byte an element (HBM, L2 and shared-memory bytes halve), and each warp
// converts the K/V elements it reads to fp16/bf16 in registers before Q K^T and P V (FP32-pipe
// work, costs::convert_fp8_operand); Q, O, L and the fp32 partials are as without it.
// A latent cache (--latent-dim C, AttentionProblem::latent_dim: multi-head latent attention's
// absorbed decode, DeepSeek-V2/V3 and FlashMLA): K is the cache, head_dim columns a token, and V
// its first C columns; no V tensor is declared or loaded. Each block loads K alone (paged: its
// pages of K), Q K^T spans head_dim, P V reads the first C columns of the K tile on chip (an fp8
// K converted once for both), and O, the partials and the reduce are C columns wide. Its default
// tiles are FlashMLA's 64 x 64 with the fewest warpgroups that hold the fp32 accumulators and two
// K buffers where they fit, each a copy stage of its own (plan_split_kv).
#include <cstdint>

#include "algorithms/algorithm.hpp"

namespace iosim {

/// FlashAttention-2's num_splits_heuristic: one split when `tiles` query tiles already fill 80%
/// of the `slots` (SMs x CTAs per SM); otherwise the smallest split count whose wave efficiency
/// (tiles*S / slots over its ceiling) is within 85% of the best over S <= min(max_splits, slots,
/// kv_blocks), skipping counts that leave the same blocks per split as S - 1.
std::int64_t num_splits_heuristic(std::int64_t tiles, std::int64_t slots, std::int64_t kv_blocks,
                                  std::int64_t max_splits);

/// Plans the split-KV schedule (`paged`: K/V gathered through p.block_table).
Planned plan_split_kv(const AttentionProblem& p, const HardwareProfile& hw,
                      const TilingRequest& req, bool paged);

}  // namespace iosim
