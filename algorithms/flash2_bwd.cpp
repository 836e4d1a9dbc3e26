// FlashAttention-2 backward (Dao 2023, Algorithm 2), as its CUDA kernels run it on sm80/sm90:
//   dot_do_o   D = rowsum(dO o O) per query row, and dQaccum := 0 (grid Tr x B x H)
//   flash2_bwd one CTA per (K/V block j, batch, head): K_j, V_j loaded once; Q blocks streamed
//              (Q_i, dO_i, L_i, D_i), S and P recomputed on chip from Q_i, K_j and L_i;
//              dV_j += P^T dO_i, dP = dO_i V_j^T, dS = P o (dP - D_i), dK_j += dS^T Q_i
//              accumulate on chip and are written once; this block's share of dQ_i = dS K_j is
//              added to the fp32 dQaccum with atomics (RED, performed in L2: one L2 read and one
//              L2 write per element, an HBM read and write in the two-level model)
//   convert_dq dQ = dQaccum in the element type (grid Tr x B x H)
// This is the atomic variant FlashAttention-2 ships; its deterministic mode and a separate dQ
// pass (a second K/V-inner kernel per Q block, no atomics) are not modelled. Block-sparse runs the
// same kernels over its nonzero blocks.
#include <algorithm>

#include "algorithms/passes.hpp"
#include "algorithms/tile_costs.hpp"
#include "sim/schedule/block_mask.hpp"

namespace iosim {
namespace {

enum class Flash2BwdKernel { dot_do_o, dq_dk_dv, convert_dq };
constexpr Flash2BwdKernel kFlash2BwdKernels[] = {
    Flash2BwdKernel::dot_do_o, Flash2BwdKernel::dq_dk_dv, Flash2BwdKernel::convert_dq};

class Flash2Backward final : public WholeCtaSchedule {
 public:
  Flash2Backward(const AttentionProblem& p, const Tiling& t,
                 std::shared_ptr<const BlockMask> blocks)
      : p_(p), t_(t), blocks_(std::move(blocks)) {}

  std::vector<TensorDecl> tensors() const override { return dq_accum_backward_tensors(p_); }

  std::vector<KernelSpec> kernels() const override {
    std::vector<KernelSpec> out;
    const std::int64_t tr = ceil_div(p_.seq, t_.block_q), tc = ceil_div(p_.seq_kv, t_.block_kv);
    for (Flash2BwdKernel k : kFlash2BwdKernels) {
      KernelSpec s;
      s.mma_dtype = p_.dtype;
      s.tensor_instruction = TensorInstruction::mma_sync;
      if (k == Flash2BwdKernel::dq_dk_dv) {
        s.name = "flash2_bwd";
        s.main_loop = true;
        s.grid = {tc, p_.batch, p_.heads};
        s.threads_per_cta = threads();
        s.smem_bytes_per_cta = flash2_backward_smem_bytes(p_, t_);
        // dK and dV accumulate in FP32 registers; S/dP fragments of one Q block besides.
        const std::int64_t acc =
            (2 * t_.block_kv * p_.head_dim + t_.block_q * t_.block_kv) / s.threads_per_cta;
        s.registers_per_thread = static_cast<int>(std::min<std::int64_t>(acc + 40, 255));
        s.pipeline_stages = t_.pipeline_stages;
      } else {
        // Row-wise elementwise kernels: one thread per row chunk, operands in registers.
        s.name = k == Flash2BwdKernel::dot_do_o ? "dot_do_o" : "convert_dq";
        s.grid = {tr, p_.batch, p_.heads};
        s.threads_per_cta = 128;
        s.smem_bytes_per_cta = 0;
        s.registers_per_thread = 32;
        s.pipeline_stages = 1;
      }
      out.push_back(s);
    }
    return out;
  }

 protected:
  void emit_whole_cta(std::size_t kernel, std::int64_t cta,
                      std::vector<TileOp>& out) const override {
    switch (kFlash2BwdKernels[kernel]) {
      case Flash2BwdKernel::dot_do_o:
        return emit_backward_rows(p_, t_.block_q, cta, BackwardRows::dot_do_o, out);
      case Flash2BwdKernel::dq_dk_dv:
        return emit_main(cta, out);
      case Flash2BwdKernel::convert_dq:
        return emit_backward_rows(p_, t_.block_q, cta, BackwardRows::convert_dq, out);
    }
  }

 private:
  // The backward runs twice the forward's warps, as FlashAttention-2 (8 warps against 4): after
  // a forward, twice its threads (plan_flash2 refuses more than a CTA holds); alone, --threads is
  // its own (the tiling's default there is 256).
  int threads() const { return p_.pass == Pass::bwd ? t_.threads : 2 * t_.threads; }

  // Whether Q block i and K/V block j meet: a nonzero block (block-sparse) or, dense, a block
  // holding a score the causal mask and the sliding window leave visible.
  bool computed(std::int64_t i, std::int64_t j) const {
    if (blocks_) return blocks_->at(i, j);
    if (!p_.causal && p_.window == 0) return true;
    const std::int64_t q0 = i * t_.block_q, q_last = std::min(p_.seq, q0 + t_.block_q) - 1;
    const std::int64_t k0 = j * t_.block_kv, k_last = std::min(p_.seq_kv, k0 + t_.block_kv) - 1;
    return k0 <= visible_keys(p_, q_last).last && k_last >= visible_keys(p_, q0).first;
  }

  void emit_main(std::int64_t cta, std::vector<TileOp>& out) const {
    const std::int64_t tr = ceil_div(p_.seq, t_.block_q);
    const KvBlockTile tile = KvBlockTile::of(p_, t_.block_kv, cta);
    const std::int64_t j = tile.j, bh = tile.q, k0 = tile.k0, kr = tile.kr;
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes();
    const std::int64_t warps = std::max(1, threads() / 32);
    // One K/V head per query head: grouped-query heads are refused for this schedule
    // (Capabilities::gqa_backward), so tile.kv == bh.
    const TileRef dk{TensorId::dK, tile.kv, k0, kr, 0, d}, dv{TensorId::dV, tile.kv, k0, kr, 0, d};

    bool any = false;
    for (std::int64_t i = 0; i < tr && !any; ++i) any = computed(i, j);
    // A K/V block no query block meets (block-sparse, a window over a longer context) is not
    // loaded; its gradients are zero.
    if (any) {
      out.push_back(TileOp::load({TensorId::K, tile.kv, k0, kr, 0, d}));  // gK -> sK (kr, d)
      out.push_back(TileOp::load({TensorId::V, tile.kv, k0, kr, 0, d}));  // gV -> sV (kr, d)
    }
    out.push_back(costs::zero_grad(dk));  // rdK (kr, d) fp32
    out.push_back(costs::zero_grad(dv));  // rdV (kr, d) fp32
    for (std::int64_t i = 0; i < tr; ++i) {
      if (!computed(i, j)) continue;
      const std::int64_t q0 = i * t_.block_q, qr = std::min(t_.block_q, p_.seq - q0);
      out.push_back(TileOp::load({TensorId::Q, bh, q0, qr, 0, d}));               // sQ (qr, d)
      out.push_back(TileOp::load({TensorId::dO, bh, q0, qr, 0, d}));              // sdO (qr, d)
      out.push_back(TileOp::load({TensorId::L, bh, q0, qr, 0, 1}, OnChip::reg));  // rL (qr)
      out.push_back(TileOp::load({TensorId::D, bh, q0, qr, 0, 1}, OnChip::reg));  // rD (qr)
      const TileRef s{TensorId::S, bh, q0, qr, k0, kr};  // rS, rP, rdP, sdS (qr, kr)
      // Operands of an (m x k)(k x n) product read from shared memory.
      auto smem = [&](std::int64_t m, std::int64_t k, std::int64_t n) {
        return costs::warp_tiled_smem_bytes(m, n, k, warps, eb);
      };
      out.push_back(costs::scores(s, d, smem(qr, d, kr)));  // S = scale Q K^T
      if (tile_hides_scores(p_, q0, qr, k0, kr) || p_.mask) out.push_back(costs::mask(s));
      out.push_back(costs::recompute_p(s));
      if (p_.dropout > 0) out.push_back(costs::dropout({TensorId::P, bh, q0, qr, k0, kr}));
      out.push_back(costs::grad_matmul(ComputeKind::accumulate_dv, s, d,
                                       smem(kr, qr, d) + qr * kr * eb));  // P to smem first
      out.push_back(costs::grad_matmul(ComputeKind::grad_p, s, d, smem(qr, d, kr)));
      if (p_.dropout > 0) out.push_back(costs::dropout_grad(s));
      out.push_back(costs::grad_s(s));
      out.push_back(costs::grad_matmul(ComputeKind::dq_partial, s, d,
                                       smem(qr, kr, d) + qr * kr * eb));     // dS to smem first
      out.push_back(TileOp::reduce({TensorId::dQaccum, bh, q0, qr, 0, d}));  // RED (qr, d) fp32
      out.push_back(costs::grad_matmul(ComputeKind::accumulate_dk, s, d, smem(kr, qr, d)));
    }
    // dK and dV leave through shared memory for coalesced stores, as O in the forward.
    finish_kv_tile(p_, tile, out);
  }

  AttentionProblem p_;
  Tiling t_;
  std::shared_ptr<const BlockMask> blocks_;
};

}  // namespace

std::int64_t flash2_backward_smem_bytes(const AttentionProblem& p, const Tiling& t) {
  // Q_i (`pipeline_stages` deep), dO_i, K_j and V_j, and the P and dS tiles the dV, dQ and dK
  // products read from shared memory: 147456 bytes for d = 64, 128 x 128, two stages, as
  // FlashAttention-2's Flash_bwd_kernel_traits<64, 128, 128, 8, ...> allocates.
  return (((t.pipeline_stages + 1) * t.block_q + 2 * t.block_kv) * p.head_dim +
          2 * t.block_q * t.block_kv) *
         p.elem_bytes();
}

std::unique_ptr<Schedule> make_flash2_backward(const AttentionProblem& p, const Tiling& t,
                                               std::shared_ptr<const BlockMask> blocks) {
  return std::make_unique<Flash2Backward>(p, t, std::move(blocks));
}

}  // namespace iosim
