#pragma once
// One CTA's op stream run numerically, for execute_schedule() (numerics/numeric_executor.cpp):
// the global tensors in FP32, the CTA's on-chip buffers named by tensor, and what each op and each
// ComputeKind computes (the kinds whose rows in algorithms/compute_ops.cpp give them a numeric
// meaning). Internal to numerics/.
#include <Eigen/Dense>
#include <array>
#include <cstdint>
#include <vector>

#include "numerics/numeric_executor.hpp"
#include "sim/base/errors.hpp"
#include "sim/schedule/problem.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim::numerics {

using Mat = Eigen::MatrixXf;

// The largest finite e4m3 value (round_e4m3() saturates to it).
inline constexpr float kE4m3Max = 448.0f;

// Global memory: per tensor, one FP32 matrix per (batch, head).
struct Globals {
  std::array<std::vector<Mat>, kTensorCount> data;
  std::array<bool, kTensorCount> declared{};

  std::vector<Mat>& of(TensorId t) {
    ensure(declared[index_of(t)], "tensor {} used but not declared", tensor_name(t));
    return data[index_of(t)];
  }
};

class CtaInterpreter {
 public:
  CtaInterpreter(Globals& g, const AttentionProblem& p, std::uint64_t seed)
      : g_(g), p_(p), seed_(seed), scale_(static_cast<float>(p.scale())) {}

  void run(const std::vector<TileOp>& ops, std::size_t kernel = 0, std::int64_t cta = 0,
           NumericObserver* observer = nullptr);

 private:
  Mat& buf(TensorId t) { return buf_[index_of(t)]; }

  // The fp32 buffer a gradient is converted from.
  static TensorId accumulator_of(TensorId grad) {
    if (grad == TensorId::dK) return TensorId::dKaccum;
    if (grad == TensorId::dV) return TensorId::dVaccum;
    return TensorId::dQaccum;
  }
  // The on-chip buffer a reduce adds into a global tensor: dQ's share is computed into its own
  // buffer (dq_partial); a grouped-query head's dK and dV shares are its fp32 dK, dV accumulators.
  static TensorId reduced_from(TensorId global) {
    if (global == TensorId::dKaccum) return TensorId::dK;
    if (global == TensorId::dVaccum) return TensorId::dV;
    return global;
  }

  Mat& operand(TensorId t, Eigen::Index rows, Eigen::Index cols);

  void compute(const TileOp& op);

  // X of the backward formulas: the probabilities after dropout when there is dropout.
  const Mat& probabilities(Eigen::Index r, Eigen::Index c) {
    return operand(p_.dropout > 0 ? TensorId::P_drop : TensorId::P, r, c);
  }

  // 1 where dropout keeps score (row, col) of the tile. Unfused kernels read the mask the
  // forward saved (`from_chip`, when it is on chip); fused ones regenerate it from the indices.
  Mat keep_mask(const TileRef& t, bool from_chip);

  // V of a score tile of `c` keys, c x value_dim(): the V tile on chip or, with a latent cache
  // (--latent-dim, multi-head latent attention), the first value_dim() columns of the K tile on
  // chip (no V is loaded).
  Eigen::Ref<const Mat> value_tile(Eigen::Index c);

  void backward(const TileOp& op);

  // Split-KV decoding. A split normalizes its own result and keeps its log-sum-exp; the reduce
  // kernel combines the splits with the online-softmax recurrence over their log-sum-exps (m, l
  // and O of init_state, then finalize), which weights split s by exp(lse_s - lse).
  void split_kv(const TileOp& op);

  // Algorithm 1, lines 9-13: O, l, m hold the normalized result over the K/V blocks seen so far.
  void flash1_update(const TileRef& t);

  Globals& g_;
  const AttentionProblem& p_;
  std::uint64_t seed_;
  float scale_;
  std::array<Mat, kTensorCount> buf_;
};

}  // namespace iosim::numerics
