// Where do the ~2.5 MB of DRAM writes come from that every measured kernel reading more than the
// L2 holds shows beyond its own write-backs (cuda_validate/measurements/CALIBRATION.md)? This program
// launches kernels whose own DRAM writes are known to be zero or a known size, to be run under
// Nsight Compute (cuda_validate/microbench/l2_residue.sh drives it):
//   sizes: one read-only kernel per size (4 MiB .. 1 GiB). Its own DRAM writes are 0 bytes (it
//          writes one int per CTA, which stays dirty in L2). Under `--cache-control all`, DRAM
//          writes beyond that are lines that were dirty in L2 before it started (or written by
//          someone else while it ran); the read size at which they appear says how LRU-like the
//          L2 evicts them.
//   writes: one write-only kernel per size (4 MiB .. 96 MiB), each starting with a clean L2
//          (`--cache-control all`): how much of what it writes reaches DRAM while it runs, i.e.
//          how much dirty data the L2 keeps.
//   pairs: with `--cache-control none`: flush (read 3x the L2), then write W MiB, then read R
//          MiB of another region. The read's DRAM writes are the write's dirty lines it evicts,
//          plus whatever a kernel launch itself leaves dirty: W = 0 isolates the latter.
// Each launch is printed as one JSON line on stdout (mode, index, kernel, bytes) in launch
// order, which is also the order of ncu's report rows.
// Build: nvcc -O3 -arch=sm_90 -o l2_residue l2_residue.cu
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.cuh"

// Reads n 16-byte chunks through L2 (ld.global.cg: not kept in L1). The XOR goes to one int per
// CTA so the loads cannot be removed; those ints are the kernel's only writes.
__global__ void read_kernel(const int4* __restrict__ buf, long long n, int* __restrict__ sink) {
  int acc = 0;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const int4 v = __ldcg(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  acc = __reduce_xor_sync(0xffffffffu, acc);
  if (threadIdx.x == 0) atomicXor(sink + blockIdx.x, acc);
}

// Writes n 16-byte chunks (full lines: no DRAM read for partial sectors).
__global__ void write_kernel(int4* __restrict__ buf, long long n, int v) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    buf[i] = make_int4(v, v ^ static_cast<int>(i), v, v);
  }
}

namespace {

int g_index = 0;
int g_ctas = 0;

void launch_read(const char* mode, const char* buf, long long bytes, int* sink) {
  read_kernel<<<g_ctas, 1024>>>(reinterpret_cast<const int4*>(buf), bytes / 16, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::printf("{\"mode\": \"%s\", \"index\": %d, \"kernel\": \"read_kernel\", \"bytes\": %lld}\n",
              mode, g_index++, bytes);
}

void launch_write(const char* mode, char* buf, long long bytes) {
  write_kernel<<<g_ctas, 1024>>>(reinterpret_cast<int4*>(buf), bytes / 16, g_index);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::printf("{\"mode\": \"%s\", \"index\": %d, \"kernel\": \"write_kernel\", \"bytes\": %lld}\n",
              mode, g_index++, bytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || (std::strcmp(argv[1], "sizes") != 0 && std::strcmp(argv[1], "pairs") != 0 &&
                    std::strcmp(argv[1], "writes") != 0)) {
    std::fprintf(stderr, "usage: %s sizes|pairs|writes\n", argv[0]);
    return 2;
  }
  const bool sizes = std::strcmp(argv[1], "sizes") == 0;
  const bool writes = std::strcmp(argv[1], "writes") == 0;
  cudaDeviceProp p{};
  CHECK(cudaGetDeviceProperties(&p, 0));
  g_ctas = 2 * p.multiProcessorCount;
  const long long mib = 1ll << 20;
  const long long l2 = p.l2CacheSize;
  const long long region = 1024 * mib;  // read region; the write region and the flush follow it
  const long long flush_bytes = 3 * l2;
  char* base = nullptr;
  int* sink = nullptr;
  CHECK(cudaMalloc(&base, 2 * region + flush_bytes));
  CHECK(cudaMalloc(&sink, sizeof(int) * g_ctas));
  CHECK(cudaMemset(base, 1, 2 * region + flush_bytes));
  CHECK(cudaMemset(sink, 0, sizeof(int) * g_ctas));
  CHECK(cudaDeviceSynchronize());
  char* read_region = base;
  char* write_region = base + region;
  char* flush_region = base + 2 * region;
  std::fprintf(stderr, "device %s, L2 %lld bytes, %d CTAs x 1024 threads\n", p.name, l2, g_ctas);

  if (writes) {
    const long long list[] = {4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 56, 64, 96};
    for (long long s : list) launch_write("writes", write_region, s * mib);
    for (long long s : list) launch_write("writes_repeat", write_region, s * mib);
  } else if (sizes) {
    const long long list[] = {4, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 192, 256, 512, 1024};
    for (long long s : list) launch_read("sizes", read_region, s * mib, sink);
    // The same sizes again: a second sample of each, to see the run-to-run spread.
    for (long long s : list) launch_read("sizes_repeat", read_region, s * mib, sink);
  } else {
    const long long writes[] = {0, 4, 16, 32};
    const long long reads[] = {16, 64, 256};
    for (long long w : writes) {
      for (long long r : reads) {
        launch_read("pairs_flush", flush_region, flush_bytes, sink);
        if (w > 0) launch_write("pairs_write", write_region, w * mib);
        launch_read("pairs_read", read_region, r * mib, sink);
      }
    }
  }
  CHECK(cudaFree(base));
  CHECK(cudaFree(sink));
  return 0;
}
