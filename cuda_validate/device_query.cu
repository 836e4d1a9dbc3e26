// Prints the device properties that iosim's hardware profiles cite as
// "cudaGetDeviceProperties", as one JSON object on stdout.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                             \
  do {                                                                          \
    cudaError_t err_ = (call);                                                  \
    if (err_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

static int attr(cudaDeviceAttr a, int dev) {
  int v = 0;
  CHECK(cudaDeviceGetAttribute(&v, a, dev));
  return v;
}

// One integer member of the object, on its own line; the last one has no comma.
static void field(const char* key, long long value, bool last = false) {
  std::printf("  \"%s\": %lld%s\n", key, value, last ? "" : ",");
}

int main() {
  int dev = 0;
  CHECK(cudaSetDevice(dev));
  cudaDeviceProp p{};
  CHECK(cudaGetDeviceProperties(&p, dev));
  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  std::printf("{\n");
  std::printf("  \"name\": \"%s\",\n", p.name);
  std::printf("  \"compute_capability\": \"%d.%d\",\n", p.major, p.minor);
  field("driver_version", driver);
  field("runtime_version", runtime);
  field("multiprocessor_count", p.multiProcessorCount);
  field("clock_rate_khz", attr(cudaDevAttrClockRate, dev));
  field("memory_clock_rate_khz", attr(cudaDevAttrMemoryClockRate, dev));
  field("memory_bus_width_bits", attr(cudaDevAttrGlobalMemoryBusWidth, dev));
  field("total_global_mem_bytes", p.totalGlobalMem);
  field("l2_cache_size_bytes", p.l2CacheSize);
  field("persisting_l2_cache_max_size_bytes", p.persistingL2CacheMaxSize);
  field("shared_mem_per_multiprocessor_bytes", p.sharedMemPerMultiprocessor);
  field("shared_mem_per_block_bytes", p.sharedMemPerBlock);
  field("shared_mem_per_block_optin_bytes", p.sharedMemPerBlockOptin);
  field("reserved_shared_mem_per_block_bytes", p.reservedSharedMemPerBlock);
  field("regs_per_multiprocessor", p.regsPerMultiprocessor);
  field("regs_per_block", p.regsPerBlock);
  field("max_threads_per_multiprocessor", p.maxThreadsPerMultiProcessor);
  field("max_threads_per_block", p.maxThreadsPerBlock);
  field("max_blocks_per_multiprocessor", p.maxBlocksPerMultiProcessor);
  field("warp_size", p.warpSize, true);
  std::printf("}\n");
  return 0;
}
