#pragma once
// L2Cache::Lookups: the hot path of an L2 lookup (sim/memory/l2_cache.hpp), inlined where a
// batch of lookups runs (L2Cache's read and write, the partitioned L2 of sim/memory/l2_system.cpp).
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sim/memory/l2_cache.hpp"

namespace iosim {

/// Lookups in one cache, for one batch of them (a tile's runs). With kLocal, the cache's arrays
/// and counters are copied into this object, which lives in registers: the compiler cannot keep
/// the cache's own members there across the stores into its arrays (they might alias), and
/// reloading them made up much of a lookup, the simulator's innermost loop. The counters reach
/// the cache when the object is destroyed; use one object per cache at a time. Without kLocal
/// the object works on the cache's own state: cheaper for a batch of a few lookups, where
/// copying the state in and out cost more than the reloads it saves.
template <bool kSixteenWays, bool kLocal>
class L2Cache::Lookups {
 public:
  explicit Lookups(L2Cache& cache) : cache_(cache), s_(cache.state_) {}
  ~Lookups() {
    if constexpr (kLocal) {  // the counters back into the cache
      cache_.state_.wide = s_.wide;
      cache_.state_.dirty_sectors = s_.dirty_sectors;
      cache_.state_.written_back_sectors = s_.written_back_sectors;
      cache_.state_.dirty_clock = s_.dirty_clock;
    }
  }
  Lookups(const Lookups&) = delete;
  Lookups& operator=(const Lookups&) = delete;

  /// Ways per set: a constant when the caller knows every set has 16 (the profiles' L2s).
  std::uint64_t ways() const { return kSixteenWays ? kMaxPackedWays : s_.ways; }

  /// Starts loading set `set`'s tags into the CPU cache ahead of a lookup (a hint only).
  void prefetch(std::uint64_t set) const {
    __builtin_prefetch(&s_.tags_lo[set * ways()]);
    // And the sector state of the way a miss would replace: most lookups of data far larger
    // than the L2 miss, and the victim's dirty sectors are what a miss reads first.
    if (ways() <= kMaxPackedWays) {
      const std::uint64_t victim = set * ways() + ((s_.order[set] >> (4 * (ways() - 1))) & 0xF);
      __builtin_prefetch(&s_.lines[victim]);
      __builtin_prefetch(&s_.dirty_since[victim]);
      __builtin_prefetch(&s_.owners[victim]);
    }
  }

  /// Sectors of `want` not present; the region is allocated (and becomes most recent) if absent.
  /// Dirty sectors of an evicted region are added to `written_back` (per owning tensor).
  Mask fetch(std::uint64_t region, std::uint64_t set, const Mask& want, TensorId owner,
             PerTensor& written_back) {
    Lines& x = acquire(region, set, owner, written_back);
    const Mask missing = {want[0] & ~x.valid[0], want[1] & ~x.valid[1]};
    x.valid[0] |= want[0];
    x.valid[1] |= want[1];
    return missing;
  }
  /// Marks `want` valid and clean (a copy filled from elsewhere).
  void fill(std::uint64_t region, std::uint64_t set, const Mask& want, TensorId owner,
            PerTensor& written_back) {
    Lines& x = acquire(region, set, owner, written_back);
    x.valid[0] |= want[0];
    x.valid[1] |= want[1];
  }
  /// Marks `want` valid and dirty, and keeps the dirty data under its cap.
  [[gnu::always_inline]] void write_region(std::uint64_t region, std::uint64_t set,
                                           const Mask& want, TensorId owner,
                                           PerTensor& written_back) {
    Lines& x = acquire(region, set, owner, written_back);
    const auto slot = static_cast<std::uint64_t>(&x - s_.lines);
    const bool was_clean = (x.dirty[0] | x.dirty[1]) == 0;
    const Mask newly_dirty = {want[0] & ~x.dirty[0], want[1] & ~x.dirty[1]};
    s_.dirty_sectors += l2_detail::popcount(newly_dirty);
    x.valid[0] |= want[0];
    x.valid[1] |= want[1];
    x.dirty[0] |= want[0];
    x.dirty[1] |= want[1];
    if (was_clean) {
      s_.dirty_since[slot] = ++s_.dirty_clock;
      std::vector<DirtyEntry>& order = cache_.dirty_order_;
      if (order.size() >= s_.queue_limit) drop_stale();
      order.push_back({slot, s_.dirty_clock});
    }
    if (s_.dirty_sectors > s_.max_dirty_sectors) clean_oldest(slot, written_back);
  }

 private:
  // The way of set `base / ways()` holding `region`, or ways() when none does.
  std::uint64_t find(std::uint64_t region, std::uint64_t base) const {
    const auto lo = static_cast<std::uint32_t>(region);
    const auto hi = static_cast<std::uint32_t>(region >> 32);
    // Below 2^32 - 1 and with no such region held, the low halves alone decide.
    const bool narrow = region < kEmpty && !s_.wide;
    const std::uint32_t* tags = &s_.tags_lo[base];
#if defined(__AVX2__) || defined(__SSE2__)
    if (ways() == kMaxPackedWays) {
      auto hits = packed_hits(tags, lo);
      if (narrow) return hits != 0 ? static_cast<std::uint64_t>(std::countr_zero(hits)) : ways();
      for (; hits != 0; hits &= hits - 1) {
        const auto w = static_cast<std::uint64_t>(std::countr_zero(hits));
        if (s_.tags_hi[base + w] == hi) return w;
      }
      return ways();
    }
#endif
    for (std::uint64_t w = 0; w < ways(); ++w) {
      if (tags[w] == lo && (narrow || s_.tags_hi[base + w] == hi)) return w;
    }
    return ways();
  }

#if defined(__AVX2__) || defined(__SSE2__)
  // Bit w set where low half `lo` equals tags[w], for the 16 ways of a set (64-byte aligned):
  // a few vector compares, with no loop and no mispredicted branch on where the region is.
  static std::uint32_t packed_hits(const std::uint32_t* tags, std::uint32_t lo) {
#if defined(__AVX2__)
    const __m256i key = _mm256_set1_epi32(static_cast<int>(lo));
    const auto* v = reinterpret_cast<const __m256i*>(tags);
    auto eight = [&](int half) {  // ways 8 * half .. 8 * half + 7
      const __m256i eq = _mm256_cmpeq_epi32(_mm256_load_si256(v + half), key);
      return static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(eq)));
    };
    return eight(0) | (eight(1) << 8);
#else
    const __m128i key = _mm_set1_epi32(static_cast<int>(lo));
    const auto* v = reinterpret_cast<const __m128i*>(tags);
    const __m128i ab = _mm_packs_epi32(_mm_cmpeq_epi32(_mm_load_si128(v), key),
                                       _mm_cmpeq_epi32(_mm_load_si128(v + 1), key));
    const __m128i cd = _mm_packs_epi32(_mm_cmpeq_epi32(_mm_load_si128(v + 2), key),
                                       _mm_cmpeq_epi32(_mm_load_si128(v + 3), key));
    return static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(ab, cd)));
#endif
  }
#endif

  // Makes `way` the most recent of `set`.
  void touch(std::uint64_t set, std::uint64_t way) {
    if (ways() <= kMaxPackedWays) {
      std::uint64_t& order = s_.order[set];
      // Position of `way`: the lowest 4-bit field of order ^ way*0x11.. that is zero (exact for
      // the lowest one; the word is a permutation, so exactly one field matches).
      const std::uint64_t x = order ^ (way * 0x1111111111111111ULL);
      const std::uint64_t zero = (x - 0x1111111111111111ULL) & ~x & 0x8888888888888888ULL;
      const auto position = static_cast<std::uint64_t>(std::countr_zero(zero)) / 4;
      const std::uint64_t below = l2_detail::low_fields(position);
      const std::uint64_t through = (below << 4) | 0xF;
      order = (order & ~through) | ((order & below) << 4) | way;
      return;
    }
    std::uint8_t* order = &s_.order_bytes[set * ways()];
    std::uint64_t p = 0;
    while (order[p] != way) ++p;
    for (; p > 0; --p) order[p] = order[p - 1];
    order[0] = static_cast<std::uint8_t>(way);
  }

  // The least recent way of `set` (never-used ways are older than any used one), made the most
  // recent.
  std::uint64_t replace(std::uint64_t set) {
    const std::uint64_t last = ways() - 1;
    if (ways() <= kMaxPackedWays) {
      std::uint64_t& order = s_.order[set];
      const std::uint64_t victim = (order >> (4 * last)) & 0xF;
      const std::uint64_t kept = l2_detail::low_fields(last);
      const std::uint64_t unused = last == 15 ? 0 : ~l2_detail::low_fields(last + 1);
      order = (order & unused) | ((order & kept) << 4) | victim;
      return victim;
    }
    std::uint8_t* order = &s_.order_bytes[set * ways()];
    const std::uint8_t victim = order[last];
    for (std::uint64_t p = last; p > 0; --p) order[p] = order[p - 1];
    order[0] = victim;
    return victim;
  }

  // The GPU writes dirty data back once it fills about half the L2, whether or not the space is
  // needed (a write-only kernel's DRAM writes are everything beyond that share: l2_residue
  // microbenchmark, writes mode; hwprofiles *.yaml l2.max_dirty_fraction). Which lines it cleans
  // first is not visible in the counters; the ones dirtied first is the assumption, except the
  // region being written (`writing`): it goes to the back of the queue, as if dirtied now. So
  // the sectors one write makes dirty are never cleaned by that same write, and writing a
  // region's pieces one at a time cleans what writing them at once does (L2System merges a
  // tile's pieces of one region into one write).
  [[gnu::noinline]] void clean_oldest(std::uint64_t writing, PerTensor& written_back) {
    std::vector<DirtyEntry>& order = cache_.dirty_order_;
    std::size_t& head = cache_.dirty_head_;
    bool requeued = false;
    while (s_.dirty_sectors > s_.max_dirty_sectors && head < order.size()) {
      const DirtyEntry e = order[head++];
      if (stale(e)) continue;
      if (e.slot == writing && !requeued) {
        // (Met again only when no other dirty region is left: then it is cleaned.)
        requeued = true;
        s_.dirty_since[e.slot] = ++s_.dirty_clock;
        order.push_back({e.slot, s_.dirty_clock});
        continue;
      }
      Lines& old = s_.lines[e.slot];
      const std::uint64_t n = l2_detail::popcount(old.dirty);
      written_back[index_of(s_.owners[e.slot])] += n * s_.sector_bytes;
      s_.written_back_sectors += n;
      s_.dirty_sectors -= n;
      old.dirty = {};
      s_.dirty_since[e.slot] = 0;
    }
  }

  // (An evicted or cleaned way's stamp is reset to 0, and live stamps start at 1.)
  bool stale(const DirtyEntry& e) const {
    return s_.dirty_since[e.slot] != e.since;
  }

  // Removes the stale entries (and those already dequeued), keeping the order of the others.
  [[gnu::noinline]] void drop_stale() {
    std::vector<DirtyEntry>& order = cache_.dirty_order_;
    std::size_t kept = 0;
    for (std::size_t i = cache_.dirty_head_; i < order.size(); ++i) {
      if (!stale(order[i])) order[kept++] = order[i];
    }
    order.resize(kept);
    cache_.dirty_head_ = 0;
  }

  Lines& acquire(std::uint64_t region, std::uint64_t set, TensorId owner, PerTensor& written_back) {
    const std::uint64_t base = set * ways();
    if (ways() <= kMaxPackedWays) {
      // Most hits are on the set's most recent way: the CTAs of a head read each K/V tile in
      // turn, and few other regions of its sets are looked up in between. There the search and
      // the recency update (a no-op at position 0) are skipped: a region is held in at most one
      // way, so the way found is find()'s, and the order is unchanged, as touch() leaves it.
      const std::uint64_t mru = s_.order[set] & 0xF;
      const bool narrow = region < kEmpty && !s_.wide;
      if (s_.tags_lo[base + mru] == static_cast<std::uint32_t>(region) &&
          (narrow || s_.tags_hi[base + mru] == static_cast<std::uint32_t>(region >> 32))) {
        return s_.lines[base + mru];
      }
    }
    const std::uint64_t way = find(region, base);
    if (way != ways()) {
      touch(set, way);
      return s_.lines[base + way];
    }
    // Miss: the set's least recently used way is replaced.
    const std::uint64_t victim = base + replace(set);
    Lines& x = s_.lines[victim];
    // Without a test for an empty way: its sectors are all clean, so it writes back nothing.
    const std::uint64_t dirty = l2_detail::popcount(x.dirty);
    written_back[index_of(s_.owners[victim])] += dirty * s_.sector_bytes;
    s_.written_back_sectors += dirty;
    s_.dirty_sectors -= dirty;
    s_.dirty_since[victim] = 0;
    s_.tags_lo[victim] = static_cast<std::uint32_t>(region);
    s_.tags_hi[victim] = static_cast<std::uint32_t>(region >> 32);
    s_.wide = s_.wide || region >= kEmpty;
    s_.owners[victim] = owner;
    x = Lines{};
    return x;
  }

  L2Cache& cache_;
  // The cache's arrays and counters: a copy (kLocal) or the cache's own.
  std::conditional_t<kLocal, State, State&> s_;
};

}  // namespace iosim
