#include "sim/l2_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "sim/errors.hpp"

namespace iosim {
namespace {

std::uint64_t popcount(const std::array<std::uint64_t, 2>& m) {
  return static_cast<std::uint64_t>(std::popcount(m[0]) + std::popcount(m[1]));
}

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  return x ^ (x >> 33);
}

}  // namespace

// Set index: the region's position within an aligned window of `sets_` consecutive regions,
// rotated by a hash of the window. So a window's regions fill the sets evenly and windows land
// at pseudo-random offsets: the structure of the GPU's XOR address hash (low address bits pick
// the set, higher bits are hashed in). It reproduces how repeated sweeps of a growing footprint
// stop hitting (l2_sweep microbenchmark, reports/validation/*/l2_microbench_2026-11-22: >= 98%
// hits up to 60% of the L2, a sharp fall between 70% and 90%): a random set per region spreads
// unevenly and misses from 40% (binomial occupancy), a plain modulo fills every set alike and
// thrashes all of them at once.
std::uint64_t L2Cache::set_of(std::uint64_t region) const {
  return (region % sets_ + mix(region / sets_)) % sets_;
}

L2Cache::L2Cache(std::int64_t capacity_bytes, int sector_bytes, int ways, double max_dirty_fraction)
    : sector_bytes_(static_cast<std::uint64_t>(sector_bytes)),
      region_bytes_(static_cast<std::uint64_t>(sector_bytes) * kSectorsPerRegion) {
  if (sector_bytes <= 0 || ways <= 0 || capacity_bytes < static_cast<std::int64_t>(region_bytes_)) {
    throw ConfigError(fmt::format("L2 of {} bytes with {}-byte sectors holds no {}-byte region",
                                  capacity_bytes, sector_bytes, region_bytes_));
  }
  const std::uint64_t regions = static_cast<std::uint64_t>(capacity_bytes) / region_bytes_;
  ways_per_set_ = std::min<std::uint64_t>(static_cast<std::uint64_t>(ways), regions);
  sets_ = regions / ways_per_set_;
  tags_.assign(sets_ * ways_per_set_, kEmpty);
  last_use_.assign(sets_ * ways_per_set_, 0);
  lines_.assign(sets_ * ways_per_set_, Lines{});
  dirty_since_.assign(sets_ * ways_per_set_, 0);
  max_dirty_sectors_ = static_cast<std::uint64_t>(
      max_dirty_fraction * static_cast<double>(tags_.size() * kSectorsPerRegion));
}

// The GPU writes dirty data back once it fills about half the L2, whether or not the space is
// needed (a write-only kernel's DRAM writes are everything beyond that share: l2_residue
// microbenchmark, writes mode; hwprofiles *.yaml l2.max_dirty_fraction). Which lines it cleans
// first is not visible in the counters; the ones dirtied first is the assumption.
void L2Cache::make_dirty(std::uint64_t slot, const Mask& want, PerTensor& written_back) {
  Lines& x = lines_[slot];
  const bool was_clean = (x.dirty[0] | x.dirty[1]) == 0;
  const Mask newly_dirty = {want[0] & ~x.dirty[0], want[1] & ~x.dirty[1]};
  dirty_sectors_ += popcount(newly_dirty);
  x.valid[0] |= want[0];
  x.valid[1] |= want[1];
  x.dirty[0] |= want[0];
  x.dirty[1] |= want[1];
  if (was_clean) {
    dirty_since_[slot] = ++dirty_clock_;
    dirty_order_.push_back({slot, dirty_clock_});
  }
  while (dirty_sectors_ > max_dirty_sectors_ && !dirty_order_.empty()) {
    const DirtyEntry e = dirty_order_.front();
    dirty_order_.pop_front();
    Lines& old = lines_[e.slot];
    if (dirty_since_[e.slot] != e.since || tags_[e.slot] == kEmpty) continue;  // stale
    const std::uint64_t n = popcount(old.dirty);
    written_back[index_of(old.owner)] += n * sector_bytes_;
    written_back_sectors_ += n;
    dirty_sectors_ -= n;
    old.dirty = {};
    dirty_since_[e.slot] = 0;
  }
}

L2Cache::Lines& L2Cache::acquire(std::uint64_t region, TensorId owner, PerTensor& written_back) {
  const std::uint64_t base = set_of(region) * ways_per_set_;
  const std::uint64_t* tags = &tags_[base];
  for (std::uint64_t w = 0; w < ways_per_set_; ++w) {
    if (tags[w] == region) {
      last_use_[base + w] = ++clock_;
      return lines_[base + w];
    }
  }
  // Miss: replace the set's least recently used way (never-used ways have stamp 0).
  const std::uint64_t* stamps = &last_use_[base];
  const std::uint64_t victim =
      base + static_cast<std::uint64_t>(std::min_element(stamps, stamps + ways_per_set_) - stamps);
  Lines& x = lines_[victim];
  if (tags_[victim] != kEmpty) {
    const std::uint64_t dirty = popcount(x.dirty);
    written_back[index_of(x.owner)] += dirty * sector_bytes_;
    written_back_sectors_ += dirty;
    dirty_sectors_ -= dirty;
  }
  tags_[victim] = region;
  last_use_[victim] = ++clock_;
  dirty_since_[victim] = 0;
  x = Lines{{}, {}, owner};
  return x;
}

L2Cache::ReadOutcome L2Cache::read(std::uint64_t addr, std::uint64_t len, TensorId owner,
                                   PerTensor& written_back) {
  ReadOutcome out;
  for_each_region(addr, len, [&](std::uint64_t region, const Mask& want) {
    Lines& x = acquire(region, owner, written_back);
    const Mask missing = {want[0] & ~x.valid[0], want[1] & ~x.valid[1]};
    out.requested_bytes += popcount(want) * sector_bytes_;
    out.miss_bytes += popcount(missing) * sector_bytes_;
    x.valid[0] |= want[0];
    x.valid[1] |= want[1];
  });
  return out;
}

std::uint64_t L2Cache::write(std::uint64_t addr, std::uint64_t len, TensorId owner,
                             PerTensor& written_back) {
  std::uint64_t bytes = 0;
  for_each_region(addr, len, [&](std::uint64_t region, const Mask& want) {
    Lines& x = acquire(region, owner, written_back);
    bytes += popcount(want) * sector_bytes_;
    make_dirty(static_cast<std::uint64_t>(&x - lines_.data()), want, written_back);
  });
  return bytes;
}

L2Cache::Mask L2Cache::fetch(std::uint64_t region, const Mask& want, TensorId owner,
                             PerTensor& written_back) {
  Lines& x = acquire(region, owner, written_back);
  const Mask missing = {want[0] & ~x.valid[0], want[1] & ~x.valid[1]};
  x.valid[0] |= want[0];
  x.valid[1] |= want[1];
  return missing;
}

void L2Cache::fill(std::uint64_t region, const Mask& want, TensorId owner,
                   PerTensor& written_back) {
  Lines& x = acquire(region, owner, written_back);
  x.valid[0] |= want[0];
  x.valid[1] |= want[1];
}

void L2Cache::write_region(std::uint64_t region, const Mask& want, TensorId owner,
                           PerTensor& written_back) {
  Lines& x = acquire(region, owner, written_back);
  make_dirty(static_cast<std::uint64_t>(&x - lines_.data()), want, written_back);
}

void L2Cache::flush(PerTensor& written_back) {
  for (std::size_t i = 0; i < tags_.size(); ++i) {
    if (tags_[i] != kEmpty)
      written_back[index_of(lines_[i].owner)] += popcount(lines_[i].dirty) * sector_bytes_;
  }
  std::fill(tags_.begin(), tags_.end(), kEmpty);
  std::fill(last_use_.begin(), last_use_.end(), 0);
  std::fill(lines_.begin(), lines_.end(), Lines{});
  std::fill(dirty_since_.begin(), dirty_since_.end(), 0);
  dirty_order_.clear();
  dirty_sectors_ = 0;
}

}  // namespace iosim
