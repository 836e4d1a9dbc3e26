#include "sim/l2_cache.hpp"

#include <bit>
#include <fmt/format.h>

#include "sim/errors.hpp"

namespace iosim {
namespace {

int popcount(const std::array<std::uint64_t, 2>& m) {
  return std::popcount(m[0]) + std::popcount(m[1]);
}

// Mask with sectors [first, last] (inclusive, 0..127) set.
std::array<std::uint64_t, 2> sector_range_mask(unsigned first, unsigned last) {
  std::array<std::uint64_t, 2> m{};
  for (unsigned w = 0; w < 2; ++w) {
    const unsigned lo = w * 64, hi = lo + 63;
    if (last < lo || first > hi) continue;
    const unsigned a = first > lo ? first - lo : 0;
    const unsigned b = last < hi ? last - lo : 63;
    const std::uint64_t upto_b = (b == 63) ? ~std::uint64_t{0} : ((std::uint64_t{1} << (b + 1)) - 1);
    const std::uint64_t below_a = (std::uint64_t{1} << a) - 1;
    m[w] = upto_b & ~below_a;
  }
  return m;
}

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

}  // namespace

L2Cache::L2Cache(std::int64_t capacity_bytes, int sector_bytes)
    : sector_bytes_(static_cast<std::uint64_t>(sector_bytes)),
      region_bytes_(static_cast<std::uint64_t>(sector_bytes) * kSectorsPerRegion) {
  if (sector_bytes <= 0 || capacity_bytes < static_cast<std::int64_t>(region_bytes_)) {
    throw ConfigError(fmt::format("L2 of {} bytes with {}-byte sectors holds no {}-byte region",
                                  capacity_bytes, sector_bytes, region_bytes_));
  }
  entries_.resize(static_cast<std::size_t>(static_cast<std::uint64_t>(capacity_bytes) / region_bytes_));
  std::uint64_t table_size = 1;
  while (table_size < 2 * entries_.size()) table_size <<= 1;
  table_.assign(table_size, kNone);
  table_mask_ = table_size - 1;
}

std::size_t L2Cache::slot_of(std::uint64_t region) const {
  return static_cast<std::size_t>(mix(region) & table_mask_);
}

std::uint32_t L2Cache::find(std::uint64_t region) const {
  for (std::size_t s = slot_of(region);; s = (s + 1) & table_mask_) {
    const std::uint32_t e = table_[s];
    if (e == kNone) return kNone;
    if (entries_[e].region == region) return e;
  }
}

void L2Cache::hash_insert(std::uint64_t region, std::uint32_t e) {
  std::size_t s = slot_of(region);
  while (table_[s] != kNone) s = (s + 1) & table_mask_;
  table_[s] = e;
}

void L2Cache::hash_erase(std::uint64_t region) {
  std::size_t s = slot_of(region);
  while (entries_[table_[s]].region != region) s = (s + 1) & table_mask_;
  // Backward-shift deletion keeps probe chains intact without tombstones.
  std::size_t hole = s;
  for (std::size_t next = (hole + 1) & table_mask_; table_[next] != kNone;
       next = (next + 1) & table_mask_) {
    const std::size_t home = slot_of(entries_[table_[next]].region);
    const bool movable = (hole <= next) ? (home <= hole || home > next) : (home <= hole && home > next);
    if (movable) {
      table_[hole] = table_[next];
      hole = next;
    }
  }
  table_[hole] = kNone;
}

void L2Cache::unlink(std::uint32_t e) {
  Entry& x = entries_[e];
  if (x.prev != kNone) entries_[x.prev].next = x.next; else head_ = x.next;
  if (x.next != kNone) entries_[x.next].prev = x.prev; else tail_ = x.prev;
  x.prev = x.next = kNone;
}

void L2Cache::push_front(std::uint32_t e) {
  Entry& x = entries_[e];
  x.prev = kNone;
  x.next = head_;
  if (head_ != kNone) entries_[head_].prev = e;
  head_ = e;
  if (tail_ == kNone) tail_ = e;
}

void L2Cache::touch(std::uint32_t e) {
  if (head_ == e) return;
  unlink(e);
  push_front(e);
}

std::uint32_t L2Cache::acquire(std::uint64_t region, TensorId owner, PerTensor& written_back) {
  std::uint32_t e = find(region);
  if (e != kNone) {
    touch(e);
    return e;
  }
  if (used_ < entries_.size()) {
    e = used_++;
  } else {
    e = tail_;  // evict the least recently used region, writing its dirty sectors back
    Entry& victim = entries_[e];
    const int dirty = popcount(victim.dirty);
    written_back[index_of(victim.owner)] += static_cast<std::uint64_t>(dirty) * sector_bytes_;
    dirty_sectors_ -= static_cast<std::uint64_t>(dirty);
    hash_erase(victim.region);
    unlink(e);
  }
  Entry& x = entries_[e];
  x.region = region;
  x.valid = {};
  x.dirty = {};
  x.owner = owner;
  hash_insert(region, e);
  push_front(e);
  return e;
}

template <typename Visit>
void L2Cache::for_each_region(std::uint64_t addr, std::uint64_t len, Visit&& visit) {
  if (len == 0) return;
  const std::uint64_t first_sector = addr / sector_bytes_;
  const std::uint64_t last_sector = (addr + len - 1) / sector_bytes_;
  for (std::uint64_t r = first_sector / kSectorsPerRegion; r <= last_sector / kSectorsPerRegion;
       ++r) {
    const std::uint64_t r0 = r * kSectorsPerRegion;
    const unsigned a = static_cast<unsigned>(first_sector > r0 ? first_sector - r0 : 0);
    const unsigned b = static_cast<unsigned>(
        last_sector < r0 + kSectorsPerRegion - 1 ? last_sector - r0 : kSectorsPerRegion - 1);
    visit(r, sector_range_mask(a, b));
  }
}

L2Cache::ReadOutcome L2Cache::read(std::uint64_t addr, std::uint64_t len, TensorId owner,
                                   PerTensor& written_back) {
  ReadOutcome out;
  for_each_region(addr, len, [&](std::uint64_t region, const Mask& want) {
    Entry& x = entries_[acquire(region, owner, written_back)];
    const Mask missing = {want[0] & ~x.valid[0], want[1] & ~x.valid[1]};
    out.requested_bytes += static_cast<std::uint64_t>(popcount(want)) * sector_bytes_;
    out.miss_bytes += static_cast<std::uint64_t>(popcount(missing)) * sector_bytes_;
    x.valid[0] |= want[0];
    x.valid[1] |= want[1];
  });
  return out;
}

std::uint64_t L2Cache::write(std::uint64_t addr, std::uint64_t len, TensorId owner,
                             PerTensor& written_back) {
  std::uint64_t bytes = 0;
  for_each_region(addr, len, [&](std::uint64_t region, const Mask& want) {
    Entry& x = entries_[acquire(region, owner, written_back)];
    const Mask newly_dirty = {want[0] & ~x.dirty[0], want[1] & ~x.dirty[1]};
    dirty_sectors_ += static_cast<std::uint64_t>(popcount(newly_dirty));
    bytes += static_cast<std::uint64_t>(popcount(want)) * sector_bytes_;
    x.valid[0] |= want[0];
    x.valid[1] |= want[1];
    x.dirty[0] |= want[0];
    x.dirty[1] |= want[1];
  });
  return bytes;
}

void L2Cache::flush(PerTensor& written_back) {
  for (std::uint32_t e = 0; e < used_; ++e) {
    const Entry& x = entries_[e];
    written_back[index_of(x.owner)] += static_cast<std::uint64_t>(popcount(x.dirty)) * sector_bytes_;
  }
  dirty_sectors_ = 0;
  used_ = 0;
  head_ = tail_ = kNone;
  std::fill(table_.begin(), table_.end(), kNone);
}

}  // namespace iosim
