// Wall time of iosim's own simulation on real sizes (Google Benchmark): flash2, B=4, H=16,
// N=16384, d=128 with the L2 model on, on the H100 profile, in seconds.
// The sweep of README's "Sweeps and reports" (goal: under a minute on two cores) is dominated
// by standard attention at N=16384 (~2.4x10^8 L2 region accesses at Bc=32) and by flash1 with
// small blocks (1.7x10^7 steps of single-region tiles); the *_sweep cases below are its most
// expensive points, so that their speed is tracked here. bench/l2_bench.cpp times the L2 model
// alone.
#include <benchmark/benchmark.h>

#include "api/iosim.hpp"

namespace {

using namespace iosim;

RunRequest make(const char* algo, std::int64_t n, std::int64_t d, bool l2,
                std::int64_t block_kv = 0) {
  RunRequest r;
  r.algorithm = algo;
  r.problem.batch = 4;
  r.problem.heads = 16;
  r.problem.seq = r.problem.seq_kv = n;
  r.problem.head_dim = d;
  r.engine.l2_enabled = l2;
  if (block_kv > 0) r.tiling.block_kv = block_kv;
  return r;
}

void run(benchmark::State& state, const char* algo, std::int64_t n, std::int64_t d, bool l2,
         std::int64_t block_kv = 0) {
  const HardwareProfile hw = load_profile("h100-sxm5-80gb");
  const RunRequest r = make(algo, n, d, l2, block_kv);
  for (auto _ : state) {
    const Report rep = simulate(hw, r);
    benchmark::DoNotOptimize(rep.engine.time_s);
    state.counters["sim_hbm_GB"] = static_cast<double>(rep.engine.total.hbm.read_total() +
                                                       rep.engine.total.hbm.write_total()) /
                                   1e9;
  }
}

}  // namespace

BENCHMARK_CAPTURE(run, flash2_B4_H16_N16384_d128_l2on, "flash2", 16384, 128, true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run, flash2_B4_H16_N16384_d128_l2off, "flash2", 16384, 128, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run, flash1_B4_H16_N4096_d64_l2on, "flash1", 4096, 64, true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run, standard_B4_H16_N4096_d64_l2on, "standard", 4096, 64, true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

BENCHMARK_CAPTURE(run, standard_B4_H16_N16384_d64_bkv32_sweep, "standard", 16384, 64, true, 32)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run, standard_B4_H16_N16384_d128_bkv256_sweep, "standard", 16384, 128, true, 256)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run, flash1_B4_H16_N16384_d128_bkv32_sweep, "flash1", 16384, 128, true, 32)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run, flash1_B4_H16_N16384_d64_bkv32_sweep, "flash1", 16384, 64, true, 32)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

namespace {

// The goal cases of steady-state extrapolation (sim/engine/steady_state.hpp): flash2 forward, H100.
// With no clock (clock_mhz 0) the power model picks it: one engine run at the boost clock and
// replays of its timeline at the trial clocks (sim/engine/timeline.hpp); power_trials counts them.
void run_shape(benchmark::State& state, std::int64_t b, std::int64_t h, std::int64_t n,
               std::int64_t d, bool l2, bool exact, double clock_mhz = 0, bool replay = false) {
  const HardwareProfile hw = load_profile("h100-sxm5-80gb");
  RunRequest r = make("flash2", n, d, l2);
  r.problem.batch = b;
  r.problem.heads = h;
  r.engine.exact = exact;
  r.engine.sm_clock_mhz = clock_mhz;
  r.engine.replay_clock_trials = replay;
  for (auto _ : state) {
    const Report rep = simulate(hw, r);
    benchmark::DoNotOptimize(rep.engine.time_s);
    state.counters["sim_kernel_ms"] = rep.engine.time_s * 1e3;
    state.counters["power_trials"] = rep.power ? rep.power->engine_runs : 0;
  }
}

}  // namespace

// Issue #33's run with default flags (goal: 45 ms of CPU on the project's 2-core machine, 10x the
// GPU's 4.48 ms): the power model's clock from two engine runs; with replay_clock_trials
// (_replay), from one engine run and a replay of its timeline.
BENCHMARK_CAPTURE(run_shape, flash2_B4_H16_N8192_d64_l2on, 4, 16, 8192, 64, true, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(run_shape, flash2_B4_H16_N8192_d64_l2on_replay, 4, 16, 8192, 64, true, false, 0.0,
                  true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
// The same at a given clock: one engine run, no timeline recorded (what a replay saves is the
// difference to a second one of these).
BENCHMARK_CAPTURE(run_shape, flash2_B4_H16_N8192_d64_l2on_clock1980, 4, 16, 8192, 64, true, false,
                  1980.0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
// Long context with the L2 on: steps are left out once the L2 turned over
// (sim/engine/steady_state.hpp).
BENCHMARK_CAPTURE(run_shape, flash2_B1_H1_N262144_d128_l2on, 1, 1, 262144, 128, true, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run_shape, flash2_B1_H1_N262144_d128_l2on_exact, 1, 1, 262144, 128, true, true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run_shape, flash2_B1_H1_N262144_d256_l2off, 1, 1, 262144, 256, false, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run_shape, flash2_B1_H1_N262144_d256_l2off_exact, 1, 1, 262144, 256, false, true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run_shape, flash2_B64_H64_N1M_d256_l2off, 64, 64, 1048576, 256, false, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
// One head of the L2-on goal run: of its 62 waves a few are simulated (waves by kind), each
// ~1500 steps per CTA before the L2 has turned over and steps may be left out.
BENCHMARK_CAPTURE(run_shape, flash2_B1_H1_N1M_d256_l2on, 1, 1, 1048576, 256, true, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
// The L2-on goal run (issue 15: an answer in under 10 s): 10 of its 254,200 waves simulated.
BENCHMARK_CAPTURE(run_shape, flash2_B64_H64_N1M_d256_l2on, 64, 64, 1048576, 256, true, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

namespace {

// Issue #49's causal goal (flash2 causal B=1 H=8 N=1,048,576 d=128 in 10 s of CPU on the
// project's 2-core machine): a head's CTAs ramp (sim/engine/ramp_periods.hpp) and the alike heads
// between the third and the last are left out. With no clock the power model picks it from engine
// runs (an extrapolated run's timeline is not replayed), the first a clock probe
// (EngineOptions::clock_probe); power_trials counts them.
void run_causal(benchmark::State& state, const char* algo, std::int64_t h, std::int64_t n,
                double clock_mhz) {
  const HardwareProfile hw = load_profile("h100-sxm5-80gb");
  RunRequest r = make(algo, n, 128, true);
  r.problem.batch = 1;
  r.problem.heads = h;
  r.problem.causal = true;
  r.engine.sm_clock_mhz = clock_mhz;
  for (auto _ : state) {
    const Report rep = simulate(hw, r);
    benchmark::DoNotOptimize(rep.engine.time_s);
    state.counters["sim_kernel_ms"] = rep.engine.time_s * 1e3;
    state.counters["power_trials"] = rep.power ? rep.power->engine_runs : 0;
    state.counters["ctas_simulated"] = static_cast<double>(rep.engine.extrapolation.ctas_simulated);
  }
}

}  // namespace

BENCHMARK_CAPTURE(run_causal, flash2_causal_B1_H8_N1M_d128, "flash2", 8, 1048576, 0.0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
// One engine run, at the clock the power model picks for it.
BENCHMARK_CAPTURE(run_causal, flash2_causal_B1_H8_N1M_d128_clock1523, "flash2", 8, 1048576, 1523.58)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run_causal, flash3_causal_B1_H8_N1M_d128, "flash3", 8, 1048576, 0.0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

BENCHMARK_MAIN();
