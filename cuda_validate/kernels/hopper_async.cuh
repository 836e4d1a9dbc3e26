// Hopper (sm_90a) building blocks shared by our wgmma + TMA kernels (../fa3/fa3_fwd.cu and
// wg1_fwd.cuh): mbarriers, TMA tensor copies, wgmma fences and shared-memory matrix descriptors
// for the 128-byte swizzle, and on the host the TMA tensor map of a 2-D row-major tensor.
// Shared-memory image of a (rows x D) 16-bit tile: D/64 column blocks of (rows x 128 bytes), the
// 16-byte chunk c of row r at chunk c ^ (r % 8), 1024-byte aligned (TMA's SWIZZLE_128B box image).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace iosim_hopper {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// 1-D bulk copy global -> shared (cp.async.bulk, the TMA unit's non-tensor form) of `bytes`
// (a multiple of 16), completing on the mbarrier `bar`.
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, unsigned bytes,
                                          uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int x, int y,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
// Keeps the compiler from moving register reads/writes of an in-flight wgmma's operands across
// the issue or the wait (the hardware reads/writes them asynchronously).
template <int N>
__device__ __forceinline__ void reg_fence(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void reg_fence(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}

// K-major, 128-byte swizzle (as ../microbench/wgmma_smem.cuh): SBO = 1024 (8 rows).
__device__ __forceinline__ uint64_t desc_kmajor(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) |
         (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}
// MN-major, 128-byte swizzle (V as B of P V: N = d contiguous in 128-byte rows, K = key rows):
// the next 64 columns of d (the next column block) `mn_stride` bytes on, the next 8 key rows
// 1024 bytes on. PTX/CUTLASS put the MN-atom stride in LBO and the 8-row stride in SBO for
// MN-major swizzled layouts; `swap` tries the other way round (d = 64 has one column block and
// sets both to 1024).
__device__ __forceinline__ uint64_t desc_mnmajor(uint32_t addr, uint32_t mn_stride, int swap) {
  const uint64_t lbo = swap ? 1024 : mn_stride, sbo = swap ? mn_stride : 1024;
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) |
         (uint64_t{1} << 62);
}


// ---- host: TMA tensor maps ----
// cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda); null if absent.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    cudaDriverEntryPointQueryResult q;
    void* p = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return nullptr;
    fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}

// A row-major [rows, cols] tensor of `elem_bytes`-byte elements, boxes of box_cols x box_rows,
// 128-byte swizzle (box_cols * elem_bytes must be 128), L2 promotion 256 B, out-of-bounds
// elements read as zero. Returns the encoder's result (CUDA_ERROR_NOT_FOUND: no encoder).
inline CUresult make_tensor_map_2d(CUtensorMap* m, CUtensorMapDataType type, int elem_bytes,
                                   const void* p, size_t rows, int cols, int box_cols,
                                   int box_rows) {
  const auto fn = tensor_map_encode_fn();
  if (!fn) return CUDA_ERROR_NOT_FOUND;
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * elem_bytes};
  cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  cuuint32_t estr[2] = {1, 1};
  return fn(m, type, 2, const_cast<void*>(p), dims, strides, box, estr,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

}  // namespace iosim_hopper
