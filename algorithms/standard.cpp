// Standard attention (Algorithm 0 of Dao et al. 2022) as unfused frameworks run it, one kernel
// per step with every intermediate in HBM:
//   gemm_qk  S = scale Q K^T       tiled GEMM, block_q x block_kv output tiles, head dim in chunks
//   mask     S = mask(S)           only with --causal or --mask (elementwise, read + write S)
//   softmax  P = softmax(S)        whole rows per CTA
//   dropout  P_drop = dropout(P)   only with --dropout; also writes the 1-byte keep mask (P is
//                                  kept: autograd saves it for the softmax gradient)
//   gemm_pv  O = P V               block_q x d output tiles, keys in chunks (P_drop with dropout)
// GEMM CTAs are launched with the M (query) tile index fastest, as cuBLAS does.
#include <fmt/format.h>

#include <algorithm>

#include "algorithms/closed_form_parts.hpp"
#include "algorithms/dataflow.hpp"
#include "algorithms/passes.hpp"
#include "algorithms/standard_tiles.hpp"
#include "algorithms/tile_costs.hpp"

namespace iosim {
namespace {

using standard_tiles::ElementwiseTiling;
using standard_tiles::kLoadChunk;
using standard_tiles::kSmemChunk;

enum class StandardKernel { gemm_qk, mask, softmax, dropout, gemm_pv };

class StandardSchedule final : public Schedule {
 public:
  StandardSchedule(const AttentionProblem& p, const Tiling& t, bool persistent_gemms)
      : p_(p),
        t_(t),
        persistent_gemms_(persistent_gemms),
        ew_(p.seq_kv, false),
        rows_(ElementwiseTiling::one_row(p.seq_kv)) {
    kernels_.push_back(StandardKernel::gemm_qk);
    if (p.causal || p.mask) kernels_.push_back(StandardKernel::mask);
    kernels_.push_back(StandardKernel::softmax);
    if (p.dropout > 0) kernels_.push_back(StandardKernel::dropout);
    kernels_.push_back(StandardKernel::gemm_pv);
  }

  std::vector<TensorDecl> tensors() const override {
    const std::int64_t eb = p_.elem_bytes(), bh = p_.bh(), d = p_.head_dim;
    // Grouped-query attention: query head bh reads K/V matrix bh / g of B*H_kv.
    std::vector<TensorDecl> t = {{TensorId::Q, bh, p_.seq, d, eb},
                                 {TensorId::K, p_.bh_kv(), p_.seq_kv, d, eb},
                                 {TensorId::V, p_.bh_kv(), p_.seq_kv, d, eb},
                                 {TensorId::O, bh, p_.seq, d, eb},
                                 {TensorId::S, bh, p_.seq, p_.seq_kv, eb},
                                 {TensorId::P, bh, p_.seq, p_.seq_kv, eb}};
    if (p_.dropout > 0) {
      t.push_back({TensorId::dropout_mask, bh, p_.seq, p_.seq_kv, 1});
      t.push_back({TensorId::P_drop, bh, p_.seq, p_.seq_kv, eb});
    }
    return t;
  }

  std::vector<KernelSpec> kernels() const override {
    std::vector<KernelSpec> out;
    const std::int64_t eb = p_.elem_bytes();
    const std::int64_t tq = ceil_div(p_.seq, t_.block_q);
    for (StandardKernel k : kernels_) {
      KernelSpec s;
      s.mma_dtype = p_.dtype;
      switch (k) {
        case StandardKernel::gemm_qk:
          s.name = s.role = "gemm_qk";
          s.main_loop = true;
          s.persistent = persistent_gemms_;
          s.grid = {tq, ceil_div(p_.seq_kv, t_.block_kv), p_.bh()};
          s.threads_per_cta = t_.threads;
          s.smem_bytes_per_cta = gemm_qk_smem(p_, t_);
          s.registers_per_thread = gemm_regs(t_.block_q * t_.block_kv);
          s.pipeline_stages = t_.pipeline_stages;
          break;
        case StandardKernel::gemm_pv:
          s.name = s.role = "gemm_pv";
          s.main_loop = true;
          s.persistent = persistent_gemms_;
          s.grid = {tq, 1, p_.bh()};
          s.threads_per_cta = t_.threads;
          s.smem_bytes_per_cta = gemm_pv_smem(p_, t_);
          s.registers_per_thread = gemm_regs(t_.block_q * p_.head_dim);
          s.pipeline_stages = t_.pipeline_stages;
          break;
        default: {
          const ElementwiseTiling& e = k == StandardKernel::softmax ? rows_ : ew_;
          s.name = k == StandardKernel::mask      ? "mask"
                   : k == StandardKernel::softmax ? "softmax"
                                                  : "dropout";
          s.role = s.name;
          s.grid = {ceil_div(p_.seq_kv, e.cols), ceil_div(p_.seq, e.rows), p_.bh()};
          s.threads_per_cta = 256;
          // The row-wise softmax keeps its rows in shared memory; elementwise passes need none.
          s.smem_bytes_per_cta = k == StandardKernel::softmax ? e.rows * e.cols * eb : 0;
          s.registers_per_thread = 32;
          s.pipeline_stages = 1;
          break;
        }
      }
      out.push_back(s);
    }
    return out;
  }

  // Every kernel's grid is per head (bh slowest); the GEMMs' heads of a grouped-query group share
  // K or V.
  Repetition repetition(std::size_t kernel) const override {
    const std::int64_t tq = ceil_div(p_.seq, t_.block_q);
    switch (kernels_.at(kernel)) {
      case StandardKernel::gemm_qk:
        return {tq * ceil_div(p_.seq_kv, t_.block_kv) * p_.group(), 0};
      case StandardKernel::gemm_pv:
        return {tq * p_.group(), 0};
      default: {
        const ElementwiseTiling& e = kernels_.at(kernel) == StandardKernel::softmax ? rows_ : ew_;
        return {ceil_div(p_.seq_kv, e.cols) * ceil_div(p_.seq, e.rows), 0};
      }
    }
  }

  // The PV GEMM's CTAs loop over all keys (N = 16384: 770 operations, 100 KB per CTA): one
  // chunk of keys per part, so that the engine holds a few operations per resident CTA.
  bool emit_cta_part(std::size_t kernel, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    if (kernels_.at(kernel) == StandardKernel::gemm_pv) return emit_gemm_pv(cta, part, out);
    if (part == 0) emit_whole_cta(kernel, cta, out);
    return false;
  }

  static std::int64_t gemm_qk_smem(const AttentionProblem& p, const Tiling& t) {
    return t.pipeline_stages * (t.block_q + t.block_kv) * kSmemChunk * p.elem_bytes();
  }
  static std::int64_t gemm_pv_smem(const AttentionProblem& p, const Tiling& t) {
    return t.pipeline_stages * (t.block_q + p.head_dim) * kSmemChunk * p.elem_bytes();
  }

 private:
  // A whole CTA of a kernel that is not split into parts.
  void emit_whole_cta(std::size_t kernel, std::int64_t cta, std::vector<TileOp>& out) const {
    switch (kernels_.at(kernel)) {
      case StandardKernel::gemm_qk:
        return emit_gemm_qk(cta, out);
      case StandardKernel::gemm_pv:  // (emitted by parts)
        break;
      case StandardKernel::mask:
        return emit_elementwise(StandardKernel::mask, cta, out);
      case StandardKernel::softmax:
        return emit_elementwise(StandardKernel::softmax, cta, out);
      case StandardKernel::dropout:
        return emit_elementwise(StandardKernel::dropout, cta, out);
    }
  }

  int gemm_regs(std::int64_t accumulators) const {
    return static_cast<int>(std::min<std::int64_t>(accumulators / t_.threads + 48, 255));
  }

  void emit_gemm_qk(std::int64_t cta, std::vector<TileOp>& out) const {
    const std::int64_t tq = ceil_div(p_.seq, t_.block_q), tk = ceil_div(p_.seq_kv, t_.block_kv);
    const std::int64_t i = cta % tq, j = (cta / tq) % tk, bh = cta / (tq * tk);
    const std::int64_t q0 = i * t_.block_q, qr = std::min(t_.block_q, p_.seq - q0);
    const std::int64_t k0 = j * t_.block_kv, kr = std::min(t_.block_kv, p_.seq_kv - k0);
    const std::int64_t eb = p_.elem_bytes();
    const TileRef s{TensorId::S, bh, q0, qr, k0, kr};  // (qr, kr)
    for (std::int64_t c0 = 0; c0 < p_.head_dim; c0 += kLoadChunk) {
      const std::int64_t cw = std::min(kLoadChunk, p_.head_dim - c0);
      out.push_back(TileOp::load({TensorId::Q, bh, q0, qr, c0, cw}));               // sQ (qr, cw)
      out.push_back(TileOp::load({TensorId::K, bh / p_.group(), k0, kr, c0, cw}));  // sK (kr, cw)
      // Warp tiles of 64 x 32: each Q chunk is read by block_kv/32 warps, K by block_q/64.
      const std::int64_t smem = (qr * ceil_div(kr, 32) + kr * ceil_div(qr, 64)) * cw * eb;
      out.push_back(costs::scores(s, cw, smem,
                                  c0 == 0 ? ComputeKind::scores : ComputeKind::scores_accumulate));
    }
    out.push_back(TileOp::store(s, OnChip::smem));  // epilogue through shared memory
  }

  // Part 0 zeroes the accumulators; part 1 + c loads and multiplies key chunk c, and the last
  // one stores O.
  bool emit_gemm_pv(std::int64_t cta, std::size_t part, std::vector<TileOp>& out) const {
    const std::int64_t tq = ceil_div(p_.seq, t_.block_q);
    const std::int64_t i = cta % tq, bh = cta / tq;
    const std::int64_t q0 = i * t_.block_q, qr = std::min(t_.block_q, p_.seq - q0);
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes();
    const TileRef o{TensorId::O, bh, q0, qr, 0, d};  // rO (qr, d)
    if (part == 0) {
      out.push_back(costs::init_state(o));
      return true;
    }
    const std::int64_t k0 = static_cast<std::int64_t>(part - 1) * kLoadChunk;
    const std::int64_t kr = std::min(kLoadChunk, p_.seq_kv - k0);
    const TensorId probs = p_.dropout > 0 ? TensorId::P_drop : TensorId::P;
    out.push_back(TileOp::load({probs, bh, q0, qr, k0, kr}));                   // sP (qr, kr)
    out.push_back(TileOp::load({TensorId::V, bh / p_.group(), k0, kr, 0, d}));  // sV (kr, d)
    const std::int64_t smem = (qr * ceil_div(d, 32) + d * ceil_div(qr, 64)) * kr * eb;
    out.push_back(costs::pv({TensorId::S, bh, q0, qr, k0, kr}, d, smem));
    if (k0 + kr < p_.seq_kv) return true;
    out.push_back(TileOp::store(o, OnChip::smem));
    return false;
  }

  void emit_elementwise(StandardKernel k, std::int64_t cta, std::vector<TileOp>& out) const {
    const ElementwiseTiling& e = k == StandardKernel::softmax ? rows_ : ew_;
    const std::int64_t tc = ceil_div(p_.seq_kv, e.cols), tr = ceil_div(p_.seq, e.rows);
    const std::int64_t c = cta % tc, r = (cta / tc) % tr, bh = cta / (tc * tr);
    const std::int64_t r0 = r * e.rows, rows = std::min(e.rows, p_.seq - r0);
    const std::int64_t c0 = c * e.cols, cols = std::min(e.cols, p_.seq_kv - c0);
    auto tile = [&](TensorId t) { return TileRef{t, bh, r0, rows, c0, cols}; };
    switch (k) {
      case StandardKernel::mask:
        out.push_back(TileOp::load(tile(TensorId::S), OnChip::reg));
        out.push_back(costs::mask(tile(TensorId::S)));
        out.push_back(TileOp::store(tile(TensorId::S)));
        break;
      case StandardKernel::softmax:
        out.push_back(TileOp::load(tile(TensorId::S), OnChip::smem));
        out.push_back(costs::softmax_rows(tile(TensorId::S)));
        out.push_back(TileOp::store(tile(TensorId::P)));
        break;
      case StandardKernel::dropout:
        out.push_back(TileOp::load(tile(TensorId::P), OnChip::reg));
        out.push_back(costs::dropout(tile(TensorId::P)));
        out.push_back(TileOp::store(tile(TensorId::P_drop)));
        out.push_back(TileOp::store(tile(TensorId::dropout_mask)));
        break;
      default:
        break;
    }
  }

  AttentionProblem p_;
  Tiling t_;
  bool persistent_gemms_;   // cuBLAS's Hopper GEMMs (plan_standard)
  ElementwiseTiling ew_;    // mask and dropout passes
  ElementwiseTiling rows_;  // softmax: one whole row per CTA
  std::vector<StandardKernel> kernels_;
};

Planned plan_standard(const AttentionProblem& p, const HardwareProfile& hw,
                      const TilingRequest& req) {
  Planned out;
  Tiling& t = out.tiling;
  t.block_q = req.block_q.value_or(128);    // GEMM output tile rows
  t.block_kv = req.block_kv.value_or(128);  // GEMM output tile cols (S)
  t.threads = req.threads.value_or(256);
  t.pipeline_stages = req.pipeline_stages.value_or(2);
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  const bool bwd = runs_backward(p.pass);
  // The backward adds GEMMs with block_kv x d output tiles (dV, dK).
  const std::int64_t need = std::max(
      {StandardSchedule::gemm_qk_smem(p, t), StandardSchedule::gemm_pv_smem(p, t),
       bwd ? standard_tiles::gemm_smem(t.block_kv, p.head_dim, t.pipeline_stages, p.elem_bytes())
           : 0});
  if (need > limit) {
    out.infeasible_reason = fmt::format(
        "standard GEMM tiles do not fit in shared memory: {}x{} output tiles with {} stage(s) "
        "need {} bytes, {} allows {} bytes per CTA",
        t.block_q, t.block_kv, t.pipeline_stages, need, hw.name, limit);
    return out;
  }
  // One softmax row sits in one CTA's shared memory; a split row would need a second pass
  // that is not modelled. The softmax gradient holds a row of P and one of dP.
  const std::int64_t row_bytes = (bwd ? 2 : 1) * p.seq_kv * p.elem_bytes();
  if (row_bytes > limit) {
    out.infeasible_reason = fmt::format(
        "standard softmax{} keeps a whole row of {} scores ({} bytes) in shared memory; {} "
        "allows {} bytes per CTA",
        bwd ? " gradient" : "", p.seq_kv, row_bytes, hw.name, limit);
    return out;
  }
  // cuBLAS's Hopper GEMMs are persistent (the measured nvjet kernels run a grid of one CTA per SM,
  // cuda_validate/measurements/*/measurements_2026-11-22.json); on GPUs without wgmma it launches a
  // CTA per tile.
  const bool persistent = hw.compute.wgmma_latency_cycles.value > 0;
  out.schedule = for_pass(
      p.pass,
      [&]() -> std::unique_ptr<Schedule> {
        return std::make_unique<StandardSchedule>(p, t, persistent);
      },
      [&] { return make_standard_backward(p, t, persistent); });
  return out;
}

// What the simulator spends its time on is L2 lookups: standard attention makes one per row of
// every S tile it stores and every P chunk it loads (rows of N_kv scores span many 4 KiB regions).
// Measured on the README sweep, one such row lookup costs about 1/20 of one tile visit of
// flash1/flash2 (tiled_estimated_work).
double standard_estimated_work(const AttentionProblem& p, const TilingRequest& requested) {
  const double bh = static_cast<double>(std::max<std::int64_t>(p.bh(), 1));
  const double n = static_cast<double>(std::max<std::int64_t>(p.seq, 1));
  const double n_kv = static_cast<double>(std::max<std::int64_t>(p.seq_kv, 1));
  const std::int64_t block_kv = requested.block_kv.value_or(128);
  const double passes = p.pass == Pass::fwd ? 1.0 : p.pass == Pass::bwd ? 3.0 : 4.0;
  const double row_bytes = n_kv * static_cast<double>(p.elem_bytes());
  return passes * bh * n *
         (std::ceil(n_kv / static_cast<double>(block_kv)) + std::ceil(n_kv / 128.0) +
          2.0 * std::ceil(row_bytes / 4096.0));
}

using closed_form_parts::cdiv;
using closed_form_parts::every_head;
using closed_form_parts::u;
using closed_form_parts::u64;

// The closed form, per (batch, head), in bytes: the forward's kernels.
ReadWriteBytes standard(const AttentionProblem& p, std::int64_t bq, std::int64_t bk) {
  const u64 eb = u(p.elem_bytes()), n = u(p.seq), nk = u(p.seq_kv), d = u(p.head_dim);
  const u64 scores = n * nk * eb;
  ReadWriteBytes rw;
  // gemm_qk: every output tile reads its Q rows and K rows in full.
  rw.read += n * d * eb * cdiv(p.seq_kv, bk) + nk * d * eb * cdiv(p.seq, bq);
  rw.write += scores;
  if (p.causal || p.mask) {  // mask pass
    rw.read += scores;
    rw.write += scores;
  }
  rw.read += scores;  // softmax: S in, P out
  rw.write += scores;
  if (p.dropout > 0) {  // dropout pass: P in, P and the keep mask out
    rw.read += scores;
    rw.write += scores + n * nk;
  }
  // gemm_pv: P once, V once per query tile, O once.
  rw.read += scores + nk * d * eb * cdiv(p.seq, bq);
  rw.write += n * d * eb;
  return rw;
}

// Standard backward: the unfused kernels of autograd (algorithms/standard_bwd.cpp's list),
// each reading its operands from HBM and writing its result there.
ReadWriteBytes standard_bwd(const AttentionProblem& p, std::int64_t bq, std::int64_t bk) {
  const u64 eb = u(p.elem_bytes()), n = u(p.seq), nk = u(p.seq_kv), d = u(p.head_dim);
  const u64 scores = n * nk * eb, tq = cdiv(p.seq, bq), tk = cdiv(p.seq_kv, bk);
  ReadWriteBytes rw;
  // dP = dO V^T: every output tile reads its dO rows and V rows in full.
  rw.read += n * d * eb * tk + nk * d * eb * tq;
  rw.write += scores;
  // dV = X^T dO: X once, dO once per key tile.
  rw.read += scores + n * d * eb * tk;
  rw.write += nk * d * eb;
  if (p.dropout > 0) {  // dP and the 1-byte keep mask in, dP out
    rw.read += scores + n * nk;
    rw.write += scores;
  }
  rw.read += 2 * scores;  // softmax gradient: P and dP in, dS out
  rw.write += scores;
  if (p.causal || p.mask) {  // masked_fill's gradient: dS in and out
    rw.read += scores;
    rw.write += scores;
  }
  // dQ = scale dS K: dS once, K once per query tile; dK = scale dS^T Q: dS once, Q once per key
  // tile.
  rw.read += scores + nk * d * eb * tq + scores + n * d * eb * tk;
  rw.write += n * d * eb + nk * d * eb;
  return rw;
}

}  // namespace

ReadWriteBytes standard_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                    std::int64_t block_kv) {
  return every_head(p, block_q, block_kv, standard, standard_bwd);
}

namespace {

// FlashAttention's Algorithm 0 and its backward, Algorithm 3: a line per kernel.
PaperStep standard_paper_step(const std::string& kernel, const TileOp&) {
  return paper::backward_kernel(kernel) ? paper::standard_backward(kernel)
                                        : paper::standard_forward(kernel);
}

}  // namespace

namespace {

// What both unfused entries share: the one planner of both passes, the closed form, the lines.
Dataflow unfused_dataflow(Pass pass, const char* summary) {
  Dataflow f;
  f.name = "unfused";
  f.pass = pass;
  f.summary = summary;
  // cuBLAS's Hopper GEMMs, timed at the wgmma rate, persistent (on a GPU without wgmma the
  // planner launches a CTA per tile, as cuBLAS does there).
  f.mechanisms = ResolvedMechanisms{MmaFamily::wgmma_ss, LoadPath::tma, WarpRoles::uniform, true,
                                    MmaWait::step};
  f.runs_on_any_gpu = true;
  f.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req,
              const DataflowUse&) { return plan_standard(p, hw, req); };
  f.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask*) {
    return standard_closed_form(p, t.block_q, t.block_kv);
  };
  f.paper_step = [](const std::string& kernel, const TileOp& op, const DataflowUse&) {
    return standard_paper_step(kernel, op);
  };
  f.capabilities.forward_stages = StagesCount::gemm_operand_stages;
  return f;
}

}  // namespace

Dataflow unfused_forward_dataflow() {
  Dataflow f = unfused_dataflow(
      Pass::fwd,
      "S = Q K^T and P = softmax(S) through HBM: a GEMM, the softmax (and mask) kernels, a GEMM");
  f.estimated_work = standard_estimated_work;
  f.capabilities.materializes_scores = true;
  return f;
}

Dataflow unfused_backward_dataflow() {
  Dataflow b = unfused_dataflow(
      Pass::bwd, "autograd over the unfused forward: one kernel per step, all in HBM");
  b.fused = FusedPasses{"unfused", false, false, b.plan, b.closed_form, b.paper_step};
  return b;
}

}  // namespace iosim
