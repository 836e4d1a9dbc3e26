#include "sim/memory/l2_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "sim/base/errors.hpp"
#include "sim/memory/l2_lookups.hpp"

namespace iosim {

L2Cache::L2Cache(std::int64_t capacity_bytes, int sector_bytes, int ways, double max_dirty_fraction)
    : region_bytes_(static_cast<std::uint64_t>(sector_bytes) * kSectorsPerRegion),
      sets_(1),
      geometry_{static_cast<std::uint64_t>(sector_bytes),
                std::has_single_bit(static_cast<std::uint64_t>(sector_bytes))
                    ? std::countr_zero(static_cast<std::uint64_t>(sector_bytes))
                    : -1,
                FastModulo(1)} {
  if (sector_bytes <= 0 || ways <= 0 || capacity_bytes < static_cast<std::int64_t>(region_bytes_)) {
    throw ConfigError(fmt::format("L2 of {} bytes with {}-byte sectors holds no {}-byte region",
                                  capacity_bytes, sector_bytes, region_bytes_));
  }
  const std::uint64_t regions = static_cast<std::uint64_t>(capacity_bytes) / region_bytes_;
  state_.ways = std::min<std::uint64_t>(static_cast<std::uint64_t>(ways), regions);
  sets_ = regions / state_.ways;
  geometry_.sets = FastModulo(sets_);
  geometry_.sets_wrap = (geometry_.sets(~std::uint64_t{0}) + 1) % sets_;
  const std::size_t all_ways = sets_ * state_.ways;
  // 16 extra entries leave room to start state_.tags_lo on a 64-byte line.
  lo_storage_.assign(all_ways + 16, kEmpty);
  const auto misalignment = reinterpret_cast<std::uintptr_t>(lo_storage_.data()) % 64;
  state_.tags_lo = lo_storage_.data() + (misalignment == 0 ? 0 : (64 - misalignment) / 4);
  tags_hi_.assign(all_ways, kEmpty);
  owners_.assign(all_ways, TensorId{});
  lines_.assign(all_ways, Lines{});
  dirty_since_.assign(all_ways, 0);
  state_.max_dirty_sectors = static_cast<std::uint64_t>(
      max_dirty_fraction * static_cast<double>(all_ways * kSectorsPerRegion));
  state_.sector_bytes = geometry_.sector_bytes;
  state_.queue_limit = 2 * all_ways + 64;
  reset_recency();
}

double L2Cache::memory_bytes(std::int64_t capacity_bytes, int sector_bytes, int ways) {
  const double regions = std::floor(static_cast<double>(capacity_bytes) /
                                    (static_cast<double>(sector_bytes) * kSectorsPerRegion));
  const double sets = std::ceil(regions / std::max(ways, 1));
  // Per way: both tag halves, owner, sector masks, dirty stamp; the dirty queue holds up to
  // 2 entries a way (+64) and its vector may have doubled past that once.
  const double per_way = 2 * sizeof(std::uint32_t) + sizeof(TensorId) + sizeof(Lines) +
                         sizeof(std::uint64_t) + 4 * sizeof(DirtyEntry);
  const double per_set =
      sizeof(std::uint64_t) + (ways > static_cast<int>(kMaxPackedWays) ? ways : 0);
  return regions * per_way + sets * per_set + (16 + 2 * 64) * sizeof(DirtyEntry);
}

std::size_t L2Cache::allocated_bytes() const {
  return lo_storage_.capacity() * sizeof(std::uint32_t) +
         tags_hi_.capacity() * sizeof(std::uint32_t) + owners_.capacity() * sizeof(TensorId) +
         lines_.capacity() * sizeof(Lines) + order_.capacity() * sizeof(std::uint64_t) +
         order_bytes_.capacity() + dirty_order_.capacity() * sizeof(DirtyEntry) +
         dirty_since_.capacity() * sizeof(std::uint64_t);
}

void L2Cache::point_state_at_arrays() {
  state_.tags_hi = tags_hi_.data();
  state_.owners = owners_.data();
  state_.lines = lines_.data();
  state_.order = order_.data();
  state_.order_bytes = order_bytes_.data();
  state_.dirty_since = dirty_since_.data();
}

void L2Cache::reset_recency() {
  if (state_.ways <= kMaxPackedWays) {
    // Way p at position p; fields past the last way hold 0xF, which no way number equals.
    std::uint64_t order = ~std::uint64_t{0};
    for (std::uint64_t p = 0; p < state_.ways; ++p) {
      order &= ~(std::uint64_t{0xF} << (4 * p));
      order |= p << (4 * p);
    }
    order_.assign(sets_, order);
  } else {
    order_bytes_.resize(sets_ * state_.ways);
    for (std::size_t i = 0; i < order_bytes_.size(); ++i) {
      order_bytes_[i] = static_cast<std::uint8_t>(i % state_.ways);
    }
  }
  point_state_at_arrays();
}

L2Cache::ReadOutcome L2Cache::read(std::uint64_t addr, std::uint64_t len, TensorId owner,
                                   PerTensor& written_back) {
  ReadOutcome out;
  Lookups<> lookups(*this);
  geometry_.for_each_region(
      addr, len, [&](std::uint64_t region, const Mask& want, std::uint64_t sectors) {
        const Mask missing =
            lookups.fetch(region, geometry_.set_of(region), want, owner, written_back);
        out.requested_bytes += sectors * state_.sector_bytes;
        out.miss_bytes += l2_detail::popcount(missing) * state_.sector_bytes;
      });
  return out;
}

std::uint64_t L2Cache::write(std::uint64_t addr, std::uint64_t len, TensorId owner,
                             PerTensor& written_back) {
  std::uint64_t bytes = 0;
  Lookups<> lookups(*this);
  geometry_.for_each_region(
      addr, len, [&](std::uint64_t region, const Mask& want, std::uint64_t sectors) {
        lookups.write_region(region, geometry_.set_of(region), want, owner, written_back);
        bytes += sectors * state_.sector_bytes;
      });
  return bytes;
}

void L2Cache::add_dirty_bytes(PerTensor& out) const {
  for (std::size_t i = 0; i < tags_hi_.size(); ++i) {
    if (occupied(i)) {
      out[index_of(owners_[i])] += l2_detail::popcount(lines_[i].dirty) * state_.sector_bytes;
    }
  }
}

void L2Cache::flush(PerTensor& written_back) {
  for (std::size_t i = 0; i < tags_hi_.size(); ++i) {
    if (occupied(i)) {
      written_back[index_of(owners_[i])] +=
          l2_detail::popcount(lines_[i].dirty) * state_.sector_bytes;
    }
  }
  std::fill(lo_storage_.begin(), lo_storage_.end(), kEmpty);
  std::fill(tags_hi_.begin(), tags_hi_.end(), kEmpty);
  state_.wide = false;
  std::fill(lines_.begin(), lines_.end(), Lines{});
  std::fill(dirty_since_.begin(), dirty_since_.end(), 0);
  dirty_order_.clear();
  dirty_head_ = 0;
  reset_recency();
  state_.dirty_sectors = 0;
}

}  // namespace iosim
