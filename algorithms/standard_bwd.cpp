// Standard attention's backward as autograd runs it over the unfused forward, one kernel per
// step with every intermediate in HBM. It starts from what the forward saved: P (softmax output),
// and with dropout the keep mask and P_drop.
//   gemm_dp      dP = dO V^T           block_q x block_kv output tiles, head dim in chunks
//   gemm_dv      dV = X^T dO           block_kv x d output tiles, queries in chunks (X = P_drop
//                                      with dropout, else P)
//   dropout_bwd  dP = dP o mask/(1-p)  only with --dropout: reads dP and the keep mask
//   softmax_bwd  dS = P o (dP - rowsum(P o dP))   whole rows per CTA; rowsum(P o dP) equals
//                                      rowsum(dO o O) (= D of the flash schedules), computed here
//                                      from the rows on chip as frameworks' softmax backward does
//   mask_bwd     dS = 0 where masked   only with --causal or --mask (masked_fill's backward)
//   gemm_dq      dQ = scale dS K       block_q x d output tiles, keys in chunks
//   gemm_dk      dK = scale dS^T Q     block_kv x d output tiles, queries in chunks
// The softmax scale rides in the GEMMs' alpha, as in the forward. GEMM CTAs are launched with the
// M tile index fastest, as cuBLAS does.
#include <algorithm>

#include "algorithms/passes.hpp"
#include "algorithms/standard_tiles.hpp"
#include "algorithms/tile_costs.hpp"

namespace iosim {
namespace {

using namespace standard_tiles;

enum class StandardBwdKernel {
  gemm_dp,
  gemm_dv,
  dropout_bwd,
  softmax_bwd,
  mask_bwd,
  gemm_dq,
  gemm_dk
};

class StandardBackward final : public WholeCtaSchedule {
 public:
  StandardBackward(const AttentionProblem& p, const Tiling& t, bool persistent_gemms)
      : p_(p),
        t_(t),
        persistent_gemms_(persistent_gemms),
        ew_(p.seq_kv, false),
        rows_(p.seq_kv, true) {
    kernels_ = {StandardBwdKernel::gemm_dp, StandardBwdKernel::gemm_dv};
    if (p.dropout > 0) kernels_.push_back(StandardBwdKernel::dropout_bwd);
    kernels_.push_back(StandardBwdKernel::softmax_bwd);
    if (p.causal || p.mask) kernels_.push_back(StandardBwdKernel::mask_bwd);
    kernels_.push_back(StandardBwdKernel::gemm_dq);
    kernels_.push_back(StandardBwdKernel::gemm_dk);
  }

  std::vector<TensorDecl> tensors() const override {
    const std::int64_t eb = p_.elem_bytes(), bh = p_.bh(), d = p_.head_dim;
    const std::int64_t n = p_.seq, nk = p_.seq_kv;
    std::vector<TensorDecl> t = {{TensorId::Q, bh, n, d, eb},   {TensorId::K, bh, nk, d, eb},
                                 {TensorId::V, bh, nk, d, eb},  {TensorId::P, bh, n, nk, eb},
                                 {TensorId::dO, bh, n, d, eb},  {TensorId::dP, bh, n, nk, eb},
                                 {TensorId::dS, bh, n, nk, eb}, {TensorId::dQ, bh, n, d, eb},
                                 {TensorId::dK, bh, nk, d, eb}, {TensorId::dV, bh, nk, d, eb}};
    if (p_.dropout > 0) {
      t.push_back({TensorId::dropout_mask, bh, n, nk, 1});
      t.push_back({TensorId::P_drop, bh, n, nk, eb});
    }
    return t;
  }

  std::vector<KernelSpec> kernels() const override {
    std::vector<KernelSpec> out;
    const std::int64_t tq = ceil_div(p_.seq, t_.block_q), tk = ceil_div(p_.seq_kv, t_.block_kv);
    const std::int64_t eb = p_.elem_bytes(), d = p_.head_dim;
    for (StandardBwdKernel k : kernels_) {
      KernelSpec s;
      s.mma_dtype = p_.dtype;
      s.threads_per_cta = t_.threads;
      s.pipeline_stages = t_.pipeline_stages;
      auto gemm = [&](const char* name, Dim3 grid, std::int64_t m_tile, std::int64_t n_tile) {
        s.name = name;
        s.main_loop = true;  // the GEMMs carry the work; the elementwise kernels follow rows
        s.persistent = persistent_gemms_;
        s.grid = grid;
        s.smem_bytes_per_cta = gemm_smem(m_tile, n_tile, t_.pipeline_stages, eb);
        s.registers_per_thread = gemm_regs(m_tile * n_tile, t_.threads);
      };
      switch (k) {
        case StandardBwdKernel::gemm_dp:
          gemm("gemm_dp", {tq, tk, p_.bh()}, t_.block_q, t_.block_kv);
          break;
        case StandardBwdKernel::gemm_dv:
          gemm("gemm_dv", {tk, 1, p_.bh()}, t_.block_kv, d);
          break;
        case StandardBwdKernel::gemm_dq:
          gemm("gemm_dq", {tq, 1, p_.bh()}, t_.block_q, d);
          break;
        case StandardBwdKernel::gemm_dk:
          gemm("gemm_dk", {tk, 1, p_.bh()}, t_.block_kv, d);
          break;
        default: {
          const ElementwiseTiling& e = k == StandardBwdKernel::softmax_bwd ? rows_ : ew_;
          s.name = k == StandardBwdKernel::dropout_bwd   ? "dropout_bwd"
                   : k == StandardBwdKernel::softmax_bwd ? "softmax_bwd"
                                                         : "mask_bwd";
          s.grid = {ceil_div(p_.seq_kv, e.cols), ceil_div(p_.seq, e.rows), p_.bh()};
          s.threads_per_cta = 256;
          // The row-wise softmax gradient keeps its rows of P and dP in shared memory.
          s.smem_bytes_per_cta = k == StandardBwdKernel::softmax_bwd ? 2 * e.rows * e.cols * eb : 0;
          s.registers_per_thread = 32;
          s.pipeline_stages = 1;
          break;
        }
      }
      out.push_back(s);
    }
    return out;
  }

 protected:
  void emit_whole_cta(std::size_t kernel, std::int64_t cta,
                      std::vector<TileOp>& out) const override {
    switch (kernels_.at(kernel)) {
      case StandardBwdKernel::gemm_dp:
        return emit_gemm_dp(cta, out);
      case StandardBwdKernel::gemm_dv:
        return emit_gemm_kv(StandardBwdKernel::gemm_dv, cta, out);
      case StandardBwdKernel::gemm_dk:
        return emit_gemm_kv(StandardBwdKernel::gemm_dk, cta, out);
      case StandardBwdKernel::gemm_dq:
        return emit_gemm_dq(cta, out);
      case StandardBwdKernel::dropout_bwd:
      case StandardBwdKernel::softmax_bwd:
      case StandardBwdKernel::mask_bwd:
        return emit_elementwise(kernels_.at(kernel), cta, out);
    }
  }

 private:
  // dP = dO V^T: the shape of the forward's S = Q K^T.
  void emit_gemm_dp(std::int64_t cta, std::vector<TileOp>& out) const {
    const std::int64_t tq = ceil_div(p_.seq, t_.block_q), tk = ceil_div(p_.seq_kv, t_.block_kv);
    const std::int64_t i = cta % tq, j = (cta / tq) % tk, bh = cta / (tq * tk);
    const std::int64_t q0 = i * t_.block_q, qr = std::min(t_.block_q, p_.seq - q0);
    const std::int64_t k0 = j * t_.block_kv, kr = std::min(t_.block_kv, p_.seq_kv - k0);
    const TileRef dp{TensorId::dP, bh, q0, qr, k0, kr};  // (qr, kr)
    for (std::int64_t c0 = 0; c0 < p_.head_dim; c0 += kLoadChunk) {
      const std::int64_t cw = std::min(kLoadChunk, p_.head_dim - c0);
      out.push_back(TileOp::load({TensorId::dO, bh, q0, qr, c0, cw}));  // sdO (qr, cw)
      out.push_back(TileOp::load({TensorId::V, bh, k0, kr, c0, cw}));   // sV (kr, cw)
      out.push_back(
          costs::grad_matmul(c0 == 0 ? ComputeKind::grad_p : ComputeKind::grad_p_accumulate, dp, cw,
                             gemm_smem_reads(qr, kr, cw, p_.elem_bytes())));
    }
    out.push_back(TileOp::store(dp, OnChip::smem));  // epilogue through shared memory
  }

  // dV = X^T dO or dK = scale dS^T Q: a block_kv x d output tile, the queries in chunks.
  void emit_gemm_kv(StandardBwdKernel k, std::int64_t cta, std::vector<TileOp>& out) const {
    const std::int64_t tk = ceil_div(p_.seq_kv, t_.block_kv);
    const std::int64_t j = cta % tk, bh = cta / tk;
    const std::int64_t k0 = j * t_.block_kv, kr = std::min(t_.block_kv, p_.seq_kv - k0);
    const std::int64_t d = p_.head_dim;
    const bool dv = k == StandardBwdKernel::gemm_dv;
    const TileRef grad{dv ? TensorId::dV : TensorId::dK, bh, k0, kr, 0, d};  // rdV / rdK (kr, d)
    const TensorId scores = dv ? (p_.dropout > 0 ? TensorId::P_drop : TensorId::P) : TensorId::dS;
    const TensorId rows = dv ? TensorId::dO : TensorId::Q;
    out.push_back(costs::zero_grad(grad));
    for (std::int64_t q0 = 0; q0 < p_.seq; q0 += kLoadChunk) {
      const std::int64_t qc = std::min(kLoadChunk, p_.seq - q0);
      out.push_back(TileOp::load({scores, bh, q0, qc, k0, kr}));  // sP / sdS (qc, kr)
      out.push_back(TileOp::load({rows, bh, q0, qc, 0, d}));      // sdO / sQ (qc, d)
      out.push_back(costs::grad_matmul(dv ? ComputeKind::accumulate_dv : ComputeKind::accumulate_dk,
                                       {TensorId::S, bh, q0, qc, k0, kr}, d,
                                       gemm_smem_reads(kr, d, qc, p_.elem_bytes())));
    }
    out.push_back(TileOp::store(grad, OnChip::smem));
  }

  // dQ = scale dS K: a block_q x d output tile, the keys in chunks (the forward's gemm_pv shape).
  void emit_gemm_dq(std::int64_t cta, std::vector<TileOp>& out) const {
    const std::int64_t tq = ceil_div(p_.seq, t_.block_q);
    const std::int64_t i = cta % tq, bh = cta / tq;
    const std::int64_t q0 = i * t_.block_q, qr = std::min(t_.block_q, p_.seq - q0);
    const std::int64_t d = p_.head_dim;
    const TileRef dq{TensorId::dQ, bh, q0, qr, 0, d};  // rdQ (qr, d)
    out.push_back(costs::zero_grad(dq));
    for (std::int64_t k0 = 0; k0 < p_.seq_kv; k0 += kLoadChunk) {
      const std::int64_t kc = std::min(kLoadChunk, p_.seq_kv - k0);
      out.push_back(TileOp::load({TensorId::dS, bh, q0, qr, k0, kc}));  // sdS (qr, kc)
      out.push_back(TileOp::load({TensorId::K, bh, k0, kc, 0, d}));     // sK (kc, d)
      out.push_back(costs::grad_matmul(ComputeKind::accumulate_dq,
                                       {TensorId::S, bh, q0, qr, k0, kc}, d,
                                       gemm_smem_reads(qr, d, kc, p_.elem_bytes())));
    }
    out.push_back(TileOp::store(dq, OnChip::smem));
  }

  void emit_elementwise(StandardBwdKernel k, std::int64_t cta, std::vector<TileOp>& out) const {
    const ElementwiseTiling& e = k == StandardBwdKernel::softmax_bwd ? rows_ : ew_;
    const std::int64_t tc = ceil_div(p_.seq_kv, e.cols), tr = ceil_div(p_.seq, e.rows);
    const std::int64_t c = cta % tc, r = (cta / tc) % tr, bh = cta / (tc * tr);
    const std::int64_t r0 = r * e.rows, rows = std::min(e.rows, p_.seq - r0);
    const std::int64_t c0 = c * e.cols, cols = std::min(e.cols, p_.seq_kv - c0);
    auto tile = [&](TensorId t) { return TileRef{t, bh, r0, rows, c0, cols}; };
    switch (k) {
      case StandardBwdKernel::dropout_bwd:
        out.push_back(TileOp::load(tile(TensorId::dP), OnChip::reg));
        out.push_back(TileOp::load(tile(TensorId::dropout_mask), OnChip::reg));
        out.push_back(costs::dropout_grad(tile(TensorId::S)));
        out.push_back(TileOp::store(tile(TensorId::dP)));
        break;
      case StandardBwdKernel::softmax_bwd:
        out.push_back(TileOp::load(tile(TensorId::P), OnChip::smem));
        out.push_back(TileOp::load(tile(TensorId::dP), OnChip::smem));
        out.push_back(costs::softmax_grad_rows(tile(TensorId::S)));
        out.push_back(TileOp::store(tile(TensorId::dS)));
        break;
      case StandardBwdKernel::mask_bwd:
        out.push_back(TileOp::load(tile(TensorId::dS), OnChip::reg));
        out.push_back(costs::mask_grad(tile(TensorId::S)));
        out.push_back(TileOp::store(tile(TensorId::dS)));
        break;
      default:
        break;
    }
  }

  AttentionProblem p_;
  Tiling t_;
  bool persistent_gemms_;   // cuBLAS's Hopper GEMMs (make_standard_backward)
  ElementwiseTiling ew_;    // dropout and mask gradients
  ElementwiseTiling rows_;  // softmax gradient: whole rows
  std::vector<StandardBwdKernel> kernels_;
};

}  // namespace

std::unique_ptr<Schedule> make_standard_backward(const AttentionProblem& p, const Tiling& t,
                                                 bool persistent_gemms) {
  return std::make_unique<StandardBackward>(p, t, persistent_gemms);
}

}  // namespace iosim
