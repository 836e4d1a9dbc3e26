#pragma once
// The contiguous policy: each sample reserves prompt + max_output_tokens token slots in one region
// of a ContiguousArena on admission, as pre-paging servers did (the output length is unknown in
// advance), and grows inside it. Nothing is shared and nothing is ever preempted. The interface is
// the one sequences.hpp describes.
#include <cstdint>
#include <optional>
#include <vector>

#include "kvcache/contiguous_arena.hpp"
#include "kvcache/sequences.hpp"
#include "kvcache/simulator.hpp"

namespace iosim::kvcache::detail {

class ContiguousPolicy {
 public:
  ContiguousPolicy(const CacheConfig& c, Sequences& seqs);

  std::int64_t capacity_tokens() const { return arena_.capacity(); }
  bool fits_alone(std::int32_t r) const;
  std::optional<Admitted> admit(std::int32_t r);
  /// The region holds every token the sequence generates: it never needs room.
  template <typename MakeRoom>
  bool append(Seq& q, MakeRoom&& /*make_room*/) {
    ++q.len;
    ++filled_;
    return true;
  }
  Unfilled unfilled(const Seq& q) const { return {q.target - q.len, q.reserved - q.target}; }
  void free(std::int32_t slot);
  void count_bytes(StepTotals& st) const;
  std::int64_t allocations() const;
  void audit() const;

 private:
  Sequences& seqs_;
  const std::int64_t bpt_;      // bytes per token
  const std::int64_t max_out_;  // what a region holds beyond the prompt
  ContiguousArena arena_;
  std::int64_t filled_ = 0;            // tokens held
  std::vector<std::int32_t> created_;  // scratch: slots made by one admission attempt
};

}  // namespace iosim::kvcache::detail
