#pragma once
// Numeric execution of a schedule: the same op stream the engine counts, interpreted with Eigen
// in FP32, CTA by CTA. Each CTA has on-chip buffers named by tensor; a load copies a global tile
// into the buffer, a compute transforms buffers (semantics per ComputeKind below), a store copies
// the buffer out. Comparing the outputs with a plain FP64 reference proves that the emitted
// schedule (its loads, loop bounds, skipped blocks and rescaling) computes exact attention.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "sim/schedule/problem.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim {

class BlockMask;  // sim/schedule/block_mask.hpp

struct NumericResult {
  double max_abs_error_o = 0.0;              // max |O - O_ref| (0 for a backward alone)
  std::optional<double> max_abs_error_lse;   // max |L - L_ref| when the forward writes L
  std::optional<double> max_abs_error_grad;  // max over dQ, dK, dV when there is a backward
  double max_abs_error() const;              // the largest of them
};

/// x rounded to fp8 e4m3 (1 sign, 4 exponent, 3 mantissa bits, exponent bias 7): to nearest,
/// ties to even, subnormals down to 2^-9, magnitudes beyond the largest finite value 448
/// saturated to +-448 (as a saturating conversion, cvt.rn.satfinite.e4m3x2.f32, does).
float round_e4m3(float x);

/// A matrix the executor holds, in Eigen's column-major FP32 layout, lent to an observer.
struct MatrixView {
  std::int64_t rows = 0, cols = 0;
  const float* data = nullptr;
  float at(std::int64_t i, std::int64_t j) const { return data[j * rows + i]; }
};

/// Sees the numbers as the executor computes them (`iosim explain --execute`). Executing never
/// depends on it.
class NumericObserver {
 public:
  virtual ~NumericObserver() = default;
  /// After op number `index` (0, 1, ... in program order) of CTA `cta` of kernel `kernel` ran;
  /// `on_chip(t)` is the CTA's buffer of tensor t (0 x 0 when it holds none).
  virtual void on_op(std::size_t kernel, std::int64_t cta, std::size_t index, const TileOp& op,
                     const std::function<MatrixView(TensorId)>& on_chip) = 0;
  /// The FP64 reference of output `t` (O; with a backward also dQ, dK, dV) for matrix `bh`
  /// (batch * heads + head), row-major.
  virtual void on_reference(TensorId t, std::int64_t bh, const std::vector<double>& values,
                            std::int64_t rows, std::int64_t cols) = 0;
};

/// Largest problem --execute accepts, in multiply-adds of the reference (B*H*N*N_kv*d).
inline constexpr double kMaxExecuteMacs = 4e9;

/// Bytes execute_schedule takes for `schedule` (an upper estimate): every tensor it declares in
/// FP32, the FP64 reference of one head at a time (S, P, the dropout mask, P after dropout and a
/// temporary: 5 N x N_kv matrices; a backward adds dP, dS and two temporaries), the references'
/// outputs of every head, and with a backward alone every head's P, P after dropout and mask,
/// which it starts from. Measured (ru_maxrss): flash2 N = 4096, d = 64 forward 0.55 GB against
/// 0.69 GB estimated; standard N = 2048, d = 16 forward and backward 0.32 GB against 0.38 GB.
double execute_memory_bytes(const Schedule& schedule, const AttentionProblem& p);

/// Throws ConfigError when `p` is larger than kMaxExecuteMacs or, given its schedule, when
/// executing it would take more than the memory budget (sim/base/memory_budget.hpp; the message
/// gives the estimate): the multiply-add limit alone admitted N = 30000 at d = 4, whose N x N_kv
/// FP64 reference took 7 GB and more. A run
/// that will execute checks the problem before it plans and the schedule before it simulates (a
/// refused run costs nothing); execute_schedule checks both again.
void check_executable(const AttentionProblem& p, const Schedule* schedule = nullptr);

/// Runs `schedule` on random inputs (Q, K, V and, with a backward, dO) drawn from `seed` and
/// compares with an FP64 reference: O and L for a forward, the gradients dQ, dK, dV for a
/// backward (computed by their analytic formulas). A backward alone (--pass bwd) starts from the
/// reference's forward state (O, L or m and l, P). With `blocks`, the reference is dense
/// attention under the same block mask. Throws ConfigError when the problem is larger than
/// kMaxExecuteMacs, InternalError when the op stream is inconsistent (a compute without its
/// operands, a store of the wrong shape).
///
/// With --dtype fp8 (FlashAttention-3's FP8 forward) the schedule runs on quantized operands
/// while the reference keeps the unquantized FP32 inputs in FP64, so the error reported is FP8's:
/// each Q, K or V tile a CTA loads is quantized with its own scale (block quantization, FA3
/// section 3.3: scale = max |x| over the tile / 448, x~ = scale * e4m3(x / scale); the descale
/// multiplies the FP32 products, which here is the product of the descaled values), and P is
/// converted to e4m3 before P V as FA3 does: e4m3(2^8 P) / 2^8 (FA3's Max_offset = 8 puts P in
/// [0, 256] so that small probabilities stay normal; l sums the unconverted P). Everything else
/// is FP32; O is not rounded to bf16 (nor, for 16-bit runs, to fp16).
/// With --kv-dtype fp8 (an FP8 K/V cache under an fp16 or bf16 decode) K and V are stored
/// quantized, one scale per tensor (amax / 448), and the reference reads the same dequantized
/// values: the error reported is the schedule's alone, as for 16-bit runs.
/// With a latent cache (--latent-dim) the reference's V is the first latent_dim columns of K (no
/// V tensor is declared) and O has latent_dim columns.
/// With `observer`, tells it every op's buffers and the reference output.
NumericResult execute_schedule(const Schedule& schedule, const AttentionProblem& problem,
                               std::uint64_t seed, const BlockMask* blocks = nullptr,
                               NumericObserver* observer = nullptr);

}  // namespace iosim
