#pragma once
// Where L2 hits are decided.
//
// The cache is modelled at two granularities. Presence and dirtiness are exact per sector (32
// bytes: the unit in which SMs request data and DRAM traffic is counted). Placement and
// replacement work on regions of 128 consecutive sectors (4 KiB), kept in a set-associative
// array (16 ways, consecutive regions in consecutive sets, LRU within a set). Tiles are contiguous
// runs of hundreds of sectors touched together, so the lines of a region share nearly the same
// recency; tracking regions instead of 128-byte lines costs one set lookup per 4 KiB, which is what
// keeps B=4, H=16, N=16384 runs in seconds. What it approximates: the real L2's line-granular sets
// and undocumented hash and replacement policy, and the split into two partitions on A100/H100.
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "sim/counters.hpp"
#include "sim/tensor.hpp"

namespace iosim {

// Mask with sectors [first, last] (inclusive, 0..127) set.
inline std::array<std::uint64_t, 2> sector_range_mask(unsigned first, unsigned last) {
  std::array<std::uint64_t, 2> m{};
  for (unsigned w = 0; w < 2; ++w) {
    const unsigned lo = w * 64, hi = lo + 63;
    if (last < lo || first > hi) continue;
    const unsigned a = first > lo ? first - lo : 0;
    const unsigned b = last < hi ? last - lo : 63;
    const std::uint64_t upto_b =
        (b == 63) ? ~std::uint64_t{0} : ((std::uint64_t{1} << (b + 1)) - 1);
    const std::uint64_t below_a = (std::uint64_t{1} << a) - 1;
    m[w] = upto_b & ~below_a;
  }
  return m;
}

class L2Cache {
 public:
  static constexpr int kSectorsPerRegion = 128;
  static constexpr int kDefaultWays = 16;

  /// A cache of `capacity_bytes` with `sector_bytes` sectors and `ways` regions per set (fewer
  /// when the capacity holds fewer regions). At most `max_dirty_fraction` of the capacity holds
  /// dirty data: beyond it the regions dirtied first are written back (and stay, clean). Throws
  /// ConfigError if it holds no region.
  L2Cache(std::int64_t capacity_bytes, int sector_bytes, int ways = kDefaultWays,
          double max_dirty_fraction = 1.0);

  struct ReadOutcome {
    std::uint64_t requested_bytes = 0;  // sectors touched x sector size
    std::uint64_t miss_bytes = 0;       // sectors fetched from DRAM x sector size
  };

  /// Reads [addr, addr + len) for `owner`; missing sectors are fetched and become valid.
  /// Dirty sectors of evicted regions are added to `written_back` (per owning tensor).
  ReadOutcome read(std::uint64_t addr, std::uint64_t len, TensorId owner, PerTensor& written_back);

  /// Writes [addr, addr + len): sectors become valid and dirty (no fetch: write-allocate with
  /// byte masks). Returns the sector bytes written.
  std::uint64_t write(std::uint64_t addr, std::uint64_t len, TensorId owner,
                      PerTensor& written_back);

  /// Bytes written back to DRAM by evictions since construction (all owners).
  std::uint64_t written_back_bytes() const { return written_back_sectors_ * sector_bytes_; }

  /// Dirty bytes currently held (would reach DRAM at eviction or flush).
  std::uint64_t dirty_bytes() const { return dirty_sectors_ * sector_bytes_; }

  /// Writes every dirty sector back (into `written_back`) and invalidates the cache: what a
  /// profiler's cache flush between kernels does.
  void flush(PerTensor& written_back);

  // Region-level primitives for a partitioned L2 (sim/l2_system.hpp). `want` selects sectors of
  // region `region` (128 bits).
  using Mask = std::array<std::uint64_t, 2>;
  /// Sectors of `want` not present; the region is allocated (and becomes most recent) if absent.
  Mask fetch(std::uint64_t region, const Mask& want, TensorId owner, PerTensor& written_back);
  /// Marks `want` valid and clean (a copy filled from elsewhere).
  void fill(std::uint64_t region, const Mask& want, TensorId owner, PerTensor& written_back);
  /// Marks `want` valid and dirty.
  void write_region(std::uint64_t region, const Mask& want, TensorId owner,
                    PerTensor& written_back);
  /// Calls visit(region, mask) for every region [addr, addr + len) touches.
  template <typename Visit>
  void for_each_region(std::uint64_t addr, std::uint64_t len, Visit&& visit) const;

  int sector_bytes() const { return static_cast<int>(sector_bytes_); }
  std::uint64_t region_bytes() const { return region_bytes_; }
  std::size_t capacity_regions() const { return tags_.size(); }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  // The sector state of one way; tags and recency live in their own arrays so that a set
  // lookup scans two cache lines of tags, not the whole state.
  struct Lines {
    Mask valid{};
    Mask dirty{};
    TensorId owner{};
  };

  Lines& acquire(std::uint64_t region, TensorId owner, PerTensor& written_back);
  // Marks `want` of way `slot` dirty and keeps the dirty data under its cap.
  void make_dirty(std::uint64_t slot, const Mask& want, PerTensor& written_back);
  std::uint64_t set_of(std::uint64_t region) const;

  // Ways in the order they went from clean to dirty, with the stamp they had then (an entry is
  // stale once its way was evicted or cleaned: the way's dirty_since_ no longer matches).
  struct DirtyEntry {
    std::uint64_t slot;
    std::uint64_t since;
  };
  std::deque<DirtyEntry> dirty_order_;
  std::vector<std::uint64_t> dirty_since_;
  std::uint64_t max_dirty_sectors_ = 0;
  std::uint64_t dirty_clock_ = 0;
  std::uint64_t sector_bytes_;
  std::uint64_t region_bytes_;
  std::uint64_t sets_;
  std::uint64_t ways_per_set_;
  // Way w of set s is index s * ways_per_set_ + w in each array.
  std::vector<std::uint64_t> tags_;      // region held, or kEmpty
  std::vector<std::uint64_t> last_use_;  // LRU clock stamp (0: never used)
  std::vector<Lines> lines_;
  std::uint64_t clock_ = 0;
  std::uint64_t dirty_sectors_ = 0;
  std::uint64_t written_back_sectors_ = 0;
};

template <typename Visit>
void L2Cache::for_each_region(std::uint64_t addr, std::uint64_t len, Visit&& visit) const {
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

}  // namespace iosim
