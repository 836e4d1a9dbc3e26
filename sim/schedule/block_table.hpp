#pragma once
// Paged K/V (PagedAttention, Kwon et al. 2023): each sequence's K/V cache lives in fixed-size
// pages of `page_tokens` tokens, placed anywhere in a physical pool; a per-sequence block table
// maps logical page i of sequence b to a physical page. A physical page holds the page's tokens
// for every K/V head, head-major (FlashInfer's "HND" layout: [pages][H_kv][page_tokens][d]), so
// one head's page is one contiguous run of page_tokens * d elements.
//
// Block-table file (--block-table FILE): one line per sequence (batch entry), its physical page
// ids in logical order separated by spaces or commas; '#' starts a comment; blank lines are
// skipped. Every sequence lists ceil(N_kv / page_tokens) pages and no page appears twice.
#include <cstdint>
#include <string>
#include <vector>

namespace iosim {

/// Largest physical page id accepted (the pool spans at most this many pages).
inline constexpr std::int64_t kMaxPageId = (1 << 20) - 1;

struct BlockTable {
  std::int64_t sequences = 0;       // rows: one per batch entry
  std::int64_t pages_per_seq = 0;   // columns: logical pages of each sequence
  std::int64_t pool_pages = 0;      // physical pages in the pool: the largest id + 1
  std::vector<std::int32_t> pages;  // [sequences][pages_per_seq], row-major
  std::string source;               // "random:SEED" or the file's path, for reports

  /// Physical page of logical page `page` of sequence `seq`.
  std::int32_t at(std::int64_t seq, std::int64_t page) const {
    return pages[static_cast<std::size_t>(seq * pages_per_seq + page)];
  }
};

/// Pages of `seq_kv` tokens at `page_tokens` per page (the last one partly filled).
inline std::int64_t pages_for(std::int64_t seq_kv, std::int64_t page_tokens) {
  return (seq_kv + page_tokens - 1) / page_tokens;
}

/// The pool's `sequences * pages_per_seq` pages handed out in a random order drawn from `seed`,
/// as an allocator that has run for a while leaves them.
BlockTable random_block_table(std::int64_t sequences, std::int64_t pages_per_seq,
                              std::uint64_t seed);

/// Reads a block-table file (format above). Throws ConfigError naming the file and line when it
/// cannot be read or parsed, has rows of different lengths, or lists a page twice.
BlockTable load_block_table(const std::string& path);
/// load_block_table() of a file's text; `path` names it in messages.
BlockTable parse_block_table(const std::string& text, const std::string& path);

/// Checks that `t` fits a problem of `batch` sequences of `pages_per_seq` pages; throws
/// ConfigError naming --block-table and the numbers otherwise.
void check_block_table(const BlockTable& t, std::int64_t batch, std::int64_t pages_per_seq);

}  // namespace iosim
