#include "algorithms/two_pass_backward.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "algorithms/closed_form_parts.hpp"
#include "algorithms/passes.hpp"
#include "algorithms/query_stationary.hpp"
#include "algorithms/tile_costs.hpp"

namespace iosim {
namespace {

enum class TwoPassKernel { dot_do_o, main };
constexpr TwoPassKernel kTwoPassKernels[] = {TwoPassKernel::dot_do_o, TwoPassKernel::main};

// Whether query block i and key block j meet: a block holding a score the bottom-right causal
// mask leaves visible (every pair without --causal).
bool meets(const AttentionProblem& p, std::int64_t block_q, std::int64_t block_kv, std::int64_t i,
           std::int64_t j) {
  if (!p.causal) return true;
  const std::int64_t q_last = std::min(p.seq, (i + 1) * block_q) - 1;
  return j * block_kv <= q_last + (p.seq_kv - p.seq);
}

class TwoPassBackward final : public WholeCtaSchedule {
 public:
  TwoPassBackward(const AttentionProblem& p, const Tiling& t, std::string name)
      : p_(p), t_(t), name_(std::move(name)) {
    // Steps left at 0 (a Tiling made elsewhere) are the blocks, as the planner resolves them.
    if (t_.query_step <= 0) t_.query_step = t_.block_q;
    if (t_.key_step <= 0) t_.key_step = t_.block_kv;
  }

  // The forward's Q, K, V, O, L, the incoming dO, D and the gradients: no dQaccum.
  std::vector<TensorDecl> tensors() const override {
    const std::int64_t eb = p_.elem_bytes(), bh = p_.bh(), d = p_.head_dim;
    return {{TensorId::Q, bh, p_.seq, d, eb},     {TensorId::K, bh, p_.seq_kv, d, eb},
            {TensorId::V, bh, p_.seq_kv, d, eb},  {TensorId::O, bh, p_.seq, d, eb},
            {TensorId::L, bh, p_.seq, 1, 4},      {TensorId::dO, bh, p_.seq, d, eb},
            {TensorId::D, bh, p_.seq, 1, 4},      {TensorId::dQ, bh, p_.seq, d, eb},
            {TensorId::dK, bh, p_.seq_kv, d, eb}, {TensorId::dV, bh, p_.seq_kv, d, eb}};
  }

  std::vector<KernelSpec> kernels() const override {
    const std::int64_t tr = ceil_div(p_.seq, t_.block_q), tc = ceil_div(p_.seq_kv, t_.block_kv);
    KernelSpec pre;
    pre.name = "dot_do_o";
    pre.role = "bwd_pre";
    pre.grid = {tr, p_.batch, p_.heads};
    pre.threads_per_cta = 128;
    pre.registers_per_thread = 32;
    pre.mma_dtype = p_.dtype;
    pre.tensor_instruction = TensorInstruction::mma_sync;
    KernelSpec main;
    main.name = name_ + "_bwd";
    main.role = "bwd_main";
    main.grid = {std::max(tr, tc), p_.batch, p_.heads};
    main.threads_per_cta = t_.threads;
    main.smem_bytes_per_cta = two_pass_backward_smem_bytes(p_, t_);
    main.registers_per_thread = t_.registers_per_thread;
    main.pipeline_stages = t_.pipeline_stages;
    main.mma_dtype = p_.dtype;
    main.tensor_instruction = TensorInstruction::mma_sync;
    main.main_loop = true;
    return {pre, main};
  }

 protected:
  void emit_whole_cta(std::size_t kernel, std::int64_t cta,
                      std::vector<TileOp>& out) const override {
    if (kTwoPassKernels[kernel] == TwoPassKernel::dot_do_o) return emit_dot_do_o(cta, out);
    const std::int64_t span =
        std::max(ceil_div(p_.seq, t_.block_q), ceil_div(p_.seq_kv, t_.block_kv));
    const std::int64_t x = cta % span, bh = cta / span;  // (batch, head) = bh
    emit_key_pass(x, bh, out);
    emit_query_pass(x, bh, out);
  }

 private:
  void emit_dot_do_o(std::int64_t cta, std::vector<TileOp>& out) const {
    const std::int64_t tr = ceil_div(p_.seq, t_.block_q), i = cta % tr, bh = cta / tr;
    const std::int64_t q0 = i * t_.block_q, qr = std::min(t_.block_q, p_.seq - q0);
    const std::int64_t d = p_.head_dim;
    out.push_back(TileOp::load({TensorId::O, bh, q0, qr, 0, d}, OnChip::reg));   // rO (qr, d)
    out.push_back(TileOp::load({TensorId::dO, bh, q0, qr, 0, d}, OnChip::reg));  // rdO (qr, d)
    out.push_back(costs::row_dot({TensorId::O, bh, q0, qr, 0, d}, d));
    out.push_back(TileOp::store({TensorId::D, bh, q0, qr, 0, 1}));  // (qr) fp32
  }

  // Shared-memory operand reads of one step's products. In each pass the warps split the rows
  // of the block the CTA keeps (pass 1: the key block's rows of S^T; pass 2: the query block's
  // rows of S), so S, P, dP and dS of a warp's rows stay in its registers (an mma.sync C
  // fragment is the next product's A fragment) and never go through shared memory. A warp
  // reads its rows of the kept operand (K and V, or Q and dO) once per chunk of the score
  // tile's columns it holds at a time (Tiling::score_chunk), and every warp reads all of the
  // streamed tile (Q and dO, or K and V) once per product. S and dP read both operands from
  // shared memory; the accumulations (dV, dK, dQ) only the streamed one (A is P or dS).
  struct StepReads {
    std::int64_t kept = 0, streamed = 0;
  };
  StepReads step_reads(std::int64_t kept_rows, std::int64_t streamed_rows) const {
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes();
    const std::int64_t warps = std::max(1, t_.threads / 32);
    const std::int64_t chunk = t_.score_chunk > 0 ? t_.score_chunk : streamed_rows;
    const std::int64_t kept = kept_rows * d * ceil_div(streamed_rows, chunk) * eb;
    const std::int64_t streamed = warps * streamed_rows * d * eb;
    return {kept, streamed};
  }

  // S, the mask where the tile crosses the diagonal (or --mask), P, dropout, dP and dS for query
  // rows [q0, q0 + qr) against keys [k0, k0 + kr).
  void emit_scores_to_ds(const TileRef& s, const StepReads& reads, bool accumulate_dv,
                         std::vector<TileOp>& out) const {
    const std::int64_t d = p_.head_dim;
    out.push_back(costs::scores(s, d, reads.kept + reads.streamed));  // S = scale Q K^T
    const bool crosses_diagonal = p_.causal && s.col0 + s.cols - 1 > s.row0 + p_.seq_kv - p_.seq;
    if (crosses_diagonal || p_.mask) out.push_back(costs::mask(s));
    out.push_back(costs::recompute_p(s));
    if (p_.dropout > 0) {
      out.push_back(costs::dropout({TensorId::P, s.matrix, s.row0, s.rows, s.col0, s.cols}));
    }
    if (accumulate_dv) {  // dV += P^T dO
      out.push_back(costs::grad_matmul(ComputeKind::accumulate_dv, s, d, reads.streamed));
    }
    out.push_back(costs::grad_matmul(ComputeKind::grad_p, s, d, reads.kept + reads.streamed));
    if (p_.dropout > 0) out.push_back(costs::dropout_grad(s));
    out.push_back(costs::grad_s(s));
  }

  // Pass 1: dK and dV of key block x, looping over the query steps that meet it.
  void emit_key_pass(std::int64_t x, std::int64_t bh, std::vector<TileOp>& out) const {
    const std::int64_t steps = ceil_div(p_.seq, t_.query_step);
    if (x >= ceil_div(p_.seq_kv, t_.block_kv)) return;
    const std::int64_t d = p_.head_dim;
    const std::int64_t k0 = x * t_.block_kv, kr = std::min(t_.block_kv, p_.seq_kv - k0);
    const TileRef dk{TensorId::dK, bh, k0, kr, 0, d}, dv{TensorId::dV, bh, k0, kr, 0, d};
    out.push_back(TileOp::load({TensorId::K, bh, k0, kr, 0, d}));  // gK -> sK (kr, d)
    out.push_back(TileOp::load({TensorId::V, bh, k0, kr, 0, d}));  // gV -> sV (kr, d)
    out.push_back(costs::zero_grad(dk));                           // rdK (kr, d) fp32
    out.push_back(costs::zero_grad(dv));                           // rdV (kr, d) fp32
    for (std::int64_t i = 0; i < steps; ++i) {
      if (!meets(p_, t_.query_step, t_.block_kv, i, x)) continue;
      const std::int64_t q0 = i * t_.query_step, qr = std::min(t_.query_step, p_.seq - q0);
      out.push_back(TileOp::load({TensorId::Q, bh, q0, qr, 0, d}));               // sQ (qr, d)
      out.push_back(TileOp::load({TensorId::dO, bh, q0, qr, 0, d}));              // sdO (qr, d)
      out.push_back(TileOp::load({TensorId::L, bh, q0, qr, 0, 1}, OnChip::reg));  // rL (qr)
      out.push_back(TileOp::load({TensorId::D, bh, q0, qr, 0, 1}, OnChip::reg));  // rD (qr)
      const TileRef s{TensorId::S, bh, q0, qr, k0, kr};  // rS, rP, rdP, rdS (qr, kr)
      const StepReads reads = step_reads(kr, qr);
      emit_scores_to_ds(s, reads, true, out);
      // dK += scale dS^T Q.
      out.push_back(costs::grad_matmul(ComputeKind::accumulate_dk, s, d, reads.streamed));
    }
    // dK and dV leave through shared memory for coalesced stores.
    out.push_back(TileOp::store(dk, OnChip::smem));
    out.push_back(TileOp::store(dv, OnChip::smem));
  }

  // Pass 2: dQ of query block x, looping over the key steps that meet it.
  void emit_query_pass(std::int64_t x, std::int64_t bh, std::vector<TileOp>& out) const {
    const std::int64_t steps = ceil_div(p_.seq_kv, t_.key_step);
    if (x >= ceil_div(p_.seq, t_.block_q)) return;
    const std::int64_t d = p_.head_dim;
    const std::int64_t q0 = x * t_.block_q, qr = std::min(t_.block_q, p_.seq - q0);
    const TileRef dq{TensorId::dQ, bh, q0, qr, 0, d};
    out.push_back(TileOp::load({TensorId::Q, bh, q0, qr, 0, d}));               // sQ (qr, d)
    out.push_back(TileOp::load({TensorId::dO, bh, q0, qr, 0, d}));              // sdO (qr, d)
    out.push_back(TileOp::load({TensorId::L, bh, q0, qr, 0, 1}, OnChip::reg));  // rL (qr)
    out.push_back(TileOp::load({TensorId::D, bh, q0, qr, 0, 1}, OnChip::reg));  // rD (qr)
    out.push_back(costs::zero_grad(dq));                                        // rdQ (qr, d) fp32
    for (std::int64_t j = 0; j < steps; ++j) {
      if (!meets(p_, t_.block_q, t_.key_step, x, j)) continue;
      const std::int64_t k0 = j * t_.key_step, kr = std::min(t_.key_step, p_.seq_kv - k0);
      out.push_back(TileOp::load({TensorId::K, bh, k0, kr, 0, d}));  // sK (kr, d)
      out.push_back(TileOp::load({TensorId::V, bh, k0, kr, 0, d}));  // sV (kr, d)
      const TileRef s{TensorId::S, bh, q0, qr, k0, kr};
      const StepReads reads = step_reads(qr, kr);
      emit_scores_to_ds(s, reads, false, out);
      // dQ += scale dS K.
      out.push_back(costs::grad_matmul(ComputeKind::accumulate_dq, s, d, reads.streamed));
    }
    out.push_back(TileOp::store(dq, OnChip::smem));
  }

  AttentionProblem p_;
  Tiling t_;
  std::string name_;
};

using closed_form_parts::cdiv;
using closed_form_parts::MeetsBlock;
using closed_form_parts::u;
using closed_form_parts::u64;

}  // namespace

std::int64_t two_pass_backward_smem_bytes(const AttentionProblem& p, const Tiling& t) {
  const std::int64_t s = t.pipeline_stages, bq = t.block_q, bk = t.block_kv;
  const std::int64_t qs = t.query_step > 0 ? t.query_step : bq;
  const std::int64_t ks = t.key_step > 0 ? t.key_step : bk;
  // Pass 1: K_x, V_x and `s` stages of a query step's Q, dO; pass 2: Q_x, dO_x and `s` stages
  // of a key step's K, V; the passes reuse one buffer. Then `s` stages of a query step's L and D
  // (fp32; pass 2 keeps its block's in registers). P and dS stay in registers
  // (TwoPassBackward::step_reads).
  const std::int64_t keys = 2 * bk + 2 * s * qs, queries = 2 * bq + 2 * s * ks;
  return std::max(keys, queries) * p.head_dim * p.elem_bytes() + s * 2 * qs * 4;
}

Planned plan_two_pass_backward(const AttentionProblem& p, const HardwareProfile& hw,
                               const TilingRequest& req, const std::string& name) {
  Planned out;
  Tiling& t = out.tiling;
  const std::int64_t d = p.head_dim;
  t.block_q = req.block_q.value_or(d <= 64 ? 128 : 64);
  t.block_kv = req.block_kv.value_or(128);
  t.pipeline_stages = req.pipeline_stages.value_or(2);
  t.threads = req.threads.value_or(128);
  t.query_step = req.query_step.value_or(t.block_q);
  t.key_step = req.key_step.value_or(t.block_kv);
  t.score_chunk = std::min(req.score_chunk.value_or(0),
                           std::max({t.block_q, t.block_kv, t.query_step, t.key_step}));
  const std::int64_t smem = two_pass_backward_smem_bytes(p, t);
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  if (smem > limit) {
    const bool own_steps = t.query_step != t.block_q || t.key_step != t.block_kv;
    out.infeasible_reason = fmt::format(
        "{} two-pass backward tile does not fit in shared memory: Q, dO {}x{} and K, V {}x{} "
        "({}) with {} stage(s) of the streamed pair{} and of L, D need {} bytes, {} allows {} "
        "bytes per CTA",
        name, t.block_q, d, t.block_kv, d, dtype_name(p.dtype), t.pipeline_stages,
        own_steps
            ? fmt::format(" (query steps of {} rows, key steps of {})", t.query_step, t.key_step)
            : "",
        smem, hw.name, limit);
    return out;
  }
  // The larger pass's fp32 accumulators (dK and dV of a key block, or dQ of a query block) and
  // the larger pass's S / dP fragments of one step, over the CTA's threads, plus about 40.
  const std::int64_t acc = (std::max(2 * t.block_kv * d, t.block_q * d) +
                            std::max(t.query_step * t.block_kv, t.block_q * t.key_step)) /
                           t.threads;
  t.registers_per_thread =
      req.registers_per_thread.value_or(static_cast<int>(std::min<std::int64_t>(acc + 40, 255)));
  out.schedule = std::make_unique<TwoPassBackward>(p, t, name);
  return out;
}

ReadWriteBytes two_pass_backward_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                             std::int64_t block_kv, std::int64_t query_step,
                                             std::int64_t key_step) {
  // Per (batch, head), every load and store reaching HBM, as the header lists them.
  const u64 eb = u(p.elem_bytes()), d = u(p.head_dim);
  if (query_step <= 0) query_step = block_q;
  if (key_step <= 0) key_step = block_kv;
  const auto tr = static_cast<std::int64_t>(cdiv(p.seq, block_q));
  const auto tc = static_cast<std::int64_t>(cdiv(p.seq_kv, block_kv));
  const auto query_steps = static_cast<std::int64_t>(cdiv(p.seq, query_step));
  const auto key_steps = static_cast<std::int64_t>(cdiv(p.seq_kv, key_step));
  ReadWriteBytes head;
  head.read += 2 * u(p.seq) * d * eb;  // pre-pass: O, dO
  head.write += u(p.seq) * 4;          // D
  for (std::int64_t j = 0; j < tc; ++j) {
    const u64 kr = u(std::min(block_kv, p.seq_kv - j * block_kv));
    head.read += 2 * kr * d * eb;   // K_j, V_j
    head.write += 2 * kr * d * eb;  // dK_j, dV_j
  }
  // Pass 1 streams each query step that meets key block j past it: Q, dO, L, D of its rows.
  const MeetsBlock key_block{p, block_kv, nullptr};
  for (std::int64_t i = 0; i < query_steps; ++i) {
    const std::int64_t sr = std::min(query_step, p.seq - i * query_step);
    for (std::int64_t j = 0; j < tc; ++j) {
      if (key_block(i, i * query_step, sr, j)) head.read += 2 * u(sr) * d * eb + 2 * u(sr) * 4;
    }
  }
  // Pass 2 reads query block i's Q, dO, L, D once, writes its dQ, and streams each key step
  // that meets the block past it: K, V of its rows.
  const MeetsBlock key_of_step{p, key_step, nullptr};
  for (std::int64_t i = 0; i < tr; ++i) {
    const std::int64_t qr_i = std::min(block_q, p.seq - i * block_q);
    const u64 qr = u(qr_i);
    head.read += 2 * qr * d * eb + 2 * qr * 4;  // Q_i, dO_i, L_i, D_i
    head.write += qr * d * eb;                  // dQ_i
    for (std::int64_t j = 0; j < key_steps; ++j) {
      if (!key_of_step(i, i * block_q, qr_i, j)) continue;
      head.read += 2 * u(std::min(key_step, p.seq_kv - j * key_step)) * d * eb;
    }
  }
  ReadWriteBytes out;
  out.read = head.read * u(p.bh());
  out.write = head.write * u(p.bh());
  return out;
}

Dataflow two_pass_dataflow() {
  Dataflow b;
  b.name = "two_pass";
  b.pass = Pass::bwd;
  b.summary =
      "one kernel, two passes per CTA: dK, dV of a key block looping over queries, then dQ of a "
      "query block looping over keys; no atomics, no fp32 dQ in HBM";
  // No kernels of its own: the description's mechanisms (by default mma.sync, cp.async, uniform
  // warps) on its main kernel.
  b.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req,
              const DataflowUse& use) { return plan_two_pass_backward(p, hw, req, use.name); };
  b.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask*) {
    return two_pass_backward_closed_form(p, t.block_q, t.block_kv, t.query_step, t.key_step);
  };
  // FlashAttention-2's Algorithm 2 lines, in another loop order.
  b.paper_step = [](const std::string& kernel, const TileOp& op, const DataflowUse&) {
    return flash2_family_paper_step(kernel, op, {});
  };
  b.score_chunk = true;
  b.pass_steps = true;
  return b;
}

}  // namespace iosim
