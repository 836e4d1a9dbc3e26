#include "numerics/cta_interpreter.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "algorithms/compute_ops.hpp"
#include "sim/base/run_control.hpp"

namespace iosim::numerics {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// FA3's Max_offset: P is exponentiated 2^8 higher (exp2(x - max + 8)) before its e4m3 conversion.
constexpr float kFp8POffset = 256.0f;

// A tile quantized with one scale (FlashAttention-3's block quantization), returned descaled.
Mat quantize_block_e4m3(const Mat& x) {
  const float amax = x.size() > 0 ? x.cwiseAbs().maxCoeff() : 0.0f;
  if (amax == 0.0f || !std::isfinite(amax)) return x;
  const float scale = amax / kE4m3Max;
  return x.unaryExpr([scale](float v) { return scale * round_e4m3(v / scale); });
}

}  // namespace

void CtaInterpreter::run(const std::vector<TileOp>& ops, std::size_t kernel, std::int64_t cta,
                         NumericObserver* observer) {
  for (Mat& b : buf_) b.resize(0, 0);
  const std::function<MatrixView(TensorId)> on_chip = [this](TensorId t) {
    const Mat& b = buf(t);
    return MatrixView{b.rows(), b.cols(), b.data()};
  };
  for (std::size_t index = 0; index < ops.size(); ++index) {
    // A stop is honoured between tile operations: one CTA of a long K/V runs for seconds.
    if ((index & 255u) == 0) run_control::check();
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

Mat& CtaInterpreter::operand(TensorId t, Eigen::Index rows, Eigen::Index cols) {
  Mat& b = buf(t);
  ensure(b.rows() == rows && b.cols() == cols, "operand {} is {}x{} on chip, the op needs {}x{}",
         tensor_name(t), b.rows(), b.cols(), rows, cols);
  return b;
}

Eigen::Ref<const Mat> CtaInterpreter::value_tile(Eigen::Index c) {
  if (!p_.latent()) return operand(TensorId::V, c, p_.head_dim);
  return operand(TensorId::K, c, p_.head_dim).leftCols(p_.value_dim());
}

void CtaInterpreter::compute(const TileOp& op) {
  const ComputeOpDef& def = compute_op_def(op.compute);
  ensure(def.numeric == NumericMeaning::executed,
         "compute op {} has no numeric meaning (algorithms/compute_ops.cpp)", def.name);
  const TileRef& t = op.tile;
  // O's columns: V's, head_dim or a latent cache's value_dim() (K and Q keep head_dim).
  const Eigen::Index r = t.rows, c = t.cols, d = p_.value_dim();
  // The arithmetic of each kind its row gives a numeric meaning: this switch is where it is
  // written. The row says what the case writes (its `writes`, which explain shows).
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
      const Eigen::Ref<const Mat> v = value_tile(c);
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
    // A transformer layer's other ops (transformer/) run on the engine only: their rows give
    // them no numeric meaning, refused above.
    case ComputeKind::matmul:
    case ComputeKind::matmul_accumulate:
    case ComputeKind::norm_rows:
    case ComputeKind::residual_add:
    case ComputeKind::activation:
    case ComputeKind::splitk_reduce:
    case ComputeKind::kCount:
      break;
  }
}

Mat CtaInterpreter::keep_mask(const TileRef& t, bool from_chip) {
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

void CtaInterpreter::backward(const TileOp& op) {
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
      buf(TensorId::dQaccum) = scale_ * (operand(TensorId::dS, r, c) * operand(TensorId::K, c, d));
      break;
    case ComputeKind::accumulate_dk:
      operand(TensorId::dK, c, d) +=
          scale_ * (operand(TensorId::dS, r, c).transpose() * operand(TensorId::Q, r, d));
      break;
    case ComputeKind::convert_dq:
      buf(t.tensor) = operand(accumulator_of(t.tensor), r, d);
      break;
    default:
      ensure(false, "compute op {} is not a backward op", compute_op_def(op.compute).name);
  }
}

void CtaInterpreter::split_kv(const TileOp& op) {
  const Eigen::Index r = op.tile.rows, d = p_.value_dim();  // O's columns
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

void CtaInterpreter::flash1_update(const TileRef& t) {
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

}  // namespace iosim::numerics
