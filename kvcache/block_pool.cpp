#include "kvcache/block_pool.hpp"

#include "sim/base/errors.hpp"

namespace iosim::kvcache {

BlockPool::BlockPool(std::int64_t blocks, std::int32_t block_tokens)
    : block_tokens_(block_tokens),
      refs_(static_cast<std::size_t>(blocks), 0),
      fill_(static_cast<std::size_t>(blocks), 0) {
  ensure(blocks >= 1 && blocks <= INT32_MAX, "BlockPool: {} blocks", blocks);
  free_.reserve(static_cast<std::size_t>(blocks));
  // Highest id at the bottom of the stack, so allocation starts at block 0 (easier to read).
  for (std::int64_t b = blocks - 1; b >= 0; --b) free_.push_back(static_cast<std::int32_t>(b));
}

bool BlockPool::release(std::int32_t b) {
  std::int32_t& r = refs_[static_cast<std::size_t>(b)];
  ensure(r > 0, "BlockPool: releasing free block {}", b);
  if (--r > 0) return false;
  filled_tokens_ -= fill_[static_cast<std::size_t>(b)];
  fill_[static_cast<std::size_t>(b)] = 0;
  free_.push_back(b);
  return true;
}

}  // namespace iosim::kvcache
