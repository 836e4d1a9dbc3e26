// FlashAttention-2 forward (Dao 2023): one CTA per (Q block, batch, head), launched with grid
// (Tr, B, H) so that CTAs of the same head run side by side and share K/V in L2. A CTA loads
// its Q tile once, streams K_j, V_j (j = 0..Tc-1; causal stops at the diagonal), keeps the
// running max m, sum l and output O on chip, and writes O and the log-sum-exp L once.
// Block-sparse FlashAttention is this kernel over the nonzero blocks of a block mask; the
// backward lives in flash2_bwd.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "algorithms/passes.hpp"
#include "algorithms/tile_costs.hpp"
#include "sim/block_mask.hpp"

namespace iosim {
namespace {

class Flash2Schedule final : public Schedule {
 public:
  Flash2Schedule(const AttentionProblem& p, const Tiling& t, std::int64_t smem_bytes, int regs,
                 std::shared_ptr<const BlockMask> blocks)
      : p_(p), t_(t), smem_bytes_(smem_bytes), regs_(regs), blocks_(std::move(blocks)) {}

  // Grouped-query attention: K/V have B*H_kv matrices; the query group is packed (QueryView)
  // except under a block mask, which is over query positions.
  QueryView view() const { return QueryView::of(p_, p_.packs_query_group() && !blocks_); }

  std::vector<TensorDecl> tensors() const override { return view().tensors(p_); }

  std::vector<KernelSpec> kernels() const override {
    KernelSpec k;
    k.name = "flash2_fwd";
    k.grid = view().grid(p_, t_.block_q);
    k.threads_per_cta = t_.threads;
    k.smem_bytes_per_cta = smem_bytes_;
    k.registers_per_thread = regs_;
    k.pipeline_stages = kv_pipeline_depth(t_.pipeline_stages);
    k.mma_dtype = p_.dtype;
    k.tensor_instruction = TensorInstruction::mma_sync;  // warp-level MMA, as FlashAttention-2
    k.role = "attention";
    return {k};
  }

  // Heads repeat; with grouped-query heads sharing K/V (unpacked), a group of heads of every batch.
  // A CTA's K/V blocks repeat up to the first that crosses the causal diagonal, or the last,
  // which also writes O (under a block mask the blocks follow no stride: none).
  Repetition repetition(std::size_t) const override {
    Repetition r = forward_repetition(p_, view(), t_.block_q);
    if (blocks_) r.part_period = r.alike_run = 0;
    return r;
  }
  PartRange steady_parts(std::size_t, std::int64_t cta) const override {
    if (blocks_) return {};
    const QueryView::Tile tile = view().tile(p_, t_.block_q, cta);
    return forward_steady_parts(p_, tile.q0, tile.qr, t_.block_kv);
  }

  // Part 0 loads Q and initializes the state; part 1 + k is the k-th K/V block the CTA computes
  // (under a block mask, its k-th nonzero block), and the last one also writes O and L. One
  // block per part keeps a few operations per resident CTA in memory instead of all of them
  // (N = 16384 with 32-key blocks: 2560 operations, 300 KB per CTA, tens of MB for a wave, which
  // the engine streamed through the CPU's caches).
  bool emit_cta_part(std::size_t, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    const auto [qb, bh, kv, q0, qr] = view().tile(p_, t_.block_q, cta);
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes();
    const std::int64_t warps = std::max(1, t_.threads / 32);
    const std::int64_t offset = p_.seq_kv - p_.seq;  // bottom-right causal alignment
    const TileRef o{TensorId::O, bh, q0, qr, 0, d};

    // The blocks computed: up to the last key any row of this block sees (causal), or the
    // nonzero blocks of a block mask (zero past the diagonal with --causal).
    const std::span<const std::int64_t> nonzero =
        blocks_ ? blocks_->row_blocks(qb) : std::span<const std::int64_t>{};
    const std::int64_t count = blocks_ ? static_cast<std::int64_t>(nonzero.size())
                                       : dense_kv_blocks(p_, q0, qr, t_.block_kv);
    if (count == 0) {  // block-sparse: no nonzero block, O = 0 and L = +inf, Q unread
      out.push_back(costs::init_state(o));
      finish_forward_tile(o, d, out);
      return false;
    }
    if (part == 0) {
      out.push_back(TileOp::load({TensorId::Q, bh, q0, qr, 0, d}));  // gQ -> sQ (qr, d)
      out.push_back(costs::init_state(o));
      return true;
    }
    const auto k = static_cast<std::int64_t>(part) - 1;
    const std::int64_t j = blocks_ ? nonzero[static_cast<std::size_t>(k)] : k;
    const std::int64_t k0 = j * t_.block_kv;
    const std::int64_t kr = std::min(t_.block_kv, p_.seq_kv - k0);
    out.push_back(TileOp::load({TensorId::K, kv, k0, kr, 0, d}));  // gK -> sK (kr, d)
    out.push_back(TileOp::load({TensorId::V, kv, k0, kr, 0, d}));  // gV -> sV (kr, d)
    const TileRef s{TensorId::S, bh, q0, qr, k0, kr};              // rS (qr, kr)
    // Each warp reads its own Q rows and the whole K (then V) tile from shared memory.
    out.push_back(costs::scores(s, d, (qr + warps * kr) * d * eb));
    const bool crosses_diagonal = p_.causal && k0 + kr - 1 > q0 + offset;
    // Our block-sparse kernel evaluates the mask on every block: nvcc does not hoist its
    // uniform "this block needs a mask" test out of the per-score loop (its PTX predicates
    // the compares and selects of half the scores and branches per pair on the rest), where
    // in flash2's kernel it does (one branch per block, unmasked blocks only scale).
    if (crosses_diagonal || p_.mask || blocks_) out.push_back(costs::mask(s));
    out.push_back(costs::online_softmax(s, d));
    if (p_.dropout > 0) out.push_back(costs::dropout({TensorId::P, bh, q0, qr, k0, kr}));
    out.push_back(costs::pv(s, d, warps * kr * d * eb));
    if (k + 1 < count) return true;
    finish_forward_tile(o, d, out);
    return false;
  }

 private:
  AttentionProblem p_;
  Tiling t_;
  std::int64_t smem_bytes_;
  int regs_;
  std::shared_ptr<const BlockMask> blocks_;  // block-sparse only
};

}  // namespace

Planned plan_flash2_family(const AttentionProblem& p, const HardwareProfile& hw,
                           const TilingRequest& req, bool block_sparse) {
  Planned out;
  Tiling& t = out.tiling;
  const std::int64_t eb = p.elem_bytes(), d = p.head_dim;
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  const bool fwd = runs_forward(p.pass), bwd = runs_backward(p.pass);
  // FlashAttention-2's defaults on sm80/sm90: forward 128 x 128 for d <= 64, 128 x 64 above;
  // backward 128 x 128 for d <= 64, 64 x 128 up to d = 128, 64 x 64 above. A run with a
  // backward uses the backward's blocks for both passes (one tiling per run).
  if (bwd) {
    t.block_q = req.block_q.value_or((d <= 64 ? 128 : 64));
    t.block_kv = req.block_kv.value_or((d <= 128 ? 128 : 64));
  } else {
    t.block_q = req.block_q.value_or(128);
    t.block_kv = req.block_kv.value_or((d <= 64 ? 128 : 64));
  }
  t.threads = req.threads.value_or(128);
  t.pipeline_stages = req.pipeline_stages.value_or(2);
  auto fwd_smem = [&] { return (t.block_q + 2 * t.pipeline_stages * t.block_kv) * d * eb; };
  auto need = [&] {
    return std::max(fwd ? fwd_smem() : 0, bwd ? flash2_backward_smem_bytes(p, t) : 0);
  };
  // The backward's tiles are larger: defaults the user did not set give way until they fit
  // (a single copy stage first, then smaller blocks), as the library's smaller-SRAM configs do.
  while (bwd && need() > limit) {
    if (!req.pipeline_stages && t.pipeline_stages > 1) {
      --t.pipeline_stages;
    } else if (!req.block_kv && t.block_kv > 16) {
      t.block_kv /= 2;
    } else if (!req.block_q && t.block_q > 16) {
      t.block_q /= 2;
    } else {
      break;
    }
  }
  const std::string algo = block_sparse ? "block-sparse" : "flash2";
  if (fwd && fwd_smem() > limit) {
    out.infeasible_reason = fmt::format(
        "{} tile does not fit in shared memory: Q {}x{} plus {} stage(s) of K and V {}x{} "
        "({}) need {} bytes, {} allows {} bytes per CTA",
        algo, t.block_q, d, t.pipeline_stages, t.block_kv, d, dtype_name(p.dtype), fwd_smem(),
        hw.name, limit);
    return out;
  }
  if (bwd && flash2_backward_smem_bytes(p, t) > limit) {
    out.infeasible_reason = fmt::format(
        "{} backward tile does not fit in shared memory: {} stage(s) of Q {}x{}, dO of the same "
        "size, K and V {}x{}, P and dS {}x{} ({}) need {} bytes, {} allows {} bytes per CTA",
        algo, t.pipeline_stages, t.block_q, d, t.block_kv, d, t.block_q, t.block_kv,
        dtype_name(p.dtype), flash2_backward_smem_bytes(p, t), hw.name, limit);
    return out;
  }
  std::shared_ptr<const BlockMask> blocks;
  if (block_sparse) {
    blocks = std::make_shared<const BlockMask>(p, t.block_q, t.block_kv);
    out.blocks = blocks;
  }
  const int regs = row_split_registers(t, d, p.elem_bytes(), req);
  t.registers_per_thread = regs;
  out.schedule = for_pass(
      p.pass,
      [&]() -> std::unique_ptr<Schedule> {
        return std::make_unique<Flash2Schedule>(p, t, fwd_smem(), regs, blocks);
      },
      [&] { return make_flash2_backward(p, t, blocks); });
  return out;
}

Algorithm flash2_algorithm() {
  Algorithm a;
  a.name = "flash2";
  a.capabilities.packs_gqa = true;
  a.summary = "FlashAttention-2: CTA per (Q block, batch, head), K/V streamed, O written once";
  a.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req) {
    return plan_flash2_family(p, hw, req, false);
  };
  a.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask*) {
    return flash2_closed_form(p, t.block_q, t.block_kv);
  };
  return a;
}

}  // namespace iosim
