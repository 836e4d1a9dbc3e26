#pragma once
// Numeric execution of a schedule: the same op stream the engine counts, interpreted with Eigen
// in FP32, CTA by CTA. Each CTA has on-chip buffers named by tensor; a load copies a global tile
// into the buffer, a compute transforms buffers (semantics per ComputeKind below), a store copies
// the buffer out. Comparing the outputs with a plain FP64 reference proves that the emitted
// schedule (its loads, loop bounds, skipped blocks and rescaling) computes exact attention.
#include <cstdint>
#include <optional>

#include "sim/problem.hpp"
#include "sim/schedule.hpp"

namespace iosim {

class BlockMask;  // sim/block_mask.hpp

struct NumericResult {
  double max_abs_error_o = 0.0;              // max |O - O_ref| (0 for a backward alone)
  std::optional<double> max_abs_error_lse;   // max |L - L_ref| when the forward writes L
  std::optional<double> max_abs_error_grad;  // max over dQ, dK, dV when there is a backward
  double max_abs_error() const;              // the largest of them
};

/// Largest problem --execute accepts, in multiply-adds of the reference (B*H*N*N_kv*d).
inline constexpr double kMaxExecuteMacs = 4e9;

/// Runs `schedule` on random inputs (Q, K, V and, with a backward, dO) drawn from `seed` and
/// compares with an FP64 reference: O and L for a forward, the gradients dQ, dK, dV for a
/// backward (computed by their analytic formulas). A backward alone (--pass bwd) starts from the
/// reference's forward state (O, L or m and l, P). With `blocks`, the reference is dense
/// attention under the same block mask. Throws ConfigError when the problem is larger than
/// kMaxExecuteMacs, InternalError when the op stream is inconsistent (a compute without its
/// operands, a store of the wrong shape).
NumericResult execute_schedule(const Schedule& schedule, const AttentionProblem& problem,
                               std::uint64_t seed, const BlockMask* blocks = nullptr);

}  // namespace iosim
