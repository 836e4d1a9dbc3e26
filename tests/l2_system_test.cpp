// The partitioned L2: a line read from both sides is fetched from DRAM once but occupies both
// partitions; dirty data lives only in its home partition and is written back once.
#include "sim/memory/l2_system.hpp"

#include <doctest/doctest.h>

#include <random>
#include <span>
#include <vector>

using namespace iosim;

TEST_CASE("a line read from two sides is fetched from DRAM once") {
  L2System l2(1 << 20, 32, 2);
  PerTensor wb{};
  CHECK(l2.read(0, 4096, TensorId::K, /*sm=*/0, wb).miss_bytes == 4096);
  CHECK(l2.read(0, 4096, TensorId::K, /*sm=*/1, wb).miss_bytes == 0);  // from the other partition
  CHECK(l2.read(0, 4096, TensorId::K, /*sm=*/2, wb).miss_bytes == 0);
  CHECK(l2.read(0, 4096, TensorId::K, /*sm=*/3, wb).requested_bytes == 4096);
}

TEST_CASE("an SM's reads are cached in its own partition") {
  // 1 MiB of L2 in two partitions of 512 KiB. Second pass over a working set read from side 0,
  // optionally with a second, different working set read from side 1.
  auto second_pass_misses = [](std::uint64_t kib, bool other_side_too) {
    L2System l2(1 << 20, 32, 2);
    PerTensor wb{};
    std::uint64_t misses = 0;
    const std::uint64_t regions = kib / 4;
    for (int pass = 0; pass < 2; ++pass) {
      for (std::uint64_t r = 0; r < regions; ++r) {
        const auto a = l2.read(r * 4096, 4096, TensorId::Q, 0, wb);
        const auto b = other_side_too ? l2.read((1000 + r) * 4096, 4096, TensorId::O, 1, wb)
                                      : L2Cache::ReadOutcome{};
        if (pass == 1) misses += a.miss_bytes + b.miss_bytes;
      }
    }
    return misses;
  };
  CHECK(second_pass_misses(384, false) == 0);  // fits in one partition
  CHECK(second_pass_misses(768, false) > 0);   // the whole L2 could hold it; the near half cannot
  // Two sides, disjoint data: each side's near copies plus the other side's far-homed lines
  // (homes are hashed, so about half of each set) exceed a partition: 384 + 192 > 512 KiB.
  CHECK(second_pass_misses(384, true) > 0);
  CHECK(second_pass_misses(128, true) == 0);  // 128 + 64 KiB: room to spare in every set
}

TEST_CASE("dirty data is held once, in its home partition") {
  L2System l2(1 << 20, 32, 2);
  PerTensor wb{};
  for (std::uint64_t r = 0; r < 16; ++r)
    CHECK(l2.write(r * 4096, 4096, TensorId::O, 1, wb) == 4096);
  CHECK(l2.dirty_bytes() == 16 * 4096);
  PerTensor flushed{};
  l2.flush(flushed);
  CHECK(flushed[index_of(TensorId::O)] == 16 * 4096);
  CHECK(l2.dirty_bytes() == 0);
}

namespace {

// Two L2s fed the same traffic: `whole` gets a tile as one batch of runs, `single` its rows one
// call at a time. Each move checks that both count the same.
struct TwinL2 {
  L2System whole, single;
  PerTensor wb_whole{}, wb_single{};
  TwinL2(std::uint64_t size, double max_dirty)
      : whole(size, 32, 2, max_dirty), single(size, 32, 2, max_dirty) {}

  void read(std::span<const L2System::Run> batch, std::span<const L2System::Run> rows,
            TensorId owner, int sm) {
    const L2Cache::ReadOutcome a = whole.read(batch, owner, sm, wb_whole);
    L2Cache::ReadOutcome b;
    for (const L2System::Run& row : rows) {
      const L2Cache::ReadOutcome r = single.read(row.addr, row.len, owner, sm, wb_single);
      b.requested_bytes += r.requested_bytes;
      b.miss_bytes += r.miss_bytes;
    }
    REQUIRE(a.requested_bytes == b.requested_bytes);
    REQUIRE(a.miss_bytes == b.miss_bytes);
  }
  void write(std::span<const L2System::Run> batch, std::span<const L2System::Run> rows,
             TensorId owner, int sm) {
    std::uint64_t b = 0;
    for (const L2System::Run& row : rows)
      b += single.write(row.addr, row.len, owner, sm, wb_single);
    REQUIRE(whole.write(batch, owner, sm, wb_whole) == b);
  }
  void require_same_state() const {
    REQUIRE(wb_whole == wb_single);
    REQUIRE(whole.dirty_bytes() == single.dirty_bytes());
    REQUIRE(whole.written_back_bytes() == single.written_back_bytes());
  }
};

}  // namespace

TEST_CASE("a tile's runs sent together count what run-by-run sends count") {
  // Random tiles (short rows that share regions, rows that cross regions, long runs) read and
  // written from random SMs through two L2s of 64 regions each: one gets whole tiles, the other
  // one run at a time. Every count and the write-backs per tensor must agree at every step.
  // With and without a cap on dirty data (cleaning happens inside a batch).
  for (double max_dirty : {1.0, 0.3}) {
    CAPTURE(max_dirty);
    std::mt19937_64 rng(3);
    TwinL2 l2(64 * 4096, max_dirty);
    for (int tile = 0; tile < 3000; ++tile) {
      const std::uint64_t base = (rng() % 512) * 4096 + (rng() % 128) * 32 + rng() % 32;
      // Every third tile has short rows at a sector-aligned pitch, often all in one region.
      const bool aligned = tile % 3 == 0;
      const std::uint64_t row_bytes = 1 + rng() % (aligned ? 1024 : 6000);
      const std::uint64_t pitch =
          aligned ? (row_bytes + 31) / 32 * 32 + 32 * (rng() % 8) : row_bytes + rng() % 9000;
      const int sm = static_cast<int>(rng() % 8);
      const auto owner = static_cast<TensorId>(rng() % 4);
      // Blocks of rows: at whole regions apart (a blocked matrix) or anywhere.
      const std::uint64_t rows = 1 + rng() % (aligned ? 5 : 40);
      const std::uint64_t blocks = tile % 4 == 1 ? 1 + rng() % 5 : 1;
      const std::uint64_t block_stride =
          aligned ? 4096 * (1 + rng() % 3) : rows * pitch + rng() % 5000;
      std::vector<L2System::Run> runs;
      for (std::uint64_t b = 0; b < blocks; ++b) {
        for (std::uint64_t r = 0; r < rows; ++r) {
          runs.push_back({base + b * block_stride + r * pitch, row_bytes});
        }
      }
      // `whole` gets the rows as one strided run every other tile (with sector-aligned pitches
      // too, whose pieces within one region are masked by shifting; and blocks of them),
      // `single` one row at a time.
      const std::vector<L2System::Run> strided = {
          {base, row_bytes, rows, pitch, blocks, block_stride}};
      const std::vector<L2System::Run>& batch = tile % 2 == 0 ? runs : strided;
      if (rng() % 2 == 0) {
        l2.read(batch, runs, owner, sm);
      } else {
        l2.write(batch, runs, owner, sm);
      }
      l2.require_same_state();
    }
  }
}

TEST_CASE("a tile moved again counts what moving its rows one by one counts") {
  // L2System keeps the batch of a recently moved one-run tile and reuses it when the same run
  // comes again (a K/V tile read by every CTA of its head). Tiles drawn again and again from a
  // pool of 4000 (far more than the memo holds, so entries are replaced), many differing from
  // another in one field only (16 bases, a pitch of 8 KiB or the row's length), moved whole through
  // one L2 and row by row through another: every count must agree at every step.
  std::mt19937_64 rng(11);
  struct Tile {
    L2System::Run run;
    std::vector<L2System::Run> rows;
  };
  std::vector<Tile> pool;
  for (int i = 0; i < 4000; ++i) {
    const std::uint64_t base = (rng() % 16) * 65536;
    // 2 to 8 KiB rows, 2 to 4 of them: 3 to 8 regions' bytes mostly, the tiles the memo keeps.
    const std::uint64_t row_bytes = 32 * (64 + rng() % 192);
    const std::uint64_t rows = 2 + rng() % 3;
    const std::uint64_t pitch = rng() % 2 == 0 ? row_bytes : 8192;
    Tile t{{base, row_bytes, rows, pitch}, {}};
    for (std::uint64_t r = 0; r < rows; ++r) t.rows.push_back({base + r * pitch, row_bytes});
    pool.push_back(t);
  }
  TwinL2 l2(256 * 4096, 0.5);
  for (int step = 0; step < 40000; ++step) {
    const Tile& t = pool[rng() % pool.size()];
    const int sm = static_cast<int>(rng() % 8);
    const std::span<const L2System::Run> whole_tile(&t.run, 1);
    if (rng() % 4 != 0) {
      l2.read(whole_tile, t.rows, TensorId::K, sm);
    } else {
      l2.write(whole_tile, t.rows, TensorId::O, sm);
    }
    l2.require_same_state();
  }
}
