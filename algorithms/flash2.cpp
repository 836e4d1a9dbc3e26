// FlashAttention-2 forward (Dao 2023): one CTA per (Q block, batch, head), launched with grid
// (Tr, B, H) so that CTAs of the same head run side by side and share K/V in L2. A CTA loads
// its Q tile once, streams K_j, V_j (j = 0..Tc-1; causal stops at the diagonal), keeps the
// running max m, sum l and output O on chip, and writes O and the log-sum-exp L once.
// Block-sparse FlashAttention is this kernel over the nonzero blocks of a block mask; the
// backward lives in flash2_bwd.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "algorithms/closed_form_parts.hpp"
#include "algorithms/dataflow.hpp"
#include "algorithms/passes.hpp"
#include "algorithms/query_stationary.hpp"
#include "sim/base/run_control.hpp"
#include "sim/schedule/block_mask.hpp"

namespace iosim {

// CUDA's limit on a CTA's threads.
constexpr int kFlash2MaxCtaThreads = 1024;

ResolvedMechanisms flash2_mechanisms() {
  return resolve_mechanisms(kernel_preset("flash2"));
}

Planned plan_flash2_family(const AttentionProblem& p, const HardwareProfile& hw,
                           const TilingRequest& req, bool block_sparse) {
  const std::string algo = block_sparse ? "block-sparse" : "flash2";
  if (p.pass == Pass::fwd) {
    return plan_query_stationary_forward(p, hw, req, flash2_mechanisms(), algo, "flash2_fwd",
                                         block_sparse);
  }
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
  // The backward runs twice the forward's warps, as FlashAttention-2 (8 warps against 4): alone
  // (--pass bwd) --threads is its CTA's, as asked (it ran twice what was asked); after a forward
  // (fwdbwd) --threads is the forward's and the backward's is twice it (Flash2Backward).
  t.threads = req.threads.value_or(p.pass == Pass::bwd ? 256 : 128);
  if (p.pass == Pass::fwdbwd && 2 * t.threads > kFlash2MaxCtaThreads) {
    out.infeasible_reason = fmt::format(
        "{} --pass fwdbwd: the backward runs twice the forward's warps (FlashAttention-2's 8 "
        "against 4), and --threads {} would make it {} threads, over a CTA's {}; use --threads "
        "{} at most, or --pass bwd",
        algo, t.threads, 2 * t.threads, kFlash2MaxCtaThreads, kFlash2MaxCtaThreads / 2);
    return out;
  }
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
      [&] {
        QueryStationaryKernel kernel;
        kernel.name = "flash2_fwd";
        kernel.mechanisms = flash2_mechanisms();
        kernel.smem_bytes = fwd_smem();
        kernel.registers = regs;
        return make_query_stationary_forward(p, t, kernel, blocks);
      },
      [&] { return make_flash2_backward(p, t, blocks); });
  return out;
}

namespace {

using closed_form_parts::MeetsBlock;
using closed_form_parts::times;
using closed_form_parts::u;
using closed_form_parts::u64;
using closed_form_parts::visible_kv_rows;

// The closed form, per (batch, head), in bytes: the dense forward.
ReadWriteBytes flash2(const AttentionProblem& p, std::int64_t bq, std::int64_t bk) {
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim);
  ReadWriteBytes rw;
  rw.read += u(p.seq) * d * eb;  // Q once
  for (std::int64_t q0 = 0; q0 < p.seq; q0 += bq) {
    const std::int64_t qr = std::min(bq, p.seq - q0);
    rw.read += 2 * visible_kv_rows(p, q0, qr, bk) * d * eb;  // K and V
  }
  // O (bf16 when the inputs are fp8: a description with wgmma may run fp8) and L (fp32).
  rw.write += u(p.seq) * d * u(p.out_elem_bytes()) + u(p.seq) * 4;
  return rw;
}

// Forward and backward of FlashAttention-2 over the blocks `meets(i, j)` says are computed: the
// dense causal rule, or a block mask. Counted from the query side (the backward loops over K/V
// blocks): a query block i, for each block j it meets, costs the forward K_j and V_j and the
// backward Q_i, dO_i, L_i, D_i and an atomic add of its fp32 dQ share (read and write).
template <typename Meets>
ReadWriteBytes flash2_family(const AttentionProblem& p, std::int64_t bq, std::int64_t bk,
                             bool forward, Meets&& meets) {
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim), n = u(p.seq);
  const std::int64_t tc = (p.seq_kv + bk - 1) / bk;
  ReadWriteBytes rw;
  std::vector<bool> column_used(static_cast<std::size_t>(tc), false);
  for (std::int64_t q0 = 0, i = 0; q0 < p.seq; q0 += bq, ++i) {
    run_control::check();  // blocks squared: see flash1.cpp's
    const u64 qr = u(std::min(bq, p.seq - q0));
    u64 met = 0;
    for (std::int64_t j = 0; j < tc; ++j) {
      if (!meets(i, q0, static_cast<std::int64_t>(qr), j)) continue;
      ++met;
      column_used[static_cast<std::size_t>(j)] = true;
      const u64 kr = u(std::min(bk, p.seq_kv - j * bk));
      if (forward) {
        rw.read += 2 * kr * d * eb;
      } else {
        rw.read += 2 * qr * d * eb + 2 * qr * 4 + qr * d * 4;
        rw.write += qr * d * 4;
      }
    }
    if (forward && met > 0) rw.read += qr * d * eb;  // Q_i, unless the block meets no key
  }
  if (forward) {
    rw.write += n * d * u(p.out_elem_bytes()) + n * 4;  // O and L for every row
    return rw;
  }
  for (std::int64_t j = 0; j < tc; ++j) {  // K_j, V_j once if any query block meets them
    if (column_used[static_cast<std::size_t>(j)])
      rw.read += 2 * u(std::min(bk, p.seq_kv - j * bk)) * d * eb;
  }
  rw.read += 2 * n * d * eb;             // pre-pass: O and dO
  rw.write += n * 4 + n * d * 4;         // pre-pass: D, and dQaccum zeroed
  rw.read += n * d * 4;                  // convert: dQaccum in
  rw.write += n * d * eb;                // convert: dQ out
  rw.write += 2 * u(p.seq_kv) * d * eb;  // dK, dV for every key block (zeros where unmet)
  return rw;
}

}  // namespace

ReadWriteBytes flash2_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                  std::int64_t block_kv, const BlockMask* blocks) {
  const MeetsBlock meets{p, block_kv, blocks};
  ReadWriteBytes out;
  if (runs_forward(p.pass)) {
    if (!blocks && p.packs_query_group()) {
      // A K/V head's g queries form one g-row query "head": the same schedule over the view.
      AttentionProblem view = p;
      view.heads = p.kv_head_count();
      view.kv_heads = 0;
      view.seq = p.group() * p.seq;
      view.causal = false;  // one query position sees every key
      out += times(u(view.bh()), flash2(view, block_q, block_kv));
    } else {
      out += times(u(p.bh()), blocks ? flash2_family(p, block_q, block_kv, true, meets)
                                     : flash2(p, block_q, block_kv));
    }
  }
  if (runs_backward(p.pass)) {
    out += times(u(p.bh()), flash2_family(p, block_q, block_kv, false, meets));
  }
  return out;
}

PaperStep flash2_family_paper_step(const std::string& kernel, const TileOp& op,
                                   const DataflowUse& use) {
  if (paper::backward_kernel(kernel)) return paper::flash2_backward(kernel, op);
  return paper::flash2_forward(
      op, use.block_mask ? "FlashAttention-2, Algorithm 1, over the nonzero blocks only (as "
                           "FlashAttention's Algorithm 5 skips the zero blocks)"
                         : "FlashAttention-2, Algorithm 1");
}

Dataflow kv_stationary_atomic_dq_dataflow() {
  Dataflow b;
  b.name = "kv_stationary_atomic_dq";
  b.pass = Pass::bwd;
  b.summary =
      "one CTA per K/V block loops over query blocks; dQ added in fp32 with atomics, converted "
      "after (FlashAttention-2)";
  b.mechanisms = kOurMmaSyncMechanisms;
  b.window_backward = true;
  b.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req,
              const DataflowUse&) { return plan_flash2_family(p, hw, req, false); };
  b.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask*) {
    return flash2_closed_form(p, t.block_q, t.block_kv);
  };
  // Alone (no forward), FlashAttention-2's Algorithm 2, a block mask or not.
  b.paper_step = [](const std::string& kernel, const TileOp& op, const DataflowUse&) {
    return flash2_family_paper_step(kernel, op, {});
  };
  // FlashAttention-2's kernels: its forward and backward with one tiling for both passes
  // (the backward's), over a block mask's nonzero blocks where the description has one.
  FusedPasses fused;
  fused.forward = "query_stationary";
  fused.block_mask = true;
  fused.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req,
                  const DataflowUse& use) {
    return plan_flash2_family(p, hw, req, use.block_mask);
  };
  fused.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask* blocks) {
    return flash2_closed_form(p, t.block_q, t.block_kv, blocks);
  };
  fused.paper_step = flash2_family_paper_step;
  b.fused = fused;
  return b;
}

}  // namespace iosim
