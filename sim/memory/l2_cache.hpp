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
//
// A lookup is the simulator's innermost loop (a standard-attention sweep makes billions), so the
// hot path lives in headers, this one and sim/memory/l2_lookups.hpp (L2Cache::Lookups), where the
// partitioned L2 (sim/memory/l2_system.hpp) inlines it, and a set's state is laid out for it: the
// tags of a set are contiguous, the recency order of a set is one 64-bit word (16 ways of 4 bits,
// most recent first), and a lookup costs no division.
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "sim/schedule/tensor.hpp"

namespace iosim {

__extension__ using SectorBits = unsigned __int128;  // one bit per sector of a region

// Sectors [first, last] (inclusive, 0..127) of a region as bits, word by word and without
// branches (a 128-bit shift by a variable amount branches on it).
inline SectorBits sector_span(std::uint64_t first, std::uint64_t last) {
  auto from = [](std::uint64_t x) -> SectorBits {  // bits x..127 set, x <= 128
    const std::uint64_t all = ~std::uint64_t{0};
    const std::uint64_t lo = x < 64 ? all << (x & 63) : 0;
    const std::uint64_t hi = x < 64 ? all : (x < 128 ? all << (x & 63) : 0);
    return (SectorBits{hi} << 64) | lo;
  };
  return from(first) & ~from(last + 1);
}

// The same bits as two words, low sectors first.
inline std::array<std::uint64_t, 2> sector_words(SectorBits bits) {
  return {static_cast<std::uint64_t>(bits), static_cast<std::uint64_t>(bits >> 64)};
}

/// x % d and x / d for a divisor fixed at construction, without a division instruction. The
/// remainder: a mask for powers of two, else Lemire, Kaser and Kurz, "Faster remainder by direct
/// computation" (2019), exact for every 64-bit x and d. The quotient of x - x % d, a multiple of
/// d: a shift by d's trailing zeros and a product with the inverse of its odd part modulo 2^64.
class FastModulo {
 public:
  explicit FastModulo(std::uint64_t d)
      : d_(d),
        m_(~U128{0} / d + 1),
        mask_(std::has_single_bit(d) ? d - 1 : 0),
        shift_(std::countr_zero(d)),
        inverse_(odd_inverse(d >> shift_)) {}
  std::uint64_t operator()(std::uint64_t x) const {
    if (mask_ != 0 || d_ == 1) return x & mask_;
    const U128 low = m_ * x;
    const U128 bottom = (static_cast<U128>(static_cast<std::uint64_t>(low)) * d_) >> 64;
    const U128 top = static_cast<U128>(static_cast<std::uint64_t>(low >> 64)) * d_;
    return static_cast<std::uint64_t>((bottom + top) >> 64);
  }
  std::uint64_t divisor() const { return d_; }
  /// x / d.
  std::uint64_t quotient(std::uint64_t x) const { return quotient(x, (*this)(x)); }
  /// x / d, given x % d.
  std::uint64_t quotient(std::uint64_t x, std::uint64_t remainder) const {
    return ((x - remainder) >> shift_) * inverse_;
  }

 private:
  __extension__ using U128 = unsigned __int128;
  // The inverse of odd `m` modulo 2^64 (each step of Newton's iteration doubles the correct low
  // bits).
  static std::uint64_t odd_inverse(std::uint64_t m) {
    std::uint64_t y = m;  // correct to 3 bits: m * m = 1 (mod 8) for odd m
    for (int i = 0; i < 5; ++i) y *= 2 - m * y;
    return y;
  }
  std::uint64_t d_;
  U128 m_;
  std::uint64_t mask_;  // d - 1 when d is a power of two, else 0
  int shift_;           // trailing zero bits of d
  std::uint64_t inverse_;
};

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
  std::uint64_t written_back_bytes() const {
    return state_.written_back_sectors * state_.sector_bytes;
  }

  /// Dirty bytes currently held (would reach DRAM at eviction or flush).
  std::uint64_t dirty_bytes() const { return state_.dirty_sectors * state_.sector_bytes; }
  /// Adds the dirty bytes held to `out`, by the tensor of each region: what the run has written
  /// and HBM has not yet received, per tensor (they sum to dirty_bytes()).
  void add_dirty_bytes(PerTensor& out) const;

  /// Writes every dirty sector back (into `written_back`) and invalidates the cache: what a
  /// profiler's cache flush between kernels does.
  void flush(PerTensor& written_back);

  // Region-level lookups for a partitioned L2 (sim/memory/l2_system.hpp). `want` selects sectors of
  // a region (128 bits). Defined in sim/memory/l2_lookups.hpp.
  using Mask = std::array<std::uint64_t, 2>;
  template <bool kSixteenWays = false, bool kLocal = true>
  class Lookups;

  /// How addresses map to sectors, regions and sets: a small value that hot loops copy into
  /// locals.
  struct Geometry {
    std::uint64_t sector_bytes;
    int sector_shift;  // log2(sector_bytes), or -1 when it is not a power of two
    FastModulo sets;
    std::uint64_t sets_wrap = 0;  // 2^64 % sets (SetCursor's wrap-around correction)
    /// addr / sector_bytes: a shift for the power-of-two sectors of every real GPU.
    std::uint64_t sector_of(std::uint64_t addr) const {
      return sector_shift >= 0 ? addr >> sector_shift : addr / sector_bytes;
    }
    /// The set `region` maps to.
    std::uint64_t set_of(std::uint64_t region) const;
    class SetCursor;
    /// Calls visit(region, mask, sectors in mask) for every region [addr, addr + len) touches.
    template <typename Visit>
    void for_each_region(std::uint64_t addr, std::uint64_t len, Visit&& visit) const;
  };
  const Geometry& geometry() const { return geometry_; }

  int sector_bytes() const { return static_cast<int>(state_.sector_bytes); }
  std::uint64_t region_bytes() const { return region_bytes_; }
  std::size_t capacity_regions() const { return tags_hi_.size(); }

  /// The most a cache of these parameters allocates (its arrays, and its dirty-region queue at
  /// the longest it grows): what the engine reserves of the memory budget before building one.
  static double memory_bytes(std::int64_t capacity_bytes, int sector_bytes,
                             int ways = kDefaultWays);
  /// The bytes its arrays hold now (tests hold it under memory_bytes()).
  std::size_t allocated_bytes() const;
  std::uint64_t ways_per_set() const { return state_.ways; }

 private:
  // A region is tagged by its low and high 32 bits. Empty ways hold kEmpty in both.
  static constexpr std::uint32_t kEmpty = ~std::uint32_t{0};
  // Sets of up to 16 ways keep their recency order in one word, 4 bits per position.
  static constexpr std::uint64_t kMaxPackedWays = 16;

  // The sector state of one way.
  struct Lines {
    Mask valid{};
    Mask dirty{};
  };

  bool occupied(std::uint64_t i) const {
    return state_.tags_lo[i] != kEmpty || tags_hi_[i] != kEmpty;
  }
  void reset_recency();
  void point_state_at_arrays();

  std::uint64_t region_bytes_;
  std::uint64_t sets_;
  Geometry geometry_;
  // Way w of set s is index s * state_.ways + w in state_.tags_lo, tags_hi_, owners_ and lines_.
  // The low halves of a 16-way set's tags fill one 64-byte line (state_.tags_lo starts on a line;
  // its storage is lo_storage_), compared at once; the high halves are read only when some region
  // held or looked up is at or past 2^32 - 1 (addresses from 16 TiB: `state_.wide`), so that tags
  // stay exact for any address.
  std::vector<std::uint32_t> lo_storage_;
  std::vector<std::uint32_t> tags_hi_;
  std::vector<TensorId> owners_;  // tensor of the region held (for write-back attribution)
  std::vector<Lines> lines_;
  // Recency order of each set, most recent first. Up to 16 ways: word s holds way numbers in
  // 4-bit fields, position 0 in the low bits. More ways (tests of the replacement policy only):
  // bytes s * state_.ways + position of order_bytes_.
  std::vector<std::uint64_t> order_;
  std::vector<std::uint8_t> order_bytes_;
  // Ways in the order they went from clean to dirty, with the stamp they had then (an entry is
  // stale once its way was evicted or cleaned: the way's dirty_since_ no longer matches, and no
  // later stamp will). Entries [dirty_head_, end) are queued. Stale entries are skipped when they
  // reach the head and dropped in bulk once the queue holds twice as many entries as there are
  // ways (at most one per way is live): otherwise a kernel whose dirty data stays under the cap,
  // every dirty region leaving by eviction, would queue an entry per write that never leaves
  // (18 GB for the README sweep's standard attention at N = 16384).
  struct DirtyEntry {
    std::uint64_t slot;
    std::uint64_t since;
  };
  std::vector<DirtyEntry> dirty_order_;
  std::size_t dirty_head_ = 0;
  std::vector<std::uint64_t> dirty_since_;

  // What lookups use, in one value that Lookups copies or refers to: the arrays above (tags_lo
  // is where lo_storage_'s 64-byte-aligned part starts) and the counters.
  struct State {
    std::uint32_t* tags_lo = nullptr;
    std::uint32_t* tags_hi = nullptr;
    TensorId* owners = nullptr;
    Lines* lines = nullptr;
    std::uint64_t* order = nullptr;
    std::uint8_t* order_bytes = nullptr;
    std::uint64_t* dirty_since = nullptr;
    std::uint64_t ways = 0;  // per set
    std::uint64_t sector_bytes = 0;
    std::uint64_t max_dirty_sectors = 0;
    std::size_t queue_limit = 0;  // dirty_order_ entries at which stale ones are dropped
    bool wide = false;            // some region at or past 2^32 - 1 was held or looked up
    std::uint64_t dirty_sectors = 0;
    std::uint64_t written_back_sectors = 0;
    std::uint64_t dirty_clock = 0;
  };
  State state_;
};

namespace l2_detail {

inline std::uint64_t popcount(const std::array<std::uint64_t, 2>& m) {
  return static_cast<std::uint64_t>(std::popcount(m[0]) + std::popcount(m[1]));
}

// Spreads windows of consecutive regions over the sets (see Geometry::set_of).
inline std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  return x ^ (x >> 33);
}

// Mask of the `n` lowest 4-bit fields (n <= 15).
inline std::uint64_t low_fields(std::uint64_t n) {
  return (std::uint64_t{1} << (4 * n)) - 1;
}

}  // namespace l2_detail

// Set index: the region's position within an aligned window of `sets` consecutive regions,
// rotated by a hash of the window. So a window's regions fill the sets evenly and windows land
// at pseudo-random offsets: the structure of the GPU's XOR address hash (low address bits pick
// the set, higher bits are hashed in). It reproduces how repeated sweeps of a growing footprint
// stop hitting (l2_sweep microbenchmark, cuda_validate/measurements/*/l2_microbench_2026-11-22: >=
// 98% hits up to 60% of the L2, a sharp fall between 70% and 90%): a random set per region spreads
// unevenly and misses from 40% (binomial occupancy), a plain modulo fills every set alike and
// thrashes all of them at once. (The sum wraps around 2^64 as in any unsigned arithmetic.)
inline std::uint64_t L2Cache::Geometry::set_of(std::uint64_t region) const {
  const std::uint64_t position = sets(region);
  return sets(position + l2_detail::mix(sets.quotient(region, position)));
}

/// set_of() for a sequence of regions that mostly move forward by less than a window of
/// `sets` regions, as a tile's rows do: the window's hash is kept, and the position in the window
/// and the final remainder are updated by additions. Exactly set_of() for every region.
class L2Cache::Geometry::SetCursor {
 public:
  explicit SetCursor(const Geometry& geometry)
      : sets_(geometry.sets), count_(geometry.sets.divisor()), wrap_(geometry.sets_wrap) {}

  /// Calls f(region, set_of(region)) for `count` regions from `first`, `step` apart, with the
  /// window and the position in it carried by additions: a tile's blocks of rows. Leaves the
  /// cursor as it was.
  template <typename F>
  void for_each_step(std::uint64_t first, std::uint64_t step, std::uint64_t count, F&& f) const {
    if (count == 0) return;
    std::uint64_t position = sets_(first);
    std::uint64_t window = sets_.quotient(first, position);
    const std::uint64_t step_position = sets_(step);
    const std::uint64_t step_windows = sets_.quotient(step, step_position);
    std::uint64_t hash = 0, hash_remainder = 0;
    // Whether position + hash can pass 2^64 in this window: for one window in about 2^64 / sets,
    // so the loop tests a flag and leaves the exact correction to combine().
    bool may_wrap = false;
    auto enter = [&] {
      hash = l2_detail::mix(window);
      hash_remainder = sets_(hash);
      may_wrap = ~hash < count_;
    };
    enter();
    std::uint64_t region = first;
    for (std::uint64_t k = 0;;) {
      std::uint64_t set = position + hash_remainder;
      if (set >= count_) set -= count_;
      if (may_wrap) [[unlikely]]
        set = combine(position, hash, hash_remainder);
      f(region, set);
      if (++k == count) return;
      region += step;
      position += step_position;
      bool moved = step_windows != 0;
      window += step_windows;
      if (position >= count_) {
        position -= count_;
        ++window;
        moved = true;
      }
      if (moved) enter();
    }
  }

  std::uint64_t operator()(std::uint64_t region) {
    const bool near = started_ && region >= region_ && region - region_ < count_;
    bool moved = !near;
    if (near) {
      position_ += region - region_;
      if (position_ >= count_) {  // into the next window (at most one: the step is < count_)
        position_ -= count_;
        ++window_;
        moved = true;
      }
    } else {
      position_ = sets_(region);
      window_ = sets_.quotient(region, position_);
    }
    started_ = true;
    region_ = region;
    if (moved) {
      hash_ = l2_detail::mix(window_);
      hash_remainder_ = sets_(hash_);
    }
    return combine(position_, hash_, hash_remainder_);
  }

 private:
  // (position + hash) % count, with the sum taken modulo 2^64 as set_of() takes it.
  std::uint64_t combine(std::uint64_t position, std::uint64_t hash,
                        std::uint64_t hash_remainder) const {
    std::uint64_t set = position + hash_remainder;
    if (set >= count_) set -= count_;
    if (position > ~hash) set = set >= wrap_ ? set - wrap_ : set + count_ - wrap_;
    return set;
  }

  FastModulo sets_;
  std::uint64_t count_;  // sets
  std::uint64_t wrap_;   // 2^64 % sets
  bool started_ = false;
  std::uint64_t region_ = 0, position_ = 0, window_ = 0, hash_ = 0, hash_remainder_ = 0;
};

template <typename Visit>
void L2Cache::Geometry::for_each_region(std::uint64_t addr, std::uint64_t len,
                                        Visit&& visit) const {
  if (len == 0) return;
  const std::uint64_t first_sector = sector_of(addr);
  const std::uint64_t last_sector = sector_of(addr + len - 1);
  for (std::uint64_t r = first_sector / kSectorsPerRegion; r <= last_sector / kSectorsPerRegion;
       ++r) {
    const std::uint64_t r0 = r * kSectorsPerRegion;
    const unsigned a = static_cast<unsigned>(first_sector > r0 ? first_sector - r0 : 0);
    const unsigned b = static_cast<unsigned>(
        last_sector < r0 + kSectorsPerRegion - 1 ? last_sector - r0 : kSectorsPerRegion - 1);
    visit(r, sector_words(sector_span(a, b)), std::uint64_t{b - a + 1});
  }
}

}  // namespace iosim
