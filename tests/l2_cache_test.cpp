// The L2 model: exact sector accounting, write-back of dirty data, LRU inclusion (a bigger
// cache never misses more on the same trace), flush.
#include "sim/memory/l2_cache.hpp"

#include <doctest/doctest.h>

#include <random>

#include "sim/base/errors.hpp"

using namespace iosim;

TEST_CASE("reads are counted in whole sectors and hit once present") {
  L2Cache l2(1 << 20, 32);
  PerTensor wb{};
  // Bytes [10, 110) touch sectors 0..3.
  L2Cache::ReadOutcome r = l2.read(10, 100, TensorId::Q, wb);
  CHECK(r.requested_bytes == 128);
  CHECK(r.miss_bytes == 128);
  r = l2.read(0, 128, TensorId::Q, wb);
  CHECK(r.requested_bytes == 128);
  CHECK(r.miss_bytes == 0);
  // A read across a region boundary (4 KiB regions) counts both sides.
  r = l2.read(4096 - 32, 64, TensorId::Q, wb);
  CHECK(r.requested_bytes == 64);
  CHECK(r.miss_bytes == 64);
}

TEST_CASE("dirty data is written back when evicted and reported while resident") {
  L2Cache l2(8 * 4096, 32, 8);  // one fully associative set of 8 regions
  PerTensor wb{};
  CHECK(l2.write(0, 4096, TensorId::O, wb) == 4096);
  CHECK(l2.dirty_bytes() == 4096);
  // Stream 8 other regions through: the dirty one is evicted and written back once.
  for (std::uint64_t r = 1; r <= 8; ++r) l2.read(r * 4096, 4096, TensorId::K, wb);
  CHECK(wb[index_of(TensorId::O)] == 4096);
  CHECK(l2.dirty_bytes() == 0);
  // Writing the same sectors twice makes them dirty once.
  l2.write(100 * 4096, 64, TensorId::S, wb);
  l2.write(100 * 4096, 64, TensorId::S, wb);
  CHECK(l2.dirty_bytes() == 64);
  PerTensor flushed{};
  l2.flush(flushed);
  CHECK(flushed[index_of(TensorId::S)] == 64);
  CHECK(l2.dirty_bytes() == 0);
  CHECK(l2.read(100 * 4096, 64, TensorId::S, wb).miss_bytes == 64);  // flushed means cold
}

TEST_CASE("LRU inclusion: more ways per set never miss more on the same trace") {
  std::mt19937_64 rng(5);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> trace;
  for (int i = 0; i < 20000; ++i) {
    // A working set of ~2 MiB with locality: runs of 1..8 KiB.
    const std::uint64_t base = (rng() % 512) * 4096 + (rng() % 128) * 32;
    trace.emplace_back(base, 1 + rng() % 8192);
  }
  // Same number of sets (4), more ways: LRU is a stack algorithm within each set.
  std::uint64_t previous = UINT64_MAX;
  for (int ways : {2, 8, 32, 128}) {
    L2Cache l2(std::int64_t{4} * ways * 4096, 32, ways);
    PerTensor wb{};
    std::uint64_t misses = 0;
    for (auto [a, n] : trace) misses += l2.read(a, n, TensorId::K, wb).miss_bytes;
    CHECK(misses <= previous);
    previous = misses;
  }
}

TEST_CASE("a cache smaller than one region is a configuration error") {
  CHECK_THROWS_AS(L2Cache(1024, 32), ConfigError);
}

// The hardware spreads consecutive lines evenly over its sets (an XOR hash of the address bits),
// so repeated sweeps keep hitting until the footprint nears the capacity (l2_sweep
// microbenchmark, cuda_validate/measurements/*/l2_microbench_2026-11-22: >= 98% hits at 60% of the
// L2 on H100 and H200). A random set per region overflows some sets long before: at 16 ways and 60%
// of the capacity it misses ~20% on reuse.
TEST_CASE("repeated sweeps of a footprint below the capacity keep hitting") {
  for (std::int64_t capacity :
       {std::int64_t{25} << 20, std::int64_t{30} << 20, std::int64_t{3} << 20}) {
    CAPTURE(capacity);
    L2Cache l2(capacity, 32);
    PerTensor wb{};
    const std::uint64_t full = l2.capacity_regions() * l2.region_bytes();
    // A window of whole sets-worth of regions, aligned: every set holds exactly `ways` of them.
    const std::uint64_t aligned = 3 * full;
    l2.read(aligned, full, TensorId::K, wb);
    CHECK(l2.read(aligned, full, TensorId::K, wb).miss_bytes == 0);
    // Unaligned footprints of 60% of the capacity.
    for (std::uint64_t base : {std::uint64_t{12345} * 4096, std::uint64_t{987654} * 4096 + 512}) {
      CAPTURE(base);
      L2Cache fresh(capacity, 32);
      const std::uint64_t footprint = full * 6 / 10;
      fresh.read(base, footprint, TensorId::K, wb);
      CHECK(fresh.read(base, footprint, TensorId::K, wb).miss_bytes <= footprint / 50);
    }
  }
}

// The GPU writes back whatever dirty data exceeds about 47% of the L2 while a kernel runs, even
// when nothing else needs the space (l2_residue microbenchmark, writes mode: DRAM writes = W -
// 24.8 MB on the 52.4 MB H100 L2 for every W from 32 to 96 MiB, none at 16 MiB).
TEST_CASE("dirty data beyond the cap is written back, oldest first, and stays cached clean") {
  const std::int64_t capacity = std::int64_t{8} << 20;
  for (double fraction : {1.0, 0.5, 0.25}) {
    CAPTURE(fraction);
    L2Cache l2(capacity, 32, 16, fraction);
    PerTensor wb{};
    const std::uint64_t cap = static_cast<std::uint64_t>(fraction * static_cast<double>(capacity));
    const std::uint64_t half = static_cast<std::uint64_t>(capacity) / 2;
    // Writes of half the capacity fit the space; what exceeds the cap goes to DRAM anyway.
    l2.write(0, half, TensorId::O, wb);
    CHECK(l2.dirty_bytes() == std::min(half, cap));
    CHECK(l2.written_back_bytes() == half - std::min(half, cap));
    CHECK(wb[index_of(TensorId::O)] == l2.written_back_bytes());
    // Cleaned lines are still there: reading everything back hits.
    CHECK(l2.read(0, half, TensorId::O, wb).miss_bytes == 0);
    // The oldest writes were cleaned: rewriting the newest adds nothing new to DRAM.
    const std::uint64_t before = l2.written_back_bytes();
    l2.write(half - 4096, 4096, TensorId::O, wb);
    CHECK(l2.written_back_bytes() == before);
  }
}

TEST_CASE("the set index's fast remainder and quotient equal % and /") {
  std::mt19937_64 rng(11);
  for (std::uint64_t d :
       {1ULL, 2ULL, 3ULL, 7ULL, 400ULL, 640ULL, 1000003ULL, (1ULL << 32) + 15, 1ULL << 40, ~0ULL}) {
    const FastModulo mod(d);
    for (std::uint64_t x :
         {std::uint64_t{0}, std::uint64_t{1}, d - 1, d, d + 1, ~std::uint64_t{0}}) {
      CHECK(mod(x) == x % d);
      CHECK(mod.quotient(x) == x / d);
    }
    for (int i = 0; i < 10000; ++i) {
      const std::uint64_t x = rng();
      CHECK(mod(x) == x % d);
      CHECK(mod.quotient(x) == x / d);
    }
  }
}

TEST_CASE("regions past 16 TiB keep exact tags") {
  // Regions r, r + 2^32 and 2^32 - 1 share their low 32 bits with each other or with the empty
  // marker; each is still its own region. One fully associative set of 8 or 16 regions (16 ways
  // compare the low halves four at a time, 8 one by one).
  for (int ways : {8, 16}) {
    L2Cache l2(std::int64_t{ways} * 4096, 32, ways);
    PerTensor wb{};
    const std::uint64_t region = 4096;
    const std::uint64_t far = region + (std::uint64_t{1} << 32);
    const std::uint64_t marker = (std::uint64_t{1} << 32) - 1;
    CAPTURE(ways);
    CHECK(l2.read(far * 4096, 64, TensorId::K, wb).miss_bytes == 64);
    CHECK(l2.read(region * 4096, 64, TensorId::K, wb).miss_bytes == 64);  // not the far one
    CHECK(l2.read(far * 4096, 64, TensorId::K, wb).miss_bytes == 0);
    CHECK(l2.read(marker * 4096, 32, TensorId::K, wb).miss_bytes == 32);  // not an empty way
    CHECK(l2.read(marker * 4096, 32, TensorId::K, wb).miss_bytes == 0);
    CHECK(l2.read(region * 4096, 64, TensorId::K, wb).miss_bytes == 0);
  }
}

namespace {

// Calls f(geometry) for the set counts the set-cursor tests cover: 400 sets (an H100
// partition), a power of two, one set.
template <typename F>
void for_each_cursor_geometry(F&& f) {
  for (std::int64_t capacity :
       {std::int64_t{25} << 20, std::int64_t{1} << 20, std::int64_t{64} << 10}) {
    const L2Cache l2(capacity, 32);
    f(l2.geometry());
  }
}

}  // namespace

TEST_CASE("the set cursor gives every region the set that set_of gives it") {
  // Steps forward within and across windows, backward, and far jumps, for each geometry of
  // for_each_cursor_geometry. (Position + window hash wraps past 2^64 for about one window in
  // the whole 64-bit region space; the cursor handles it as set_of does but no test finds that
  // window.)
  std::mt19937_64 rng(7);
  for_each_cursor_geometry([&](const L2Cache::Geometry& g) {
    L2Cache::Geometry::SetCursor cursor(g);
    std::uint64_t region = rng() % (std::uint64_t{1} << 40);
    for (int i = 0; i < 200000; ++i) {
      const std::uint64_t r = rng() % 16;
      if (r < 8) {
        region += rng() % 16;
      } else if (r < 12) {
        region += rng() % 2000;
      } else if (r < 14) {
        region -= std::min<std::uint64_t>(region, rng() % 100);
      } else {
        region = rng() >> (rng() % 2 == 0 ? 0 : 20);
      }
      CAPTURE(region);
      REQUIRE(cursor(region) == g.set_of(region));
    }
  });
}

TEST_CASE("stepping the set cursor gives every region of a strided sequence its set_of set") {
  // Steps shorter than a window, whole windows, several windows and a bit, and zero, for each
  // geometry of for_each_cursor_geometry.
  std::mt19937_64 rng(11);
  for_each_cursor_geometry([&](const L2Cache::Geometry& g) {
    const std::uint64_t sets = g.sets.divisor();
    const L2Cache::Geometry::SetCursor cursor(g);
    for (std::uint64_t step : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{32}, sets - 1,
                               sets, sets + 1, 3 * sets + 7, std::uint64_t{1} << 20}) {
      for (int trial = 0; trial < 20; ++trial) {
        const std::uint64_t first = rng() % (std::uint64_t{1} << 40);
        const std::uint64_t count = 1 + rng() % 3000;
        std::uint64_t expected_region = first, seen = 0;
        cursor.for_each_step(first, step, count, [&](std::uint64_t region, std::uint64_t set) {
          CAPTURE(step);
          CAPTURE(region);
          REQUIRE(region == expected_region);
          REQUIRE(set == g.set_of(region));
          expected_region += step;
          ++seen;
        });
        CHECK(seen == count);
      }
    }
  });
}
