#pragma once
// Where L2 hits are decided.
//
// The cache is modelled at two granularities. Presence and dirtiness are exact per 32-byte
// sector (the unit in which SMs request data and DRAM traffic is counted). Placement and
// replacement work on regions of 128 consecutive sectors (4 KiB for 32-byte sectors), kept in
// one LRU list over the whole capacity (fully associative). Tiles are contiguous runs of
// hundreds of sectors touched together, so the lines of a region share nearly the same recency;
// tracking regions instead of lines makes a lookup cost one hash probe per 4 KiB, which is what
// keeps B=4, H=16, N=16384 runs in seconds. What it approximates: the real L2's set
// associativity and hashed set index, its replacement policy (not documented by NVIDIA), and
// the split into two partitions on A100/H100.
#include <array>
#include <cstdint>
#include <vector>

#include "sim/counters.hpp"
#include "sim/tensor.hpp"

namespace iosim {

class L2Cache {
 public:
  static constexpr int kSectorsPerRegion = 128;

  /// A cache of `capacity_bytes` with `sector_bytes` sectors. Throws ConfigError if the
  /// capacity holds no region.
  L2Cache(std::int64_t capacity_bytes, int sector_bytes);

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

  /// Dirty bytes currently held (would reach DRAM at eviction or flush).
  std::uint64_t dirty_bytes() const { return dirty_sectors_ * sector_bytes_; }

  /// Writes every dirty sector back (into `written_back`) and invalidates the cache: what a
  /// profiler's cache flush between kernels does.
  void flush(PerTensor& written_back);

  int sector_bytes() const { return static_cast<int>(sector_bytes_); }
  std::uint64_t region_bytes() const { return region_bytes_; }
  std::size_t capacity_regions() const { return entries_.size(); }

 private:
  using Mask = std::array<std::uint64_t, 2>;
  static constexpr std::uint32_t kNone = 0xffffffffu;

  struct Entry {
    std::uint64_t region = 0;
    Mask valid{};
    Mask dirty{};
    std::uint32_t prev = kNone, next = kNone;
    TensorId owner{};
  };

  template <typename Visit>
  void for_each_region(std::uint64_t addr, std::uint64_t len, Visit&& visit);
  std::uint32_t find(std::uint64_t region) const;
  std::uint32_t acquire(std::uint64_t region, TensorId owner, PerTensor& written_back);
  void touch(std::uint32_t e);
  void unlink(std::uint32_t e);
  void push_front(std::uint32_t e);
  void hash_insert(std::uint64_t region, std::uint32_t e);
  void hash_erase(std::uint64_t region);
  std::size_t slot_of(std::uint64_t region) const;

  std::uint64_t sector_bytes_;
  std::uint64_t region_bytes_;
  std::vector<Entry> entries_;
  std::uint32_t used_ = 0;
  std::uint32_t head_ = kNone, tail_ = kNone;  // most / least recently used
  std::vector<std::uint32_t> table_;           // open addressing, linear probing
  std::uint64_t table_mask_ = 0;
  std::uint64_t dirty_sectors_ = 0;
};

}  // namespace iosim
