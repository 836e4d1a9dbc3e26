#pragma once
// The tensors an attention schedule moves, named with docs/DESIGN.md's vocabulary, and their
// declarations (shape in global memory). Every tensor is a stack of row-major matrices:
// Q is [B*H][N][d], S is [B*H][N][Nkv], L is [B*H][N][1], and so on.
#include <array>
#include <cstdint>
#include <string_view>

namespace iosim {

enum class TensorId : std::uint8_t {
  Q,
  K,
  V,
  O,
  S,
  P,
  dO,
  dQ,
  dK,
  dV,
  L,  // log-sum-exp per query row (fp32)
  m,
  l,             // running row max and row sum (fp32), FlashAttention-1
  dropout_mask,  // 1 byte per score, written by unfused dropout
  partial_O,
  partial_lse,
  block_table,
  // Backward pass: D = rowsum(dO o O) per query row (fp32); dP and dS, the score gradients
  // unfused backward passes materialize; dQaccum, the fp32 buffer FlashAttention-2's backward
  // accumulates dQ into with atomics; P_drop, P after unfused dropout (kept apart from P because
  // the softmax gradient needs the undropped probabilities).
  D,
  dP,
  dS,
  dQaccum,
  P_drop,
  // Grouped-query backward (flash3): the fp32 buffers the g query heads of a K/V head add their
  // dK and dV shares into (FlashAttention-3's dk_accum, dv_accum), converted after the main kernel.
  dKaccum,
  dVaccum,
  // The ops of a transformer layer around attention (transformer/): a GEMM's activations X
  // [M][K], its weights W [N][K] (stored as nn.Linear stores them) and its output Y [M][N]; the
  // residual stream R that an add reads beside X; a projection's bias vector [1][N].
  X,
  W,
  Y,
  R,
  bias,
  // Split-K GEMMs: the fp32 partial outputs [split][M][N] each K slice's CTAs write to a
  // workspace, which a reduction kernel sums into Y (cuBLAS's splitKreduce).
  Y_partial,
  kCount
};

inline constexpr std::size_t kTensorCount = static_cast<std::size_t>(TensorId::kCount);

/// A count for each tensor (bytes read, written back, ...), indexed by index_of(TensorId): what
/// the engine's counters and the L2's write-backs are kept in.
using PerTensor = std::array<std::uint64_t, kTensorCount>;

// At namespace scope, not a local of tensor_name(): a local array would be built on every call,
// and the engine names a tensor in the bounds check of every tile it moves.
inline constexpr std::array<std::string_view, kTensorCount> kTensorNames = {
    "Q",         "K",           "V",           "O", "S",  "P",  "dO",
    "dQ",        "dK",          "dV",          "L", "m",  "l",  "dropout_mask",
    "partial_O", "partial_lse", "block_table", "D", "dP", "dS", "dQaccum",
    "P_drop",    "dKaccum",     "dVaccum",     "X", "W",  "Y",  "R",
    "bias",      "Y_partial"};

/// The vocabulary name of a tensor ("Q", "dropout_mask", ...).
constexpr std::string_view tensor_name(TensorId t) {
  return kTensorNames[static_cast<std::size_t>(t)];
}

constexpr std::size_t index_of(TensorId t) {
  return static_cast<std::size_t>(t);
}

/// A tensor in global memory: `matrices` row-major matrices of rows x cols elements.
struct TensorDecl {
  TensorId id{};
  std::int64_t matrices = 0;  // e.g. B*H, or B*H_kv for K/V under grouped-query attention
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t elem_bytes = 0;

  std::int64_t matrix_bytes() const { return rows * cols * elem_bytes; }
  std::int64_t total_bytes() const { return matrices * matrix_bytes(); }
};

}  // namespace iosim
