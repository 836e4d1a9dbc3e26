#include "sim/numerics/numeric_executor.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sim/schedule/block_mask.hpp"
#include "sim/schedule/block_table.hpp"
#include "sim/base/errors.hpp"

namespace iosim {
namespace {

using Mat = Eigen::MatrixXf;
using MatD = Eigen::MatrixXd;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

constexpr float kE4m3Max = 448.0f;
// FA3's Max_offset: P is exponentiated 2^8 higher (exp2(x - max + 8)) before its e4m3 conversion.
constexpr float kFp8POffset = 256.0f;

// A tile quantized with one scale (FlashAttention-3's block quantization), returned descaled.
Mat quantize_block_e4m3(const Mat& x) {
  const float amax = x.size() > 0 ? x.cwiseAbs().maxCoeff() : 0.0f;
  if (amax == 0.0f || !std::isfinite(amax)) return x;
  const float scale = amax / kE4m3Max;
  return x.unaryExpr([scale](float v) { return scale * round_e4m3(v / scale); });
}

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
           NumericObserver* observer = nullptr) {
    for (Mat& b : buf_) b.resize(0, 0);
    const std::function<MatrixView(TensorId)> on_chip = [this](TensorId t) {
      const Mat& b = buf(t);
      return MatrixView{b.rows(), b.cols(), b.data()};
    };
    for (std::size_t index = 0; index < ops.size(); ++index) {
      const TileOp& op = ops[index];
      switch (op.kind) {
        case OpKind::load: {
          const TileRef& t = op.tile;
          const Mat& src = g_.of(t.tensor).at(static_cast<std::size_t>(t.matrix));
          ensure(t.row0 >= 0 && t.col0 >= 0 && t.row0 + t.rows <= src.rows() &&
                     t.col0 + t.cols <= src.cols(),
                 "load of {} matrix {} rows [{}, {}) outside its {}x{} data", tensor_name(t.tensor),
                 t.matrix, t.row0, t.row0 + t.rows, src.rows(), src.cols());
          Mat& dst = buf(t.tensor);
          if (op.append && dst.size() > 0) {  // a gather: the rows go below those on chip
            ensure(dst.cols() == t.cols, "gather of {} with {} columns onto a tile of {}",
                   tensor_name(t.tensor), t.cols, dst.cols());
            Mat stacked(dst.rows() + t.rows, t.cols);
            stacked << dst, src.block(t.row0, t.col0, t.rows, t.cols);
            dst = std::move(stacked);
          } else {
            dst = src.block(t.row0, t.col0, t.rows, t.cols);
          }
          const bool qkv =
              t.tensor == TensorId::Q || t.tensor == TensorId::K || t.tensor == TensorId::V;
          if (p_.dtype == Dtype::fp8 && qkv) dst = quantize_block_e4m3(dst);
          break;
        }
        case OpKind::store: {
          const TileRef& t = op.tile;
          const Mat& src = buf(t.tensor);
          ensure(src.rows() == t.rows && src.cols() == t.cols,
                 "store of {} with a {}x{} buffer into a {}x{} tile", tensor_name(t.tensor),
                 src.rows(), src.cols(), t.rows, t.cols);
          g_.of(t.tensor)
              .at(static_cast<std::size_t>(t.matrix))
              .block(t.row0, t.col0, t.rows, t.cols) = src;
          break;
        }
        case OpKind::compute:
          compute(op);
          break;
        case OpKind::reduce: {  // an atomic add: the order of CTAs does not matter
          const TileRef& t = op.tile;
          const Mat& src = operand(reduced_from(t.tensor), t.rows, t.cols);
          g_.of(t.tensor)
              .at(static_cast<std::size_t>(t.matrix))
              .block(t.row0, t.col0, t.rows, t.cols) += src;
          break;
        }
      }
      if (observer != nullptr) observer->on_op(kernel, cta, index, op, on_chip);
    }
  }

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

  Mat& operand(TensorId t, Eigen::Index rows, Eigen::Index cols) {
    Mat& b = buf(t);
    ensure(b.rows() == rows && b.cols() == cols, "operand {} is {}x{} on chip, the op needs {}x{}",
           tensor_name(t), b.rows(), b.cols(), rows, cols);
    return b;
  }

  void compute(const TileOp& op) {
    const TileRef& t = op.tile;
    const Eigen::Index r = t.rows, c = t.cols, d = p_.head_dim;
    switch (op.compute) {
      case ComputeKind::init_state:
        buf(TensorId::O) = Mat::Zero(r, d);
        buf(TensorId::m) = Mat::Constant(r, 1, kNegInf);
        buf(TensorId::l) = Mat::Zero(r, 1);
        break;
      case ComputeKind::scores:
      case ComputeKind::scores_accumulate: {
        const Mat& q = buf(TensorId::Q);
        const Mat& k = buf(TensorId::K);
        ensure(q.rows() == r && k.rows() == c && q.cols() == k.cols(),
               "scores: Q/K tiles on chip do not match the score tile");
        if (op.compute == ComputeKind::scores) {
          buf(TensorId::S) = scale_ * (q * k.transpose());
        } else {
          operand(TensorId::S, r, c) += scale_ * (q * k.transpose());
        }
        break;
      }
      case ComputeKind::apply_mask: {
        Mat& s = operand(TensorId::S, r, c);
        for (Eigen::Index i = 0; i < r; ++i)
          for (Eigen::Index j = 0; j < c; ++j)
            if (!score_visible(p_, t.row0 + i, t.col0 + j)) s(i, j) = kNegInf;
        break;
      }
      case ComputeKind::softmax_rows: {
        const Mat& s = operand(TensorId::S, r, c);
        ensure(c == p_.seq_kv, "softmax_rows needs whole rows on chip");
        Mat pr(r, c);
        for (Eigen::Index i = 0; i < r; ++i) {
          const float mx = s.row(i).maxCoeff();
          pr.row(i) = (s.row(i).array() - mx).exp().matrix();
          pr.row(i) /= pr.row(i).sum();
        }
        buf(TensorId::P) = pr;
        break;
      }
      case ComputeKind::apply_dropout: {
        // P stays: the backward's softmax gradient needs the undropped probabilities.
        const Mat keep = keep_mask(t, false);
        buf(TensorId::P_drop) = operand(TensorId::P, r, c).cwiseProduct(keep) *
                                static_cast<float>(1.0 / (1.0 - p_.dropout));
        buf(TensorId::dropout_mask) = keep;
        break;
      }
      case ComputeKind::online_softmax: {
        const Mat& s = operand(TensorId::S, r, c);
        Mat& m = operand(TensorId::m, r, 1);
        Mat& l = operand(TensorId::l, r, 1);
        Mat& o = operand(TensorId::O, r, d);
        Mat pr(r, c);
        for (Eigen::Index i = 0; i < r; ++i) {
          const float m_new = std::max(m(i), s.row(i).maxCoeff());
          if (m_new == kNegInf) {  // every score so far hidden: nothing to add
            pr.row(i).setZero();
            continue;
          }
          pr.row(i) = (s.row(i).array() - m_new).exp().matrix();
          const float corr = std::exp(m(i) - m_new);  // 0 when m was -inf
          l(i) = corr * l(i) + pr.row(i).sum();
          o.row(i) *= corr;
          m(i) = m_new;
        }
        buf(TensorId::P) = pr;
        break;
      }
      case ComputeKind::accumulate_pv: {
        const Mat& pr = probabilities(r, c);
        const Mat& v = operand(TensorId::V, c, d);
        if (p_.dtype == Dtype::fp8) {
          const Mat p8 = pr.unaryExpr([](float x) { return round_e4m3(kFp8POffset * x); });
          operand(TensorId::O, r, d) += (p8 * v) / kFp8POffset;
        } else {
          operand(TensorId::O, r, d) += pr * v;
        }
        break;
      }
      case ComputeKind::finalize: {
        Mat& o = operand(TensorId::O, r, d);
        const Mat& m = operand(TensorId::m, r, 1);
        const Mat& l = operand(TensorId::l, r, 1);
        Mat lse(r, 1);
        for (Eigen::Index i = 0; i < r; ++i) {
          if (l(i) == 0.0f) {  // a row that saw no key (block-sparse): O = 0, L = +inf as FA2
            o.row(i).setZero();
            lse(i) = std::numeric_limits<float>::infinity();
            continue;
          }
          o.row(i) /= l(i);
          lse(i) = m(i) + std::log(l(i));
        }
        buf(TensorId::L) = lse;
        break;
      }
      case ComputeKind::flash1_update:
        flash1_update(t);
        break;
      case ComputeKind::finalize_partial:
      case ComputeKind::combine_partial:
        split_kv(op);
        break;
      case ComputeKind::zero_grad:
      case ComputeKind::row_dot:
      case ComputeKind::recompute_p:
      case ComputeKind::recompute_p_ml:
      case ComputeKind::accumulate_dv:
      case ComputeKind::grad_p:
      case ComputeKind::grad_p_accumulate:
      case ComputeKind::dropout_grad:
      case ComputeKind::grad_s:
      case ComputeKind::softmax_grad_rows:
      case ComputeKind::mask_grad:
      case ComputeKind::accumulate_dq:
      case ComputeKind::dq_partial:
      case ComputeKind::accumulate_dk:
      case ComputeKind::convert_dq:
        backward(op);
        break;
    }
  }

  // X of the backward formulas: the probabilities after dropout when there is dropout.
  const Mat& probabilities(Eigen::Index r, Eigen::Index c) {
    return operand(p_.dropout > 0 ? TensorId::P_drop : TensorId::P, r, c);
  }

  // 1 where dropout keeps score (row, col) of the tile. Unfused kernels read the mask the
  // forward saved (`from_chip`, when it is on chip); fused ones regenerate it from the indices.
  Mat keep_mask(const TileRef& t, bool from_chip) {
    if (from_chip && buf(TensorId::dropout_mask).rows() == t.rows &&
        buf(TensorId::dropout_mask).cols() == t.cols) {
      return buf(TensorId::dropout_mask);
    }
    Mat keep(t.rows, t.cols);
    for (Eigen::Index i = 0; i < t.rows; ++i)
      for (Eigen::Index j = 0; j < t.cols; ++j)
        keep(i, j) = dropout_keeps(p_, seed_, t.matrix, t.row0 + i, t.col0 + j) ? 1.0f : 0.0f;
    return keep;
  }

  void backward(const TileOp& op) {
    const TileRef& t = op.tile;
    const Eigen::Index r = t.rows, c = t.cols, d = p_.head_dim;
    switch (op.compute) {
      case ComputeKind::zero_grad:
        buf(t.tensor) = Mat::Zero(r, d);
        break;
      case ComputeKind::row_dot:
        buf(TensorId::D) =
            operand(TensorId::dO, r, d).cwiseProduct(operand(TensorId::O, r, d)).rowwise().sum();
        break;
      case ComputeKind::recompute_p:
      case ComputeKind::recompute_p_ml: {
        const Mat& s = operand(TensorId::S, r, c);
        Mat pr(r, c);
        for (Eigen::Index i = 0; i < r; ++i) {
          if (op.compute == ComputeKind::recompute_p) {
            // L = +inf for a row that saw no key: exp(S - L) = 0 there.
            pr.row(i) = (s.row(i).array() - operand(TensorId::L, r, 1)(i)).exp().matrix();
          } else {
            pr.row(i) = (s.row(i).array() - operand(TensorId::m, r, 1)(i)).exp().matrix() /
                        operand(TensorId::l, r, 1)(i);
          }
        }
        buf(TensorId::P) = pr;
        break;
      }
      case ComputeKind::accumulate_dv: {
        const Mat& x = probabilities(r, c);
        operand(TensorId::dV, c, d) += x.transpose() * operand(TensorId::dO, r, d);
        break;
      }
      case ComputeKind::grad_p:
      case ComputeKind::grad_p_accumulate: {
        const Mat& dout = buf(TensorId::dO);
        const Mat& v = buf(TensorId::V);
        ensure(dout.rows() == r && v.rows() == c && dout.cols() == v.cols(),
               "grad_p: dO/V tiles on chip do not match the score tile");
        if (op.compute == ComputeKind::grad_p) {
          buf(TensorId::dP) = dout * v.transpose();
        } else {
          operand(TensorId::dP, r, c) += dout * v.transpose();
        }
        break;
      }
      case ComputeKind::dropout_grad: {
        const Mat keep = keep_mask(t, true);
        Mat& dp = operand(TensorId::dP, r, c);
        dp = dp.cwiseProduct(keep) * static_cast<float>(1.0 / (1.0 - p_.dropout));
        break;
      }
      case ComputeKind::grad_s: {
        const Mat& dp = operand(TensorId::dP, r, c);
        const Mat& dd = operand(TensorId::D, r, 1);
        buf(TensorId::dS) = operand(TensorId::P, r, c).cwiseProduct(dp - dd * Mat::Ones(1, c));
        break;
      }
      case ComputeKind::softmax_grad_rows: {
        ensure(c == p_.seq_kv, "softmax_grad_rows needs whole rows on chip");
        const Mat& pr = operand(TensorId::P, r, c);
        const Mat& dp = operand(TensorId::dP, r, c);
        const Mat dd = pr.cwiseProduct(dp).rowwise().sum();
        buf(TensorId::dS) = pr.cwiseProduct(dp - dd * Mat::Ones(1, c));
        break;
      }
      case ComputeKind::mask_grad: {
        Mat& ds = operand(TensorId::dS, r, c);
        for (Eigen::Index i = 0; i < r; ++i)
          for (Eigen::Index j = 0; j < c; ++j)
            if (!score_visible(p_, t.row0 + i, t.col0 + j)) ds(i, j) = 0.0f;
        break;
      }
      case ComputeKind::accumulate_dq:
        operand(TensorId::dQ, r, d) +=
            scale_ * (operand(TensorId::dS, r, c) * operand(TensorId::K, c, d));
        break;
      case ComputeKind::dq_partial:
        buf(TensorId::dQaccum) =
            scale_ * (operand(TensorId::dS, r, c) * operand(TensorId::K, c, d));
        break;
      case ComputeKind::accumulate_dk:
        operand(TensorId::dK, c, d) +=
            scale_ * (operand(TensorId::dS, r, c).transpose() * operand(TensorId::Q, r, d));
        break;
      case ComputeKind::convert_dq:
        buf(t.tensor) = operand(accumulator_of(t.tensor), r, d);
        break;
      default:
        ensure(false, "compute kind {} has no numeric semantics", static_cast<int>(op.compute));
    }
  }

  // Split-KV decoding. A split normalizes its own result and keeps its log-sum-exp; the reduce
  // kernel combines the splits with the online-softmax recurrence over their log-sum-exps (m, l
  // and O of init_state, then finalize), which weights split s by exp(lse_s - lse).
  void split_kv(const TileOp& op) {
    const Eigen::Index r = op.tile.rows, d = p_.head_dim;
    Mat& o = operand(TensorId::O, r, d);
    Mat& m = operand(TensorId::m, r, 1);
    Mat& l = operand(TensorId::l, r, 1);
    if (op.compute == ComputeKind::finalize_partial) {
      Mat part(r, d), lse(r, 1);
      for (Eigen::Index i = 0; i < r; ++i) {
        if (l(i) == 0.0f) {  // a split with no key for this row: weight zero in the reduce
          part.row(i).setZero();
          lse(i) = kNegInf;
          continue;
        }
        part.row(i) = o.row(i) / l(i);
        lse(i) = m(i) + std::log(l(i));
      }
      buf(TensorId::partial_O) = part;
      buf(TensorId::partial_lse) = lse;
      return;
    }
    const Mat& part = operand(TensorId::partial_O, r, d);
    const Mat& lse = operand(TensorId::partial_lse, r, 1);
    for (Eigen::Index i = 0; i < r; ++i) {
      if (lse(i) == kNegInf) continue;
      const float m_new = std::max(m(i), lse(i));
      const float corr = std::exp(m(i) - m_new);  // 0 when m was -inf
      const float w = std::exp(lse(i) - m_new);
      l(i) = corr * l(i) + w;
      o.row(i) = corr * o.row(i) + w * part.row(i);
      m(i) = m_new;
    }
  }

  // Algorithm 1, lines 9-13: O, l, m hold the normalized result over the K/V blocks seen so far.
  void flash1_update(const TileRef& t) {
    const Eigen::Index r = t.rows, c = t.cols, d = p_.head_dim;
    const Mat& s = operand(TensorId::S, r, c);
    const Mat& v = operand(TensorId::V, c, d);
    Mat& o = operand(TensorId::O, r, d);
    Mat& m = operand(TensorId::m, r, 1);
    Mat& l = operand(TensorId::l, r, 1);
    const float inv_keep = static_cast<float>(1.0 / (1.0 - p_.dropout));
    for (Eigen::Index i = 0; i < r; ++i) {
      const float m_tile = s.row(i).maxCoeff();
      if (m_tile == kNegInf) continue;  // this row sees no key of the block
      Eigen::RowVectorXf pt = (s.row(i).array() - m_tile).exp().matrix();
      const float l_tile = pt.sum();  // the normalizer counts dropped scores too
      if (p_.dropout > 0) {
        for (Eigen::Index j = 0; j < c; ++j)
          pt(j) *= dropout_keeps(p_, seed_, t.matrix, t.row0 + i, t.col0 + j) ? inv_keep : 0.0f;
      }
      const float m_new = std::max(m(i), m_tile);
      const float a = std::exp(m(i) - m_new), b = std::exp(m_tile - m_new);
      const float l_new = a * l(i) + b * l_tile;
      o.row(i) = ((l(i) * a) * o.row(i) + b * (pt * v)) / l_new;
      l(i) = l_new;
      m(i) = m_new;
    }
  }

  Globals& g_;
  const AttentionProblem& p_;
  std::uint64_t seed_;
  float scale_;
  std::array<Mat, kTensorCount> buf_;
};

// Attention of one (batch, head) in FP64, forward and, given dO, backward, by the analytic
// formulas (no finite differences). Z = keep / (1 - p) is dropout's scaling, X = P o Z:
//   O = X V,  dV = X^T dO,  dP = (dO V^T) o Z,  D = rowsum(dO o O),  dS = P o (dP - D),
//   dQ = scale dS K,  dK = scale dS^T Q.
// A row that sees no key (block-sparse) has P = 0, O = 0 and L = +inf, as FlashAttention-2.
struct Reference {
  MatD o, p, p_drop, keep, dq, dk, dv;
  Eigen::VectorXd lse, m, l;  // log-sum-exp; row max and sum of exp(S - m) (FA1's saved state)
};

// The N x N_kv matrices (p, p_drop, keep) are kept only when `keep_scores`: a backward alone of
// the standard schedule starts from them; elsewhere they would only take memory.
Reference reference(const AttentionProblem& p, std::uint64_t seed, std::int64_t bh, const Mat& q,
                    const Mat& k, const Mat& v, const Mat* dout, const BlockMask* blocks,
                    bool keep_scores) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Reference r;
  MatD s = p.scale() * (q.cast<double>() * k.cast<double>().transpose());
  const Eigen::Index n = s.rows(), nk = s.cols();
  r.p = MatD::Zero(n, nk);
  r.keep = MatD::Ones(n, nk);
  r.lse.resize(n);
  r.m.resize(n);
  r.l.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    double mx = -kInf;
    for (Eigen::Index j = 0; j < nk; ++j) {
      if (!score_visible(p, i, j) || (blocks != nullptr && !blocks->covers(i, j))) s(i, j) = -kInf;
      mx = std::max(mx, s(i, j));
      if (p.dropout > 0 && !dropout_keeps(p, seed, bh, i, j)) r.keep(i, j) = 0.0;
    }
    r.m(i) = mx;
    if (mx == -kInf) {
      r.l(i) = 0.0;
      r.lse(i) = kInf;
      continue;
    }
    double sum = 0;
    for (Eigen::Index j = 0; j < nk; ++j) sum += r.p(i, j) = std::exp(s(i, j) - mx);
    r.l(i) = sum;
    r.lse(i) = mx + std::log(sum);
    r.p.row(i) /= sum;
  }
  const double z = p.dropout > 0 ? 1.0 / (1.0 - p.dropout) : 1.0;
  r.p_drop = r.p.cwiseProduct(r.keep) * z;
  r.o = r.p_drop * v.cast<double>();
  if (dout != nullptr) {
    const MatD d_o = dout->cast<double>();
    r.dv = r.p_drop.transpose() * d_o;
    const MatD dp = (d_o * v.cast<double>().transpose()).cwiseProduct(r.keep) * z;
    const Eigen::VectorXd dd = d_o.cwiseProduct(r.o).rowwise().sum();
    const MatD ds = r.p.cwiseProduct(dp - dd * Eigen::RowVectorXd::Ones(nk));
    r.dq = p.scale() * (ds * k.cast<double>());
    r.dk = p.scale() * (ds.transpose() * q.cast<double>());
  }
  if (!keep_scores) {
    r.p.resize(0, 0);
    r.p_drop.resize(0, 0);
    r.keep.resize(0, 0);
  }
  return r;
}

double max_abs_diff(const Mat& got, const MatD& want) {
  double worst = 0;
  for (Eigen::Index i = 0; i < got.rows(); ++i)
    for (Eigen::Index j = 0; j < got.cols(); ++j) {
      const double g = static_cast<double>(got(i, j));
      if (g == want(i, j)) continue;  // equal infinities (L of a row that saw no key) included
      const double e = std::abs(g - want(i, j));
      if (std::isnan(e)) return std::numeric_limits<double>::infinity();  // an unwritten output
      worst = std::max(worst, e);
    }
  return worst;
}

bool has_backward(Pass pass) {
  return pass != Pass::fwd;
}
bool has_forward(Pass pass) {
  return pass != Pass::bwd;
}

// Rows [row0, row0 + rows) of a tensor's flat row space (row r of matrix i is flat row
// i * rows_per_matrix + r). The bytes are the same whatever matrix shape a schedule declares, so
// query head bh's rows bh*N .. bh*N + N-1 are found in a [B*H][N][d] tensor, in a group-packed
// [B*H_kv][g*N][d] one or in a flat [1][B*H*N][d] one alike.
Mat flat_rows(const std::vector<Mat>& mats, Eigen::Index row0, Eigen::Index rows) {
  ensure(!mats.empty() && mats.front().rows() > 0, "flat_rows of an empty tensor");
  const Eigen::Index per = mats.front().rows();
  Mat out(rows, mats.front().cols());
  for (Eigen::Index r = 0; r < rows; ++r) {
    const Eigen::Index flat = row0 + r;
    const auto i = static_cast<std::size_t>(flat / per);
    ensure(i < mats.size(), "flat row {} outside the tensor", flat);
    out.row(r) = mats[i].row(flat % per);
  }
  return out;
}

// The logical K (or V) of K/V matrix `kv` (= b*H_kv + h_kv), N_kv x d: contiguous rows, or
// gathered from the page pool through the block table (pool matrix page*H_kv + h_kv).
Mat logical_kv(const std::vector<Mat>& mats, const AttentionProblem& p, std::int64_t kv) {
  if (!p.block_table) return flat_rows(mats, kv * p.seq_kv, p.seq_kv);
  const std::int64_t hkv = p.kv_head_count(), b = kv / hkv, h = kv % hkv, pt = p.page_tokens;
  Mat out(p.seq_kv, p.head_dim);
  for (std::int64_t t = 0; t < p.seq_kv; ++t) {
    const auto page = static_cast<std::size_t>(p.block_table->at(b, t / pt) * hkv + h);
    ensure(page < mats.size() && mats[page].rows() == pt, "page {} not in the pool", page);
    out.row(t) = mats[page].row(t % pt);
  }
  return out;
}

// Which matrices of a paged K/V pool some sequence uses (the rest stay empty).
std::vector<bool> used_pool_matrices(const AttentionProblem& p, std::int64_t matrices) {
  std::vector<bool> used(static_cast<std::size_t>(matrices), false);
  const std::int64_t hkv = p.kv_head_count();
  for (std::int32_t page : p.block_table->pages)
    for (std::int64_t h = 0; h < hkv; ++h) used[static_cast<std::size_t>(page * hkv + h)] = true;
  return used;
}

}  // namespace

float round_e4m3(float x) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  const float a = std::fabs(x);
  if (a >= kE4m3Max) return std::copysign(kE4m3Max, x);
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): a's binary exponent is e - 1
  // 3 mantissa bits: the spacing is 2^(exponent - 3); below 2^-6 (subnormals) it stays 2^-9.
  const float spacing = std::ldexp(1.0f, std::max(e - 1, -6) - 3);
  const float r = std::nearbyint(a / spacing) * spacing;  // the default mode: ties to even
  return std::copysign(std::min(r, kE4m3Max), x);
}

double NumericResult::max_abs_error() const {
  return std::max(
      {max_abs_error_o, max_abs_error_lse.value_or(0.0), max_abs_error_grad.value_or(0.0)});
}

NumericResult execute_schedule(const Schedule& schedule, const AttentionProblem& p,
                               std::uint64_t seed, const BlockMask* blocks,
                               NumericObserver* observer) {
  const double macs = static_cast<double>(p.bh()) * static_cast<double>(p.seq) *
                      static_cast<double>(p.seq_kv) * static_cast<double>(p.head_dim);
  if (macs > kMaxExecuteMacs) {
    throw ConfigError(fmt::format(
        "--execute is for small problems: B*H*N*N_kv*d = {:.3g} exceeds {:.3g}; shrink the batch, "
        "heads or sequence length",
        macs, kMaxExecuteMacs));
  }
  Globals g;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const TensorDecl& d : schedule.tensors()) {
    const std::size_t i = index_of(d.id);
    g.declared[i] = true;
    auto& mats = g.data[i];
    mats.resize(static_cast<std::size_t>(d.matrices));
    const bool kv = d.id == TensorId::K || d.id == TensorId::V;
    const bool input = kv || d.id == TensorId::Q || d.id == TensorId::dO;
    // A paged pool holds only the pages the block table hands out; the others stay empty.
    const std::vector<bool> used = kv && p.block_table ? used_pool_matrices(p, d.matrices)
                                                       : std::vector<bool>(mats.size(), true);
    for (std::size_t j = 0; j < mats.size(); ++j) {
      Mat& m = mats[j];
      // Inputs are random; everything else starts as NaN so that an unwritten output shows.
      if (!used[j]) continue;
      if (input) {
        m = Mat::NullaryExpr(d.rows, d.cols, [&] { return normal(rng); });
      } else {
        m = Mat::Constant(d.rows, d.cols, std::numeric_limits<float>::quiet_NaN());
      }
    }
    if (d.id == TensorId::block_table && p.block_table) {  // the page ids the kernel reads
      const BlockTable& bt = *p.block_table;
      for (std::int64_t b = 0; b < bt.sequences; ++b)
        for (std::int64_t c = 0; c < bt.pages_per_seq; ++c)
          mats[0](b, c) = static_cast<float>(bt.at(b, c));
    }
  }
  const bool grads = has_backward(p.pass);
  ensure(!grads || g.declared[index_of(TensorId::dO)], "a backward schedule without dO");
  const bool keep_scores = !has_forward(p.pass) && (g.declared[index_of(TensorId::P)] ||
                                                    g.declared[index_of(TensorId::P_drop)]);
  // Query head bh reads K/V head bh / g (grouped-query attention; g = 1 otherwise).
  std::vector<Reference> refs;
  const Eigen::Index n = p.seq;
  for (std::int64_t bh = 0; bh < p.bh(); ++bh) {
    const Mat q = flat_rows(g.of(TensorId::Q), bh * n, n);
    const Mat k = logical_kv(g.of(TensorId::K), p, bh / p.group());
    const Mat v = logical_kv(g.of(TensorId::V), p, bh / p.group());
    const Mat d_o = grads ? flat_rows(g.of(TensorId::dO), bh * n, n) : Mat();
    refs.push_back(reference(p, seed, bh, q, k, v, grads ? &d_o : nullptr, blocks, keep_scores));
  }
  // dK and dV of K/V head kv: the sum of its g query heads' (grouped-query attention).
  std::vector<MatD> dk_ref, dv_ref;
  if (grads) {
    for (std::int64_t kv = 0; kv < p.bh_kv(); ++kv) {
      MatD dk = refs[static_cast<std::size_t>(kv * p.group())].dk;
      MatD dv = refs[static_cast<std::size_t>(kv * p.group())].dv;
      for (std::int64_t i = 1; i < p.group(); ++i) {
        dk += refs[static_cast<std::size_t>(kv * p.group() + i)].dk;
        dv += refs[static_cast<std::size_t>(kv * p.group() + i)].dv;
      }
      dk_ref.push_back(std::move(dk));
      dv_ref.push_back(std::move(dv));
    }
  }
  if (observer != nullptr) {
    auto report = [&](TensorId t, std::int64_t matrix, const MatD& m) {
      if (m.size() == 0) return;
      std::vector<double> rows(static_cast<std::size_t>(m.size()));
      for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j)
          rows[static_cast<std::size_t>(i * m.cols() + j)] = m(i, j);
      observer->on_reference(t, matrix, rows, m.rows(), m.cols());
    };
    for (std::size_t b = 0; b < refs.size(); ++b) {
      report(TensorId::O, static_cast<std::int64_t>(b), refs[b].o);
      report(TensorId::dQ, static_cast<std::int64_t>(b), refs[b].dq);
    }
    for (std::size_t kv = 0; kv < dk_ref.size(); ++kv) {
      report(TensorId::dK, static_cast<std::int64_t>(kv), dk_ref[kv]);
      report(TensorId::dV, static_cast<std::int64_t>(kv), dv_ref[kv]);
    }
  }
  if (!has_forward(p.pass)) {
    // A backward alone starts from what the forward saved: whichever of these it declares.
    auto fill = [&](TensorId t, auto&& value) {
      if (!g.declared[index_of(t)]) return;
      for (std::size_t b = 0; b < refs.size(); ++b)
        g.of(t)[b] = value(refs[b]).template cast<float>();
    };
    fill(TensorId::O, [](const Reference& r) -> MatD { return r.o; });
    fill(TensorId::L, [](const Reference& r) -> MatD { return r.lse; });
    fill(TensorId::m, [](const Reference& r) -> MatD { return r.m; });
    fill(TensorId::l, [](const Reference& r) -> MatD { return r.l; });
    fill(TensorId::P, [](const Reference& r) -> MatD { return r.p; });
    fill(TensorId::P_drop, [](const Reference& r) -> MatD { return r.p_drop; });
    fill(TensorId::dropout_mask, [](const Reference& r) -> MatD { return r.keep; });
  }
  CtaInterpreter cta(g, p, seed);
  std::vector<TileOp> ops;
  const std::vector<KernelSpec> kernels = schedule.kernels();
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    for (std::int64_t c = 0; c < kernels[k].grid.count(); ++c) {
      ops.clear();
      schedule.emit_cta(k, c, ops);
      cta.run(ops, k, c, observer);
    }
  }

  NumericResult result;
  const bool has_lse = has_forward(p.pass) && g.declared[index_of(TensorId::L)];
  if (has_lse) result.max_abs_error_lse = 0.0;
  if (grads) result.max_abs_error_grad = 0.0;
  for (std::size_t b = 0; b < refs.size(); ++b) {
    const Reference& ref = refs[b];
    const auto row0 = static_cast<Eigen::Index>(b) * n;
    if (has_forward(p.pass)) {
      result.max_abs_error_o = std::max(result.max_abs_error_o,
                                        max_abs_diff(flat_rows(g.of(TensorId::O), row0, n), ref.o));
    }
    if (has_lse) {
      *result.max_abs_error_lse =
          std::max(*result.max_abs_error_lse,
                   max_abs_diff(flat_rows(g.of(TensorId::L), row0, n), MatD(ref.lse)));
    }
    if (grads) {
      *result.max_abs_error_grad =
          std::max(*result.max_abs_error_grad, max_abs_diff(g.of(TensorId::dQ)[b], ref.dq));
    }
  }
  for (std::size_t kv = 0; kv < dk_ref.size(); ++kv) {
    *result.max_abs_error_grad =
        std::max({*result.max_abs_error_grad, max_abs_diff(g.of(TensorId::dK)[kv], dk_ref[kv]),
                  max_abs_diff(g.of(TensorId::dV)[kv], dv_ref[kv])});
  }
  return result;
}

}  // namespace iosim
