#pragma once
// Tiling constants shared by the standard (unfused) forward and backward schedules.
#include <algorithm>
#include <cstdint>

#include "algorithms/algorithm.hpp"

namespace iosim::standard_tiles {

// GEMM main loops: the shared-memory footprint is that of a CUTLASS-like pipeline (k-chunks of
// kSmemChunk, `pipeline_stages` deep); loads are emitted in coarser chunks of kLoadChunk along k,
// which moves the same bytes with fewer ops (the engine's cost is per contiguous run).
constexpr std::int64_t kSmemChunk = 32;
constexpr std::int64_t kLoadChunk = 128;
constexpr std::int64_t kElementwiseElems = 8192;  // scores per CTA of the elementwise kernels

// Rows x cols tile of an N x N_kv pass. Elementwise passes split long rows into column chunks;
// the softmax (and its gradient) needs whole rows in one CTA.
struct ElementwiseTiling {
  std::int64_t rows, cols;
  ElementwiseTiling(std::int64_t seq_kv, bool whole_rows)
      : rows(std::max<std::int64_t>(1, kElementwiseElems / seq_kv)),
        cols(whole_rows ? seq_kv : std::min(seq_kv, kElementwiseElems)) {}
  /// One whole row per CTA: the forward softmax kernels launch a CTA per row (ours,
  /// cuda_validate's softmax_rows_kernel, and PyTorch's cunn_SoftMaxForward).
  static ElementwiseTiling one_row(std::int64_t seq_kv) {
    ElementwiseTiling t(seq_kv, true);
    t.rows = 1;
    return t;
  }
};

/// Shared memory of a GEMM CTA whose output tile is m_tile x n_tile, bytes.
inline std::int64_t gemm_smem(std::int64_t m_tile, std::int64_t n_tile, int stages,
                              std::int64_t elem_bytes) {
  return stages * (m_tile + n_tile) * kSmemChunk * elem_bytes;
}

/// Registers per thread of a GEMM CTA holding `accumulators` FP32 outputs.
inline int gemm_regs(std::int64_t accumulators, int threads) {
  return static_cast<int>(std::min<std::int64_t>(accumulators / threads + 48, 255));
}

/// Shared-memory operand reads of an (m x k)(k x n) warp-tiled product: warp tiles of 64 x 32,
/// so each A chunk is read by n/32 warps and each B chunk by m/64.
inline std::int64_t gemm_smem_reads(std::int64_t m, std::int64_t n, std::int64_t k,
                                    std::int64_t elem_bytes) {
  return (m * ceil_div(n, 32) + n * ceil_div(m, 64)) * k * elem_bytes;
}

}  // namespace iosim::standard_tiles
