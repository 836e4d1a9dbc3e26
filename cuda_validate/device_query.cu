// Prints the device properties that iosim's hardware profiles cite as
// "cudaGetDeviceProperties", as one JSON object on stdout.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t err_ = (call);                                                   \
    if (err_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

static int attr(cudaDeviceAttr a, int dev) {
  int v = 0;
  CHECK(cudaDeviceGetAttribute(&v, a, dev));
  return v;
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
  std::printf("  \"driver_version\": %d,\n  \"runtime_version\": %d,\n", driver, runtime);
  std::printf("  \"multiprocessor_count\": %d,\n", p.multiProcessorCount);
  std::printf("  \"clock_rate_khz\": %d,\n", attr(cudaDevAttrClockRate, dev));
  std::printf("  \"memory_clock_rate_khz\": %d,\n", attr(cudaDevAttrMemoryClockRate, dev));
  std::printf("  \"memory_bus_width_bits\": %d,\n", attr(cudaDevAttrGlobalMemoryBusWidth, dev));
  std::printf("  \"total_global_mem_bytes\": %zu,\n", p.totalGlobalMem);
  std::printf("  \"l2_cache_size_bytes\": %d,\n", p.l2CacheSize);
  std::printf("  \"persisting_l2_cache_max_size_bytes\": %d,\n", p.persistingL2CacheMaxSize);
  std::printf("  \"shared_mem_per_multiprocessor_bytes\": %zu,\n", p.sharedMemPerMultiprocessor);
  std::printf("  \"shared_mem_per_block_bytes\": %zu,\n", p.sharedMemPerBlock);
  std::printf("  \"shared_mem_per_block_optin_bytes\": %zu,\n", p.sharedMemPerBlockOptin);
  std::printf("  \"reserved_shared_mem_per_block_bytes\": %zu,\n", p.reservedSharedMemPerBlock);
  std::printf("  \"regs_per_multiprocessor\": %d,\n", p.regsPerMultiprocessor);
  std::printf("  \"regs_per_block\": %d,\n", p.regsPerBlock);
  std::printf("  \"max_threads_per_multiprocessor\": %d,\n", p.maxThreadsPerMultiProcessor);
  std::printf("  \"max_threads_per_block\": %d,\n", p.maxThreadsPerBlock);
  std::printf("  \"max_blocks_per_multiprocessor\": %d,\n", p.maxBlocksPerMultiProcessor);
  std::printf("  \"warp_size\": %d\n", p.warpSize);
  std::printf("}\n");
  return 0;
}
