// The L2 flush the CUPTI path runs before every replay pass.
//
// ncu's --cache-control all writes back and invalidates L2 before each pass, so a
// kernel starts with no line of its own in L2 and nothing dirty. A memset over 2x
// the L2 (the time mode's flush) evicts the kernel's lines but leaves L2 full of
// the memset's *dirty* lines, whose write-backs the kernel would then pay for in
// dram__bytes_write. So the runner (--cupti-flush):
//   discard (default): reads a never-written buffer of 3x the L2, which evicts every
//     earlier line (dirty ones are written back during the flush, outside the range),
//     then discards that buffer's lines (discard.global.L2: invalidated, no write-back),
//     leaving L2 close to ncu's empty state;
//   normal: the read alone (L2 left full of clean lines, which misses evict for free);
//   evict-first: the read with an L2 evict-first policy. Measured counter-example: such
//     lines only replace each other, so the previous pass's lines survive the "flush"
//     (cuda_validate/measurements/h200-sxm-141gb/cupti_vs_ncu_2026-11-22.md).
#pragma once

#include <cuda_runtime.h>

namespace iosim_cuda {

// Reads every 16-byte chunk of buf (n chunks) through L2: plain ld.global.cg loads,
// or with evict_first loads under an L2 evict-first cache policy (createpolicy +
// ld.L2::cache_hint). The XOR of the values goes to the sink only on a match that
// does not happen with the zero-filled buffer (after a discard its contents are
// undefined, and a chance match writes one int: harmless); the compiler cannot
// know that, so the loads stay.
__global__ void l2_clean_flush_kernel(const int4* __restrict__ buf, long long n,
                                      int* __restrict__ sink, int evict_first) {
  int acc = 0;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    int4 v;
    if (evict_first) {
      asm volatile(
          "{\n\t.reg .b64 policy;\n\t"
          "createpolicy.fractional.L2::evict_first.b64 policy, 1.0;\n\t"
          "ld.global.L2::cache_hint.v4.s32 {%0, %1, %2, %3}, [%4], policy;\n\t}"
          : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
          : "l"(buf + i));
    } else {
      v = __ldcg(buf + i);
    }
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7eadbeef) *sink = acc;
}

// discard.global.L2 on every 128-byte line of buf (n_lines lines): the lines the
// read flush left in L2 are invalidated without a write-back, so the measured
// kernel starts, as after ncu's flush, with an L2 that is empty rather than full
// of clean lines. The buffer's contents become undefined; nothing reads them as data.
__global__ void l2_discard_kernel(const char* __restrict__ buf, long long n_lines) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_lines;
       i += stride) {
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(buf + i * 128) : "memory");
  }
}

}  // namespace iosim_cuda
