#include "sim/l2_system.hpp"

#include <fmt/format.h>

#include <bit>

#include "sim/errors.hpp"

namespace iosim {
namespace {

std::uint64_t count(const L2Cache::Mask& m) {
  return static_cast<std::uint64_t>(std::popcount(m[0]) + std::popcount(m[1]));
}

bool any(const L2Cache::Mask& m) {
  return (m[0] | m[1]) != 0;
}

}  // namespace

L2System::L2System(std::int64_t capacity_bytes, int sector_bytes, int partitions,
                   double max_dirty_fraction)
    : sector_bytes_(static_cast<std::uint64_t>(sector_bytes)) {
  if (partitions <= 0) throw ConfigError(fmt::format("L2 with {} partitions", partitions));
  parts_.reserve(static_cast<std::size_t>(partitions));
  for (int i = 0; i < partitions; ++i)
    parts_.emplace_back(capacity_bytes / partitions, sector_bytes, L2Cache::kDefaultWays,
                        max_dirty_fraction);
}

int L2System::home_of(std::uint64_t region) const {
  // A different hash from the set index, so that home and set are independent.
  std::uint64_t x = region * 0x9e3779b97f4a7c15ULL;
  x ^= x >> 29;
  return static_cast<int>(x % parts_.size());
}

L2Cache::ReadOutcome L2System::read(std::uint64_t addr, std::uint64_t len, TensorId owner, int sm,
                                    PerTensor& written_back) {
  L2Cache::ReadOutcome out;
  const int side = sm % static_cast<int>(parts_.size());
  parts_.front().for_each_region(addr, len, [&](std::uint64_t region, const L2Cache::Mask& want) {
    out.requested_bytes += count(want) * sector_bytes_;
    const int home = home_of(region);
    L2Cache::Mask missing =
        parts_[static_cast<std::size_t>(side)].fetch(region, want, owner, written_back);
    if (home != side && any(missing)) {
      // Not in the near copy: ask the home partition over the fabric.
      missing = parts_[static_cast<std::size_t>(home)].fetch(region, missing, owner, written_back);
    }
    out.miss_bytes += count(missing) * sector_bytes_;
  });
  return out;
}

std::uint64_t L2System::write(std::uint64_t addr, std::uint64_t len, TensorId owner, int sm,
                              PerTensor& written_back) {
  std::uint64_t bytes = 0;
  const int side = sm % static_cast<int>(parts_.size());
  parts_.front().for_each_region(addr, len, [&](std::uint64_t region, const L2Cache::Mask& want) {
    bytes += count(want) * sector_bytes_;
    const int home = home_of(region);
    if (home != side)
      parts_[static_cast<std::size_t>(side)].fill(region, want, owner, written_back);
    parts_[static_cast<std::size_t>(home)].write_region(region, want, owner, written_back);
  });
  return bytes;
}

std::uint64_t L2System::dirty_bytes() const {
  std::uint64_t b = 0;
  for (const L2Cache& p : parts_) b += p.dirty_bytes();
  return b;
}

std::uint64_t L2System::written_back_bytes() const {
  std::uint64_t b = 0;
  for (const L2Cache& p : parts_) b += p.written_back_bytes();
  return b;
}

void L2System::flush(PerTensor& written_back) {
  for (L2Cache& p : parts_) p.flush(written_back);
}

}  // namespace iosim
