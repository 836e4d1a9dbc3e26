#pragma once
// The paged policy (PagedAttention): blocks of block_tokens tokens from a BlockPool, taken on
// demand (the prompt's on admission, one more whenever a sequence's last block is full) and
// returned when the sequence finishes. Admission needs the prompt's blocks plus a watermark of
// free blocks. Requests of one prompt group share the full blocks of their common prefix; the
// samples of one request share the prompt's blocks, and the last, partly filled prompt block is
// copied on a sample's first write while others still reference it (copy-on-write; the last
// writer keeps the original). The interface is the one sequences.hpp describes.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kvcache/block_pool.hpp"
#include "kvcache/sequences.hpp"
#include "kvcache/simulator.hpp"

namespace iosim::kvcache::detail {

class PagedPolicy {
 public:
  PagedPolicy(const CacheConfig& c, Sequences& seqs);

  std::int64_t blocks() const { return blocks_; }
  std::int64_t capacity_tokens() const { return blocks_ * b_; }
  bool fits_alone(std::int32_t r) const;
  std::optional<Admitted> admit(std::int32_t r);
  /// A token of a decode step; its copy-on-write copies count in cow_copies().
  template <typename MakeRoom>
  bool append(Seq& q, MakeRoom&& make_room) {
    return append_token(q, Mode::decode, make_room);
  }
  Unfilled unfilled(const Seq& q) const {
    const std::int32_t unfilled = b_ - pool_.fill(q.last_blk);
    const std::int32_t coming = std::min(unfilled, q.target - q.len);
    return {coming, unfilled - coming};
  }
  void free(std::int32_t slot);
  void count_bytes(StepTotals& st) const;
  std::int64_t allocations() const { return pool_.used_count(); }
  void audit() const;

  /// Blocks copied on write in decode steps, and their bytes.
  std::int64_t cow_copies() const { return cow_copies_; }
  std::int64_t cow_copied_bytes() const { return cow_copied_bytes_; }

 private:
  // A decode step's token, or one a readmission replays (recomputation, whose copies are not
  // counted).
  enum class Mode { decode, replay };

  // A free block; while none is, calls make_room(). -1 when make_room() returns false.
  template <typename MakeRoom>
  std::int32_t take_block(MakeRoom& make_room) {
    for (;;) {
      const std::int32_t blk = pool_.allocate();
      if (blk >= 0) return blk;
      if (!make_room()) return -1;
    }
  }

  // Appends one token to q: a new block when the last is full, a private copy when the last is
  // shared (copy-on-write). False when no block could be had.
  template <typename MakeRoom>
  bool append_token(Seq& q, Mode mode, MakeRoom& make_room) {
    // A last block can be shared only from admission to the first append: blocks gain
    // references only when a prompt's table is copied, and requests share only full blocks. So
    // once private, a sequence's last block stays private.
    std::int32_t blk = q.last_blk;
    if (!q.last_private && pool_.refs(blk) == 1) q.last_private = true;
    const std::int32_t fill = pool_.fill(blk);
    if (fill == b_) {
      blk = take_block(make_room);
      if (blk < 0) return false;
      q.table.push_back(blk);
      ++logical_blocks_;
    } else if (!q.last_private) {
      const std::int32_t copy = take_block(make_room);
      if (copy < 0) return false;
      pool_.add_tokens(copy, fill);
      if (mode == Mode::decode) {
        ++cow_copies_;
        cow_copied_bytes_ += fill * bpt_;
      }
      release_block(blk);
      q.table.back() = copy;
      blk = copy;
    }
    q.last_blk = blk;
    q.last_private = true;
    pool_.add_tokens(blk, 1);
    ++q.len;
    return true;
  }

  void release_block(std::int32_t blk);

  Sequences& seqs_;
  const std::int64_t bpt_;  // bytes per token
  const std::int32_t b_;    // tokens per block
  const std::int64_t blocks_;
  const std::int64_t watermark_blocks_;
  BlockPool pool_;
  std::int64_t logical_blocks_ = 0;  // sum of block-table lengths
  std::int64_t cow_copies_ = 0, cow_copied_bytes_ = 0;

  // Prompt-prefix sharing: the resident full blocks of each group's common prefix, in order, and
  // for each block the group and position it holds (-1: not a prefix block).
  std::unordered_map<std::int32_t, std::vector<std::int32_t>> prefix_;
  std::vector<std::int32_t> block_group_, block_prefix_index_;

  std::vector<std::int32_t> prompt_table_;  // scratch
  std::vector<std::int32_t> created_;       // scratch: slots made by one admission attempt
};

}  // namespace iosim::kvcache::detail
