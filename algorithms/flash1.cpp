// FlashAttention-1 forward, Algorithm 1 of Dao et al. 2022: one CTA per (batch, head). The
// outer loop walks K/V blocks (each loaded once); the inner loop walks Q blocks and, because
// the partial result lives in HBM between outer steps, reads and writes O, l and m every step
// (reads are skipped on the first visit, when the state is the known initial value).
#include <fmt/format.h>

#include <algorithm>

#include "algorithms/closed_form_parts.hpp"
#include "algorithms/dataflow.hpp"
#include "algorithms/passes.hpp"
#include "algorithms/tile_costs.hpp"
#include "sim/base/run_control.hpp"

namespace iosim {
namespace {

class Flash1Schedule final : public Schedule {
 public:
  Flash1Schedule(const AttentionProblem& p, const Tiling& t, std::int64_t smem_bytes, int regs)
      : p_(p),
        t_(t),
        smem_bytes_(smem_bytes),
        regs_(regs),
        tr_(ceil_div(p.seq, t.block_q)),
        tc_(ceil_div(p.seq_kv, t.block_kv)) {}

  std::vector<TensorDecl> tensors() const override {
    const std::int64_t eb = p_.elem_bytes(), bh = p_.bh(), d = p_.head_dim;
    // Grouped-query attention: head bh's CTA reads K/V matrix bh / g of B*H_kv.
    return {{TensorId::Q, bh, p_.seq, d, eb},
            {TensorId::K, p_.bh_kv(), p_.seq_kv, d, eb},
            {TensorId::V, p_.bh_kv(), p_.seq_kv, d, eb},
            {TensorId::O, bh, p_.seq, d, eb},
            {TensorId::l, bh, p_.seq, 1, 4},
            {TensorId::m, bh, p_.seq, 1, 4}};
  }

  std::vector<KernelSpec> kernels() const override {
    KernelSpec k;
    k.name = "flash1_fwd";
    k.grid = {p_.bh(), 1, 1};
    k.threads_per_cta = t_.threads;
    k.smem_bytes_per_cta = smem_bytes_;
    k.registers_per_thread = regs_;
    k.pipeline_stages = t_.pipeline_stages;
    k.mma_dtype = p_.dtype;
    k.tensor_instruction = TensorInstruction::mma_sync;  // warp-level MMA, as FlashAttention-2
    k.role = "attention";
    k.main_loop = true;
    return {k};
  }

  // One CTA per head; the heads of a grouped-query group share K/V.
  Repetition repetition(std::size_t) const override { return {p_.group(), 0}; }

  // Part j * tr + i is inner iteration i of outer iteration j (K/V block j); the first inner
  // iteration that runs also loads K_j and V_j. Parts this small keep each resident CTA's pending
  // operations to a few (instead of a whole outer iteration: tr x 10 operations of ~100 bytes,
  // megabytes per CTA at small blocks), which is most of what the engine spent on this schedule.
  // A part ends after an iteration's stores, so the engine's stages are the same as with whole
  // outer iterations. Causally skipped iterations are empty parts.
  bool emit_cta_part(std::size_t, std::int64_t bh, std::size_t part,
                     std::vector<TileOp>& out) const override {
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes();
    const std::int64_t tr = tr_, tc = tc_;
    const std::int64_t warps = std::max(1, t_.threads / 32);
    const std::int64_t offset = p_.seq_kv - p_.seq;
    const auto j = static_cast<std::int64_t>(part) / tr;
    const auto i = static_cast<std::int64_t>(part) % tr;
    const bool more = static_cast<std::int64_t>(part) + 1 < tr * tc;
    const std::int64_t k0 = j * t_.block_kv;
    const std::int64_t kr = std::min(t_.block_kv, p_.seq_kv - k0);
    const std::int64_t q0 = i * t_.block_q;
    const std::int64_t qr = std::min(t_.block_q, p_.seq - q0);
    // Causal: skip blocks where even the last row sees none of these keys. Skipped blocks are a
    // prefix of the inner loop (q0 grows with i), and the last block is never skipped.
    auto skipped = [&](std::int64_t q_first, std::int64_t q_rows) {
      return p_.causal && k0 > q_first + q_rows - 1 + offset;
    };
    if (skipped(q0, qr)) return more;
    if (i == 0 || skipped(q0 - t_.block_q, t_.block_q)) {
      out.push_back(TileOp::load({TensorId::K, bh / p_.group(), k0, kr, 0, d}));  // sK (kr, d)
      out.push_back(TileOp::load({TensorId::V, bh / p_.group(), k0, kr, 0, d}));  // sV (kr, d)
    }
    const TileRef o{TensorId::O, bh, q0, qr, 0, d};
    out.push_back(TileOp::load({TensorId::Q, bh, q0, qr, 0, d}));  // gQ -> sQ (qr, d)
    // Key 0 is visible to every row (causal needs seq_kv >= seq), so j = 0 is always the
    // first visit: the state starts as O = 0, l = 0, m = -inf without touching HBM.
    if (j == 0) {
      out.push_back(costs::init_state(o));
    } else {
      out.push_back(TileOp::load(o));  // sO (qr, d), prefetched with Q a step ahead
    }
    const TileRef s{TensorId::S, bh, q0, qr, k0, kr};  // rS (qr, kr)
    out.push_back(costs::scores(s, d, (qr + warps * kr) * d * eb));
    const bool crosses_diagonal = p_.causal && k0 + kr - 1 > q0 + offset;
    if (crosses_diagonal || p_.mask) out.push_back(costs::mask(s));
    if (j > 0) {
      // The kernel reads m and l with plain loads after the step's barrier (nothing
      // prefetches them); the softmax of the update waits for them.
      out.push_back(TileOp::load_in_step({TensorId::l, bh, q0, qr, 0, 1}));  // (qr)
      out.push_back(TileOp::load_in_step({TensorId::m, bh, q0, qr, 0, 1}));  // (qr)
    }
    // Rescaling O in shared memory, each warp loads a 32-bit pair of its rows, updates it and
    // stores it back, then the next: the compiler keeps them in order since it cannot tell
    // the swizzled addresses apart (nvcc's PTX interleaves ld.shared / st.shared), so a warp
    // makes 2 x d/8 round trips per 16-row m-tile it owns, one after another.
    const std::int64_t m_tiles_per_warp = std::max<std::int64_t>(1, qr / (16 * warps));
    const std::int64_t round_trips = j > 0 ? 2 * m_tiles_per_warp * (d / 8) : 0;
    out.push_back(
        costs::flash1_update(s, d, warps * kr * d * eb + (j > 0 ? qr * d * eb : 0), round_trips));
    out.push_back(TileOp::store(o, OnChip::smem));
    out.push_back(TileOp::store({TensorId::l, bh, q0, qr, 0, 1}, OnChip::reg));
    out.push_back(TileOp::store({TensorId::m, bh, q0, qr, 0, 1}, OnChip::reg));
    return more;
  }

 private:
  AttentionProblem p_;
  Tiling t_;
  std::int64_t smem_bytes_;
  int regs_;
  std::int64_t tr_, tc_;  // Q blocks, K/V blocks (emit_cta_part runs once per inner step)
};

std::int64_t flash1_smem_bytes(const AttentionProblem& p, std::int64_t br, std::int64_t bc) {
  // Q_i and O_i (br x d), K_j and V_j (bc x d), l_i and m_i (br, fp32).
  return (2 * br + 2 * bc) * p.head_dim * p.elem_bytes() + 2 * br * 4;
}

Planned plan_flash1(const AttentionProblem& p, const HardwareProfile& hw,
                    const TilingRequest& req) {
  Planned out;
  Tiling& t = out.tiling;
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  // Algorithm 1: Bc = ceil(M / 4d), Br = min(Bc, d), M = SRAM in elements. The ceiling can
  // overshoot M by a few elements, so Bc shrinks until the four tiles and l, m fit.
  // With a backward (Algorithm 4, eight tiles on chip) Bc shrinks until its tiles fit too; the
  // forward then runs with the same blocks.
  const std::int64_t m_elems = sram_bytes(hw) / p.elem_bytes();
  // At least one column: a profile whose SRAM holds less than one element would give Bc = 0,
  // a tile the checks below pass (0 bytes fit) and the schedule divides by (issue #50, C2).
  std::int64_t bc = std::max<std::int64_t>(1, ceil_div(m_elems, 4 * p.head_dim));
  const bool bwd = runs_backward(p.pass);
  auto too_big = [&](std::int64_t br, std::int64_t c) {
    return flash1_smem_bytes(p, br, c) > limit ||
           (bwd && flash1_backward_smem_bytes(p, br, c) > limit);
  };
  while (bc > 1 && too_big(std::min(bc, p.head_dim), bc)) --bc;
  t.block_kv = req.block_kv.value_or(bc);
  t.block_q = req.block_q.value_or(std::min(t.block_kv, p.head_dim));
  t.threads = req.threads.value_or(128);
  t.pipeline_stages = req.pipeline_stages.value_or(1);
  const std::int64_t smem = flash1_smem_bytes(p, t.block_q, t.block_kv);
  if (smem > limit) {
    out.infeasible_reason = fmt::format(
        "flash1 tile does not fit in shared memory: Q, O {}x{} and K, V {}x{} ({}) plus l, m "
        "need {} bytes, {} allows {} bytes per CTA",
        t.block_q, p.head_dim, t.block_kv, p.head_dim, dtype_name(p.dtype), smem, hw.name, limit);
    return out;
  }
  const std::int64_t bwd_smem = flash1_backward_smem_bytes(p, t.block_q, t.block_kv);
  if (bwd && bwd_smem > limit) {
    out.infeasible_reason = fmt::format(
        "flash1 backward tile does not fit in shared memory: Q, O, dO, dQ {}x{}, K, V, dK, dV "
        "{}x{} and P, dS {}x{} ({}) need {} bytes, {} allows {} bytes per CTA",
        t.block_q, p.head_dim, t.block_kv, p.head_dim, t.block_q, t.block_kv, dtype_name(p.dtype),
        bwd_smem, hw.name, limit);
    return out;
  }
  const int regs = row_split_registers(t, p.head_dim, p.elem_bytes(), req);
  t.registers_per_thread = regs;
  out.schedule = for_pass(
      p.pass,
      [&]() -> std::unique_ptr<Schedule> {
        return std::make_unique<Flash1Schedule>(p, t, smem, regs);
      },
      [&] { return make_flash1_backward(p, t); });
  return out;
}

using closed_form_parts::every_head;
using closed_form_parts::u;
using closed_form_parts::u64;

// The closed form, per (batch, head), in bytes: Algorithm 1's forward.
ReadWriteBytes flash1(const AttentionProblem& p, std::int64_t bq, std::int64_t bk) {
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim);
  ReadWriteBytes rw;
  rw.read += 2 * u(p.seq_kv) * d * eb;  // K and V once each
  const std::int64_t offset = p.seq_kv - p.seq;
  for (std::int64_t k0 = 0; k0 < p.seq_kv; k0 += bk) {
    run_control::check();  // blocks squared: minutes at N = 2^24, so SIGINT and budgets apply
    for (std::int64_t q0 = 0; q0 < p.seq; q0 += bq) {
      const u64 qr = u(std::min(bq, p.seq - q0));
      if (p.causal && k0 > q0 + static_cast<std::int64_t>(qr) - 1 + offset) continue;
      const u64 state = qr * d * eb + 2 * qr * 4;  // O tile plus l and m (fp32)
      rw.read += qr * d * eb + (k0 > 0 ? state : 0);
      rw.write += state;
    }
  }
  return rw;
}

// Key blocks query block [q0, q0 + qr) meets: all of them, or under bottom-right causal masking
// those up to the block of the last row's diagonal key.
u64 visible_kv_blocks(const AttentionProblem& p, std::int64_t q0, std::int64_t qr,
                      std::int64_t bc) {
  const std::int64_t tc = (p.seq_kv + bc - 1) / bc;
  if (!p.causal) return u(tc);
  return u(std::min<std::int64_t>((q0 + qr - 1 + (p.seq_kv - p.seq)) / bc + 1, tc));
}

// FlashAttention-1 backward, Algorithm 4: per K/V block j (K_j, V_j in, dK_j, dV_j out once),
// per query block i it meets: Q_i, O_i, dO_i, l_i, m_i in; dQ_i in (except on j = 0) and out.
ReadWriteBytes flash1_bwd(const AttentionProblem& p, std::int64_t bq, std::int64_t bk) {
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim);
  ReadWriteBytes rw;
  rw.read += 2 * u(p.seq_kv) * d * eb;
  rw.write += 2 * u(p.seq_kv) * d * eb;
  for (std::int64_t q0 = 0; q0 < p.seq; q0 += bq) {
    const std::int64_t qr = std::min(bq, p.seq - q0);
    const u64 visits = visible_kv_blocks(p, q0, qr, bk);  // always includes j = 0
    rw.read += visits * (3 * u(qr) * d * eb + 2 * u(qr) * 4) + (visits - 1) * u(qr) * d * eb;
    rw.write += visits * u(qr) * d * eb;
  }
  return rw;
}

}  // namespace

ReadWriteBytes flash1_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                  std::int64_t block_kv) {
  return every_head(p, block_q, block_kv, flash1, flash1_bwd);
}

namespace {

// What both FlashAttention-1 entries share: the one planner of both passes, the closed form, the
// lines of Algorithms 1 and 4.
Dataflow flash1_dataflow(Pass pass, const char* name, const char* summary) {
  Dataflow f;
  f.name = name;
  f.pass = pass;
  f.summary = summary;
  f.mechanisms = kOurMmaSyncMechanisms;
  f.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req,
              const DataflowUse&) { return plan_flash1(p, hw, req); };
  f.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask*) {
    return flash1_closed_form(p, t.block_q, t.block_kv);
  };
  f.paper_step = [](const std::string& kernel, const TileOp& op, const DataflowUse&) {
    return paper::backward_kernel(kernel) ? paper::flash1_backward(op) : paper::flash1_forward(op);
  };
  f.capabilities.forward_stages = StagesCount::q_o_stages;
  return f;
}

}  // namespace

Dataflow kv_stationary_dataflow() {
  Dataflow f = flash1_dataflow(
      Pass::fwd, "kv_stationary",
      "one CTA per head loops over K/V blocks, Q blocks inside; O, l, m re-read and re-written "
      "(FlashAttention-1, Algorithm 1)");
  // Its default Br is min(Bc, d), not 128.
  f.estimated_work = [](const AttentionProblem& p, const TilingRequest& requested) {
    TilingRequest t = requested;
    if (!t.block_q) t.block_q = std::min(t.block_kv.value_or(128), p.head_dim);
    return tiled_estimated_work(p, t);
  };
  return f;
}

Dataflow kv_stationary_dq_in_hbm_dataflow() {
  Dataflow b = flash1_dataflow(
      Pass::bwd, "kv_stationary_dq_in_hbm",
      "one CTA per head, K/V outer, Q inner; dQ read, updated and written in HBM every step "
      "(FlashAttention-1, Algorithm 4)");
  b.fused = FusedPasses{"kv_stationary", false, false, b.plan, b.closed_form, b.paper_step};
  return b;
}

}  // namespace iosim
