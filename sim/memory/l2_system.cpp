#include "sim/memory/l2_system.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>

#include "sim/base/errors.hpp"
#include "sim/memory/l2_lookups.hpp"

namespace iosim {
namespace {

bool any(const L2Cache::Mask& m) {
  return (m[0] | m[1]) != 0;
}

// Lookups this many regions ahead have their sets' tags prefetched: the accesses of one tile
// are independent loads from all over the cache arrays, and waiting for each in turn is what
// a lookup would otherwise cost.
constexpr std::size_t kPrefetchDistance = 8;

// Batches of at most this many region accesses work on the caches' own state (for_each_access).
constexpr std::size_t kSmallBatch = 8;

// What picks a region's home partition (modulo the partitions). It differs from the set index,
// so that home and set are independent. Its product also indexes L2System::placements_.
constexpr std::uint64_t kHomeMultiplier = 0x9e3779b97f4a7c15ULL;
std::uint64_t home_hash(std::uint64_t region) {
  const std::uint64_t h = region * kHomeMultiplier;
  return h ^ (h >> 29);
}

}  // namespace

L2System::L2System(std::int64_t capacity_bytes, int sector_bytes, int partitions,
                   double max_dirty_fraction)
    : sector_bytes_(static_cast<std::uint64_t>(sector_bytes)),
      home_modulo_(static_cast<std::uint64_t>(partitions > 0 ? partitions : 1)) {
  if (partitions <= 0 || partitions > 64) {
    throw ConfigError(fmt::format("L2 with {} partitions (1 to 64)", partitions));
  }
  parts_.reserve(static_cast<std::size_t>(partitions));
  for (int i = 0; i < partitions; ++i) {
    parts_.emplace_back(capacity_bytes / partitions, sector_bytes, L2Cache::kDefaultWays,
                        max_dirty_fraction);
  }
  accesses_.resize(64);  // never empty: gather() writes a one-region batch without checking
  tile_memo_.resize(std::size_t{1} << kMemoBits);
  const L2Cache::Geometry& g = parts_.front().geometry();
  if (g.sets.divisor() > std::numeric_limits<std::uint32_t>::max()) {
    throw ConfigError(
        fmt::format("L2 of {} bytes: more sets than the model indexes", capacity_bytes));
  }
  // Empty entries: the placement of the region no entry is looked up for first.
  const std::uint64_t none = ~std::uint64_t{0};
  placements_.assign(std::size_t{1} << kPlacementBits,
                     Placement{none, static_cast<std::uint32_t>(g.set_of(none)),
                               static_cast<std::uint32_t>(home_modulo_(home_hash(none)))});
}

double L2System::memory_bytes(std::int64_t capacity_bytes, int sector_bytes, int partitions,
                              std::size_t batch_accesses) {
  const int parts = std::max(partitions, 1);
  return parts * L2Cache::memory_bytes(capacity_bytes / parts, sector_bytes) +
         static_cast<double>((std::size_t{1} << kPlacementBits) * sizeof(Placement) +
                             (std::size_t{1} << kMemoBits) * sizeof(MemoEntry) +
                             std::max<std::size_t>(batch_accesses, 64) * sizeof(Access));
}

std::size_t L2System::allocated_bytes() const {
  std::size_t bytes = placements_.capacity() * sizeof(Placement) +
                      tile_memo_.capacity() * sizeof(MemoEntry) +
                      accesses_.capacity() * sizeof(Access);
  for (const L2Cache& c : parts_) bytes += c.allocated_bytes();
  return bytes;
}

// The accesses of one batch as gather() builds them. Locals, not members: stores into
// accesses_ could alias members, which the compiler would then reload for every piece.
struct L2System::Batch {
  L2Cache::Geometry geometry;
  FastModulo homes;
  L2Cache::Geometry::SetCursor set_of;
  std::vector<Access>& storage;
  Access* out;
  std::size_t capacity;
  std::size_t n = 0;
  std::uint64_t requested = 0;  // sectors

  Batch(const L2Cache::Geometry& g, const FastModulo& h, std::vector<Access>& accesses)
      : geometry(g),
        homes(h),
        set_of(g),
        storage(accesses),
        out(accesses.data()),
        capacity(accesses.size()) {}

  // Bits 0, step, 2 step, ... (count of them, all below 128): a piece's mask times this is the
  // masks of `count` pieces `step` sectors apart (they do not overlap: no carries). The last
  // one is kept, since a tile's pieces mostly share their count and step.
  SectorBits replicator(std::uint64_t count, std::uint64_t step) {
    if (count != rep_count_ || step != rep_step_) {
      rep_count_ = count;
      rep_step_ = step;
      rep_ = 0;
      for (std::uint64_t k = 0; k < count; ++k) rep_ |= SectorBits{1} << (k * step);
    }
    return rep_;
  }
  std::uint64_t rep_count_ = 0, rep_step_ = 0;
  SectorBits rep_ = 0;

  // Grows the storage to hold at least `needed` accesses.
  void reserve(std::size_t needed) {
    storage.resize(std::max({std::size_t{64}, 2 * capacity, needed}));
    out = storage.data();
    capacity = storage.size();
  }

  // Adds sectors `want` of `region` (`sectors` requested) to the batch.
  [[gnu::always_inline]] void add_region(std::uint64_t region, SectorBits want,
                                         std::uint64_t sectors) {
    requested += sectors;
    const L2Cache::Mask mask = sector_words(want);
    // Consecutive pieces in one region (short rows) are one lookup: the second lookup of a
    // region just looked up changes no recency, and the sectors it finds missing (or newly
    // dirty) are exactly those of the union not found by the first.
    if (n > 0 && out[n - 1].region == region) {
      out[n - 1].want[0] |= mask[0];
      out[n - 1].want[1] |= mask[1];
      return;
    }
    const std::uint64_t h = home_hash(region);
    if (n == capacity) [[unlikely]]
      reserve(n + 1);  // a few times per run of the simulator
    out[n++] = {region, static_cast<std::uint32_t>(set_of(region)),
                static_cast<std::uint32_t>(homes(h)), mask};
  }

  // Adds sectors `want` (`sectors` of them) of regions first, first + step, ... (`count`
  // regions, step > 0): a tile's blocks of rows. What add_region() does for each, with the loop
  // work hoisted: only the first can join the access before it (the others follow a different
  // region), the storage grows at most once, and the set index steps by `step` regions, so its
  // window's hash is recomputed only when a window is crossed.
  void add_strided(std::uint64_t first, std::uint64_t step, std::uint64_t count, SectorBits want,
                   std::uint64_t sectors) {
    add_region(first, want, sectors);
    if (count == 1) return;
    requested += (count - 1) * sectors;
    if (n + count - 1 > capacity) reserve(n + count - 1);
    // The loop's state in locals (the batch's members would be reloaded after every store into
    // the accesses, which might alias them).
    const L2Cache::Mask mask = sector_words(want);
    const FastModulo home_of = homes;
    Access* o = out + n;
    set_of.for_each_step(first + step, step, count - 1,
                         [&](std::uint64_t region, std::uint64_t set) {
                           *o++ = {region, static_cast<std::uint32_t>(set),
                                   static_cast<std::uint32_t>(home_of(home_hash(region))), mask};
                         });
    n += count - 1;
  }

  // Adds the sectors [first, last] (absolute sector numbers) to the batch.
  [[gnu::always_inline]] void add(std::uint64_t first, std::uint64_t last) {
    constexpr std::uint64_t kRegion = L2Cache::kSectorsPerRegion;
    const std::uint64_t last_region = last / kRegion;
    for (std::uint64_t region = first / kRegion;; ++region) {
      const std::uint64_t r0 = region * kRegion;
      const std::uint64_t a = first > r0 ? first - r0 : 0;
      const std::uint64_t b = region == last_region ? last - r0 : kRegion - 1;
      add_region(region, sector_span(a, b), b - a + 1);
      if (region == last_region) break;
    }
  }
};

L2System::Placement L2System::place(std::uint64_t region) {
  const std::uint64_t h = region * kHomeMultiplier;
  Placement& p = placements_[h >> (64 - kPlacementBits)];
  if (p.region != region) {
    p = {region, static_cast<std::uint32_t>(parts_.front().geometry().set_of(region)),
         static_cast<std::uint32_t>(home_modulo_(home_hash(region)))};
  }
  return p;
}

std::uint64_t L2System::gather(std::span<const Run> runs) {
  // Only tiles of one run of 3 to 8 regions' bytes: building a batch of one or two regions
  // costs less than fetching a memo entry (flash1 d=128's 8 KiB tiles ran 6% slower through the
  // memo), and larger ones (standard attention's 64 KB tiles) ran 2-13% slower through it.
  if (runs.size() != 1) return gather_into_scratch(runs);
  const Run& run = runs[0];
  const std::uint64_t region_bytes = L2Cache::kSectorsPerRegion * sector_bytes_;
  const std::uint64_t bytes = run.len * run.count * run.blocks;
  if (bytes <= 2 * region_bytes || bytes > kMemoAccesses * region_bytes) {
    return gather_into_scratch(runs);
  }
  const std::uint64_t key = (run.addr ^ (run.len << 40) ^ (run.count << 20) ^ run.stride ^
                             (run.blocks << 50) ^ run.block_stride) *
                            kHomeMultiplier;
  MemoEntry& e = tile_memo_[key >> (64 - kMemoBits)];
  if (e.count > 0 && e.run.addr == run.addr && e.run.len == run.len && e.run.count == run.count &&
      e.run.stride == run.stride && e.run.blocks == run.blocks &&
      e.run.block_stride == run.block_stride) {
    batch_ = e.accesses.data();
    access_count_ = e.count;
    return e.requested;
  }
  const std::uint64_t requested = gather_into_scratch(runs);
  if (access_count_ > 0 && access_count_ <= kMemoAccesses) {
    e.run = run;
    e.requested = requested;
    e.count = access_count_;
    std::copy_n(accesses_.data(), access_count_, e.accesses.data());
  }
  return requested;
}

std::uint64_t L2System::gather_into_scratch(std::span<const Run> runs) {
  batch_ = accesses_.data();
  if (runs.size() == 1 && runs[0].count == 1 && runs[0].blocks == 1 && runs[0].len > 0) {
    // One range in one region (most of flash1's and flash2's tiles): what the loop below makes
    // of it, without setting up a batch.
    const L2Cache::Geometry& g = parts_.front().geometry();
    const std::uint64_t first = g.sector_of(runs[0].addr);
    const std::uint64_t last = g.sector_of(runs[0].addr + runs[0].len - 1);
    const std::uint64_t region = first / L2Cache::kSectorsPerRegion;
    if (last / L2Cache::kSectorsPerRegion == region) {
      const std::uint64_t r0 = region * L2Cache::kSectorsPerRegion;
      const Placement p = place(region);
      accesses_[0] = {region, p.set, p.home, sector_words(sector_span(first - r0, last - r0))};
      access_count_ = 1;
      return last - first + 1;
    }
  }
  Batch batch(parts_.front().geometry(), home_modulo_, accesses_);
  const L2Cache::Geometry& g = batch.geometry;
  constexpr std::uint64_t kRegion = L2Cache::kSectorsPerRegion;
  for (const Run& in : runs) {
    if (in.len == 0 || in.count == 0 || in.blocks == 0) continue;
    Run run = in;
    const std::uint64_t first = g.sector_of(run.addr);
    const std::uint64_t last = g.sector_of(run.addr + run.len - 1);
    const std::uint64_t region = first / kRegion;
    const std::uint64_t r0 = region * kRegion;
    // Strides in sectors, and whether they are whole sectors / whole regions.
    auto sectors_of = [&](std::uint64_t bytes, bool& whole) {
      const std::uint64_t n = g.sector_of(bytes);
      whole = n * g.sector_bytes == bytes;
      return n;
    };
    bool whole_step = false, whole_block_step = false;
    std::uint64_t step = sectors_of(run.stride, whole_step);
    if (last / kRegion == region && run.blocks == 1 && run.count > 1 && whole_step &&
        step % kRegion == 0) {
      // Single pieces, each in a region of its own at whole regions apart (a row's chunks):
      // the same as blocks of one piece.
      run.blocks = run.count;
      run.block_stride = run.stride;
      run.count = 1;
      step = 0;
    }
    const std::uint64_t block_step = sectors_of(run.block_stride, whole_block_step);
    const bool inner_fits = run.count == 1
                                ? last / kRegion == region
                                : whole_step && last - first < step &&
                                      (last + (run.count - 1) * step) / kRegion == region;
    if (inner_fits && (run.blocks == 1 || (whole_block_step && block_step % kRegion == 0))) {
      // Every block's pieces fall in one region and share no sector, and the blocks are whole
      // regions apart: one mask (piece k's sectors are piece 0's moved by k * step) for the
      // block's region, the same in every block.
      SectorBits want = sector_span(first - r0, last - r0);
      if (run.count > 1) want *= batch.replicator(run.count, step);
      const std::uint64_t sectors = run.count * (last - first + 1);
      const std::uint64_t region_step = block_step / kRegion;
      if (region_step == 0) {  // (blocks over the same bytes again: one access)
        for (std::uint64_t b = 0; b < run.blocks; ++b) batch.add_region(region, want, sectors);
      } else {
        batch.add_strided(region, region_step, run.blocks, want, sectors);
      }
      continue;
    }
    run.for_each_piece(
        [&](std::uint64_t addr) { batch.add(g.sector_of(addr), g.sector_of(addr + run.len - 1)); });
  }
  batch_ = accesses_.data();  // (the batch may have grown the storage)
  access_count_ = batch.n;
  return batch.requested;
}

template <typename Visit>
void L2System::for_each_access(int sm, Visit&& visit) {
  // (Two partitions on every GPU modelled: a mask, not a division, in the common case.)
  const std::size_t side = parts_.size() == 2 ? static_cast<std::size_t>(sm) & 1
                                              : static_cast<std::size_t>(sm) % parts_.size();
  const std::size_t n = access_count_;
  const Access* accesses = batch_;
  if (parts_.size() == 2) {
    // A100, H100 and H200. Two named objects (not an array indexed by partition) let the
    // compiler keep both partitions' lookups in registers; with 16 ways per set (every
    // profile's L2) the set arithmetic is compiled for that constant.
    auto pair = [&](auto sixteen, auto local) {
      L2Cache::Lookups<decltype(sixteen)::value, decltype(local)::value> near(parts_[side]),
          far(parts_[1 - side]);
      for (std::size_t i = 0; i < n; ++i) {
        if (i + kPrefetchDistance < n) {
          const Access& ahead = accesses[i + kPrefetchDistance];
          near.prefetch(ahead.set);
          if (ahead.home != side) far.prefetch(ahead.set);
        }
        const Access& a = accesses[i];
        visit(a, near, far, a.home != side);
      }
    };
    // A batch of up to kSmallBatch (most of flash1's and flash2's tiles) works on the caches'
    // own state: copying both partitions' state in and out costs more than the reloads it saves
    // over a few lookups, most of them hits on a set's most recent way (flash2 B=4 H=16 N=8192
    // d=64, four-region K/V tiles: 5% of its instructions; standard and flash1 gain 1-2%).
    if (parts_.front().ways_per_set() != L2Cache::kDefaultWays) {
      pair(std::false_type{}, std::true_type{});
    } else if (n <= kSmallBatch) {
      pair(std::true_type{}, std::false_type{});
    } else {
      pair(std::true_type{}, std::true_type{});
    }
    return;
  }
  std::vector<std::unique_ptr<L2Cache::Lookups<>>> views;
  for (L2Cache& p : parts_) views.push_back(std::make_unique<L2Cache::Lookups<>>(p));
  for (std::size_t i = 0; i < n; ++i) {
    const Access& a = accesses[i];
    visit(a, *views[side], *views[a.home], a.home != side);
  }
}

L2Cache::ReadOutcome L2System::read(std::span<const Run> runs, TensorId owner, int sm,
                                    PerTensor& written_back) {
  std::uint64_t missed = 0;
  const std::uint64_t requested = gather(runs);
  for_each_access(sm, [&](const Access& a, auto& near, auto& home, bool remote) {
    L2Cache::Mask missing = near.fetch(a.region, a.set, a.want, owner, written_back);
    if (remote && any(missing)) {
      // Not in the near copy: ask the home partition over the fabric.
      missing = home.fetch(a.region, a.set, missing, owner, written_back);
    }
    missed += l2_detail::popcount(missing);
  });
  return {requested * sector_bytes_, missed * sector_bytes_};
}

std::uint64_t L2System::write(std::span<const Run> runs, TensorId owner, int sm,
                              PerTensor& written_back) {
  const std::uint64_t requested = gather(runs);
  for_each_access(sm, [&](const Access& a, auto& near, auto& home, bool remote) {
    if (remote) {
      near.fill(a.region, a.set, a.want, owner, written_back);
      home.write_region(a.region, a.set, a.want, owner, written_back);
    } else {
      near.write_region(a.region, a.set, a.want, owner, written_back);
    }
  });
  return requested * sector_bytes_;
}

std::uint64_t L2System::dirty_bytes() const {
  std::uint64_t b = 0;
  for (const L2Cache& p : parts_) b += p.dirty_bytes();
  return b;
}

PerTensor L2System::dirty_bytes_by_tensor() const {
  PerTensor out{};
  for (const L2Cache& p : parts_) p.add_dirty_bytes(out);
  return out;
}

void L2System::flush(PerTensor& written_back) {
  for (L2Cache& p : parts_) p.flush(written_back);
}

}  // namespace iosim
