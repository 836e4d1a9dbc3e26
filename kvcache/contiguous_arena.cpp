#include "kvcache/contiguous_arena.hpp"

#include <iterator>

#include "sim/base/errors.hpp"

namespace iosim::kvcache {

ContiguousArena::ContiguousArena(std::int64_t capacity_tokens)
    : capacity_(capacity_tokens), free_(capacity_tokens) {
  ensure(capacity_tokens >= 1, "ContiguousArena: capacity {}", capacity_tokens);
  holes_.emplace(0, capacity_tokens);
  sizes_.insert(capacity_tokens);
}

std::int64_t ContiguousArena::reserve(std::int64_t tokens) {
  ensure(tokens >= 1, "ContiguousArena: reserving {} tokens", tokens);
  if (tokens > largest_hole()) return -1;
  for (auto it = holes_.begin(); it != holes_.end(); ++it) {
    if (it->second < tokens) continue;
    const std::int64_t offset = it->first, size = it->second;
    sizes_.erase(sizes_.find(size));
    holes_.erase(it);
    if (size > tokens) {
      holes_.emplace(offset + tokens, size - tokens);
      sizes_.insert(size - tokens);
    }
    free_ -= tokens;
    return offset;
  }
  throw InternalError("ContiguousArena: largest hole fits but no hole was found");
}

void ContiguousArena::release(std::int64_t offset, std::int64_t tokens) {
  ensure(offset >= 0 && tokens >= 1 && offset + tokens <= capacity_,
         "ContiguousArena: releasing [{}, {}) outside [0, {})", offset, offset + tokens, capacity_);
  std::int64_t start = offset, size = tokens;
  auto next = holes_.lower_bound(offset);
  ensure(next == holes_.end() || next->first >= offset + tokens,
         "ContiguousArena: releasing [{}, {}) overlaps a hole", offset, offset + tokens);
  if (next != holes_.begin()) {
    auto prev = std::prev(next);
    ensure(prev->first + prev->second <= offset,
           "ContiguousArena: releasing [{}, {}) overlaps a hole", offset, offset + tokens);
    if (prev->first + prev->second == offset) {
      start = prev->first;
      size += prev->second;
      sizes_.erase(sizes_.find(prev->second));
      holes_.erase(prev);
    }
  }
  if (next != holes_.end() && next->first == offset + tokens) {
    size += next->second;
    sizes_.erase(sizes_.find(next->second));
    holes_.erase(next);
  }
  holes_.emplace(start, size);
  sizes_.insert(size);
  free_ += tokens;
}

}  // namespace iosim::kvcache
