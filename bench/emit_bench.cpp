// The dataflows' emission alone (Google Benchmark): every part of every CTA of a schedule asked
// for its operations (Schedule::emit_cta_part) into one reused vector, as the engine's event loop
// asks for them, with no engine behind it. flash2 B=4 H=16 N=8192 d=64 on the H100 profile (the
// run of bench/simulate_bench.cpp's flash2_B4_H16_N8192_d64 cases and of `iosim tune` on that
// shape, whose CPU time the query-stationary forward's emission was 37-46% of, issue #49):
// 4096 CTAs of 65 parts, 5 operations a part. The counters: parts and operations emitted per
// iteration, and parts emitted per second.
#include <benchmark/benchmark.h>

#include <vector>

#include "api/iosim.hpp"
#include "sim/schedule/schedule.hpp"

namespace {

using namespace iosim;

void emit_all(benchmark::State& state, const char* algo, std::int64_t n, std::int64_t d,
              bool causal) {
  const HardwareProfile hw = load_profile("h100-sxm5-80gb");
  AttentionProblem p;
  p.batch = 4;
  p.heads = 16;
  p.seq = p.seq_kv = n;
  p.head_dim = d;
  p.causal = causal;
  p = with_defaults(p);
  const Planned planned = builtin_registry().get(algo).plan(p, hw, TilingRequest{});
  if (!planned.feasible()) {
    state.SkipWithError(planned.infeasible_reason.c_str());
    return;
  }
  const Schedule& schedule = *planned.schedule;
  const std::vector<KernelSpec> kernels = schedule.kernels();
  std::vector<TileOp> ops;
  std::int64_t parts = 0, emitted = 0;
  for (auto _ : state) {
    parts = emitted = 0;
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      const std::int64_t ctas = kernels[k].grid.count();
      for (std::int64_t cta = 0; cta < ctas; ++cta) {
        bool more = true;
        for (std::size_t part = 0; more; ++part) {
          ops.clear();
          more = schedule.emit_cta_part(k, cta, part, ops);
          ++parts;
          emitted += static_cast<std::int64_t>(ops.size());
          benchmark::DoNotOptimize(ops.data());
        }
      }
    }
    benchmark::ClobberMemory();
  }
  state.counters["parts"] = static_cast<double>(parts);
  state.counters["ops"] = static_cast<double>(emitted);
  state.counters["parts_per_s"] =
      benchmark::Counter(static_cast<double>(parts), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK_CAPTURE(emit_all, flash2_B4_H16_N8192_d64, "flash2", 8192, 64, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(emit_all, flash2_B4_H16_N8192_d64_causal, "flash2", 8192, 64, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(emit_all, flash3_B4_H16_N8192_d64, "flash3", 8192, 64, false)
    ->Unit(benchmark::kMillisecond);
