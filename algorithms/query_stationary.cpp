#include "algorithms/query_stationary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "algorithms/passes.hpp"
#include "algorithms/tile_costs.hpp"
#include "sim/schedule/block_mask.hpp"

namespace iosim {
namespace {

constexpr int kWarpgroupThreads = 128;
constexpr std::int64_t kRowsPerWarpgroup = 64;  // wgmma's M: one m64nNk16 per warpgroup

// What FlashAttention-3's FP8 forward does per key block beyond its 16-bit path, added to the
// P V op of score tile `s` (hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp, Transpose_V = Is_FP8):
// - V_j's transpose in shared memory (fp8 wgmma takes its B operand K-major only): V_j read with
//   LDSM.T (d x kr bytes, counted as shared-memory reads; the STSM write back is not counted),
//   bytes swapped with one PRMT (__byte_perm) per 4 bytes;
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

// Warpgroups that each compute the same score tile (score_replicas, above): each issues the
// tile's wgmma on its own operands from shared memory and runs its own softmax over it. Measured
// on Triton 3.6's forward with 8 warps on a 64-row tile (H100, Nsight Compute,
// cuda_validate/measurements/h100-sxm5-80gb/tile_sweep_2026-12-06/profile_triton): 1.8-1.9x the
// instructions of 4 warps at the same tile, and no more shared-memory wavefronts (no exchange).
void replicate(TileOp& op, std::int64_t replicas) {
  op.tensor_flops *= replicas;
  op.fp32_flops *= replicas;
  op.sfu_ops *= replicas;
  op.int_ops *= replicas;
  op.smem_read_bytes *= replicas;
}

bool warp_specialized(const ResolvedMechanisms& m) {
  return m.warp_roles != WarpRoles::uniform;
}

class QueryStationaryForward final : public Schedule {
 public:
  QueryStationaryForward(const AttentionProblem& p, const Tiling& t, QueryStationaryKernel kernel,
                         std::shared_ptr<const BlockMask> blocks)
      : p_(p),
        t_(t),
        k_(std::move(kernel)),
        blocks_(std::move(blocks)),
        view_(QueryView::of(p_, p_.packs_query_group() && !blocks_)),
        tiles_per_head_(ceil_div(view_.rows, t_.block_q)),
        group_(p_.group()) {}

  // Grouped-query attention: K/V have B*H_kv matrices; the query group is packed (QueryView)
  // except under a block mask, which is over query positions.
  const QueryView& view() const { return view_; }

  std::vector<TensorDecl> tensors() const override { return view().tensors(p_); }

  std::vector<KernelSpec> kernels() const override {
    KernelSpec k;
    k.name = k_.name;
    // One CTA per query tile in the order the hardware (or a persistent grid's tile scheduler)
    // hands them out: query blocks of a head first, then batches, then heads.
    k.grid = view().grid(p_, t_.block_q);
    k.threads_per_cta = t_.threads;
    k.smem_bytes_per_cta = k_.smem_bytes;
    k.registers_per_thread = k_.registers;
    // The K/V ring's depth; apply_mechanisms makes it 1 for plain loads.
    k.pipeline_stages = kv_pipeline_depth(t_.pipeline_stages);
    k.mma_dtype = p_.dtype;
    apply_mechanisms(k, k_.mechanisms, k_.consumer_warpgroups);
    k.role = "attention";
    k.main_loop = true;
    return {k};
  }

  // Heads repeat; with grouped-query heads sharing K/V (unpacked), a group of heads of every batch.
  // A CTA's K/V blocks repeat up to the first that crosses the causal diagonal, or the last,
  // which also writes O (under a block mask the blocks follow no stride: none).
  // Walking down, the masked blocks come first and the repeating ones after them; no steady parts
  // are declared for that order (the engine simulates every step).
  Repetition repetition(std::size_t) const override {
    Repetition r = forward_repetition(p_, view(), t_.block_q);
    // A window's first blocks are masked too: no steady parts declared (as under a block mask).
    if (blocks_ || p_.window > 0) r.part_period = r.alike_run = r.ramp_run = 0;
    if (descending()) r.part_period = r.ramp_run = 0;
    return r;
  }
  PartRange steady_parts(std::size_t, std::int64_t cta) const override {
    if (blocks_ || descending() || p_.window > 0) return {};
    const QueryView::Tile at = tile(cta);
    return forward_steady_parts(p_, at.q0, at.qr, t_.block_kv);
  }

  // Part 0 loads Q and initializes the state; part 1 + k is the k-th K/V block the CTA computes
  // (under a block mask, its k-th nonzero block; with kv_order descending, counted from the
  // last), and the last one also writes O and L. One
  // block per part keeps a few operations per resident CTA in memory instead of all of them
  // (N = 16384 with 32-key blocks: 2560 operations, 300 KB per CTA, tens of MB for a wave, which
  // the engine streamed through the CPU's caches).
  bool emit_cta_part(std::size_t, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    // The ops are built in place at the end of `out` (emplace_op and costs' filling forms,
    // emplace_load): a part is a few ops and a run emits hundreds of thousands of parts.
    const auto [qb, bh, kv, q0, qr] = tile(cta);
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes();
    const TileRef o{TensorId::O, bh, q0, qr, 0, d};

    // The blocks computed: those holding a key some row of this block sees (causal: up to the
    // diagonal; a window: from its first row's first key), or the nonzero blocks of a block mask
    // (zero past the diagonal with --causal).
    const std::span<const std::int64_t> nonzero =
        blocks_ ? blocks_->row_blocks(qb) : std::span<const std::int64_t>{};
    const KvBlockRange dense = blocks_ ? KvBlockRange{} : dense_kv_blocks(p_, q0, qr, t_.block_kv);
    const std::int64_t count = blocks_ ? static_cast<std::int64_t>(nonzero.size()) : dense.count();
    if (count == 0) {  // block-sparse: no nonzero block, O = 0 and L = +inf, Q unread
      costs::init_state(emplace_op(out), o);
      finish_forward_tile(o, d, out);
      return false;
    }
    if (part == 0) {
      emplace_load(out, {TensorId::Q, bh, q0, qr, 0, d});  // gQ -> sQ (qr, d)
      costs::init_state(emplace_op(out), o);
      return true;
    }
    const auto k = static_cast<std::int64_t>(part) - 1;
    const std::int64_t visit = descending() ? count - 1 - k : k;
    const std::int64_t j = blocks_ ? nonzero[static_cast<std::size_t>(visit)] : dense.first + visit;
    const std::int64_t k0 = j * t_.block_kv;
    const std::int64_t kr = std::min(t_.block_kv, p_.seq_kv - k0);
    emplace_load(out, {TensorId::K, kv, k0, kr, 0, d});  // gK -> sK (kr, d)
    emplace_load(out, {TensorId::V, kv, k0, kr, 0, d});  // gV -> sV (kr, d)
    const TileRef s{TensorId::S, bh, q0, qr, k0, kr};    // rS (qr, kr)
    const bool wgmma = k_.mechanisms.wgmma();
    // Shared-memory operand reads of the two products. mma.sync: each warp reads its own Q rows
    // and the whole K (then V) tile through ldmatrix. wgmma: the tensor cores read the B operand
    // once per warpgroup (and Q once); the RS form takes P from registers, the SS form reads it
    // from shared memory too.
    const std::int64_t readers =
        wgmma ? ceil_div(qr, kRowsPerWarpgroup) : std::max(1, t_.threads / 32);
    TileOp& qk = costs::scores(emplace_op(out), s, d, (qr + readers * kr) * d * eb);
    const std::int64_t replicas = k_.score_replicas;
    replicate(qk, replicas);
    // A spilling kernel's wgmma are serialized by ptxas (C7512): each m64nNk16 waits for its own
    // result. Per warpgroup: its row groups' instructions, k16 steps over d, N = kr up to 256.
    const std::int64_t row_groups_per_warpgroup =
        wgmma ? ceil_div(ceil_div(qr, kRowsPerWarpgroup), std::max(1, k_.consumer_warpgroups)) : 0;
    const bool serialized = wgmma && k_.local_bytes > 0;
    if (serialized) {
      qk.serialized_wgmmas = row_groups_per_warpgroup * ceil_div(d, 16) * ceil_div(kr, 256);
    }
    // A block the causal diagonal or a window's edge passes through, computed whole and masked.
    const bool crosses_diagonal = tile_hides_scores(p_, q0, qr, k0, kr);
    // The causal mask, the window and an index mask are one pass over the scores. Our block-sparse
    // kernel evaluates the mask on every block: nvcc does not hoist its uniform "this block needs a
    // mask" test out of the per-score loop (its PTX predicates the compares and selects of half
    // the scores and branches per pair on the rest), where in flash2's kernel it does (one
    // branch per block, unmasked blocks only scale).
    if (crosses_diagonal || p_.mask || blocks_) {
      replicate(costs::mask(emplace_op(out), s), replicas);
    }
    TileOp& softmax = costs::online_softmax(emplace_op(out), s, d);
    replicate(softmax, replicas);
    // wgmma's accumulator gives a row to the 4 threads of a quad: its max takes 2 shuffle
    // rounds (the sum is reduced across the quad once, at the end).
    if (wgmma) softmax.smem_round_trips = 2;
    if (k_.local_bytes > 0) {
      // Register spills: the warps store and reload their spilled registers every step, through
      // the L1 (one SRAM with shared memory, so on its pipe).
      softmax.smem_read_bytes += 2 * std::int64_t{k_.local_bytes} * t_.threads;
    }
    if (p_.dropout > 0) costs::dropout(emplace_op(out), {TensorId::P, bh, q0, qr, k0, kr});
    const std::int64_t p_reads = k_.mechanisms.mma == MmaFamily::wgmma_ss ? qr * kr * eb : 0;
    TileOp& pv = costs::pv(emplace_op(out), s, d, readers * kr * d * eb + p_reads);
    if (serialized) {
      pv.serialized_wgmmas = row_groups_per_warpgroup * ceil_div(kr, 16) * ceil_div(d, 256);
    }
    if (wgmma && p_.dtype == Dtype::fp8) add_fp8_extra_ops(pv, s, d);
    if (k + 1 < count) return true;
    finish_forward_tile(o, d, out);  // O through shared memory
    return false;
  }

 private:
  bool descending() const { return k_.kv_order == KvOrder::descending; }

  // view().tile(p_, t_.block_q, cta) with what depends on the schedule alone divided once: two
  // divisions a call where QueryView::tile makes six (a part's emission was a third divisions).
  QueryView::Tile tile(std::int64_t cta) const {
    const std::int64_t head = cta / tiles_per_head_;  // batch * heads + head's index, b fastest
    const std::int64_t qb = cta - head * tiles_per_head_;
    const std::int64_t h = head / p_.batch, b = head - h * p_.batch;
    const std::int64_t q = b * view_.heads + h;
    const std::int64_t q0 = qb * t_.block_q;
    return {qb, q, view_.packed || group_ == 1 ? q : q / group_, q0,
            std::min(t_.block_q, view_.rows - q0)};
  }

  AttentionProblem p_;
  Tiling t_;
  QueryStationaryKernel k_;
  std::shared_ptr<const BlockMask> blocks_;  // block-sparse only
  QueryView view_;                           // view(): fixed by the problem and the mask
  std::int64_t tiles_per_head_, group_;      // tile()'s divisors: query tiles of a head, g
};

}  // namespace

std::unique_ptr<Schedule> make_query_stationary_forward(const AttentionProblem& p, const Tiling& t,
                                                        const QueryStationaryKernel& kernel,
                                                        std::shared_ptr<const BlockMask> blocks) {
  return std::make_unique<QueryStationaryForward>(p, t, kernel, std::move(blocks));
}

Planned plan_query_stationary_forward(const AttentionProblem& p, const HardwareProfile& hw,
                                      const TilingRequest& req, const ResolvedMechanisms& mech,
                                      const std::string& algo, const std::string& kernel_name,
                                      bool block_sparse, KvOrder kv_order) {
  Planned out;
  Tiling& t = out.tiling;
  const std::int64_t eb = p.elem_bytes(), d = p.head_dim;
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  const bool fp8 = p.dtype == Dtype::fp8;
  const bool specialized = warp_specialized(mech);
  if (specialized) {
    // FlashAttention-3's forward tiles for 16-bit types (hopper/tile_size.h, tile_size_fwd_sm90):
    // d <= 64: 192 x 128 (three consumer warpgroups), d <= 128: 128 x 128, larger: 128 x 80. For
    // fp8 (element_size 1, the same function today): d <= 64: 192 x 160, d <= 128: 128 x 224,
    // d <= 192: 128 x 160, larger: 128 x 128.
    t.block_q = req.block_q.value_or(d <= 64 ? 192 : 128);
    const std::int64_t kv_fp8 = d <= 64 ? 160 : d <= 128 ? 224 : d <= 192 ? 160 : 128;
    const std::int64_t kv_16bit = d <= 64 ? 128 : d <= 128 ? 128 : 80;
    t.block_kv = req.block_kv.value_or(fp8 ? kv_fp8 : kv_16bit);
  } else {
    // FlashAttention-2's forward tiles on sm80/sm90: 128 x 128 for d <= 64, 128 x 64 above.
    t.block_q = req.block_q.value_or(128);
    t.block_kv = req.block_kv.value_or((d <= 64 ? 128 : 64));
  }
  t.pipeline_stages = req.pipeline_stages.value_or(2);
  const int consumers = static_cast<int>(ceil_div(t.block_q, kRowsPerWarpgroup));
  // Without warp specialization, 4 warps, or 8 where 4 could not hold the fp32 O and S tiles in
  // the registers a thread may have (the check below): FlashAttention-2's own choice, 8 warps
  // for d = 192 and 256 at 128 x 64.
  const bool eight_warps = fp32_accumulator_registers(t.block_q, t.block_kv, d, kWarpgroupThreads) >
                           hw.sm.max_registers_per_thread.value;
  t.threads = req.threads.value_or(specialized   ? (consumers + 1) * kWarpgroupThreads
                                   : eight_warps ? 2 * kWarpgroupThreads
                                                 : kWarpgroupThreads);
  if (specialized &&
      (t.block_q % kRowsPerWarpgroup != 0 || t.threads != (consumers + 1) * kWarpgroupThreads)) {
    out.infeasible_reason = fmt::format(
        "{} gives each consumer warpgroup 64 query rows (wgmma's M) and adds one producer "
        "warpgroup: --block-q {} must be a multiple of 64 and the CTA {} threads, not {}",
        algo, t.block_q, (consumers + 1) * kWarpgroupThreads, t.threads);
    return out;
  }
  // Ping-pong is two or more consumer warpgroups taking turns on the tensor cores; one has no
  // other to hide its softmax under (it timed faster than cooperative for nothing).
  if (mech.warp_roles == WarpRoles::pingpong && consumers < 2) {
    out.infeasible_reason = fmt::format(
        "{} pingpong (--warpgroups or warp_roles) needs two consumer warpgroups to take turns, and "
        "--block-q {} gives one (64 query rows each); use --block-q 128 or more, or cooperative",
        algo, t.block_q);
    return out;
  }
  if (!specialized && mech.wgmma() &&
      (t.block_q % kRowsPerWarpgroup != 0 || t.threads % kWarpgroupThreads != 0)) {
    out.infeasible_reason = fmt::format(
        "{} issues wgmma from whole warpgroups on 64-row steps: --block-q {} must be a multiple "
        "of 64 and the CTA's {} threads a multiple of 128",
        algo, t.block_q, t.threads);
    return out;
  }
  // Q, then the K/V stages; O leaves through Q's buffer. fp8 with wgmma keeps a second set of V
  // stages, the transposed copy wgmma reads (FlashAttention-3's smem_vt beside smem_v).
  const std::int64_t v_copies = fp8 && mech.wgmma() ? 2 : 1;
  const std::int64_t smem = (t.block_q + (1 + v_copies) * t.pipeline_stages * t.block_kv) * d * eb;
  if (smem > limit) {
    out.infeasible_reason = fmt::format(
        "{} tile does not fit in shared memory: Q {}x{} plus {} stage(s) of K and V {}x{} "
        "({}) need {} bytes, {} allows {} bytes per CTA",
        algo, t.block_q, d, t.pipeline_stages, t.block_kv, d, dtype_name(p.dtype), smem, hw.name,
        limit);
    return out;
  }
  int regs = 0;
  if (specialized) {
    // The CTA takes the whole register file (setmaxnreg moves registers from the producer to
    // the consumers): cuDNN's 384-thread kernels report 168 = 65536 / 384.
    regs = req.registers_per_thread.value_or(
        std::min(255, hw.sm.registers_per_sm.value / t.threads / 8 * 8));
    // Register reallocation (setmaxnreg): the producer warpgroup keeps the fewest registers it
    // may and the consumers share the rest of what the CTA launched with, which is all they can
    // take (measured: the pool is the CTA's, an .inc beyond it blocks;
    // measurements/h100-sxm5-80gb/setmaxnreg_2026-11-23/). A consumer thread holds at least its
    // rows' O and S accumulators in fp32: 64 rows x d and 64 x block_kv over 128 threads.
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
            "{} consumer warpgroups cannot hold their accumulators: O (64 x {}) and S (64 x {}) "
            "in fp32 take {} registers per thread, and register reallocation gives each consumer "
            "at most {} ({} threads launched with {} registers each, the producer warpgroup "
            "keeping {}, setmaxnreg at most {}); use a smaller --block-kv",
            algo, d, t.block_kv, accumulators, consumer_regs, t.threads, regs,
            sm.setmaxnreg_min_registers.value, sm.setmaxnreg_max_registers.value);
        return out;
      }
    }
  } else {
    // Without a compiler's report (a preset, tune's space): a thread's share of the O and S
    // accumulators in fp32 is live through every step, so where it alone is more than a thread
    // may have, ptxas spills (our kernels pick their warps to keep it under 255:
    // cuda_validate/runner/flash_instances.hpp; the tile sweep's spilling configurations ran
    // 1.5-3x slower, CALIBRATION.md), and how much only the compiler can say.
    const std::int64_t accumulators =
        fp32_accumulator_registers(t.block_q, t.block_kv, d, t.threads);
    if (!req.registers_per_thread && !req.local_bytes_per_thread &&
        accumulators > hw.sm.max_registers_per_thread.value) {
      out.infeasible_reason = fmt::format(
          "{} with {} threads: the O ({}x{}) and S ({}x{}) accumulators in fp32 alone take {} "
          "registers a thread, {} allows {}; such a kernel spills, which iosim times from the "
          "compiler's report (launch.registers_per_thread and local_bytes_per_thread in a kernel "
          "description), or use more --threads or smaller blocks",
          algo, t.threads, t.block_q, d, t.block_q, t.block_kv, accumulators, hw.name,
          hw.sm.max_registers_per_thread.value);
      return out;
    }
    regs = row_split_registers(t, d, eb, req);
  }
  t.registers_per_thread = regs;
  std::shared_ptr<const BlockMask> blocks;
  if (block_sparse) {
    blocks = std::make_shared<const BlockMask>(p, t.block_q, t.block_kv);
    out.blocks = blocks;
  }
  QueryStationaryKernel kernel;
  kernel.name = kernel_name;
  kernel.mechanisms = mech;
  kernel.smem_bytes = smem;
  kernel.registers = regs;
  t.local_bytes_per_thread = req.local_bytes_per_thread.value_or(0);
  kernel.local_bytes = t.local_bytes_per_thread;
  kernel.kv_order = kv_order;
  // Uniform warpgroups issuing wgmma take the tile's 64-row groups among them. Warpgroups beyond
  // the row groups repeat a row group's work (Triton's 8 warps on a 64-row tile: its score tile
  // and softmax are laid out over all the warps, [8, 1], so each warpgroup holds the whole tile,
  // and the P V product's over [4, 2], split by columns): score_replicas.
  kernel.consumer_warpgroups =
      specialized    ? consumers
      : mech.wgmma() ? static_cast<int>(std::min<std::int64_t>(
                           t.threads / kWarpgroupThreads, ceil_div(t.block_q, kRowsPerWarpgroup)))
                     : 0;
  if (mech.wgmma() && !specialized) {
    kernel.score_replicas = std::max<std::int64_t>(
        1, (t.threads / kWarpgroupThreads) / ceil_div(t.block_q, kRowsPerWarpgroup));
  }
  out.schedule = make_query_stationary_forward(p, t, kernel, blocks);
  return out;
}

Dataflow query_stationary_dataflow() {
  Dataflow f;
  f.name = "query_stationary";
  f.pass = Pass::fwd;
  f.summary = "one CTA per query block streams K/V, O and L written once (FlashAttention-2, -3)";
  f.mechanisms = kOurMmaSyncMechanisms;
  f.plans_mechanisms = true;
  f.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req,
              const DataflowUse& use) {
    // --warpgroups arranges the consumer warpgroups of a warp-specialized kernel.
    ResolvedMechanisms m = use.mechanisms;
    if (req.warpgroups && m.warp_roles != WarpRoles::uniform) {
      m.warp_roles = *req.warpgroups == PipeOverlap::pingpong ? WarpRoles::pingpong
                                                              : WarpRoles::producer_consumer;
    }
    const bool suffixed =
        use.name.size() >= 4 && use.name.compare(use.name.size() - 4, 4, "_fwd") == 0;
    return plan_query_stationary_forward(p, hw, req, m, use.name,
                                         suffixed ? use.name : use.name + "_fwd", use.block_mask,
                                         use.kv_order);
  };
  // Over a block mask's nonzero blocks where the description has one (the mask the plan resolved).
  f.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask* blocks) {
    return flash2_closed_form(p, t.block_q, t.block_kv, blocks);
  };
  f.paper_step = flash2_family_paper_step;
  f.capabilities.packs_gqa = true;
  f.capabilities.window = true;
  f.fp8_with_wgmma = true;
  f.block_mask = true;
  f.kv_order = true;
  f.spills = true;
  return f;
}

}  // namespace iosim
