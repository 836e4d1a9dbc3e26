#include "numerics/numeric_executor.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "numerics/cta_interpreter.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/memory_budget.hpp"
#include "sim/base/run_control.hpp"
#include "sim/schedule/block_mask.hpp"
#include "sim/schedule/block_table.hpp"

namespace iosim {
namespace {

using numerics::CtaInterpreter;
using numerics::Globals;
using numerics::kE4m3Max;
using numerics::Mat;
using MatD = Eigen::MatrixXd;

// Attention of one (batch, head) in FP64, forward and, given dO, backward, by the analytic
// formulas (no finite differences). Z = keep / (1 - p) is dropout's scaling, X = P o Z:
//   O = X V,  dV = X^T dO,  dP = (dO V^T) o Z,  D = rowsum(dO o O),  dS = P o (dP - D),
//   dQ = scale dS K,  dK = scale dS^T Q.
// A row that sees no key (block-sparse) has P = 0, O = 0 and L = +inf, as FlashAttention-2.
struct Reference {
  MatD o, p, p_drop, keep, dq, dk, dv;
  Eigen::VectorXd lse, m, l;  // log-sum-exp; row max and sum of exp(S - m) (FA1's saved state)
};

// a * b, a few hundred rows of a at a time with a stop check between them: one product of an
// N x N_kv reference at N = 7000 took seconds, and SIGINT waited 16 s for the reference's end.
template <typename A, typename B>
MatD product_in_steps(const A& a, const B& b) {
  constexpr Eigen::Index kRows = 256;
  MatD out(a.rows(), b.cols());
  for (Eigen::Index i0 = 0; i0 < a.rows(); i0 += kRows) {
    run_control::check();
    const Eigen::Index rows = std::min(kRows, a.rows() - i0);
    out.middleRows(i0, rows).noalias() = a.middleRows(i0, rows) * b;
  }
  return out;
}

// The N x N_kv matrices (p, p_drop, keep) are kept only when `keep_scores`: a backward alone of
// the standard schedule starts from them; elsewhere they would only take memory.
Reference reference(const AttentionProblem& p, std::uint64_t seed, std::int64_t bh, const Mat& q,
                    const Mat& k, const Mat& v, const Mat* dout, const BlockMask* blocks,
                    bool keep_scores) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Reference r;
  MatD s = p.scale() * product_in_steps(q.cast<double>(), k.cast<double>().transpose());
  const Eigen::Index n = s.rows(), nk = s.cols();
  r.p = MatD::Zero(n, nk);
  r.keep = MatD::Ones(n, nk);
  r.lse.resize(n);
  r.m.resize(n);
  r.l.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    if (i % 64 == 0) run_control::check();
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
  r.o = product_in_steps(r.p_drop, v.cast<double>());
  if (dout != nullptr) {
    const MatD d_o = dout->cast<double>();
    r.dv = product_in_steps(r.p_drop.transpose(), d_o);
    const MatD dp = product_in_steps(d_o, v.cast<double>().transpose()).cwiseProduct(r.keep) * z;
    const Eigen::VectorXd dd = d_o.cwiseProduct(r.o).rowwise().sum();
    const MatD ds = r.p.cwiseProduct(dp - dd * Eigen::RowVectorXd::Ones(nk));
    r.dq = p.scale() * product_in_steps(ds, k.cast<double>());
    r.dk = p.scale() * product_in_steps(ds.transpose(), q.cast<double>());
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

// An FP8 K/V cache (--kv-dtype fp8): every matrix of K (or V) stored as e4m3 with one scale for
// the tensor, amax / 448 over all its values (vLLM's and FlashInfer's per-tensor k_scale and
// v_scale), kept here dequantized: scale * e4m3(x / scale). Both the schedule and the reference
// read these values, so the run stays exact against its reference: what the cache loses to FP8 is
// the cache's, not the kernel's. Empty matrices (unused pool pages) stay empty.
void quantize_tensor_e4m3(std::vector<Mat>& mats) {
  float amax = 0.0f;
  for (const Mat& m : mats) {
    if (m.size() > 0) amax = std::max(amax, m.cwiseAbs().maxCoeff());
  }
  if (amax == 0.0f || !std::isfinite(amax)) return;
  const float scale = amax / kE4m3Max;
  for (Mat& m : mats) {
    m = m.unaryExpr([scale](float v) { return scale * round_e4m3(v / scale); }).eval();
  }
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

namespace {

constexpr std::string_view kExecuteMemoryAdvice =
    "--execute is for small problems: shrink the sequence lengths (or raise --max-memory)";

std::string execute_memory_what(const AttentionProblem& p) {
  return fmt::format("executing this problem (its FP64 reference holds N x N_kv = {:.3g} scores)",
                     static_cast<double>(p.seq) * static_cast<double>(p.seq_kv));
}

}  // namespace

double execute_memory_bytes(const Schedule& schedule, const AttentionProblem& p) {
  double globals = 0;
  bool declares_p = false;  // a backward alone then keeps every head's P (execute_schedule)
  for (const TensorDecl& d : schedule.tensors()) {
    globals += static_cast<double>(d.matrices) * static_cast<double>(d.rows) *
               static_cast<double>(d.cols) * sizeof(float);
    declares_p = declares_p || d.id == TensorId::P || d.id == TensorId::P_drop;
  }
  const double scores = static_cast<double>(p.seq) * static_cast<double>(p.seq_kv);
  const double head_live = (has_backward(p.pass) ? 9.0 : 5.0) * scores * sizeof(double);
  const double outputs = static_cast<double>(p.bh()) *
                         (2.0 * static_cast<double>(p.seq) + 2.0 * static_cast<double>(p.seq_kv)) *
                         static_cast<double>(p.head_dim) * sizeof(double);
  const double kept = !has_forward(p.pass) && declares_p
                          ? 3.0 * static_cast<double>(p.bh()) * scores * sizeof(double)
                          : 0.0;
  return globals + head_live + outputs + kept;
}

void check_executable(const AttentionProblem& p, const Schedule* schedule) {
  const double macs = static_cast<double>(p.bh()) * static_cast<double>(p.seq) *
                      static_cast<double>(p.seq_kv) * static_cast<double>(p.head_dim);
  if (macs > kMaxExecuteMacs) {
    throw ConfigError(fmt::format(
        "--execute is for small problems: B*H*N*N_kv*d = {:.3g} exceeds {:.3g}; shrink the batch, "
        "heads or sequence length",
        macs, kMaxExecuteMacs));
  }
  if (schedule == nullptr) return;
  memory_budget::check(execute_memory_bytes(*schedule, p), execute_memory_what(p),
                       kExecuteMemoryAdvice);
}

NumericResult execute_schedule(const Schedule& schedule, const AttentionProblem& p,
                               std::uint64_t seed, const BlockMask* blocks,
                               NumericObserver* observer) {
  check_executable(p);  // the multiply-adds; the reservation below checks the memory
  const memory_budget::Reservation held(execute_memory_bytes(schedule, p), execute_memory_what(p),
                                        kExecuteMemoryAdvice);
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
  if (p.kv_converted()) {  // validate_problem(): the only other stored type is fp8
    quantize_tensor_e4m3(g.of(TensorId::K));
    if (!p.latent()) quantize_tensor_e4m3(g.of(TensorId::V));  // a latent's V is K's columns
  }
  const bool grads = has_backward(p.pass);
  ensure(!grads || g.declared[index_of(TensorId::dO)], "a backward schedule without dO");
  const bool keep_scores = !has_forward(p.pass) && (g.declared[index_of(TensorId::P)] ||
                                                    g.declared[index_of(TensorId::P_drop)]);
  // Query head bh reads K/V head bh / g (grouped-query attention; g = 1 otherwise).
  std::vector<Reference> refs;
  const Eigen::Index n = p.seq;
  for (std::int64_t bh = 0; bh < p.bh(); ++bh) {
    run_control::check();  // each head's reference is N x N_kv: seconds at the largest
    const Mat q = flat_rows(g.of(TensorId::Q), bh * n, n);
    const Mat k = logical_kv(g.of(TensorId::K), p, bh / p.group());
    // A latent cache (--latent-dim, multi-head latent attention): V is the first value_dim()
    // columns of K, and O has as many.
    const Mat v = p.latent() ? Mat(k.leftCols(p.value_dim()))
                             : logical_kv(g.of(TensorId::V), p, bh / p.group());
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
