// How long one kernel of a back-to-back sequence costs beyond its own work, launched from a
// stream and replayed from a CUDA graph (issue #32: the layer suite times GEMMs as a serving
// engine does, replaying CUDA graphs, while the profiles' launch.kernel_overhead_us is the
// stream rate of empty kernels). Each variant launches `kCalls` kernels of `ctas` CTAs x
// `threads` threads with `smem` bytes of dynamic shared memory, every CTA spinning `spin_ns` on
// the global timer (0: empty), and times them with CUDA events, 5 sets; per call = elapsed /
// kCalls. The gap is the per-call time less the spin. Prints one JSON object.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "check.cuh"

namespace {

constexpr int kCalls = 2000;
constexpr int kSets = 5;

__global__ void spin_kernel(long long spin_ns) {
  extern __shared__ char smem[];
  if (spin_ns <= 0) return;
  long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  long long now = start;
  while (now - start < spin_ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  if (now == 0) smem[threadIdx.x] = 1;  // never: keeps the buffer
}

void launch_all(cudaStream_t s, int ctas, int threads, int smem, long long spin_ns) {
  for (int i = 0; i < kCalls; ++i) spin_kernel<<<ctas, threads, smem, s>>>(spin_ns);
  CHECK(cudaGetLastError());
}

double per_call_us(cudaStream_t s, cudaGraphExec_t exec, int ctas, int threads, int smem,
                   long long spin_ns, std::vector<double>& sets) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int set = -1; set < kSets; ++set) {  // set -1 warms
    CHECK(cudaEventRecord(a, s));
    if (exec != nullptr) {
      CHECK(cudaGraphLaunch(exec, s));
    } else {
      launch_all(s, ctas, threads, smem, spin_ns);
    }
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (set >= 0) sets.push_back(ms * 1e3 / kCalls);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  std::vector<double> sorted = sets;
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CHECK(cudaFuncSetAttribute(spin_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct Variant {
    int ctas, threads, smem;
    long long spin_ns;
  };
  const Variant variants[] = {{1, 128, 0, 0},          {132, 128, 0, 0},
                              {132, 384, 200 * 1024, 0}, {264, 384, 200 * 1024, 0},
                              {132, 384, 200 * 1024, 5000}, {132, 384, 200 * 1024, 20000},
                              {1, 128, 0, 5000}};
  if (argc > 1) {  // "once": each variant launched once, for Nsight Compute's durations
    for (const Variant& v : variants) spin_kernel<<<v.ctas, v.threads, v.smem, s>>>(v.spin_ns);
    CHECK(cudaStreamSynchronize(s));
    (void)argv;
    return 0;
  }
  std::printf("{\"calls\": %d, \"sets\": %d, \"rows\": [\n", kCalls, kSets);
  bool first = true;
  for (const Variant& v : variants) {
    for (int graph = 0; graph < 2; ++graph) {
      cudaGraphExec_t exec = nullptr;
      cudaGraph_t g = nullptr;
      if (graph) {
        CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        launch_all(s, v.ctas, v.threads, v.smem, v.spin_ns);
        CHECK(cudaStreamEndCapture(s, &g));
        CHECK(cudaGraphInstantiate(&exec, g, 0));
      }
      std::vector<double> sets;
      const double us = per_call_us(s, exec, v.ctas, v.threads, v.smem, v.spin_ns, sets);
      std::printf("%s {\"launch\": \"%s\", \"ctas\": %d, \"threads\": %d, \"smem\": %d, "
                  "\"spin_us\": %.3f, \"per_call_us\": %.4f, \"gap_us\": %.4f, \"sets_us\": [",
                  first ? "" : ",\n", graph ? "graph" : "stream", v.ctas, v.threads, v.smem,
                  v.spin_ns * 1e-3, us, us - v.spin_ns * 1e-3);
      for (std::size_t i = 0; i < sets.size(); ++i) std::printf("%s%.4f", i ? ", " : "", sets[i]);
      std::printf("]}");
      first = false;
      if (graph) {
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(g));
      }
    }
  }
  std::printf("\n]}\n");
  CHECK(cudaStreamDestroy(s));
  return 0;
}
