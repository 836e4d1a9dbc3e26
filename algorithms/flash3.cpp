// FlashAttention-3 forward (Shah et al. 2024), the Hopper kernel that cuDNN's fused attention also
// follows: warp specialization (one producer warpgroup issuing TMA copies of K/V into a ring of
// shared-memory stages, consumer warpgroups of 64 query rows each computing with wgmma), ping-pong
// scheduling of the consumers so that one's softmax runs under another's GEMMs, a persistent grid
// with a tile scheduler, causal blocks skipped past the diagonal, GQA as flash2's forward.
//
// --dtype fp8 is FlashAttention-3's FP8 forward (paper section 3.3; hopper/ in its code): Q, K
// and V in e4m3, each block (the Q tile of block_q rows, a K or V tile of block_kv rows) with its
// own fp32 scale (the paper's block quantization), P converted to e4m3 for the P V product, O
// written in bf16 and L in fp32. The scale tensors (one float per block) are not counted. The
// work it adds to the 16-bit kernel is charged below (add_fp8_extra_ops).
//
// The work unit (a tile) is one block of `block_q` query rows of one (batch, head): the CTA loads
// Q once, streams K_j and V_j over the key blocks the tile sees, keeps m, l and O on chip and
// writes O and L once. The persistent CTAs (one per SM) take tiles in order from the tile
// scheduler as they finish; the engine dispatches the next tile of the grid to the SM that frees
// first, which is that same order, so the grid below is one entry per tile.
#include <fmt/format.h>

#include <algorithm>

#include "algorithms/passes.hpp"
#include "algorithms/tile_costs.hpp"

namespace iosim {
namespace {

constexpr int kWarpgroupThreads = 128;
constexpr std::int64_t kRowsPerWarpgroup = 64;  // wgmma's M: one m64nNk16 per warpgroup

// What FlashAttention-3's FP8 forward does per key block beyond its 16-bit path, added to the
// P V op of score tile `s` (hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp, Transpose_V = Is_FP8):
// - V_j's transpose in shared memory (fp8 wgmma takes its B operand K-major only): the producer
//   warpgroup reads V_j with LDSM.T (d x kr bytes, counted as shared-memory reads; the STSM
//   write back is not counted), swaps bytes with one PRMT (__byte_perm) per 4 bytes;
// - P's registers permuted to the fp8 A-operand layout (permute_Aregs_fp8): one PRMT per 4
//   scores;
// - per-block V scale: P V_j accumulates apart and O += scale_v_j * (P V_j), one FP32 FMA (2
//   FLOPs) per element of O. The Q and K block scales fold into the softmax's scale multiply,
//   which every score already pays (no extra op).
void add_fp8_extra_ops(TileOp& pv_op, const TileRef& s, std::int64_t d) {
  pv_op.smem_read_bytes += s.cols * d;
  pv_op.int_ops += s.cols * d / 4 + s.rows * s.cols / 4;
  pv_op.fp32_flops += 2 * s.rows * d;
}

class Flash3Schedule final : public Schedule {
 public:
  Flash3Schedule(const AttentionProblem& p, const Tiling& t, std::int64_t smem_bytes, int regs,
                 int consumers, bool pingpong)
      : p_(p),
        t_(t),
        smem_bytes_(smem_bytes),
        regs_(regs),
        consumers_(consumers),
        pingpong_(pingpong) {}

  // Grouped-query attention: a K/V head's query heads packed as one (QueryView), as flash2's.
  QueryView view() const { return QueryView::of(p_, p_.packs_query_group()); }

  std::vector<TensorDecl> tensors() const override { return view().tensors(p_); }

  std::vector<KernelSpec> kernels() const override {
    KernelSpec k;
    k.name = "flash3_fwd";
    // One entry per tile in the tile scheduler's order: query blocks of a head first, then
    // batches, then heads, so that the tiles running at once share K/V in L2.
    k.grid = view().grid(p_, t_.block_q);
    k.threads_per_cta = t_.threads;
    k.smem_bytes_per_cta = smem_bytes_;
    k.registers_per_thread = regs_;
    k.pipeline_stages = kv_pipeline_depth(t_.pipeline_stages);
    k.mma_dtype = p_.dtype;
    k.tensor_instruction = TensorInstruction::wgmma;
    k.producer_warps = kWarpgroupThreads / 32;
    k.consumer_warpgroups = consumers_;
    k.overlap = pingpong_ ? PipeOverlap::pingpong : PipeOverlap::async_tensor;
    k.role = "attention";
    return {k};
  }

  // As flash2's: heads (or groups) repeat, and the K/V blocks before the last or the diagonal.
  Repetition repetition(std::size_t) const override {
    return forward_repetition(p_, view(), t_.block_q);
  }
  PartRange steady_parts(std::size_t, std::int64_t cta) const override {
    const QueryView::Tile tile = view().tile(p_, t_.block_q, cta);
    return forward_steady_parts(p_, tile.q0, tile.qr, t_.block_kv);
  }

  // Part 0: Q's tile and the state; part 1 + j: key block j; the last also writes O and L.
  bool emit_cta_part(std::size_t, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    const auto [qb, bh, kv, q0, qr] = view().tile(p_, t_.block_q, cta);
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes();
    const std::int64_t offset = p_.seq_kv - p_.seq;  // bottom-right causal alignment
    // Causal: blocks up to the one holding the last row's diagonal key; the diagonal blocks are
    // computed whole and masked.
    const std::int64_t count = dense_kv_blocks(p_, q0, qr, t_.block_kv);
    const TileRef o{TensorId::O, bh, q0, qr, 0, d};
    if (part == 0) {
      out.push_back(TileOp::load({TensorId::Q, bh, q0, qr, 0, d}));  // TMA: gQ -> sQ
      out.push_back(costs::init_state(o));
      return true;
    }
    const auto j = static_cast<std::int64_t>(part) - 1;
    const std::int64_t k0 = j * t_.block_kv;
    const std::int64_t kr = std::min(t_.block_kv, p_.seq_kv - k0);
    out.push_back(TileOp::load({TensorId::K, kv, k0, kr, 0, d}));  // TMA: gK -> sK stage
    out.push_back(TileOp::load({TensorId::V, kv, k0, kr, 0, d}));  // TMA: gV -> sV stage
    const TileRef s{TensorId::S, bh, q0, qr, k0, kr};
    // wgmma reads its B operand from shared memory once per warpgroup: S = Q K^T with Q from
    // shared memory too; O += P V with P from registers (FlashAttention-3's RS form).
    const std::int64_t groups = ceil_div(qr, kRowsPerWarpgroup);
    out.push_back(costs::scores(s, d, (qr + groups * kr) * d * eb));
    if (p_.causal && k0 + kr - 1 > q0 + offset) out.push_back(costs::mask(s));
    if (p_.mask) out.push_back(costs::mask(s));
    out.push_back(costs::online_softmax(s, d));
    // wgmma's accumulator gives a row to the 4 threads of a quad: its max takes 2 shuffle
    // rounds (the sum is reduced across the quad once, at the end).
    out.back().smem_round_trips = 2;
    if (p_.dropout > 0) out.push_back(costs::dropout({TensorId::P, bh, q0, qr, k0, kr}));
    out.push_back(costs::pv(s, d, groups * kr * d * eb));
    if (p_.dtype == Dtype::fp8) add_fp8_extra_ops(out.back(), s, d);
    if (j + 1 < count) return true;
    finish_forward_tile(o, d, out);  // O through shared memory (a TMA store there)
    return false;
  }

 private:
  AttentionProblem p_;
  Tiling t_;
  std::int64_t smem_bytes_;
  int regs_;
  int consumers_;
  bool pingpong_;
};

// FlashAttention-3's backward tiles for 16-bit types on sm90 (hopper/flash_bwd_launch_template.h,
// run_mha_bwd_hdim*): d <= 64: 128 x 128; d <= 96: 64 x 128; d <= 128: 64 x 128 causal, 80 x 128
// otherwise; d <= 192: 64 x 96; larger: 64 x 80. Two consumer (MMA) warpgroups beside the
// producer (384 threads, as cuDNN's bprop kernel); Q, dO and dS double-buffered up to d = 128,
// single above. `req` is what the flags ask of the backward (in a run of both passes, where they
// tile the forward, --backward-block-q and --backward-block-kv). Returns why the tiles cannot
// run, or nothing.
std::string plan_backward(const AttentionProblem& p, const HardwareProfile& hw,
                          const TilingRequest& req, Flash3BackwardTiles& bt) {
  const std::int64_t d = p.head_dim, eb = p.elem_bytes();
  bt.block_q = req.block_q.value_or(d <= 64    ? 128
                                    : d <= 96  ? 64
                                    : d <= 128 ? (p.causal ? 64 : 80)
                                               : 64);
  bt.block_kv = req.block_kv.value_or(d <= 128 ? 128 : d <= 192 ? 96 : 80);
  bt.stages = req.pipeline_stages.value_or(d <= 128 ? 2 : 1);
  bt.consumers = 2;
  bt.threads = req.threads.value_or((bt.consumers + 1) * kWarpgroupThreads);
  if (bt.block_q % 16 != 0 || bt.block_kv % 16 != 0 ||
      bt.threads != (bt.consumers + 1) * kWarpgroupThreads) {
    return fmt::format(
        "flash3's backward runs two consumer warpgroups beside one producer on blocks of 16-row "
        "wgmma steps: --block-q {} and --block-kv {} must be multiples of 16 and the CTA {} "
        "threads, not {}",
        bt.block_q, bt.block_kv, (bt.consumers + 1) * kWarpgroupThreads, bt.threads);
  }
  // Q, dO and dS stages, K and V, the fp32 dQ staging tile of the TMA reduce-add, L and D stages.
  const std::int64_t s = bt.stages;
  bt.smem_bytes =
      (2 * s * bt.block_q * d + 2 * bt.block_kv * d + s * bt.block_q * bt.block_kv) * eb +
      bt.block_q * d * 4 + s * bt.block_q * 8;
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  if (bt.smem_bytes > limit) {
    return fmt::format(
        "flash3 backward tile does not fit in shared memory: {} stage(s) of Q, dO ({}x{}) and dS "
        "({}x{}), K and V {}x{} ({}), the fp32 dQ tile and L, D need {} bytes, {} allows {} "
        "bytes per CTA",
        s, bt.block_q, d, bt.block_q, bt.block_kv, bt.block_kv, d, dtype_name(p.dtype),
        bt.smem_bytes, hw.name, limit);
  }
  bt.registers = req.registers_per_thread.value_or(
      std::min(255, hw.sm.registers_per_sm.value / bt.threads / 8 * 8));
  return {};
}

Planned plan_flash3(const AttentionProblem& p, const HardwareProfile& hw,
                    const TilingRequest& req) {
  Planned out;
  Tiling& t = out.tiling;
  const std::int64_t eb = p.elem_bytes(), d = p.head_dim;
  // --block-q, --block-kv, --stages, --threads and --registers tile the forward kernel, or the
  // backward's main kernel in a backward alone; in a run of both passes the backward keeps
  // FlashAttention-3's backward tiles unless --backward-block-q/-kv say otherwise
  // (Tiling::backward_block_q and _kv report them).
  Flash3BackwardTiles bt;
  if (runs_backward(p.pass)) {
    TilingRequest backward;  // in a run of both passes only its blocks, if given
    backward.block_q = req.backward_block_q;
    backward.block_kv = req.backward_block_kv;
    out.infeasible_reason = plan_backward(p, hw, p.pass == Pass::bwd ? req : backward, bt);
    if (!out.feasible()) return out;
    t.backward_block_q = bt.block_q;
    t.backward_block_kv = bt.block_kv;
  }
  if (!runs_forward(p.pass)) {
    t.block_q = bt.block_q;
    t.block_kv = bt.block_kv;
    t.threads = bt.threads;
    t.pipeline_stages = bt.stages;
    t.registers_per_thread = bt.registers;
    out.schedule = make_flash3_backward(p, bt);
    return out;
  }
  // FlashAttention-3's forward tiles for 16-bit types (hopper/tile_size.h, tile_size_fwd_sm90):
  // d <= 64: 192 x 128 (three consumer warpgroups), d <= 128: 128 x 128, larger: 128 x 80. For
  // fp8 (element_size 1, the same function today): d <= 64: 192 x 160, d <= 128: 128 x 224,
  // d <= 192: 128 x 160, larger: 128 x 128.
  const bool fp8 = p.dtype == Dtype::fp8;
  t.block_q = req.block_q.value_or(d <= 64 ? 192 : 128);
  const std::int64_t kv_fp8 = d <= 64 ? 160 : d <= 128 ? 224 : d <= 192 ? 160 : 128;
  const std::int64_t kv_16bit = d <= 64 ? 128 : d <= 128 ? 128 : 80;
  t.block_kv = req.block_kv.value_or(fp8 ? kv_fp8 : kv_16bit);
  t.pipeline_stages = req.pipeline_stages.value_or(2);
  const int consumers = static_cast<int>(ceil_div(t.block_q, kRowsPerWarpgroup));
  t.threads = req.threads.value_or((consumers + 1) * kWarpgroupThreads);
  if (t.block_q % kRowsPerWarpgroup != 0 || t.threads != (consumers + 1) * kWarpgroupThreads) {
    out.infeasible_reason = fmt::format(
        "flash3 gives each consumer warpgroup 64 query rows (wgmma's M) and adds one producer "
        "warpgroup: --block-q {} must be a multiple of 64 and the CTA {} threads, not {}",
        t.block_q, (consumers + 1) * kWarpgroupThreads, t.threads);
    return out;
  }
  // Q, then the K/V stages; O leaves through Q's buffer. fp8 keeps a second set of V stages, the
  // transposed copy wgmma reads (smem_vt beside smem_v), and O (bf16) leaves through a V buffer.
  const std::int64_t v_copies = fp8 ? 2 : 1;
  const std::int64_t smem = (t.block_q + (1 + v_copies) * t.pipeline_stages * t.block_kv) * d * eb;
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  if (smem > limit) {
    out.infeasible_reason = fmt::format(
        "flash3 tile does not fit in shared memory: Q {}x{} plus {} stage(s) of K and V {}x{} "
        "({}) need {} bytes, {} allows {} bytes per CTA",
        t.block_q, d, t.pipeline_stages, t.block_kv, d, dtype_name(p.dtype), smem, hw.name, limit);
    return out;
  }
  // The CTA takes the whole register file (setmaxnreg moves registers from the producer to the
  // consumers): cuDNN's 384-thread kernels report 168 = 65536 / 384.
  const int regs = req.registers_per_thread.value_or(
      std::min(255, hw.sm.registers_per_sm.value / t.threads / 8 * 8));
  t.registers_per_thread = regs;
  // Register reallocation (setmaxnreg): the producer warpgroup keeps the fewest registers it may
  // and the consumers share the rest of what the CTA launched with, which is all they can take
  // (measured: the pool is the CTA's, an .inc beyond it blocks; cuda_validate/measurements/h100-sxm5-80gb/
  // setmaxnreg_2026-11-23/). A consumer thread holds at least its rows' O and S accumulators in
  // fp32: 64 rows x d and 64 x block_kv over 128 threads.
  const SmSpec& sm = hw.sm;
  if (sm.setmaxnreg_max_registers.value > 0 && sm.setmaxnreg_step_registers.value > 0) {
    const std::int64_t pool = static_cast<std::int64_t>(regs) * t.threads;
    const std::int64_t step = sm.setmaxnreg_step_registers.value;
    const std::int64_t consumer_regs =
        std::min<std::int64_t>(sm.setmaxnreg_max_registers.value,
                               (pool - kWarpgroupThreads * sm.setmaxnreg_min_registers.value) /
                                   (consumers * kWarpgroupThreads) / step * step);
    const std::int64_t accumulators = (d + t.block_kv) / 2;
    if (accumulators > consumer_regs) {
      out.infeasible_reason = fmt::format(
          "flash3 consumer warpgroups cannot hold their accumulators: O (64 x {}) and S (64 x {}) "
          "in fp32 take {} registers per thread, and register reallocation gives each consumer at "
          "most {} ({} threads launched with {} registers each, the producer warpgroup keeping "
          "{}, setmaxnreg at most {}); use a smaller --block-kv",
          d, t.block_kv, accumulators, consumer_regs, t.threads, regs,
          sm.setmaxnreg_min_registers.value, sm.setmaxnreg_max_registers.value);
      return out;
    }
  }
  // FlashAttention-3's code makes its consumer warpgroups ping-pong (a scheduler barrier) for
  // 16-bit types up to d = 128. The engine's ping-pong rule is the ideal of that (each
  // warpgroup's softmax wholly under another's GEMMs): it puts cuDNN's H100 forwards at 94%
  // (d = 128) and 87% (d = 64) of the tensor peak where ncu counts the tensor pipe active 77% and
  // 52% of the cycles. The default is the cooperative arrangement (PipeOverlap::async_tensor:
  // the 8 consumer warps overlap the pipes as 2 warps per scheduler allow, wgmma's operand
  // reads inside the tensor pipe): 74% and 60%. Ping-pong is --warpgroups pingpong
  // (cuda_validate/measurements/h100-sxm5-80gb/cudnn_2026-11-23/NOTES_flash3.md).
  const bool pingpong = req.warpgroups && *req.warpgroups == PipeOverlap::pingpong;
  out.schedule = for_pass(
      p.pass,
      [&]() -> std::unique_ptr<Schedule> {
        return std::make_unique<Flash3Schedule>(p, t, smem, regs, consumers, pingpong);
      },
      [&] { return make_flash3_backward(p, bt); });
  return out;
}

}  // namespace

Algorithm flash3_algorithm() {
  Algorithm a;
  a.name = "flash3";
  a.summary =
      "FlashAttention-3 (Hopper): producer/consumer warpgroups, wgmma, ping-pong, persistent "
      "tiles; backward with warpgroups of keys and a TMA reduce-add of dQ";
  a.capabilities.warpgroups = true;
  a.capabilities.fp8 = true;
  a.capabilities.packs_gqa = true;
  a.capabilities.gqa_backward = true;
  a.capabilities.flags_tile_forward = true;
  a.plan = plan_flash3;
  a.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask*) {
    return flash3_closed_form(p, t.block_q, t.block_kv, t.backward_block_q, t.backward_block_kv);
  };
  return a;
}

}  // namespace iosim
