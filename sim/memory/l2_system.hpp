#pragma once
// The L2 as A100 and H100 build it: partitions (two on both), each caching data for the SMs
// attached to it. An address has a home partition (hashed); an SM reading a line homed in the
// other partition keeps a copy in its own (near) partition, fetched over the fabric from the
// home, which fetches from DRAM on a miss there. Lines read from both sides therefore occupy
// space twice, which is what makes the L2 behave smaller than its size for data every SM reads.
// Writes go to the home partition (the point of coherence, the only place dirty data lives)
// and refresh the writer's near copy.
//
// Assumptions: SM s is attached to partition s mod P (the GPC wiring is not published); homes
// are hashed per 4 KiB region; the fabric's bandwidth and latency are not modelled.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/memory/l2_cache.hpp"

namespace iosim {

class L2System {
 public:
  /// Byte ranges of `len` bytes: for b < blocks, for k < count, the range starting at
  /// addr + b * block_stride + k * stride, in that order. One contiguous range by default; a
  /// tile's pieces of consecutive rows (count, stride); or those of several blocks of rows
  /// (blocks, block_stride).
  struct Run {
    std::uint64_t addr = 0;
    std::uint64_t len = 0;
    std::uint64_t count = 1;
    std::uint64_t stride = 0;
    std::uint64_t blocks = 1;
    std::uint64_t block_stride = 0;

    /// Calls f(start) for every range's first byte, in the order above.
    template <typename F>
    void for_each_piece(F&& f) const {
      for (std::uint64_t b = 0; b < blocks; ++b) {
        for (std::uint64_t k = 0; k < count; ++k) f(addr + b * block_stride + k * stride);
      }
    }
  };

  /// `partitions` caches sharing `capacity_bytes` equally. Throws ConfigError if one holds no
  /// region. `max_dirty_fraction`: share of each partition that may hold dirty data (see L2Cache).
  L2System(std::int64_t capacity_bytes, int sector_bytes, int partitions,
           double max_dirty_fraction = 1.0);

  /// The most an L2System of these parameters allocates, its scratch for one batch of
  /// `batch_accesses` region accesses included: what the engine reserves of the memory budget.
  static double memory_bytes(std::int64_t capacity_bytes, int sector_bytes, int partitions,
                             std::size_t batch_accesses = 4096);
  /// The bytes its arrays hold now (tests hold it under memory_bytes()).
  std::size_t allocated_bytes() const;

  /// An SM on `sm` reads `runs` in order (the rows of one tile): requested sector bytes and
  /// bytes fetched from DRAM.
  L2Cache::ReadOutcome read(std::span<const Run> runs, TensorId owner, int sm,
                            PerTensor& written_back);
  /// An SM on `sm` writes `runs` in order; returns the sector bytes written.
  std::uint64_t write(std::span<const Run> runs, TensorId owner, int sm, PerTensor& written_back);

  /// One run: read(addr, len) is read({{addr, len}}).
  L2Cache::ReadOutcome read(std::uint64_t addr, std::uint64_t len, TensorId owner, int sm,
                            PerTensor& written_back) {
    const Run run{addr, len};
    return read(std::span<const Run>(&run, 1), owner, sm, written_back);
  }
  std::uint64_t write(std::uint64_t addr, std::uint64_t len, TensorId owner, int sm,
                      PerTensor& written_back) {
    const Run run{addr, len};
    return write(std::span<const Run>(&run, 1), owner, sm, written_back);
  }

  std::uint64_t dirty_bytes() const;
  /// dirty_bytes() by tensor.
  PerTensor dirty_bytes_by_tensor() const;
  std::uint64_t written_back_bytes() const {
    // (Inline: the engine asks after every phase of every stage.)
    std::uint64_t b = parts_.front().written_back_bytes();
    for (std::size_t i = 1; i < parts_.size(); ++i) b += parts_[i].written_back_bytes();
    return b;
  }
  /// Writes all dirty data back (into `written_back`) and invalidates every partition.
  void flush(PerTensor& written_back);

 private:
  // One region a batch of runs touches, with what the lookups need.
  struct Access {
    std::uint64_t region;
    std::uint32_t set;   // the same in every partition: they have the same geometry
    std::uint32_t home;  // (the constructor checked that sets and partitions fit)
    L2Cache::Mask want;
  };

  // Points batch_ at the regions `runs` touch in order (in accesses_ or a memo entry), with
  // access_count_ of them; returns the requested sectors.
  std::uint64_t gather(std::span<const Run> runs);
  // What gather() computes into accesses_.
  std::uint64_t gather_into_scratch(std::span<const Run> runs);
  // Helpers of gather(), which keeps the batch being built in locals.
  struct Batch;
  // Calls visit(access, near partition, home partition, home != near) for every access gathered,
  // in order, for an SM on `sm`.
  template <typename Visit>
  void for_each_access(int sm, Visit&& visit);

  // Set and home of recently looked-up regions, for batches of one region (flash1's tiles: a
  // few regions, each looked up several times in a row, where computing a set index from
  // scratch was a third of a lookup). Direct-mapped by a hash of the region; every entry holds
  // a region's true set and home (empty ones: those of region 2^64 - 1).
  struct Placement {
    std::uint64_t region;
    std::uint32_t set;
    std::uint32_t home;
  };
  static constexpr int kPlacementBits = 11;
  Placement place(std::uint64_t region);
  std::vector<Placement> placements_;

  std::vector<L2Cache> parts_;
  std::uint64_t sector_bytes_;
  FastModulo home_modulo_;
  // Scratch of read() and write(): the vector only grows, so that batches allocate nothing.
  std::vector<Access> accesses_;
  // The current batch: access_count_ accesses from batch_ (in accesses_ or in tile_memo_).
  const Access* batch_ = nullptr;
  std::size_t access_count_ = 0;

  // The batches of recently moved tiles of one run and a few regions, keyed by the run:
  // direct-mapped by a hash of it. A FlashAttention K/V tile is read by every CTA of its head
  // (flash2 B=4 H=16 N=8192 d=64: 64 times, four regions each), and its regions, sets, homes and
  // masks depend on the run alone (the geometry is fixed), so the batch gather() built the first
  // time is the batch of every later read: copying it is exact, and building it was a fifth of
  // that run's simulation time. An entry with count 0 is empty.
  static constexpr std::size_t kMemoAccesses = 8;
  static constexpr int kMemoBits = 10;
  struct MemoEntry {
    Run run;
    std::uint64_t requested = 0;  // sectors
    std::size_t count = 0;
    std::array<Access, kMemoAccesses> accesses;
  };
  std::vector<MemoEntry> tile_memo_;
};

}  // namespace iosim
