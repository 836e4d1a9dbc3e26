#pragma once
// The contiguous KV cache of pre-paging servers: one address range of token slots, from which each
// sequence reserves one contiguous region for its prompt plus the most tokens it may generate.
// Regions are placed first-fit (lowest address) and free neighbours are merged, so free space is
// a set of holes; a request whose region is larger than every hole waits even when the holes
// together would hold it (external fragmentation).
#include <cstdint>
#include <map>
#include <set>

namespace iosim::kvcache {

class ContiguousArena {
 public:
  explicit ContiguousArena(std::int64_t capacity_tokens);

  std::int64_t capacity() const { return capacity_; }
  std::int64_t free_tokens() const { return free_; }
  /// Size of the largest hole: the largest region that can be reserved now.
  std::int64_t largest_hole() const { return sizes_.empty() ? 0 : *sizes_.rbegin(); }

  /// Reserves `tokens` contiguous slots first-fit; returns the offset, or -1 when no hole fits.
  std::int64_t reserve(std::int64_t tokens);
  /// Returns the region [offset, offset + tokens), merging it with free neighbours.
  void release(std::int64_t offset, std::int64_t tokens);

  /// Holes by offset: offset -> size. Adjacent holes never exist (they are merged).
  const std::map<std::int64_t, std::int64_t>& holes() const { return holes_; }

 private:
  std::int64_t capacity_;
  std::int64_t free_;
  std::map<std::int64_t, std::int64_t> holes_;
  std::multiset<std::int64_t> sizes_;
};

}  // namespace iosim::kvcache
