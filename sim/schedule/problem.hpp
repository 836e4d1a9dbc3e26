#pragma once
// The attention problem a user asks about, independent of any schedule or GPU.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/schedule/dtype.hpp"

namespace iosim {

enum class Pass { fwd, bwd, fwdbwd };

/// --pack-gqa: auto (FlashAttention-2's rule), on, off (AttentionProblem::packs_query_group).
enum class GqaPacking { automatic, on, off };

struct BlockPattern;  // sim/schedule/block_mask.hpp
struct BlockTable;    // sim/schedule/block_table.hpp

/// "fwd" | "bwd" | "fwdbwd".
std::string pass_name(Pass p);
/// Parses a pass name; throws ConfigError listing the valid names.
Pass parse_pass(const std::string& s);

/// Whether `pass` runs the forward kernels / the backward kernels.
inline bool runs_forward(Pass pass) {
  return pass != Pass::bwd;
}
inline bool runs_backward(Pass pass) {
  return pass != Pass::fwd;
}

/// One attention call: O = softmax(scale * Q K^T [+ mask]) [dropout] V, per batch and head.
struct AttentionProblem {
  std::int64_t batch = 1;      // B
  std::int64_t heads = 1;      // H
  std::int64_t seq = 1;        // N, query length
  std::int64_t seq_kv = 0;     // N_kv, key/value length; 0 (left out): N, by with_defaults()
  std::int64_t head_dim = 64;  // d
  Dtype dtype = Dtype::fp16;
  // The element type K and V are stored and loaded in (--kv-dtype), when given: a serving
  // stack's K/V cache kept in fp8 (e4m3, one scale per tensor) while Q and O stay fp16 or bf16
  // (vLLM's kv_cache_dtype, TensorRT-LLM's and FlashInfer's FP8 KV cache); the decode kernel
  // converts each K/V element on chip to dtype before its MMAs. nullopt: dtype. Only the
  // dataflows with Capabilities::kv_dtype read a type other than dtype.
  std::optional<Dtype> kv_dtype;
  // Multi-head latent attention's absorbed decode (--latent-dim C; 0: none): K is a latent cache
  // of head_dim = C + rope columns a token (DeepSeek-V2/V3: 512 + 64 = 576), every query head's
  // row has head_dim columns and S = Q K^T spans them all, and V is the first C columns of the
  // same cached row (no V tensor is stored or loaded), so O has C columns (value_dim()). MLA's
  // query heads share one latent (kv_heads 1 unless --kv-heads says otherwise). Only the
  // dataflows with Capabilities::latent read one (FlashMLA's kernel is a split-KV decode).
  std::int64_t latent_dim = 0;
  bool causal = false;  // bottom-right aligned: query i sees key j iff j <= i + (N_kv - N)
  bool mask = false;    // an elementwise mask computed from indices (see README)
  // Sliding window (--window W; 0: none): query i sees key j only within W positions of its
  // diagonal key c = i + (N_kv - N): with causal c - W < j <= c (Mistral's: the W keys up to
  // itself), without it c - W < j < c + W (a symmetric band of 2 W - 1 keys). A window of N_kv or
  // more hides nothing.
  std::int64_t window = 0;
  double dropout = 0.0;  // drop probability
  Pass pass = Pass::fwd;
  // Block sparsity (--pattern, block-sparse only): which blocks are computed; null: all.
  std::shared_ptr<const BlockPattern> pattern;
  // Grouped-query attention (--kv-heads): K and V have batch * kv_heads matrices and query head h
  // reads K/V head h / (heads / kv_heads). 0: as many K/V heads as query heads.
  std::int64_t kv_heads = 0;
  // Paged K/V (--algo paged): tokens per page (0: not paged) and the per-sequence block table
  // placing each logical page in the physical pool (null: simulate() draws a permutation).
  std::int64_t page_tokens = 0;
  std::shared_ptr<const BlockTable> block_table;

  // Whether a forward kernel packs a K/V head's g query heads as g * N rows of one query matrix
  // (--pack-gqa): automatic is FlashAttention-2's rule (seq 1 only, below); on packs wherever
  // the rows allow it (FlashAttention-3's PackGQA, our own decode kernel: cuda_validate's
  // decode_fwd.cuh packs the group at every N); off never packs.
  GqaPacking pack_gqa = GqaPacking::automatic;
  // A ragged (varlen) batch (--seq-lens, --seq-kv-lens; FlashAttention's cu_seqlens): sequence b
  // has seq_lens[b] query rows and seq_kv_lens[b] keys, each masked on its own (causal: bottom-
  // right aligned in its own sequence). batch is their count, seq and seq_kv their largest: the
  // tensors are laid out padded, (B, H, max N, d), and only a sequence's own rows are touched, so
  // the bytes are exact; the packed (total, H, d) layout's page placement is not modelled. Null:
  // every sequence has seq and seq_kv (both set or neither).
  std::shared_ptr<const std::vector<std::int64_t>> seq_lens, seq_kv_lens;

  bool ragged() const { return seq_lens != nullptr; }
  std::int64_t bh() const { return batch * heads; }
  /// H_kv: K/V heads: kv_heads when given, else one latent for MLA and one per query head
  /// otherwise. The default lives here alone, so that every reader of a problem (flags, a
  /// measured case, Python) gets the same H_kv from the same fields.
  std::int64_t kv_head_count() const {
    if (kv_heads > 0) return kv_heads;
    return latent() ? 1 : heads;
  }
  /// Query heads per K/V head, H / H_kv.
  std::int64_t group() const { return heads / kv_head_count(); }
  /// K/V matrices, B * H_kv.
  std::int64_t bh_kv() const { return batch * kv_head_count(); }
  /// Whether a K/V head's query heads can form one query matrix: the g heads' rows are adjacent
  /// in (B, H, N, d), so a CTA can read each K/V head once for the whole group. Not with an index
  /// mask or dropout (whose values depend on the query position), nor block sparsity (its block
  /// mask is over query positions; FlashAttention's block-sparse kernels never pack), nor causal
  /// masking past one query position (the packed rows are then different positions).
  /// Nor a sliding window, whose visible keys move with the query position (and packed rows
  /// would take the window's keys of the wrong position). Nor a ragged batch as such (its
  /// sequences are planned as problems of their own, sequence_problem(), which packs where every
  /// sequence is one decode row, as FlashAttention-2's varlen kernel does).
  bool can_pack_query_group() const {
    return group() > 1 && !mask && dropout == 0.0 && !pattern && window == 0 && !seq_lens &&
           (seq == 1 || !causal);
  }
  /// Whether the forward kernels pack the query group: at seq 1 by default, as FlashAttention's
  /// decode path (seqlenq_ngroups_swapped) does; at any N with --pack-gqa on, or with a latent
  /// cache (FlashMLA's kernel and ours take a sequence's N x H query rows as one matrix: every
  /// head reads the one latent, so a speculative step's positions share its pass too).
  bool packs_query_group() const {
    if (pack_gqa == GqaPacking::off || !can_pack_query_group()) return false;
    return seq == 1 || pack_gqa == GqaPacking::on || latent();
  }
  /// Bytes per element of Q, K, V (and of every other input and output but O, L and the stats).
  /// K and V are kv_elem_bytes() where --kv-dtype sets another type.
  std::int64_t elem_bytes() const { return dtype_bytes(dtype); }
  /// The type K and V are stored in: --kv-dtype, else dtype.
  Dtype kv_type() const { return kv_dtype.value_or(dtype); }
  /// Whether K and V are stored in another type than Q (--kv-dtype fp8 with fp16 or bf16).
  bool kv_converted() const { return kv_type() != dtype; }
  /// Bytes per element of K and V as stored in HBM (and in shared memory before conversion).
  std::int64_t kv_elem_bytes() const { return dtype_bytes(kv_type()); }
  /// Whether V is the first latent_dim columns of K (multi-head latent attention, --latent-dim).
  bool latent() const { return latent_dim > 0; }
  /// Columns of V and O: latent_dim with a latent cache, else head_dim.
  std::int64_t value_dim() const { return latent() ? latent_dim : head_dim; }
  /// Bytes per element of O: as the inputs, except that an fp8 (e4m3) forward writes O in bf16, as
  /// FlashAttention-3's FP8 forward does (its output tensor is bf16 for e4m3 inputs).
  std::int64_t out_elem_bytes() const { return dtype == Dtype::fp8 ? 2 : elem_bytes(); }
  /// Softmax scale 1/sqrt(d).
  double scale() const;
};

/// `p` with the sizes it leaves out given: seq_kv 0 is seq. simulate(), the sweep and the other
/// entry points of api/ call it before anything reads the problem, so that a caller who sets only
/// seq gets N_kv = N; the schedules, closed forms and executor below them read N_kv as given.
AttentionProblem with_defaults(AttentionProblem p);

/// The element types in words: "fp16", or with K/V stored in another type "fp16 kv_dtype=fp8".
std::string dtype_text(const AttentionProblem& p);

/// The head dimension in words: "d=64", or with a latent cache "d=576 latent=512".
std::string head_dim_text(const AttentionProblem& p);

/// Sequence b of a ragged batch as a problem of its own: batch 1, its lengths, no lists.
AttentionProblem sequence_problem(const AttentionProblem& p, std::size_t b);
/// The query rows (and keys) of every sequence, summed: the packed total.
std::int64_t total_seq(const AttentionProblem& p);
std::int64_t total_seq_kv(const AttentionProblem& p);
/// A ragged batch in words: "4 sequences, 1..3000 query tokens (5000 in all), 900..8192 keys
/// (12000 in all)".
std::string ragged_batch_text(const AttentionProblem& p);

/// Checks sizes and flag combinations (of with_defaults(p)); throws ConfigError naming the
/// offending flag and value.
void validate_problem(const AttentionProblem& p);
/// The part of validate_problem() that looks at one value at a time (each size's range, the
/// dropout's): a value it refuses is wrong beside any other, so a sweep refuses it before any
/// point runs (issue #50 S2), where a combination validate_problem() refuses is a point's row.
void check_problem_values(const AttentionProblem& p);

/// validate_problem()'s limits, for readers that name a file's keys instead of flags.
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxHeads = std::int64_t{1} << 16;
inline constexpr std::int64_t kMaxSeq = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxHeadDim = 1024;
/// The largest count (bytes or FLOPs) validate_problem() lets a problem reach: 2^64 - 1.
inline constexpr long double kMaxCount = 18446744073709551615.0L;

/// Keys [first, last] of a query row: an interval, empty when first > last.
struct KeyRange {
  std::int64_t first = 0, last = -1;
};
/// The keys query row `i` sees under the causal mask and the sliding window (every key without
/// them; the index mask aside). Both ends never decrease with `i`, so rows [i0, i1] see keys
/// between visible_keys(i0).first and visible_keys(i1).last, and a tile of them hides a score
/// only where its keys pass the first row's last or precede the last row's first.
KeyRange visible_keys(const AttentionProblem& p, std::int64_t i);

/// True when query row `i` may attend to key `j` under the problem's causal mask, sliding window
/// and index mask.
bool score_visible(const AttentionProblem& p, std::int64_t i, std::int64_t j);

/// Whether dropout keeps score (bh, i, j); deterministic in `seed` so references can replay it.
bool dropout_keeps(const AttentionProblem& p, std::uint64_t seed, std::int64_t bh, std::int64_t i,
                   std::int64_t j);

}  // namespace iosim
