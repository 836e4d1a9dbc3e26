// The L2 model alone (sim/memory/l2_system.*), on the access patterns that dominate the README
// sweep (Google Benchmark; time per region access is the "s/access" counter):
//  - blocked: GEMM tiles of a wide-row matrix, 32 regions of 4 rows x 64 B per call, streamed
//    through an H100-sized L2 (every access misses), as standard attention's S stores;
//  - single: one 4 KiB region per call, every call a new region; the difference with `blocked`
//    is the fixed cost of a call (its set index, the partitions' state, no look-ahead to
//    prefetch);
//  - flash1_pairs: one-region calls as flash1 makes them, a read and a write of each region
//    (l2_flash1_pairs: the set memo and the most recent way hit on the second);
//  - kv_shared: flash2's K/V reads, 16 KiB tiles (four regions a call) that the 64 CTAs of a
//    head read in turn, four heads at once: after the first CTA's misses, hits on each set's
//    most recent way, in batches small enough to look up on the caches' own state.
#include <benchmark/benchmark.h>

#include <vector>

#include "sim/memory/l2_system.hpp"

namespace {

using namespace iosim;

constexpr std::uint64_t kBase = 1ULL << 30;

void l2_stream(benchmark::State& state, bool write, bool blocked) {
  // H100: 50 MiB in two partitions, 47.3% of it may be dirty.
  L2System l2(50LL << 20, 32, 2, 0.473);
  PerTensor written_back{};
  std::vector<L2System::Run> runs(1);
  const std::uint64_t regions_per_call = blocked ? 32 : 1;
  std::uint64_t call = 0;
  for (auto _ : state) {
    const std::uint64_t addr = kBase + call * regions_per_call * 4096;
    runs[0] = blocked ? L2System::Run{addr, 64, 4, 1024, 32, 4096} : L2System::Run{addr, 4096};
    const int sm = static_cast<int>(call % 132);
    if (write) {
      benchmark::DoNotOptimize(l2.write(runs, TensorId::S, sm, written_back));
    } else {
      benchmark::DoNotOptimize(l2.read(runs, TensorId::S, sm, written_back).miss_bytes);
    }
    ++call;
  }
  // Seconds per region access (printed with an SI prefix: "17.5n" is 17.5 ns).
  state.counters["s/access"] =
      benchmark::Counter(static_cast<double>(call * regions_per_call),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// flash1's pattern: 64 CTAs (one per SM), each stepping through its own tensors a 4 KiB tile at
// a time, reading its O tile and writing it back (one-region calls, the second of each pair to
// a region looked up just before: the set memo and the most recent way hit).
void l2_flash1_pairs(benchmark::State& state) {
  L2System l2(50LL << 20, 32, 2, 0.473);
  PerTensor written_back{};
  std::uint64_t call = 0;
  for (auto _ : state) {
    const std::uint64_t cta = call % 64, step = call / 64;
    const std::uint64_t addr = kBase + cta * (2ULL << 20) + (step % 512) * 4096;
    const int sm = static_cast<int>(cta);
    benchmark::DoNotOptimize(l2.read(addr, 4096, TensorId::O, sm, written_back).miss_bytes);
    benchmark::DoNotOptimize(l2.write(addr, 4096, TensorId::O, sm, written_back));
    ++call;
  }
  state.counters["s/access"] = benchmark::Counter(
      static_cast<double>(2 * call), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// flash2 B=4 H=16 N=8192 d=64's K/V reads: four heads' CTAs interleaved, each of the 64 CTAs of a
// head reading the head's next 16 KiB tile in turn (a head's K is 1 MiB, 64 tiles).
void l2_kv_shared(benchmark::State& state) {
  L2System l2(50LL << 20, 32, 2, 0.473);
  PerTensor written_back{};
  std::vector<L2System::Run> runs(1);
  std::uint64_t call = 0;
  for (auto _ : state) {
    const std::uint64_t head = call % 4, cta = call / 4 % 64, step = call / 256 % 64;
    runs[0] = L2System::Run{kBase + head * (1ULL << 20) + step * (16ULL << 10), 16ULL << 10};
    const int sm = static_cast<int>((head * 64 + cta) % 132);
    benchmark::DoNotOptimize(l2.read(runs, TensorId::K, sm, written_back).miss_bytes);
    ++call;
  }
  state.counters["s/access"] = benchmark::Counter(
      static_cast<double>(4 * call), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(l2_flash1_pairs);
BENCHMARK(l2_kv_shared);
BENCHMARK_CAPTURE(l2_stream, l2_write_blocked, true, true);
BENCHMARK_CAPTURE(l2_stream, l2_read_blocked, false, true);
BENCHMARK_CAPTURE(l2_stream, l2_write_single, true, false);
BENCHMARK_CAPTURE(l2_stream, l2_read_single, false, false);
