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
// work it adds to the 16-bit kernel is charged by the query-stationary forward
// (query_stationary.cpp, add_fp8_extra_ops).
//
// The work unit (a tile) is one block of `block_q` query rows of one (batch, head): the CTA loads
// Q once, streams K_j and V_j over the key blocks the tile sees, keeps m, l and O on chip and
// writes O and L once. The persistent CTAs (one per SM) take tiles in order from the tile
// scheduler as they finish; the engine dispatches the next tile of the grid to the SM that frees
// first, which is that same order, so the grid below is one entry per tile.
#include <fmt/format.h>

#include <algorithm>

#include "algorithms/closed_form_parts.hpp"
#include "algorithms/dataflow.hpp"
#include "algorithms/passes.hpp"
#include "algorithms/query_stationary.hpp"
#include "sim/base/errors.hpp"

namespace iosim {
namespace {

constexpr int kFlash3WarpgroupThreads = 128;

// FlashAttention-3's backward tiles for 16-bit types on sm90 (hopper/flash_bwd_launch_template.h,
// run_mha_bwd_hdim*): d <= 64: 128 x 128; d <= 96: 64 x 128; d <= 128: 64 x 128 causal, 80 x 128
// otherwise; d <= 192: 64 x 96; larger: 64 x 80. Two consumer (MMA) warpgroups beside the
// producer (384 threads, as cuDNN's bprop kernel); Q, dO and dS double-buffered up to d = 128,
// single above. `req` is what the flags ask of the backward (in a run of both passes, where they
// tile the forward, --backward-block-q and --backward-block-kv; `flag` is then "--backward-"
// rather than "--", so that a refusal names the flags that were given). Returns why the tiles
// cannot run, or nothing.
std::string plan_backward(const AttentionProblem& p, const HardwareProfile& hw,
                          const TilingRequest& req, const char* flag, Flash3BackwardTiles& bt) {
  const std::int64_t d = p.head_dim, eb = p.elem_bytes();
  bt.block_q = req.block_q.value_or(d <= 64    ? 128
                                    : d <= 96  ? 64
                                    : d <= 128 ? (p.causal ? 64 : 80)
                                               : 64);
  bt.block_kv = req.block_kv.value_or(d <= 128 ? 128 : d <= 192 ? 96 : 80);
  bt.stages = req.pipeline_stages.value_or(d <= 128 ? 2 : 1);
  bt.consumers = 2;
  const int cta_threads = (bt.consumers + 1) * kFlash3WarpgroupThreads;
  bt.threads = req.threads.value_or(cta_threads);
  // Blocks and threads apart: one message for both said "the CTA 384 threads, not 384" of a
  // block that was wrong, and named --block-q for --backward-block-q.
  if (bt.block_q % 16 != 0 || bt.block_kv % 16 != 0) {
    return fmt::format(
        "flash3's backward runs on blocks of 16-row wgmma steps: {}block-q {} and {}block-kv {} "
        "must be multiples of 16",
        flag, bt.block_q, flag, bt.block_kv);
  }
  if (bt.threads != cta_threads) {
    return fmt::format(
        "flash3's backward runs two consumer warpgroups beside one producer: its CTA has {} "
        "threads, not --threads {}",
        cta_threads, bt.threads);
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
  // --warpgroups arranges the forward's consumers; the backward's have their own roles, so a
  // backward alone ran the same whatever it said.
  if (req.warpgroups && p.pass == Pass::bwd) {
    throw ConfigError(
        "--warpgroups arranges flash3's forward warpgroups; --pass bwd runs no forward: leave it "
        "out, or use --pass fwd or fwdbwd");
  }
  Planned out;
  Tiling& t = out.tiling;
  // --block-q, --block-kv, --stages, --threads and --registers tile the forward kernel, or the
  // backward's main kernel in a backward alone; in a run of both passes the backward keeps
  // FlashAttention-3's backward tiles unless --backward-block-q/-kv say otherwise
  // (Tiling::backward_block_q and _kv report them).
  Flash3BackwardTiles bt;
  if (runs_backward(p.pass)) {
    TilingRequest backward;  // in a run of both passes only its blocks, if given
    backward.block_q = req.backward_block_q;
    backward.block_kv = req.backward_block_kv;
    out.infeasible_reason = p.pass == Pass::bwd ? plan_backward(p, hw, req, "--", bt)
                                                : plan_backward(p, hw, backward, "--backward-", bt);
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
  // FlashAttention-3's code makes its consumer warpgroups ping-pong (a scheduler barrier) for
  // 16-bit types up to d = 128. The engine's ping-pong rule is the ideal of that (each
  // warpgroup's softmax wholly under another's GEMMs): it puts cuDNN's H100 forwards at 94%
  // (d = 128) and 87% (d = 64) of the tensor peak where ncu counts the tensor pipe active 77% and
  // 52% of the cycles. The default is the cooperative arrangement (PipeOverlap::async_tensor:
  // the 8 consumer warps overlap the pipes as 2 warps per scheduler allow, wgmma's operand
  // reads inside the tensor pipe): 74% and 60%. Ping-pong is --warpgroups pingpong
  // (measurements/h100-sxm5-80gb/cudnn_2026-11-23/NOTES_flash3.md).
  const bool pingpong = req.warpgroups && *req.warpgroups == PipeOverlap::pingpong;
  Planned forward = plan_query_stationary_forward(p, hw, req, flash3_mechanisms(pingpong), "flash3",
                                                  "flash3_fwd", false);
  forward.tiling.backward_block_q = t.backward_block_q;
  forward.tiling.backward_block_kv = t.backward_block_kv;
  if (!forward.feasible() || p.pass == Pass::fwd) return forward;
  out.tiling = forward.tiling;
  out.schedule = sequence(std::move(forward.schedule), make_flash3_backward(p, bt));
  return out;
}

using closed_form_parts::u;
using closed_form_parts::u64;
using closed_form_parts::visible_kv_rows;

}  // namespace

ReadWriteBytes flash3_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                  std::int64_t block_kv, std::int64_t backward_block_q,
                                  std::int64_t backward_block_kv) {
  ReadWriteBytes out;
  if (runs_backward(p.pass)) {
    const std::int64_t bq = backward_block_q > 0 ? backward_block_q : block_q;
    const std::int64_t bk = backward_block_kv > 0 ? backward_block_kv : block_kv;
    AttentionProblem backward = p;
    backward.pass = Pass::bwd;
    out += flash2_closed_form(backward, bq, bk);
    if (p.group() > 1) {
      // Grouped-query heads: each query head adds its fp32 dK and dV into its K/V head's dKaccum
      // and dVaccum (read and write) instead of writing them in the element type; per K/V head
      // the accumulators are zeroed, then read and written as dK and dV once.
      const u64 eb = u(p.elem_bytes()), kd = u(p.seq_kv) * u(p.head_dim);
      out.write -= u(p.bh()) * 2 * kd * eb;
      out.read += u(p.bh()) * 2 * kd * 4;
      out.write += u(p.bh()) * 2 * kd * 4;
      out.write += u(p.bh_kv()) * 2 * kd * 4;   // zero_dkv_accum
      out.read += u(p.bh_kv()) * 2 * kd * 4;    // convert_dkv: in
      out.write += u(p.bh_kv()) * 2 * kd * eb;  // convert_dkv: out
    }
  }
  if (!runs_forward(p.pass)) return out;
  // With one query position per head, a K/V head's g query heads are one g-row block of queries
  // (they see every key).
  AttentionProblem view = p;
  if (p.packs_query_group()) {
    view.heads = p.kv_head_count();
    view.kv_heads = 0;
    view.seq = p.group() * p.seq;
    view.causal = false;
  }
  const u64 eb = u(view.elem_bytes()), d = u(view.head_dim), rows = u(view.seq);
  u64 per_head_read = rows * d * eb;  // Q, once per tile, all tiles
  for (std::int64_t q0 = 0; q0 < view.seq; q0 += block_q) {
    const std::int64_t qr = std::min(block_q, view.seq - q0);
    per_head_read += 2 * visible_kv_rows(view, q0, qr, block_kv) * d * eb;  // K and V blocks
  }
  // O (bf16 when the inputs are fp8, as FlashAttention-3's FP8 forward writes it), L in fp32.
  const u64 per_head_write = rows * d * u(view.out_elem_bytes()) + rows * 4;
  out.read += u(view.bh()) * per_head_read;
  out.write += u(view.bh()) * per_head_write;
  return out;
}

ResolvedMechanisms flash3_mechanisms(bool pingpong) {
  ResolvedMechanisms m = resolve_mechanisms(kernel_preset("flash3"));
  if (pingpong) m.warp_roles = WarpRoles::pingpong;
  return m;
}

Dataflow kv_stationary_reduce_dq_dataflow() {
  Dataflow b;
  b.name = "kv_stationary_reduce_dq";
  b.pass = Pass::bwd;
  b.summary =
      "one CTA per K/V block, consumer warpgroups in lockstep, dQ added with a TMA reduce-add in "
      "fp32, converted after (FlashAttention-3)";
  // FlashAttention-3's kernels: wgmma with P from registers, TMA, a producer warpgroup,
  // persistent.
  b.mechanisms = ResolvedMechanisms{MmaFamily::wgmma_rs, LoadPath::tma,
                                    WarpRoles::producer_consumer, true, MmaWait::step};
  b.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req,
              const DataflowUse&) { return plan_flash3(p, hw, req); };
  b.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask*) {
    return flash3_closed_form(p, t.block_q, t.block_kv, t.backward_block_q, t.backward_block_kv);
  };
  // Its backward carries out FlashAttention-2's Algorithm 2 lines (its own paper numbers none):
  // warpgroups, TMA and the reduce-add of dQ change how, not what. Its forward follows no lines.
  b.paper_step = [](const std::string& kernel, const TileOp& op, const DataflowUse&) {
    return paper::backward_kernel(kernel) ? paper::flash2_backward(kernel, op) : PaperStep{};
  };
  b.gqa_backward = true;
  b.window_backward = true;
  // FlashAttention-3's forward and backward: the flags tile the forward, the backward keeps its
  // own tiles (--backward-block-q/-kv).
  b.fused = FusedPasses{"query_stationary", false, true, b.plan, b.closed_form, b.paper_step};
  return b;
}

}  // namespace iosim
