// CPU time of `iosim validate` (Google Benchmark), issue #33's goal: the H100 folder's measured
// cases re-predicted in 5 s of CPU on the project's 2-core machine. Each case is an as-run engine
// run at the measured clock and registers, a blind run with a cold L2 per kernel and, for
// schedules of several kernels, a blind run with the L2 carried over
// (api/validation_prediction.cpp); docs/PERFORMANCE_HISTORY.md says where their time goes. One file
// of the folder (its main set) is timed on its own too, a shorter figure to compare binaries back
// to back.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "api/validation.hpp"

namespace {

const std::filesystem::path kMeasured =
    std::filesystem::path(IOSIM_SOURCE_DIR) / "cuda_validate" / "measurements" / "h100-sxm5-80gb";

void validate(benchmark::State& state, const std::filesystem::path& path) {
  for (auto _ : state) {
    const iosim::ValidationResult r = iosim::validate_measurements(path);
    benchmark::DoNotOptimize(r.cases.size());
    state.counters["cases"] = static_cast<double>(r.cases.size());
  }
}

}  // namespace

BENCHMARK_CAPTURE(validate, h100_folder, kMeasured)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK_CAPTURE(validate, h100_main_set, kMeasured / "measurements_2026-11-22.json")
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
