// FlashAttention-1 backward, Algorithm 4 of Dao et al. 2022, literally: one CTA per (batch,
// head), as the forward. The outer loop walks K/V blocks: K_j, V_j are loaded once and dK_j, dV_j
// accumulate on chip and are written once. The inner loop walks Q blocks: Q_i, O_i, dO_i and the
// saved m_i, l_i are read; S and P = exp(S - m) / l are recomputed on chip; D_i = rowsum(dO_i o
// O_i) is recomputed every step (line 19); dQ_i lives in HBM between outer steps and is read,
// updated and written every step in the element type, as in the paper (read skipped on the first
// visit, when it is the known zero). The CTA owns its head's dQ, so no atomics are needed. This is
// what Theorem 5 analyses; FlashAttention-2's backward (flash2_bwd.cpp) keeps the K/V-outer loop
// but parallelizes it over K/V blocks with fp32 atomics on dQ.
#include <algorithm>

#include "algorithms/passes.hpp"
#include "algorithms/tile_costs.hpp"

namespace iosim {
namespace {

class Flash1Backward final : public Schedule {
 public:
  Flash1Backward(const AttentionProblem& p, const Tiling& t) : p_(p), t_(t) {}

  std::vector<TensorDecl> tensors() const override {
    const std::int64_t eb = p_.elem_bytes(), bh = p_.bh(), d = p_.head_dim;
    return {{TensorId::Q, bh, p_.seq, d, eb},     {TensorId::K, bh, p_.seq_kv, d, eb},
            {TensorId::V, bh, p_.seq_kv, d, eb},  {TensorId::O, bh, p_.seq, d, eb},
            {TensorId::l, bh, p_.seq, 1, 4},      {TensorId::m, bh, p_.seq, 1, 4},
            {TensorId::dO, bh, p_.seq, d, eb},    {TensorId::dQ, bh, p_.seq, d, eb},
            {TensorId::dK, bh, p_.seq_kv, d, eb}, {TensorId::dV, bh, p_.seq_kv, d, eb}};
  }

  std::vector<KernelSpec> kernels() const override {
    KernelSpec k;
    k.name = "flash1_bwd";
    k.main_loop = true;
    k.grid = {p_.bh(), 1, 1};
    k.threads_per_cta = t_.threads;
    k.smem_bytes_per_cta = flash1_backward_smem_bytes(p_, t_.block_q, t_.block_kv);
    // dK, dV and the S/dP tile in FP32 registers spread over the CTA's threads.
    const std::int64_t acc =
        (2 * t_.block_kv * p_.head_dim + t_.block_q * t_.block_kv) / t_.threads;
    k.registers_per_thread = static_cast<int>(std::min<std::int64_t>(acc + 40, 255));
    k.pipeline_stages = t_.pipeline_stages;
    k.mma_dtype = p_.dtype;
    k.tensor_instruction = TensorInstruction::mma_sync;
    return {k};
  }

  // Part j is the outer iteration over K/V block j.
  bool emit_cta_part(std::size_t, std::int64_t bh, std::size_t part,
                     std::vector<TileOp>& out) const override {
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes();
    const std::int64_t tr = ceil_div(p_.seq, t_.block_q), tc = ceil_div(p_.seq_kv, t_.block_kv);
    const std::int64_t warps = std::max(1, t_.threads / 32);
    const std::int64_t offset = p_.seq_kv - p_.seq;
    // Operands of an (m x k)(k x n) product read from shared memory.
    auto smem = [&](std::int64_t m, std::int64_t k, std::int64_t n) {
      return costs::warp_tiled_smem_bytes(m, n, k, warps, eb);
    };
    const auto j = static_cast<std::int64_t>(part);
    {
      const std::int64_t k0 = j * t_.block_kv;
      const std::int64_t kr = std::min(t_.block_kv, p_.seq_kv - k0);
      const TileRef dk{TensorId::dK, bh, k0, kr, 0, d}, dv{TensorId::dV, bh, k0, kr, 0, d};
      out.push_back(TileOp::load({TensorId::K, bh, k0, kr, 0, d}));  // gK -> sK (kr, d)
      out.push_back(TileOp::load({TensorId::V, bh, k0, kr, 0, d}));  // gV -> sV (kr, d)
      out.push_back(costs::zero_grad(dk));                           // rdK (kr, d)
      out.push_back(costs::zero_grad(dv));                           // rdV (kr, d)
      for (std::int64_t i = 0; i < tr; ++i) {
        const std::int64_t q0 = i * t_.block_q;
        const std::int64_t qr = std::min(t_.block_q, p_.seq - q0);
        if (p_.causal && k0 > q0 + qr - 1 + offset) continue;
        const TileRef dq{TensorId::dQ, bh, q0, qr, 0, d};
        out.push_back(TileOp::load({TensorId::Q, bh, q0, qr, 0, d}));               // sQ (qr, d)
        out.push_back(TileOp::load({TensorId::O, bh, q0, qr, 0, d}));               // sO (qr, d)
        out.push_back(TileOp::load({TensorId::dO, bh, q0, qr, 0, d}));              // sdO (qr, d)
        out.push_back(TileOp::load({TensorId::l, bh, q0, qr, 0, 1}, OnChip::reg));  // (qr)
        out.push_back(TileOp::load({TensorId::m, bh, q0, qr, 0, 1}, OnChip::reg));  // (qr)
        // Key 0 is visible to every row (causal needs seq_kv >= seq), so j = 0 is the first visit.
        if (j == 0) {
          out.push_back(costs::zero_grad(dq));
        } else {
          out.push_back(TileOp::load(dq));  // sdQ (qr, d)
        }
        const TileRef s{TensorId::S, bh, q0, qr, k0, kr};  // rS, rP, rdP, sdS (qr, kr)
        out.push_back(costs::scores(s, d, smem(qr, d, kr)));
        const bool crosses_diagonal = p_.causal && k0 + kr - 1 > q0 + offset;
        if (crosses_diagonal || p_.mask) out.push_back(costs::mask(s));
        out.push_back(costs::recompute_p_ml(s));
        if (p_.dropout > 0) out.push_back(costs::dropout({TensorId::P, bh, q0, qr, k0, kr}));
        out.push_back(costs::grad_matmul(ComputeKind::accumulate_dv, s, d,
                                         smem(kr, qr, d) + qr * kr * eb));  // P to smem first
        out.push_back(costs::grad_matmul(ComputeKind::grad_p, s, d, smem(qr, d, kr)));
        if (p_.dropout > 0) out.push_back(costs::dropout_grad(s));
        out.push_back(costs::row_dot({TensorId::O, bh, q0, qr, 0, d}, d));
        out.push_back(costs::grad_s(s));
        out.push_back(costs::grad_matmul(ComputeKind::accumulate_dq, s, d,
                                         smem(qr, kr, d) + qr * kr * eb));  // dS to smem first
        out.push_back(TileOp::store(dq, OnChip::smem));
        out.push_back(costs::grad_matmul(ComputeKind::accumulate_dk, s, d, smem(kr, qr, d)));
      }
      out.push_back(TileOp::store(dk, OnChip::smem));
      out.push_back(TileOp::store(dv, OnChip::smem));
    }
    return j + 1 < tc;
  }

 private:
  AttentionProblem p_;
  Tiling t_;
};

}  // namespace

std::int64_t flash1_backward_smem_bytes(const AttentionProblem& p, std::int64_t block_q,
                                        std::int64_t block_kv) {
  // K_j, V_j, dK_j, dV_j (block_kv x d); Q_i, O_i, dO_i, dQ_i (block_q x d); P and dS
  // (block_q x block_kv); l_i, m_i and D_i (block_q, fp32).
  return ((4 * block_kv + 4 * block_q) * p.head_dim + 2 * block_q * block_kv) * p.elem_bytes() +
         3 * block_q * 4;
}

std::unique_ptr<Schedule> make_flash1_backward(const AttentionProblem& p, const Tiling& t) {
  return std::make_unique<Flash1Backward>(p, t);
}

}  // namespace iosim
