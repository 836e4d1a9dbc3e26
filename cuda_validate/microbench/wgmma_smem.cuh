// The shared-memory side of the wgmma microbenchmarks (wgmma.cu, power_clock.cu): K-major operand
// rows of 128 bytes with the 128-byte swizzle, their matrix descriptors, and %globaltimer.
#pragma once

#include <cstdint>

constexpr int kRowBytes = 128;               // one swizzled row of K: 64 fp16 or 128 fp8 values
constexpr int kKSteps = 4;                   // wgmma k-steps per row (k16 x 2 B or k32 x 1 B = 32 B)
constexpr int kATileBytes = 64 * kRowBytes;  // (64, K) per warpgroup

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address >> 4 in
// bits 0-13, leading byte offset >> 4 in 16-29 (unused for swizzled K-major layouts: 1), stride
// byte offset >> 4 in 32-45 (1024: the next group of 8 rows), base offset 0 (tiles are 1024-byte
// aligned), swizzle mode in 62-63 (1 = 128-byte swizzle).
__device__ __forceinline__ uint64_t smem_desc(uint32_t smem_addr) {
  return static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) |
         (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}

// Byte `byte` of row `row` in a 128-byte-swizzled tile: 16-byte chunk c of row r sits at chunk
// c ^ (r % 8).
__host__ __device__ __forceinline__ int swizzled(int row, int byte) {
  return row * kRowBytes + ((((byte >> 4) ^ (row & 7))) << 4) + (byte & 15);
}
