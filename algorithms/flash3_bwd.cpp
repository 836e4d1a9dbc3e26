// FlashAttention-3 backward (Shah et al. 2024; hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp in its
// code), as cuDNN's Hopper backward also runs it
// (cuda_validate/measurements/h100-sxm5-80gb/cudnn_2026-11-23/ NOTES.md: compute_dot_do_o, a
// persistent 384-thread wgmma bprop kernel, convert_dq_to_16bits):
//   dot_do_o    D = rowsum(dO o O) per query row, and dQaccum := 0 (as flash2's pre-pass)
//   flash3_bwd  one tile per (K/V block j, batch, head), taken in order by one CTA per SM (the
//               tile scheduler; the engine dispatches the next tile to the SM that frees first).
//               Warp specialized: a producer warpgroup copies K_j, V_j once, then streams the
//               query blocks (Q_i, dO_i, L_i, D_i) by TMA through `stages` buffers; the consumer
//               warpgroups each own 64 of the block's keys (FlashAttention-3's SdP_swapAB: keys
//               are wgmma's M) and recompute S^T = K Q^T and dP^T = V dO^T from shared memory,
//               P = exp(S - L), dS = P o (dP - D), then dV_j += P^T dO_i and dK_j += dS^T Q_i with
//               P and dS from registers (the RS form), and dQ_i = dS K_j from shared memory (dS
//               goes there first). dQ_i's fp32 share is staged in shared memory and added to
//               dQaccum by a TMA reduce-add (performed in L2: an HBM read and write in the
//               two-level model, as flash2's atomics). dK_j and dV_j leave once, through shared
//               memory.
//   convert_dq  dQ = dQaccum in the element type (as flash2's)
// Grouped-query heads (g = H / Hkv > 1), as FlashAttention-3 runs them: the main kernel keeps one
// tile per query head, K_j and V_j read from its K/V head, and ends by adding its fp32 dK_j and
// dV_j into dKaccum and dVaccum of that head (a reduce-add, as dQ's) instead of storing them;
// dKaccum and dVaccum are zeroed before (zero_dkv_accum: FlashAttention-3 allocates them with
// torch::zeros) and converted to dK and dV after (convert_dkv, its postprocess kernel).
// The bytes are FlashAttention-2's backward for the same blocks (flash2_bwd.cpp); what differs is
// how the kernel runs: wgmma at Hopper's rate, copies by a producer that takes no pipe time, the
// consumers' operand reads inside the tensor pipe, and no ping-pong: both consumer warpgroups go
// through a step's phases together (PipeOverlap::lockstep), joined by two named barriers per step
// (dS complete in shared memory before dQ = dS K reads it; the dQ staging tile free again).
#include <algorithm>
#include <utility>

#include "algorithms/passes.hpp"
#include "algorithms/tile_costs.hpp"

namespace iosim {
namespace {

constexpr int kFlash3BwdWarpgroupThreads = 128;
constexpr std::int64_t kBarriersPerStep = 2;

enum class Flash3BwdKernel { dot_do_o, zero_dkv, main, convert_dq, convert_dkv };

class Flash3Backward final : public Schedule {
 public:
  Flash3Backward(const AttentionProblem& p, const Flash3BackwardTiles& t) : p_(p), t_(t) {
    kernels_ = {Flash3BwdKernel::dot_do_o, Flash3BwdKernel::main, Flash3BwdKernel::convert_dq};
    if (p_.group() > 1) {
      kernels_ = {Flash3BwdKernel::dot_do_o, Flash3BwdKernel::zero_dkv, Flash3BwdKernel::main,
                  Flash3BwdKernel::convert_dq, Flash3BwdKernel::convert_dkv};
    }
  }

  std::vector<TensorDecl> tensors() const override { return dq_accum_backward_tensors(p_); }

  std::vector<KernelSpec> kernels() const override {
    std::vector<KernelSpec> out;
    for (Flash3BwdKernel k : kernels_) {
      if (k == Flash3BwdKernel::zero_dkv || k == Flash3BwdKernel::convert_dkv) {
        out.push_back(backward_keys_kernel(
            p_, t_.block_kv,
            k == Flash3BwdKernel::zero_dkv ? BackwardKeys::zero_dkv : BackwardKeys::convert_dkv));
        continue;
      }
      KernelSpec s;
      s.mma_dtype = p_.dtype;
      if (k == Flash3BwdKernel::main) {
        s.name = "flash3_bwd";
        s.main_loop = true;
        s.persistent = true;  // cuDNN's bprop kernel: a grid of one CTA per SM (measured)
        // Tiles in the scheduler's order: the K/V blocks of a head first, then batches, heads.
        s.grid = {ceil_div(p_.seq_kv, t_.block_kv), p_.batch, p_.heads};
        s.threads_per_cta = t_.threads;
        s.smem_bytes_per_cta = t_.smem_bytes;
        s.registers_per_thread = t_.registers;
        s.pipeline_stages = t_.stages;
        s.tensor_instruction = TensorInstruction::wgmma;
        s.producer_warps = kFlash3BwdWarpgroupThreads / 32;
        s.consumer_warpgroups = t_.consumers;
        s.overlap = PipeOverlap::lockstep;
      } else {
        // Row-wise elementwise kernels (flash2's), operands in registers.
        s.name = k == Flash3BwdKernel::dot_do_o ? "dot_do_o" : "convert_dq";
        s.grid = {ceil_div(p_.seq, t_.block_q), p_.batch, p_.heads};
        s.threads_per_cta = 128;
        s.smem_bytes_per_cta = 0;
        s.registers_per_thread = 32;
        s.pipeline_stages = 1;
        s.tensor_instruction = TensorInstruction::mma_sync;
      }
      out.push_back(s);
    }
    return out;
  }

  // The main kernel's query blocks repeat (sim/engine/steady_state.hpp's steps): past the ones
  // the causal mask crosses, each block of a K/V tile's loop is the previous one's work on the
  // next Q, dO, L, D and dQaccum rows. Declared for a dense problem; a window's blocks differ at
  // both ends and a ragged batch's tiles by sequence (none declared there).
  Repetition repetition(std::size_t kernel) const override {
    Repetition r;
    if (kernels_[kernel] == Flash3BwdKernel::main && p_.window == 0 && !p_.ragged()) {
      r.part_period = 1;
    }
    return r;
  }

  // Parts 1 + k (query block first + k) from the first block the mask leaves whole, all but the
  // last (which also writes dK and dV).
  PartRange steady_parts(std::size_t kernel, std::int64_t cta) const override {
    if (kernels_[kernel] != Flash3BwdKernel::main) return {};
    const KvBlockTile tile = KvBlockTile::of(p_, t_.block_kv, cta);
    const auto [first, last] = met_query_blocks(tile.k0, tile.kr);
    std::int64_t i = first;
    // The masked blocks come first (at most block_kv / block_q + 1 of them).
    while (i < last &&
           tile_hides_scores(p_, i * t_.block_q, std::min(t_.block_q, p_.seq - i * t_.block_q),
                             tile.k0, tile.kr)) {
      ++i;
    }
    if (i >= last) return {};
    return {static_cast<std::size_t>(1 + i - first), static_cast<std::size_t>(1 + last - first)};
  }

  // Main kernel: part 0 loads K_j and V_j; part 1 + k is the k-th query block the tile meets
  // (causal: from the first block holding a row that sees key k0; a window: up to the last
  // holding a row that sees its last key); the last also writes dK, dV. A tile no query block
  // meets (a window over a longer context) loads nothing and writes zero gradients.
  bool emit_cta_part(std::size_t kernel, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    const Flash3BwdKernel k = kernels_[kernel];
    if (k != Flash3BwdKernel::main) {
      if (part != 0) return false;
      if (k == Flash3BwdKernel::dot_do_o || k == Flash3BwdKernel::convert_dq) {
        emit_backward_rows(
            p_, t_.block_q, cta,
            k == Flash3BwdKernel::dot_do_o ? BackwardRows::dot_do_o : BackwardRows::convert_dq,
            out);
      } else {
        emit_backward_keys(
            p_, t_.block_kv, cta,
            k == Flash3BwdKernel::zero_dkv ? BackwardKeys::zero_dkv : BackwardKeys::convert_dkv,
            out);
      }
      return false;
    }
    const KvBlockTile tile = KvBlockTile::of(p_, t_.block_kv, cta);
    const std::int64_t bh = tile.q, k0 = tile.k0, kr = tile.kr;
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes();
    const TileRef dk{TensorId::dK, tile.kv, k0, kr, 0, d}, dv{TensorId::dV, tile.kv, k0, kr, 0, d};
    const auto [first, last] = met_query_blocks(k0, kr);
    if (part == 0) {
      if (first <= last) {
        out.push_back(TileOp::load({TensorId::K, tile.kv, k0, kr, 0, d}));  // TMA: sK (kr, d)
        out.push_back(TileOp::load({TensorId::V, tile.kv, k0, kr, 0, d}));  // TMA: sV (kr, d)
      }
      out.push_back(costs::zero_grad(dk));  // rdK (kr, d) fp32
      out.push_back(costs::zero_grad(dv));  // rdV (kr, d) fp32
      if (first <= last) return true;
      finish_kv_tile(p_, tile, out);  // no query block: zero gradients
      return false;
    }
    const std::int64_t i = first + static_cast<std::int64_t>(part) - 1;
    const std::int64_t q0 = i * t_.block_q, qr = std::min(t_.block_q, p_.seq - q0);
    out.push_back(TileOp::load({TensorId::Q, bh, q0, qr, 0, d}));   // TMA: sQ stage (qr, d)
    out.push_back(TileOp::load({TensorId::dO, bh, q0, qr, 0, d}));  // TMA: sdO stage (qr, d)
    out.push_back(TileOp::load({TensorId::L, bh, q0, qr, 0, 1}));   // sLSE (qr)
    out.push_back(TileOp::load({TensorId::D, bh, q0, qr, 0, 1}));   // sdPsum (qr)
    const TileRef s{TensorId::S, bh, q0, qr, k0, kr};  // rS^T, rP^T, rdP^T, rdS^T (kr, qr)
    const std::int64_t w = t_.consumers;
    // An SS product whose A operand (the block's keys, or dS) the warpgroups split and whose B
    // operand every warpgroup reads whole; an RS product reads only its B operand.
    const std::int64_t ss_scores = (kr + w * qr) * d * eb;
    // Three products feed the step's next phase and are waited on (wgmma.wait_group 0): S (for
    // P), dP (for dS) and dQ (for its staging store); dV and dK accumulate across steps.
    out.push_back(costs::scores(s, d, ss_scores));  // S^T = scale K Q^T
    out.back().wgmma_waits = 1;
    if (tile_hides_scores(p_, q0, qr, k0, kr) || p_.mask) out.push_back(costs::mask(s));
    out.push_back(costs::recompute_p(s));
    if (p_.dropout > 0) out.push_back(costs::dropout({TensorId::P, bh, q0, qr, k0, kr}));
    out.push_back(costs::grad_matmul(ComputeKind::accumulate_dv, s, d, w * qr * d * eb));  // RS
    out.push_back(costs::grad_matmul(ComputeKind::grad_p, s, d, ss_scores));  // dP^T = V dO^T
    out.back().wgmma_waits = 1;
    if (p_.dropout > 0) out.push_back(costs::dropout_grad(s));
    out.push_back(costs::grad_s(s));
    // dQ_i = dS K_j: dS to shared memory, then each warpgroup reads all of dS and its share of
    // K_j's columns; the fp32 result is staged in shared memory for the TMA reduce-add.
    out.push_back(costs::grad_matmul(ComputeKind::dq_partial, s, d,
                                     qr * kr * eb + (w * qr * kr + kr * d) * eb + qr * d * 4));
    // The step's two barriers, charged the shared-memory latency (as the engine charges
    // barriers: tile_costs.hpp's softmax_rows).
    out.back().smem_round_trips = kBarriersPerStep;
    out.back().wgmma_waits = 1;
    out.push_back(TileOp::reduce({TensorId::dQaccum, bh, q0, qr, 0, d}));  // (qr, d) fp32
    out.push_back(costs::grad_matmul(ComputeKind::accumulate_dk, s, d, w * qr * d * eb));  // RS
    if (i < last) return true;
    finish_kv_tile(p_, tile, out);  // TMA store (or reduce-add) from shared memory
    return false;
  }

 private:
  // The query blocks [first, last] holding a row that sees a key of [k0, k0 + kr) (first > last:
  // none). Row r's keys end at r + N_kv - N under the causal mask (r + N_kv - N + W - 1 under a
  // band) and start at r + N_kv - N - W + 1 under a window.
  std::pair<std::int64_t, std::int64_t> met_query_blocks(std::int64_t k0, std::int64_t kr) const {
    const std::int64_t offset = p_.seq_kv - p_.seq;  // bottom-right alignment
    std::int64_t row_first = 0, row_last = p_.seq - 1;
    if (p_.causal) row_first = std::max<std::int64_t>(0, k0 - offset);
    if (p_.window > 0) {
      if (!p_.causal) row_first = std::max<std::int64_t>(0, k0 - offset - p_.window + 1);
      row_last = std::min(row_last, k0 + kr - 1 - offset + p_.window - 1);
    }
    if (row_first > row_last) return {1, 0};
    return {row_first / t_.block_q, row_last / t_.block_q};
  }

  AttentionProblem p_;
  Flash3BackwardTiles t_;
  std::vector<Flash3BwdKernel> kernels_;
};

}  // namespace

std::unique_ptr<Schedule> make_flash3_backward(const AttentionProblem& p,
                                               const Flash3BackwardTiles& t) {
  return std::make_unique<Flash3Backward>(p, t);
}

}  // namespace iosim
