#include "algorithms/numeric_executor.hpp"

#include <Eigen/Dense>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <random>
#include <vector>

#include "sim/errors.hpp"

namespace iosim {
namespace {

using Mat = Eigen::MatrixXf;
using MatD = Eigen::MatrixXd;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

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

  void run(const std::vector<TileOp>& ops) {
    for (Mat& b : buf_) b.resize(0, 0);
    for (const TileOp& op : ops) {
      switch (op.kind) {
        case OpKind::load: {
          const TileRef& t = op.tile;
          buf(t.tensor) = g_.of(t.tensor).at(static_cast<std::size_t>(t.matrix))
                              .block(t.row0, t.col0, t.rows, t.cols);
          break;
        }
        case OpKind::store: {
          const TileRef& t = op.tile;
          const Mat& src = buf(t.tensor);
          ensure(src.rows() == t.rows && src.cols() == t.cols,
                 "store of {} with a {}x{} buffer into a {}x{} tile",
                             tensor_name(t.tensor), src.rows(), src.cols(), t.rows, t.cols);
          g_.of(t.tensor).at(static_cast<std::size_t>(t.matrix))
              .block(t.row0, t.col0, t.rows, t.cols) = src;
          break;
        }
        case OpKind::compute: compute(op); break;
      }
    }
  }

 private:
  Mat& buf(TensorId t) { return buf_[index_of(t)]; }

  Mat& operand(TensorId t, Eigen::Index rows, Eigen::Index cols) {
    Mat& b = buf(t);
    ensure(b.rows() == rows && b.cols() == cols,
           "operand {} is {}x{} on chip, the op needs {}x{}", tensor_name(t), b.rows(),
                       b.cols(), rows, cols);
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
        Mat& pr = operand(TensorId::P, r, c);
        Mat keep(r, c);
        const float inv = static_cast<float>(1.0 / (1.0 - p_.dropout));
        for (Eigen::Index i = 0; i < r; ++i)
          for (Eigen::Index j = 0; j < c; ++j) {
            const bool k = dropout_keeps(p_, seed_, t.matrix, t.row0 + i, t.col0 + j);
            keep(i, j) = k ? 1.0f : 0.0f;
            pr(i, j) *= k ? inv : 0.0f;
          }
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
        const Mat& pr = operand(TensorId::P, r, c);
        const Mat& v = operand(TensorId::V, c, d);
        operand(TensorId::O, r, d) += pr * v;
        break;
      }
      case ComputeKind::finalize: {
        Mat& o = operand(TensorId::O, r, d);
        const Mat& m = operand(TensorId::m, r, 1);
        const Mat& l = operand(TensorId::l, r, 1);
        Mat lse(r, 1);
        for (Eigen::Index i = 0; i < r; ++i) {
          o.row(i) /= l(i);
          lse(i) = m(i) + std::log(l(i));
        }
        buf(TensorId::L) = lse;
        break;
      }
      case ComputeKind::flash1_update: flash1_update(t); break;
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

// softmax(scale Q K^T + mask) [dropout] V and the log-sum-exp, in FP64, for one (batch, head).
void reference(const AttentionProblem& p, std::uint64_t seed, std::int64_t bh, const Mat& q,
               const Mat& k, const Mat& v, MatD& o, Eigen::VectorXd& lse) {
  MatD s = p.scale() * (q.cast<double>() * k.cast<double>().transpose());
  MatD pr(s.rows(), s.cols());
  lse.resize(s.rows());
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    double mx = -std::numeric_limits<double>::infinity();
    for (Eigen::Index j = 0; j < s.cols(); ++j) {
      if (!score_visible(p, i, j)) s(i, j) = -std::numeric_limits<double>::infinity();
      mx = std::max(mx, s(i, j));
    }
    double sum = 0;
    for (Eigen::Index j = 0; j < s.cols(); ++j) sum += pr(i, j) = std::exp(s(i, j) - mx);
    lse(i) = mx + std::log(sum);
    for (Eigen::Index j = 0; j < s.cols(); ++j) {
      pr(i, j) /= sum;
      if (p.dropout > 0) pr(i, j) *= dropout_keeps(p, seed, bh, i, j) ? 1.0 / (1.0 - p.dropout) : 0.0;
    }
  }
  o = pr * v.cast<double>();
}

double max_abs_diff(const Mat& got, const MatD& want) {
  double worst = 0;
  for (Eigen::Index i = 0; i < got.rows(); ++i)
    for (Eigen::Index j = 0; j < got.cols(); ++j) {
      const double e = std::abs(static_cast<double>(got(i, j)) - want(i, j));
      if (std::isnan(e)) return std::numeric_limits<double>::infinity();  // an unwritten output
      worst = std::max(worst, e);
    }
  return worst;
}

}  // namespace

double NumericResult::max_abs_error() const {
  return std::max(max_abs_error_o, max_abs_error_lse.value_or(0.0));
}

NumericResult execute_schedule(const Schedule& schedule, const AttentionProblem& p,
                               std::uint64_t seed) {
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
    const bool input = d.id == TensorId::Q || d.id == TensorId::K || d.id == TensorId::V;
    for (Mat& m : mats) {
      // Inputs are random; everything else starts as NaN so that an unwritten output shows.
      if (input) {
        m = Mat::NullaryExpr(d.rows, d.cols, [&] { return normal(rng); });
      } else {
        m = Mat::Constant(d.rows, d.cols, std::numeric_limits<float>::quiet_NaN());
      }
    }
  }
  CtaInterpreter cta(g, p, seed);
  std::vector<TileOp> ops;
  const std::vector<KernelSpec> kernels = schedule.kernels();
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    for (std::int64_t c = 0; c < kernels[k].grid.count(); ++c) {
      ops.clear();
      schedule.emit_cta(k, c, ops);
      cta.run(ops);
    }
  }

  NumericResult result;
  const bool has_lse = g.declared[index_of(TensorId::L)];
  if (has_lse) result.max_abs_error_lse = 0.0;
  for (std::int64_t bh = 0; bh < p.bh(); ++bh) {
    const auto b = static_cast<std::size_t>(bh);
    MatD o_ref;
    Eigen::VectorXd lse_ref;
    reference(p, seed, bh, g.of(TensorId::Q)[b], g.of(TensorId::K)[b], g.of(TensorId::V)[b], o_ref,
              lse_ref);
    result.max_abs_error_o = std::max(result.max_abs_error_o, max_abs_diff(g.of(TensorId::O)[b], o_ref));
    if (has_lse) {
      *result.max_abs_error_lse =
          std::max(*result.max_abs_error_lse, max_abs_diff(g.of(TensorId::L)[b], MatD(lse_ref)));
    }
  }
  return result;
}

}  // namespace iosim
