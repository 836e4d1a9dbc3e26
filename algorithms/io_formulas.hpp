#pragma once
// Closed-form IO of each schedule and the bounds of the theory. Each closed form is written
// independently of its schedule's emission code, so that tests can hold one against the other,
// and lives in its algorithm's file (the file each declaration below names; what several share:
// closed_form_parts.hpp); the bounds, the same for every algorithm, are io_formulas.cpp's.
//
// closed form: the exact two-level (HBM <-> SRAM) bytes each schedule moves for its block sizes,
//   ragged last blocks, causal and sliding-window block skipping included. `iosim run --l2 off`
//   must equal it. With a backward (--pass bwd | fwdbwd) the passes add: fwdbwd = forward +
//   backward.
// compulsory : forward: read Q, K, V once and write O once; backward: read Q, K, V, dO once and
//   write dQ, dK, dV once (block-sparse: only the Q and K/V rows a nonzero block touches; a
//   sliding window: only the K/V rows some query row sees). With
//   grouped-query attention K and V count once per K/V head.
// decode (flash-decoding, paged): per query tile and split, Q, the split's K/V rows (and, paged,
//   its slice of the int32 block table), then either O and L (one split) or an fp32 partial O and
//   lse; the reduce kernel reads every split's partials once and writes O and L. A K/V head's
//   query group shares one tile at seq 1 (AttentionProblem::packs_query_group), so K/V are read
//   once per K/V head there; flash2 follows the same rule.
// lower bound: Dao et al. Prop. 3 / Saha & Ye 2024: Omega(N N_kv d^2 / M) for M >= d^2 and
//   Omega(N N_kv d / sqrt(M)) below, M = SRAM in elements, per (batch, head); constants taken as
//   1, and never below the compulsory bytes; per pass (Theorem 5: the backward has the same
//   order); block-sparse scales it by the fraction of scores inside nonzero blocks (Prop. 4), a
//   sliding window by the fraction of scores inside the window (its s, as a block mask's).
#include <cstdint>
#include <string>

#include "sim/schedule/problem.hpp"

namespace iosim {
class BlockMask;  // sim/schedule/block_mask.hpp
}

namespace iosim {

struct IoBounds {
  std::uint64_t compulsory_bytes = 0;
  std::uint64_t closed_form_read_bytes = 0;
  std::uint64_t closed_form_write_bytes = 0;
  std::uint64_t closed_form_bytes = 0;
  std::uint64_t lower_bound_bytes = 0;          // per pass, max(compulsory, the formula's bytes)
  std::uint64_t lower_bound_formula_bytes = 0;  // the formula's term alone, summed over passes
  std::string lower_bound_formula;              // which regime of the bound applied
};

/// Bytes read and written between HBM and SRAM.
struct ReadWriteBytes {
  std::uint64_t read = 0, write = 0;
  ReadWriteBytes& operator+=(const ReadWriteBytes& o) {
    read += o.read;
    write += o.write;
    return *this;
  }
};

// The exact two-level bytes of each schedule family for blocks block_q x block_kv, summed over
// every (batch, head), for the passes p.pass runs (forward, backward or both). The built-in
// algorithms' closed_form hooks call them; the two-pass backward's is in two_pass_backward.hpp.

/// Standard (unfused) attention: the GEMM, mask, softmax and dropout kernels through HBM
/// (standard.cpp).
ReadWriteBytes standard_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                    std::int64_t block_kv);
/// FlashAttention-1 (Algorithms 1 and 4 of Dao et al. 2022; flash1.cpp).
ReadWriteBytes flash1_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                  std::int64_t block_kv);
/// FlashAttention-2; with `blocks`, block-sparse FlashAttention over its nonzero blocks
/// (flash2.cpp).
ReadWriteBytes flash2_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                  std::int64_t block_kv, const BlockMask* blocks = nullptr);
/// FlashAttention-3 (Shah et al. 2024; flash3.cpp). Forward: each tile of `block_q` query rows of a
/// head reads its Q rows once, K and V once per key block it sees (causal: up to its last row's
/// diagonal), and writes its O rows and L once. Backward, over blocks `backward_block_q` x
/// `backward_block_kv`: FlashAttention-2's backward bytes (the pre-pass, per K/V block K and V once
/// and per query block it meets Q, dO, L, D and an fp32 add of dQ, dK and dV once, the dQ
/// conversion); FlashAttention-3 changes how the kernel runs, not what it moves. With grouped-query
/// heads (g = H / Hkv > 1) each of the B H query heads adds its dK and dV in fp32 into dKaccum and
/// dVaccum (2 Nk d 4 bytes read and written, in place of 2 Nk d e written), and per K/V head the
/// accumulators are zeroed (2 Nk d 4 written) and converted (2 Nk d 4 read, 2 Nk d e written).
ReadWriteBytes flash3_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                  std::int64_t block_kv, std::int64_t backward_block_q = 0,
                                  std::int64_t backward_block_kv = 0);
/// Split-KV decoding with `splits` K/V chunks (forward only); `paged`: K/V gathered through an
/// int32 block table of p.page_tokens-token pages (flash_decoding.cpp).
ReadWriteBytes split_kv_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                    std::int64_t block_kv, std::int64_t splits, bool paged);

/// The bounds of a run whose schedule moves `closed_form` bytes, on a GPU whose per-CTA SRAM is
/// `sram_bytes`; `blocks` is the block-sparse mask (null when every block is computed).
IoBounds io_bounds(const AttentionProblem& p, const ReadWriteBytes& closed_form,
                   std::int64_t sram_bytes, const BlockMask* blocks = nullptr);

}  // namespace iosim
