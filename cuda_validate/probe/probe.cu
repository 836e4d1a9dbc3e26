// Measures, on the GPU it runs on, the profile numbers no public document gives: the SM clock
// under load, kernel launch overhead, and L2-hit / DRAM load-to-use latency (pointer chase).
// Build: nvcc -O2 -arch=sm_90 -o probe probe.cu.  Run under `ncu --clock-control base` with
// `spin` to read the clock Nsight Compute locks to (see run_probe.sh).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "../microbench/check.cuh"  // CHECK(x)


__global__ void empty_kernel() {}

__global__ void spin(long long cycles, long long* out) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = clock64() - t0;
}

// Each thread follows a random cycle through 128-byte lines (ld.global.cg skips L1). With one
// thread this is the load-to-use latency of one line; with a warp each step waits for the
// slowest of 32 lines, as in pointer chases that use a whole warp.
__global__ void chase(const unsigned* buf, int steps, unsigned stride, long long* cycles,
                      unsigned* sink) {
  unsigned idx = threadIdx.x * stride;
  for (int i = 0; i < 1000; ++i) idx = __ldcg(buf + idx * 32u);  // warm up (fills L2 if it fits)
  const long long t0 = clock64();
  for (int i = 0; i < steps; ++i) idx = __ldcg(buf + idx * 32u);
  const long long elapsed = clock64() - t0;
  if (threadIdx.x == 0) *cycles = elapsed;
  sink[threadIdx.x] = idx;
}

// Streams `n` float4 from `buf` `reps` times through L2 (ld.global.cg), four loads in flight
// per thread.
__global__ void stream_read(const float4* buf, size_t n, int reps, float* sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  float acc = 0.f;
  for (int r = 0; r < reps; ++r) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i + 3 * stride < n; i += 4 * stride) {
      const float4 a = __ldcg(buf + i);
      const float4 b = __ldcg(buf + i + stride);
      const float4 c = __ldcg(buf + i + 2 * stride);
      const float4 d = __ldcg(buf + i + 3 * stride);
      acc += a.x + b.y + c.z + d.w;
    }
  }
  if (acc == 1234.5f) *sink = acc;  // never true; keeps the loads
}

static double ms_between(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

static void measure_clock() {
  long long* d_out;
  CHECK(cudaMalloc(&d_out, sizeof(long long)));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const long long cycles = 2000000000LL;
  spin<<<132, 128>>>(cycles / 10, d_out);  // warm up, lets the clock ramp
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventRecord(a));
  spin<<<132, 128>>>(cycles, d_out);
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  const double ms = ms_between(a, b);
  std::printf("spin: %lld SM cycles in %.3f ms -> %.0f MHz\n", cycles, ms, cycles / ms / 1e3);
  CHECK(cudaFree(d_out));
}

static void measure_launch() {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 32>>>();
  CHECK(cudaDeviceSynchronize());
  const int n = 20000;
  CHECK(cudaEventRecord(a));
  for (int i = 0; i < n; ++i) empty_kernel<<<132, 128>>>();
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  std::printf("launch: back-to-back empty kernels (132x128), stream order: %.2f us per kernel\n",
              ms_between(a, b) * 1e3 / n);
  const int m = 5000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < m; ++i) {
    empty_kernel<<<132, 128>>>();
    CHECK(cudaDeviceSynchronize());
  }
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("launch: launch + cudaDeviceSynchronize round trip: %.2f us per kernel\n",
              std::chrono::duration<double, std::micro>(t1 - t0).count() / m);
}

static void measure_latency(size_t footprint_bytes, int threads) {
  const unsigned lines = static_cast<unsigned>(footprint_bytes / 128);
  std::vector<unsigned> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937 rng(12345);
  for (unsigned i = lines - 1; i > 0; --i) {  // Sattolo: one cycle through every line
    std::uniform_int_distribution<unsigned> pick(0, i - 1);
    std::swap(order[i], order[pick(rng)]);
  }
  std::vector<unsigned> host(static_cast<size_t>(lines) * 32u, 0u);
  for (unsigned i = 0; i < lines; ++i) host[static_cast<size_t>(i) * 32u] = order[i];
  unsigned* d_buf;
  long long* d_cycles;
  unsigned* d_sink;
  CHECK(cudaMalloc(&d_buf, host.size() * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_cycles, sizeof(long long)));
  CHECK(cudaMalloc(&d_sink, 32 * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_buf, host.data(), host.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  const int steps = 200000;
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const unsigned stride = lines / 32;  // thread t starts at line t*stride
  chase<<<1, threads>>>(d_buf, steps, stride, d_cycles, d_sink);  // first touch
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventRecord(a));
  chase<<<1, threads>>>(d_buf, steps, stride, d_cycles, d_sink);
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  long long cycles = 0;
  CHECK(cudaMemcpy(&cycles, d_cycles, sizeof(cycles), cudaMemcpyDeviceToHost));
  const double ns = ms_between(a, b) * 1e6 / (steps + 1000);
  std::printf(
      "chase: %2d thread(s), footprint %4zu MiB: %.1f SM cycles per step, %.1f ns per step (event "
      "time)\n",
      threads, footprint_bytes >> 20, static_cast<double>(cycles) / steps, ns);
  CHECK(cudaFree(d_buf));
  CHECK(cudaFree(d_cycles));
  CHECK(cudaFree(d_sink));
}

// Read bandwidth with `blocks` x 1024 threads over about `bytes` (rounded down to whole sweeps
// of 4 loads per thread, at least one), each byte read `reps` times.
static void measure_read_bandwidth(const char* what, size_t bytes, int blocks, int reps,
                                   double sm_clock_mhz) {
  const size_t stride = static_cast<size_t>(blocks) * 1024;
  const size_t sweep = 4 * stride;  // float4 elements one pass of the loop body covers
  const size_t n = std::max<size_t>(1, bytes / sizeof(float4) / sweep) * sweep;
  float4* d_buf;
  float* d_sink;
  CHECK(cudaMalloc(&d_buf, n * sizeof(float4)));
  CHECK(cudaMalloc(&d_sink, sizeof(float)));
  CHECK(cudaMemset(d_buf, 0, n * sizeof(float4)));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  stream_read<<<blocks, 1024>>>(d_buf, n, reps, d_sink);  // warm up, fills L2 if it fits
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventRecord(a));
  stream_read<<<blocks, 1024>>>(d_buf, n, reps, d_sink);
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  const double s = ms_between(a, b) / 1e3;
  const double bytes_read = static_cast<double>(n) * sizeof(float4) * reps;
  std::printf(
      "read: %s: %d blocks x 1024 threads, %.1f MiB x %d: %.1f GB/s = %.1f B/clk at %.0f "
      "MHz\n",
      what, blocks, n * sizeof(float4) / 1048576.0, reps, bytes_read / s / 1e9,
      bytes_read / s / (sm_clock_mhz * 1e6), sm_clock_mhz);
  CHECK(cudaFree(d_buf));
  CHECK(cudaFree(d_sink));
}

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d bytes\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize);
  if (argc > 1 && std::strcmp(argv[1], "spin") == 0) {
    measure_clock();
    return 0;
  }
  measure_clock();
  measure_launch();
  int clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  const double clock_mhz = clock_khz / 1e3;
  const int sms = prop.multiProcessorCount;
  measure_read_bandwidth("L2, all SMs", 16u << 20, 2 * sms, 500, clock_mhz);
  measure_read_bandwidth("L2, all SMs", 34u << 20, 2 * sms, 250, clock_mhz);
  measure_read_bandwidth("L2, all SMs", 16u << 20, sms, 500, clock_mhz);
  measure_read_bandwidth("L2, one SM", 4u << 20, 1, 20, clock_mhz);
  measure_read_bandwidth("HBM, all SMs", size_t{4} << 30, 2 * sms, 1, clock_mhz);
  for (int threads : {1, 32}) {
    for (size_t mib : {4, 16, 32, 512, 2048}) measure_latency(mib << 20, threads);
  }
  return 0;
}
