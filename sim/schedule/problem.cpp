#include "sim/schedule/problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "sim/base/errors.hpp"

namespace iosim {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void require_range(const char* flag, std::int64_t v, std::int64_t lo, std::int64_t hi) {
  if (v < lo || v > hi) {
    throw ConfigError(
        fmt::format("{} {} is out of range: it must be in [{}, {}]", flag, v, lo, hi));
  }
}

}  // namespace

std::string pass_name(Pass p) {
  switch (p) {
    case Pass::fwd:
      return "fwd";
    case Pass::bwd:
      return "bwd";
    case Pass::fwdbwd:
      return "fwdbwd";
  }
  return "?";
}

Pass parse_pass(const std::string& s) {
  if (s == "fwd") return Pass::fwd;
  if (s == "bwd") return Pass::bwd;
  if (s == "fwdbwd") return Pass::fwdbwd;
  throw ConfigError(fmt::format("unknown pass '{}'; valid passes: fwd, bwd, fwdbwd", s));
}

double AttentionProblem::scale() const {
  return 1.0 / std::sqrt(static_cast<double>(head_dim));
}

AttentionProblem with_defaults(AttentionProblem p) {
  if (p.seq_kv == 0) p.seq_kv = p.seq;
  if (p.seq_lens && !p.seq_kv_lens) p.seq_kv_lens = p.seq_lens;
  return p;
}

std::string dtype_text(const AttentionProblem& p) {
  std::string s(dtype_name(p.dtype));
  if (p.kv_converted()) s += fmt::format(" kv_dtype={}", dtype_name(p.kv_type()));
  return s;
}

std::string head_dim_text(const AttentionProblem& p) {
  return p.latent() ? fmt::format("d={} latent={}", p.head_dim, p.latent_dim)
                    : fmt::format("d={}", p.head_dim);
}

AttentionProblem sequence_problem(const AttentionProblem& given, std::size_t b) {
  AttentionProblem p = with_defaults(given);
  if (!p.ragged()) return p;
  p.batch = 1;
  p.seq = (*p.seq_lens)[b];
  p.seq_kv = (*p.seq_kv_lens)[b];
  p.seq_lens.reset();
  p.seq_kv_lens.reset();
  // FlashAttention-2's varlen forward packs a K/V head's query heads only where every sequence
  // is one decode row (seqlenq_ngroups_swapped, max_seqlen_q == 1): as a batched run at N = 1.
  if (*std::max_element(given.seq_lens->begin(), given.seq_lens->end()) > 1) {
    p.pack_gqa = GqaPacking::off;
  }
  return p;
}

std::int64_t total_seq(const AttentionProblem& p) {
  if (!p.seq_lens) return p.batch * p.seq;
  return std::accumulate(p.seq_lens->begin(), p.seq_lens->end(), std::int64_t{0});
}

std::int64_t total_seq_kv(const AttentionProblem& given) {
  const AttentionProblem p = with_defaults(given);
  if (!p.seq_kv_lens) return p.batch * p.seq_kv;
  return std::accumulate(p.seq_kv_lens->begin(), p.seq_kv_lens->end(), std::int64_t{0});
}

std::string ragged_batch_text(const AttentionProblem& given) {
  const AttentionProblem p = with_defaults(given);
  const auto text = [](const std::vector<std::int64_t>& lens, const char* what) {
    const auto [lo, hi] = std::minmax_element(lens.begin(), lens.end());
    std::int64_t total = 0;
    for (const std::int64_t v : lens) total += v;
    return fmt::format("{}..{} {} ({} in all)", *lo, *hi, what, total);
  };
  return fmt::format("{} sequences, {}, {}", p.seq_lens->size(), text(*p.seq_lens, "query tokens"),
                     text(*p.seq_kv_lens, "keys"));
}

namespace {

// A ragged batch's lists against each other and the sizes they set (to_request() and the Python
// binding set batch, seq and seq_kv from them; a caller building the problem itself may not).
void check_ragged(const AttentionProblem& p) {
  const std::vector<std::int64_t>& q = *p.seq_lens;
  const std::vector<std::int64_t>& kv = *p.seq_kv_lens;
  if (q.empty()) throw ConfigError("--seq-lens needs at least one length");
  if (p.pattern) {
    throw ConfigError("--pattern with --seq-lens: a ragged batch has no block-sparse kernel here");
  }
  if (kv.size() != q.size()) {
    throw ConfigError(
        fmt::format("--seq-kv-lens gives {} lengths and --seq-lens {}: one key length per sequence",
                    kv.size(), q.size()));
  }
  for (std::size_t b = 0; b < q.size(); ++b) {
    for (auto [flag, v] : {std::pair{"--seq-lens", q[b]}, std::pair{"--seq-kv-lens", kv[b]}}) {
      if (v < 1 || v > kMaxSeq) {
        throw ConfigError(
            fmt::format("{}: sequence {}'s length {} is out of range: it must be in [1, {}]", flag,
                        b, v, kMaxSeq));
      }
    }
  }
  if (p.batch != static_cast<std::int64_t>(q.size()) ||
      p.seq != *std::max_element(q.begin(), q.end()) ||
      p.seq_kv != *std::max_element(kv.begin(), kv.end())) {
    throw ConfigError(fmt::format(
        "a ragged batch of {} sequences needs batch {}, seq {} and seq_kv {} (its count and "
        "longest lengths), not {}, {} and {}",
        q.size(), q.size(), *std::max_element(q.begin(), q.end()),
        *std::max_element(kv.begin(), kv.end()), p.batch, p.seq, p.seq_kv));
  }
}

}  // namespace

void check_problem_values(const AttentionProblem& given) {
  const AttentionProblem p = with_defaults(given);
  // Limits keep every byte count inside 64 bits and reject sizes no GPU holds.
  require_range("--batch", p.batch, 1, kMaxBatch);
  require_range("--heads", p.heads, 1, kMaxHeads);
  require_range("--seq", p.seq, 1, kMaxSeq);
  require_range("--seq-kv", p.seq_kv, 1, kMaxSeq);
  require_range("--head-dim", p.head_dim, 1, kMaxHeadDim);
  // Above --heads is refused by validate_problem(), which names --heads: past kMaxHeads it is
  // refused beside any --heads.
  if (p.kv_heads > kMaxHeads) require_range("--kv-heads", p.kv_heads, 0, kMaxHeads);
  require_range("--page-tokens", p.page_tokens, 0, 1 << 20);
  // 0 is the problem's "no window" (to_request() refuses --window 0 itself).
  if (p.window != 0) require_range("--window", p.window, 1, kMaxSeq);
  // 0 is the problem's "no latent" (to_request() refuses --latent-dim 0 itself); above --head-dim
  // is refused by validate_problem(), which names --head-dim.
  if (p.latent_dim != 0) require_range("--latent-dim", p.latent_dim, 1, kMaxHeadDim);
  if (!(p.dropout >= 0.0 && p.dropout < 1.0)) {
    throw ConfigError(fmt::format("--dropout {} is out of range: it must be in [0, 1)", p.dropout));
  }
}

void validate_problem(const AttentionProblem& given) {
  const AttentionProblem p = with_defaults(given);
  check_problem_values(p);
  if (p.ragged()) {
    check_ragged(p);
    if (p.pack_gqa == GqaPacking::on) {
      throw ConfigError(
          "--pack-gqa on with --seq-lens: a ragged batch packs a K/V head's query heads only "
          "where every sequence is one decode row, as FlashAttention-2's varlen kernel does "
          "(--pack-gqa auto)");
    }
    // Each sequence is a problem of its own (causal alignment, a window's band).
    for (std::size_t b = 0; b < p.seq_lens->size(); ++b) {
      try {
        validate_problem(sequence_problem(p, b));
      } catch (const ConfigError& e) {
        throw ConfigError(
            fmt::format("sequence {} of the ragged batch (--seq-lens {}, "
                        "--seq-kv-lens {}): {}",
                        b, (*p.seq_lens)[b], (*p.seq_kv_lens)[b], e.what()));
      }
    }
  }
  // The bound is --heads, so say so: "[0, 8]" alone read as a fixed limit of iosim's.
  if (p.kv_heads < 0 || p.kv_heads > p.heads) {
    throw ConfigError(fmt::format(
        "--kv-heads {} is out of range: it must be at most --heads {} (each K/V head serves one "
        "or more query heads; 0: --heads)",
        p.kv_heads, p.heads));
  }
  if (p.heads % p.kv_head_count() != 0) {
    throw ConfigError(fmt::format(
        "--kv-heads {} must divide --heads {}: each K/V head serves a whole group of query heads",
        p.kv_heads, p.heads));
  }
  if (p.window > 0 && p.pack_gqa == GqaPacking::on && p.group() > 1) {
    throw ConfigError(
        "--pack-gqa on cannot pack with --window: the window's keys depend on the query "
        "position");
  }
  if (p.pack_gqa == GqaPacking::on && !p.can_pack_query_group()) {
    throw ConfigError(
        p.group() == 1
            ? std::string("--pack-gqa on needs grouped-query attention (--kv-heads below --heads)")
        : p.causal ? fmt::format("--pack-gqa on cannot pack --causal rows at --seq {}: the "
                                 "group's packed rows would be different query positions",
                                 p.seq)
                   : std::string("--pack-gqa on cannot pack with --mask, --dropout or --pattern, "
                                 "whose values depend on the query position"));
  }
  // A K/V cache in another type is fp8 converted on chip to the MMA's fp16 or bf16 (vLLM's,
  // TensorRT-LLM's and FlashInfer's FP8 KV cache); a 16-bit cache read by a kernel of the other
  // 16-bit type, or an fp32 attention reading an fp8 cache, is no kernel modelled here.
  if (p.kv_converted() &&
      (p.kv_type() != Dtype::fp8 || (p.dtype != Dtype::fp16 && p.dtype != Dtype::bf16))) {
    throw ConfigError(fmt::format(
        "--kv-dtype {} with --dtype {}: a K/V cache is read in --dtype's type, or in fp8 (e4m3) "
        "converted on chip for an fp16 or bf16 attention (--kv-dtype fp8 with --dtype fp16 or "
        "bf16)",
        dtype_name(p.kv_type()), dtype_name(p.dtype)));
  }
  // V is the first latent_dim columns of each cached row of head_dim columns (the latent; the
  // rest are the decoupled RoPE key's): it cannot be wider than the row.
  if (p.latent_dim > p.head_dim) {
    throw ConfigError(fmt::format(
        "--latent-dim {} exceeds --head-dim {}: V is the first --latent-dim columns of each cached "
        "row of --head-dim columns (DeepSeek-V3: --latent-dim 512 --head-dim 576, the latent and "
        "its 64 RoPE columns)",
        p.latent_dim, p.head_dim));
  }
  if (p.causal && p.seq_kv < p.seq) {
    throw ConfigError(fmt::format(
        "--causal needs --seq-kv >= --seq (got seq {} and seq-kv {}): with bottom-right "
        "alignment the first {} query rows would see no key",
        p.seq, p.seq_kv, p.seq - p.seq_kv));
  }
  // Without the causal mask the window is a band around each row's diagonal key; with
  // --seq-kv below --seq the first rows' diagonals lie before key 0, and a narrow band would
  // leave them no key (the causal case is refused above).
  if (p.window > 0 && !p.causal && p.seq - p.seq_kv >= p.window) {
    throw ConfigError(fmt::format(
        "--window {} without --causal: query row 0's diagonal key is {} (bottom-right aligned, "
        "--seq {} and --seq-kv {}), so its band of keys within {} of it holds none; use "
        "--window {} or more",
        p.window, p.seq_kv - p.seq, p.seq, p.seq_kv, p.window - 1, p.seq - p.seq_kv + 1));
  }
  const double qkv_bytes = static_cast<double>(p.bh()) * static_cast<double>(p.seq + 2 * p.seq_kv) *
                           static_cast<double>(p.head_dim) * static_cast<double>(p.elem_bytes());
  if (qkv_bytes > 1e15) {
    throw ConfigError(fmt::format(
        "problem too large: Q, K and V alone take {:.3g} bytes (limit 1e15)", qkv_bytes));
  }
  // Every counter (bytes per level, FLOPs) is a 64-bit integer. Each is at most
  // (8 d + 64) B H N N_kv per pass: 4 d FLOPs a score in the two forward GEMMs, 10 d in the
  // backward's five, a few dozen FP32 operations and bytes of S and P a score (standard, fp32).
  // Refusing above that keeps every count exact; the test at the limit is in
  // tests/huge_shapes_test.cpp.
  const long double passes = p.pass == Pass::fwd ? 1.0L : p.pass == Pass::bwd ? 2.5L : 3.5L;
  const long double largest_count = passes * (8.0L * static_cast<long double>(p.head_dim) + 64) *
                                    static_cast<long double>(p.bh()) *
                                    static_cast<long double>(p.seq) *
                                    static_cast<long double>(p.seq_kv);
  if (largest_count > kMaxCount) {
    throw ConfigError(fmt::format(
        "problem too large: its counts could reach {:.3g} (B H N N_kv (8 d + 64) per pass), more "
        "than the 64-bit counters hold ({:.3g}); use fewer --batch or --heads and scale the "
        "result",
        static_cast<double>(largest_count), static_cast<double>(kMaxCount)));
  }
}

KeyRange visible_keys(const AttentionProblem& p, std::int64_t i) {
  const std::int64_t diagonal = i + (p.seq_kv - p.seq);  // bottom-right aligned
  KeyRange r{0, p.seq_kv - 1};
  if (p.causal) r.last = std::min(r.last, diagonal);
  if (p.window > 0) {
    r.first = std::max<std::int64_t>(0, diagonal - p.window + 1);
    if (!p.causal) r.last = std::min(r.last, diagonal + p.window - 1);
  }
  return r;
}

bool score_visible(const AttentionProblem& p, std::int64_t i, std::int64_t j) {
  if (p.causal && j > i + (p.seq_kv - p.seq)) return false;
  if (p.window > 0) {
    const KeyRange keys = visible_keys(p, i);
    if (j < keys.first || j > keys.last) return false;
  }
  if (p.mask && j != 0) {
    // About one score in ten is hidden; key 0 never is, so no row is fully masked.
    const auto h =
        splitmix64((static_cast<std::uint64_t>(i) << 32) ^ static_cast<std::uint64_t>(j));
    if (h % 10 == 0) return false;
  }
  return true;
}

bool dropout_keeps(const AttentionProblem& p, std::uint64_t seed, std::int64_t bh, std::int64_t i,
                   std::int64_t j) {
  if (p.dropout <= 0.0) return true;
  std::uint64_t h = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(bh)));
  h = splitmix64(h ^ (static_cast<std::uint64_t>(i) << 32) ^ static_cast<std::uint64_t>(j));
  const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
  return u >= p.dropout;
}

}  // namespace iosim
