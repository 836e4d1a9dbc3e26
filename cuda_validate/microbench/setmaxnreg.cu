// Register reallocation between warpgroups (setmaxnreg, sm_90a), measured on the lent GPU: the
// limits a warp-specialized kernel (FlashAttention-3: a producer warpgroup that gives registers
// away, consumer warpgroups that take them) works under.
//   - pool: a CTA of 384 threads (one producer, two consumer warpgroups) launched with R
//     registers per thread; the producer warpgroup decreases to P (setmaxnreg.dec), the consumers
//     increase to C (setmaxnreg.inc). Configurations with 128 P + 256 C <= 384 R must complete;
//     the ones above it show whether .inc can take more than the CTA gave back (the SM's
//     registers no CTA holds, 65536 - 384 R) or blocks. A blocked launch is detected by the host
//     (not complete after a timeout while the producer has reported its .dec through mapped host
//     memory) and the process exits without waiting for it: run those configurations one per
//     process, last.
//   - cost: clock64 around each setmaxnreg per warp. "ordered": the consumers issue .inc only
//     after all producer warps finished their .dec (registers are free). "delayed": the
//     producer waits `delay` cycles before its .dec, the consumers issue .inc at once: when .inc
//     completes relative to the producer's .dec says whether it waits for released registers.
//   - use: after .inc each consumer thread keeps kLive fp32 values live through a loop (more than
//     the launch allowance of 168 registers, fewer than C): SASS shows whether ptxas used the
//     raised limit (no STL/LDL) and the sums are checked against the host.
// One CTA per SM (the launch takes 384 x 168 of the 65536 registers), grid = number of SMs; each
// configuration launched 20 times, medians over all warps of all launches.
// Build (sm_90a only): nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o setmaxnreg
//   setmaxnreg.cu       SASS: cuobjdump --dump-sass setmaxnreg | grep -E 'USETMAXREG|STL|LDL'
// Usage: setmaxnreg list | setmaxnreg run NAME... | setmaxnreg all-fitting
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "check.cuh"

constexpr int kThreads = 384;  // producer warpgroup + 2 consumer warpgroups
constexpr int kWarps = kThreads / 32;
constexpr int kLive = 200;  // fp32 values a consumer thread keeps live after .inc
constexpr int kLaunches = 20;

enum Mode { kOrdered = 0, kDelayed = 1 };

// Per warp: clock64 at kernel entry, before and after its setmaxnreg.
struct WarpTimes {
  long long entry, before, after;
};

template <int P>
__device__ __forceinline__ void dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(P));
}
template <int C>
__device__ __forceinline__ void inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(C));
}

// g_in: kLive + kThreads floats; g_sum: one per consumer thread per CTA; g_times: per warp per
// CTA; h_flag (mapped host memory): producer warp 0 of CTA 0 writes 1 after its .dec.
template <int P, int C>
__global__ void __launch_bounds__(kThreads, 1)
    realloc_kernel(const float* __restrict__ g_in, float* __restrict__ g_sum,
                   WarpTimes* __restrict__ g_times, volatile int* h_flag, int mode, int delay,
                   int iters) {
  __shared__ int s_dec_done;  // producer warps that finished .dec
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wg = threadIdx.x / 128;
  if (threadIdx.x == 0) s_dec_done = 0;
  __syncthreads();
  const long long entry = clock64();
  long long before, after;
  if (wg == 0) {
    if (mode == kDelayed) {
      while (clock64() - entry < delay) {
      }
    }
    before = clock64();
    dec<P>();
    after = clock64();
    __syncwarp();
    if (lane == 0) atomicAdd(&s_dec_done, 1);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      *h_flag = 1;
      __threadfence_system();
    }
  } else {
    if (mode == kOrdered) {
      while (atomicAdd(&s_dec_done, 0) < 4) {
      }
    }
    before = clock64();
    inc<C>();
    after = clock64();
    // Use the registers: kLive independent values updated `iters` times (iters is a run-time
    // value, so every one stays live across the loop).
    const int t = threadIdx.x - 128;
    float v[kLive];
#pragma unroll
    for (int i = 0; i < kLive; ++i) v[i] = g_in[i + t];
    const float a = g_in[kLive + t] * 0.0f + 0.5f, b = 0.25f;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
      for (int i = 0; i < kLive; ++i) v[i] = fmaf(v[i], a, b);
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kLive; ++i) s += v[i];
    g_sum[blockIdx.x * 256 + t] = s;
  }
  if (lane == 0) g_times[blockIdx.x * kWarps + warp] = {entry, before, after};
}

struct Config {
  const char* name;
  int p, c;
  void (*kernel)(const float*, float*, WarpTimes*, volatile int*, int, int, int);
};

#define CFG(P, C) {"p" #P "_c" #C, P, C, realloc_kernel<P, C>}
const Config kConfigs[] = {
    CFG(24, 240),  // FlashAttention-3's forward (fp16): 128 x 24 + 256 x 240 = 64512 = 384 x 168
    CFG(40, 232),  // our fa3_fwd.cu (fp16): 64512
    CFG(56, 224),  // our fa3_fwd.cu (fp8): 64512
    CFG(24, 232),  // below the pool: 62464
    CFG(32, 240),  // 65536: 1024 above the pool, exactly the SM's registers no CTA holds
    CFG(40, 240),  // 66560: 2048 above the pool
    CFG(24, 256),  // 68608: 4096 above the pool
};

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs one configuration in one mode; prints one JSON line. Returns false when the launch did not
// complete within the timeout (blocked): the caller must then exit without touching the GPU again.
bool run(const Config& cfg, int mode, int sms, int launch_regs) {
  const int delay = 20000, iters = 64;
  std::vector<float> h_in(kLive + kThreads);
  for (size_t i = 0; i < h_in.size(); ++i) h_in[i] = static_cast<float>((i * 7) % 13) * 0.125f;
  float *d_in, *d_sum;
  WarpTimes* d_times;
  CHECK(cudaMalloc(&d_in, h_in.size() * sizeof(float)));
  CHECK(cudaMalloc(&d_sum, sms * 256 * sizeof(float)));
  CHECK(cudaMalloc(&d_times, sms * kWarps * sizeof(WarpTimes)));
  CHECK(cudaMemcpy(d_in, h_in.data(), h_in.size() * sizeof(float), cudaMemcpyHostToDevice));
  int* h_flag;
  CHECK(cudaHostAlloc(&h_flag, sizeof(int), cudaHostAllocMapped));
  int* d_flag;
  CHECK(cudaHostGetDevicePointer(&d_flag, h_flag, 0));
  // Host reference of a consumer thread's sum.
  std::vector<double> ref(256);
  for (int t = 0; t < 256; ++t) {
    double s = 0;
    for (int i = 0; i < kLive; ++i) {
      float v = h_in[i + t];
      for (int it = 0; it < iters; ++it) v = fmaf(v, 0.5f, 0.25f);
      s += v;
    }
    ref[t] = s;
  }
  std::vector<double> dec_cyc, inc_cyc, inc_done, dec_done, wait_after_dec;
  int bad = 0;
  for (int l = 0; l < kLaunches; ++l) {
    *h_flag = 0;
    cudaEvent_t done;
    CHECK(cudaEventCreate(&done));
    cfg.kernel<<<sms, kThreads>>>(d_in, d_sum, d_times, d_flag, mode, delay, iters);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(done));
    const auto t0 = std::chrono::steady_clock::now();
    while (cudaEventQuery(done) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(3)) {
        std::printf(
            "{\"config\": \"%s\", \"producer_regs\": %d, \"consumer_regs\": %d, "
            "\"launch_regs\": %d, \"pool\": %d, \"requested\": %d, \"mode\": \"%s\", "
            "\"blocked\": true, \"producer_dec_reported\": %d, \"timeout_s\": 3}\n",
            cfg.name, cfg.p, cfg.c, launch_regs, kThreads * launch_regs, 128 * cfg.p + 256 * cfg.c,
            mode == kOrdered ? "ordered" : "delayed", *(volatile int*)h_flag);
        std::fflush(stdout);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    CHECK(cudaEventSynchronize(done));
    CHECK(cudaEventDestroy(done));
    std::vector<WarpTimes> times(sms * kWarps);
    std::vector<float> sums(sms * 256);
    CHECK(cudaMemcpy(times.data(), d_times, times.size() * sizeof(WarpTimes),
                     cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(sums.data(), d_sum, sums.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int b = 0; b < sms; ++b) {
      for (int t = 0; t < 256; ++t)
        if (std::abs(sums[b * 256 + t] - ref[t]) > 1e-3 * std::abs(ref[t]) + 1e-3) ++bad;
      long long last_dec_done = 0;
      for (int w = 0; w < 4; ++w) last_dec_done = std::max(last_dec_done, times[b * kWarps + w].after);
      for (int w = 0; w < kWarps; ++w) {
        const WarpTimes& x = times[b * kWarps + w];
        if (w < 4) {
          dec_cyc.push_back(static_cast<double>(x.after - x.before));
          dec_done.push_back(static_cast<double>(x.after - x.entry));
        } else {
          inc_cyc.push_back(static_cast<double>(x.after - x.before));
          inc_done.push_back(static_cast<double>(x.after - x.entry));
          wait_after_dec.push_back(static_cast<double>(x.after - last_dec_done));
        }
      }
    }
  }
  std::printf(
      "{\"config\": \"%s\", \"producer_regs\": %d, \"consumer_regs\": %d, \"launch_regs\": %d, "
      "\"pool\": %d, \"requested\": %d, \"mode\": \"%s\", \"blocked\": false, \"launches\": %d, "
      "\"ctas\": %d, \"dec_cycles_median\": %.1f, \"dec_cycles_max\": %.1f, "
      "\"inc_cycles_median\": %.1f, \"inc_cycles_max\": %.1f, "
      "\"dec_done_after_entry_median\": %.1f, \"inc_done_after_entry_median\": %.1f, "
      "\"inc_done_after_last_dec_median\": %.1f, \"delay_cycles\": %d, \"sums_wrong\": %d}\n",
      cfg.name, cfg.p, cfg.c, launch_regs, kThreads * launch_regs, 128 * cfg.p + 256 * cfg.c,
      mode == kOrdered ? "ordered" : "delayed", kLaunches, sms, median(dec_cyc),
      *std::max_element(dec_cyc.begin(), dec_cyc.end()), median(inc_cyc),
      *std::max_element(inc_cyc.begin(), inc_cyc.end()), median(dec_done), median(inc_done),
      median(wait_after_dec), mode == kDelayed ? delay : 0, bad);
  std::fflush(stdout);
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_sum));
  CHECK(cudaFree(d_times));
  CHECK(cudaFreeHost(h_flag));
  return true;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: setmaxnreg list | run NAME... | all-fitting\n");
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "list") {
    for (const Config& c : kConfigs) std::printf("%s %d\n", c.name, 128 * c.p + 256 * c.c);
    return 0;
  }
  CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  for (const Config& c : kConfigs) {
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, c.kernel));
    const bool fits = 128 * c.p + 256 * c.c <= kThreads * attr.numRegs;
    bool wanted = cmd == "all-fitting" ? fits : false;
    for (int i = 2; i < argc; ++i) wanted = wanted || (cmd == "run" && c.name == std::string(argv[i]));
    if (!wanted) continue;
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, c.kernel, kThreads, 0));
    std::printf(
        "{\"config\": \"%s\", \"device\": \"%s\", \"sms\": %d, \"launch_regs\": %d, "
        "\"local_bytes\": %zu, \"ctas_per_sm\": %d, \"regs_per_sm\": %d}\n",
        c.name, prop.name, sms, attr.numRegs, attr.localSizeBytes, blocks,
        prop.regsPerMultiprocessor);
    for (int mode : {kOrdered, kDelayed}) {
      if (!run(c, mode, sms, attr.numRegs)) {
        // The launch is stuck on the GPU: leave without synchronizing (the driver ends it).
        std::_Exit(3);
      }
    }
  }
  return 0;
}
