#pragma once
// The paged KV cache's physical blocks (PagedAttention, Kwon et al. 2023): a fixed pool of
// equal-sized blocks, each holding up to block_tokens tokens of K and V for all layers and KV
// heads. A block is referenced by every sequence whose block table lists it (shared prompt
// prefixes, parallel samples); it returns to the free list when its last reference is dropped.
// Every block is either free (no references, nothing stored) or used; the pool also keeps how
// many token slots of each block hold real tokens.
#include <cstdint>
#include <vector>

namespace iosim::kvcache {

class BlockPool {
 public:
  BlockPool(std::int64_t blocks, std::int32_t block_tokens);

  std::int64_t total() const { return static_cast<std::int64_t>(refs_.size()); }
  std::int64_t free_count() const { return static_cast<std::int64_t>(free_.size()); }
  std::int64_t used_count() const { return total() - free_count(); }
  std::int32_t block_tokens() const { return block_tokens_; }
  /// Token slots, over all used blocks, that hold a real token.
  std::int64_t filled_tokens() const { return filled_tokens_; }

  /// Takes a free block with one reference and no tokens; -1 when none is free.
  std::int32_t allocate() {
    if (free_.empty()) return -1;
    const std::int32_t b = free_.back();
    free_.pop_back();
    refs_[static_cast<std::size_t>(b)] = 1;
    return b;
  }
  /// One more sequence references `b`.
  void add_ref(std::int32_t b) { ++refs_[static_cast<std::size_t>(b)]; }
  /// Drops one reference; returns true when that was the last and `b` is free again.
  bool release(std::int32_t b);
  std::int32_t refs(std::int32_t b) const { return refs_[static_cast<std::size_t>(b)]; }

  std::int32_t fill(std::int32_t b) const { return fill_[static_cast<std::size_t>(b)]; }
  /// Records `tokens` more real tokens written into `b`.
  void add_tokens(std::int32_t b, std::int32_t tokens) {
    fill_[static_cast<std::size_t>(b)] += tokens;
    filled_tokens_ += tokens;
  }

  /// Free block ids (a stack: the most recently freed is reused first).
  const std::vector<std::int32_t>& free_list() const { return free_; }

 private:
  std::int32_t block_tokens_;
  std::vector<std::int32_t> refs_;
  std::vector<std::int32_t> fill_;
  std::vector<std::int32_t> free_;
  std::int64_t filled_tokens_ = 0;
};

}  // namespace iosim::kvcache
