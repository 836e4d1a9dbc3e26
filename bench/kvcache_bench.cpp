// Wall time of `iosim kvcache` on a stream of 10^6 requests (the target: seconds). The
// model is Llama-3-8B-like (32 layers, 8 KV heads, d 128, fp16: 128 KiB per token) with 64 GB of
// KV cache; requests arrive at 2 per step with ShareGPT-like lengths, which keeps about 700
// sequences resident under the paged policy.
#include <benchmark/benchmark.h>

#include "kvcache/simulator.hpp"
#include "kvcache/workload.hpp"

namespace {

using namespace iosim::kvcache;

StreamSpec million(int samples, std::int64_t shared_prefix) {
  StreamSpec s;
  s.requests = 1'000'000;
  s.prompt_len = parse_length_dist("lognormal:5,1", "--prompt-len");
  s.output_len = parse_length_dist("lognormal:5.5,0.9", "--output-len");
  s.arrivals = parse_arrivals("poisson:2", "--arrivals");
  s.samples = samples;
  s.shared_prefix_tokens = shared_prefix;
  s.prompt_groups = 8;
  return s;
}

CacheConfig cache(Policy p) {
  CacheConfig c;
  c.policy = p;
  c.model = {32, 8, 128, 2};
  c.budget_bytes = 64'000'000'000;
  return c;
}

void generate(benchmark::State& state) {
  for (auto _ : state) {
    const RequestStream s = generate_stream(million(1, 0));
    benchmark::DoNotOptimize(s.requests.data());
  }
  state.SetItemsProcessed(state.iterations() * 1'000'000);
}

void simulate(benchmark::State& state, Policy policy, int samples, std::int64_t shared_prefix) {
  const RequestStream stream = generate_stream(million(samples, shared_prefix));
  for (auto _ : state) {
    const KvCacheResult r = simulate_kvcache(cache(policy), stream);
    benchmark::DoNotOptimize(r.summary.steps);
    state.counters["steps"] = static_cast<double>(r.summary.steps);
    state.counters["tokens"] = static_cast<double>(r.summary.generated_tokens);
    state.counters["mean_running"] = r.summary.totals.running / r.summary.totals.steps;
  }
  state.SetItemsProcessed(state.iterations() * 1'000'000);
}

}  // namespace

BENCHMARK(generate)->Name("kvcache_generate_1M")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(simulate, kvcache_contiguous_1M, Policy::contiguous, 1, 0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(simulate, kvcache_paged_1M, Policy::paged, 1, 0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(simulate, kvcache_paged_1M_samples2_prefix256, Policy::paged, 2, 256)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
