// Device-side building blocks shared by the attention kernels: asynchronous
// global->shared copies (cp.async), shared->register matrix loads (ldmatrix),
// tensor-core products (mma.sync m16n8k16) and the shared-memory swizzle.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), with
// g = lane / 4 and t = lane % 4:
//   A (16x16, row):  a0 = (g,   2t..2t+1)  a1 = (g+8, 2t..2t+1)
//                    a2 = (g,   2t+8..9)   a3 = (g+8, 2t+8..9)
//   B (16x8, col):   b0 = (k = 2t..2t+1, n = g)   b1 = (k = 2t+8..9, n = g)
//   C (16x8, f32):   c0,c1 = (g, 2t..2t+1)        c2,c3 = (g+8, 2t..2t+1)
// The C layout of two adjacent n-tiles equals the A layout of one k-chunk,
// which is why S/P never leave registers between the two products.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace iosim_cuda {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global->shared copy that bypasses L1 (.cg). When `valid` is false
// nothing is read and the 16 bytes are zero-filled: ragged tiles load zeros.
__device__ __forceinline__ void cp_async_16(uint32_t s_dst, const void* g_src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s_dst), "l"(g_src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t s_addr, uint32_t& r0, uint32_t& r1,
                                            uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(s_addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t s_addr, uint32_t& r0, uint32_t& r1,
                                                  uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(s_addr));
}

// c += a * b on the tensor cores: fp16 inputs, fp32 accumulation.
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The same with bf16 inputs (bf16 tiles are the same bytes as fp16 ones to every copy path).
__device__ __forceinline__ void mma_16816_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                               uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats -> one register of two halves; the lower column goes in the low half.
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

// Element type T (half or __nv_bfloat16) dispatch of the two above.
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return pack_bf16x2(lo, hi);
  else
    return pack_half2(lo, hi);
}
template <typename T>
__device__ __forceinline__ void mma_16816_t(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                            uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    mma_16816_bf16(c, a, b0, b1);
  else
    mma_16816(c, a, b0, b1);
}

// 2^x with the SFU instruction; ex2.approx(-inf) = +0, which masked scores rely on.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Shared tiles are (rows, kD) halves, row-major with no padding, stored in
// 16-byte chunks whose index is XORed with (row % 8). ldmatrix reads one chunk
// from each of 8 consecutive rows; without the swizzle those 8 chunks sit in
// the same four banks (the row pitch is a multiple of 128 bytes) and the load
// serializes 8-way.
//
// Why not pad rows instead: cp.async moves whole 32-byte sectors, and a shared
// row that starts 16 bytes off a sector boundary makes each of its sectors
// straddle two shared-memory sectors. Measured on an H200 with a 16-byte pad:
// 1.5x the L2 read sectors of the data (every other row misaligned), which
// would make these kernels disagree with any byte count.
template <int kD>
__host__ __device__ constexpr int smem_pitch() {
  return kD;
}
template <int kD>
__device__ __forceinline__ int swz(int row, int chunk) {
  static_assert(kD % 64 == 0, "the swizzle needs at least 8 chunks per row");
  return row * kD + ((chunk ^ (row & 7)) << 3);
}

// ldmatrix addresses: lane L reads row R(L) = R0 + (L's row in the 8x8 group)
// and chunk 2k + c(L), c(L) in {0, 1}. Whenever R0 is a multiple of 8,
// R % 8 = L % 8, and because 2k is even, (2k + c) ^ (R % 8) = 2k ^ (c ^ L % 8).
// So the swizzled byte offset within a row is (x_lane ^ 32k) with the
// per-lane x_lane = (c ^ (L % 8)) * 16: one XOR per step, no per-chunk
// registers.
__device__ __forceinline__ uint32_t ldsm_lane_xor(int c_lane, int lane) {
  return static_cast<uint32_t>((c_lane ^ (lane & 7)) << 4);
}

// Cooperative copy of rows [row0, row0 + kRows) of a (n_rows, kD) global tensor
// into a swizzled (kRows, kD) shared tile; rows past n_rows are zero-filled.
template <int kRows, int kD, int kThreads>
__device__ __forceinline__ void load_tile_async(half* s_tile, const half* g_base, int row0,
                                                int n_rows) {
  constexpr int kChunksPerRow = kD / 8;
  constexpr int kChunks = kRows * kChunksPerRow;
  static_assert(kChunks % kThreads == 0, "tile chunks must divide among threads");
#pragma unroll
  for (int it = 0; it < kChunks / kThreads; ++it) {
    const int idx = it * kThreads + static_cast<int>(threadIdx.x);
    const int row = idx / kChunksPerRow;
    const int chunk = idx % kChunksPerRow;
    const bool valid = row0 + row < n_rows;
    // Point at a row that exists even when nothing is read.
    const half* g_src = g_base + static_cast<int64_t>(valid ? row0 + row : 0) * kD + chunk * 8;
    cp_async_16(smem_addr(s_tile + swz<kD>(row, chunk)), g_src, valid);
  }
}

// Cooperative 16-byte stores of a swizzled (kRows, kD) shared tile to rows
// [row0, row0 + kRows) of a (n_rows, kD) global tensor; rows past n_rows are skipped.
template <int kRows, int kD, int kThreads>
__device__ __forceinline__ void store_tile(half* g_base, const half* s_tile, int row0,
                                           int n_rows) {
  constexpr int kChunksPerRow = kD / 8;
  constexpr int kChunks = kRows * kChunksPerRow;
  static_assert(kChunks % kThreads == 0, "tile chunks must divide among threads");
#pragma unroll
  for (int it = 0; it < kChunks / kThreads; ++it) {
    const int idx = it * kThreads + static_cast<int>(threadIdx.x);
    const int row = idx / kChunksPerRow;
    const int chunk = idx % kChunksPerRow;
    if (row0 + row < n_rows) {
      const uint4 v = *reinterpret_cast<const uint4*>(s_tile + swz<kD>(row, chunk));
      *reinterpret_cast<uint4*>(g_base + static_cast<int64_t>(row0 + row) * kD + chunk * 8) = v;
    }
  }
}

// Inputs and outputs of one attention forward call. Layouts: Q, O (B, H, N, d);
// K, V (B, H, Nkv, d); L, m, l (B, H, N). All contiguous.
struct AttnParams {
  const half* gQ;
  const half* gK;
  const half* gV;
  half* gO;
  float* gL;  // flash2: log-sum-exp of each row (natural log)
  float* gm;  // flash1: running row max of the scaled scores
  float* gl;  // flash1: running row sum of exp(score - m)
  int batch;
  int heads;
  int seq;     // N
  int seq_kv;  // Nkv
  float scale;
  bool causal;  // bottom-right aligned: query i sees key j iff j <= i + (Nkv - N)
  // flash2 only, with causal: a sliding window of W keys (iosim's --window), query i sees key j
  // iff i + (Nkv - N) - W < j <= i + (Nkv - N); 0: no window.
  int window;
};

}  // namespace iosim_cuda
