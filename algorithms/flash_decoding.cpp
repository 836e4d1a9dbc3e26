// Flash-decoding (split-KV) and paged attention: the schedule algorithms/decode.hpp describes,
// and the `split_kv` dataflow. The `paged` dataflow's entry lives in paged.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "algorithms/closed_form_parts.hpp"
#include "algorithms/dataflow.hpp"
#include "algorithms/decode.hpp"
#include "algorithms/tile_costs.hpp"
#include "sim/base/errors.hpp"
#include "sim/hardware/occupancy.hpp"
#include "sim/schedule/block_table.hpp"

namespace iosim {

std::int64_t num_splits_heuristic(std::int64_t tiles, std::int64_t slots, std::int64_t kv_blocks,
                                  std::int64_t max_splits) {
  if (static_cast<double>(tiles) >= 0.8 * static_cast<double>(slots)) return 1;
  max_splits = std::min({max_splits, slots, kv_blocks});
  // 64 blocks in 11 splits are 6 per split, as in 12 (the 12th would be empty): not eligible.
  auto eligible = [&](std::int64_t s) {
    return s == 1 || ceil_div(kv_blocks, s) != ceil_div(kv_blocks, s - 1);
  };
  std::vector<double> efficiency(static_cast<std::size_t>(std::max<std::int64_t>(max_splits, 0)));
  double best = 0.0;
  for (std::int64_t s = 1; s <= max_splits; ++s) {
    if (!eligible(s)) continue;
    const double waves = static_cast<double>(tiles * s) / static_cast<double>(slots);
    const double e = waves / std::ceil(waves);
    efficiency[static_cast<std::size_t>(s - 1)] = e;
    best = std::max(best, e);
  }
  for (std::int64_t s = 1; s <= max_splits; ++s) {
    if (eligible(s) && efficiency[static_cast<std::size_t>(s - 1)] >= 0.85 * best) return s;
  }
  return 1;
}

namespace {

// Rows of partial results the reduce kernel combines per CTA (FlashAttention's combine kBlockM).
std::int64_t reduce_rows(std::int64_t d) {
  return d % 128 == 0 ? 4 : (d % 64 == 0 ? 8 : 16);
}

class SplitKvSchedule final : public Schedule {
 public:
  SplitKvSchedule(const AttentionProblem& p, const Tiling& t, bool paged, std::int64_t smem_bytes,
                  int regs)
      : p_(p), t_(t), paged_(paged), smem_bytes_(smem_bytes), regs_(regs) {
    const bool packed = p_.packs_query_group();
    q_matrices_ = p_.batch * (packed ? p_.kv_head_count() : p_.heads);
    q_rows_ = packed ? p_.group() * p_.seq : p_.seq;
    tr_ = ceil_div(q_rows_, t_.block_q);
    tc_ = ceil_div(p_.seq_kv, t_.block_kv);
    blocks_per_split_ = ceil_div(tc_, t_.splits);
  }

  std::vector<TensorDecl> tensors() const override {
    const std::int64_t eb = p_.elem_bytes(), d = p_.head_dim, rows = p_.bh() * p_.seq;
    const std::int64_t dv = p_.value_dim();         // O's columns (a latent's, or d)
    const std::int64_t kv_eb = p_.kv_elem_bytes();  // K and V as stored (--kv-dtype)
    // Q, O and L as one matrix of B*H*N rows: a CTA's rows are contiguous whether it holds one
    // head's query block or a packed group, and the reduce kernel's rows may span heads.
    std::vector<TensorDecl> out = {{TensorId::Q, 1, rows, d, eb},
                                   {TensorId::O, 1, rows, dv, eb},
                                   {TensorId::L, 1, rows, 1, 4}};
    // A latent cache (--latent-dim) is K alone: V is its first dv columns, no tensor of its own.
    const bool v_tensor = !p_.latent();
    if (paged_) {
      const BlockTable& bt = *p_.block_table;
      const std::int64_t pool = bt.pool_pages * p_.kv_head_count();
      out.push_back({TensorId::K, pool, p_.page_tokens, d, kv_eb});
      if (v_tensor) out.push_back({TensorId::V, pool, p_.page_tokens, d, kv_eb});
      out.push_back({TensorId::block_table, 1, bt.sequences, bt.pages_per_seq, 4});
    } else {
      out.push_back({TensorId::K, p_.bh_kv(), p_.seq_kv, d, kv_eb});
      if (v_tensor) out.push_back({TensorId::V, p_.bh_kv(), p_.seq_kv, d, kv_eb});
    }
    if (t_.splits > 1) {
      out.push_back({TensorId::partial_O, t_.splits, rows, dv, 4});
      out.push_back({TensorId::partial_lse, t_.splits, rows, 1, 4});
    }
    return out;
  }

  std::vector<KernelSpec> kernels() const override {
    const std::string prefix = paged_ ? "paged" : "fd";
    KernelSpec split;
    split.name = prefix + "_split";
    split.main_loop = true;
    split.grid = {tr_, t_.splits, q_matrices_};
    split.threads_per_cta = t_.threads;
    split.smem_bytes_per_cta = smem_bytes_;
    split.registers_per_thread = regs_;
    // A latent's one K buffer is read by both products: the next tile's copy waits for them
    // (no K/V pair to alternate, kv_pipeline_depth), so its buffers are its depth.
    split.pipeline_stages =
        p_.latent() ? t_.pipeline_stages : kv_pipeline_depth(t_.pipeline_stages);
    split.role = t_.splits == 1 ? "attention" : "split";
    split.mma_dtype = p_.dtype;
    split.tensor_instruction = TensorInstruction::mma_sync;  // FlashAttention-2's kernels
    if (t_.splits == 1) return {split};
    KernelSpec reduce;
    reduce.name = prefix + "_reduce";
    reduce.grid = {ceil_div(p_.bh() * p_.seq, reduce_rows(p_.value_dim())), 1, 1};
    reduce.threads_per_cta = 128;
    reduce.smem_bytes_per_cta = t_.splits * reduce_rows(p_.value_dim()) * 4;  // every split's lse
    reduce.registers_per_thread = 64;
    reduce.pipeline_stages = 2;
    reduce.role = "reduce";
    reduce.mma_dtype = p_.dtype;
    return {split, reduce};
  }

  // A split with many K/V blocks (or many small pages) comes in parts of kBlocksPerPart blocks,
  // so that the engine holds a bounded piece of each resident CTA.
  bool emit_cta_part(std::size_t kernel, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    if (kernel == 1) {
      if (part == 0) emit_reduce(cta, out);
      return false;
    }
    return emit_split_part(cta, static_cast<std::int64_t>(part), out);
  }

 private:
  static constexpr std::int64_t kBlocksPerPart = 64;
  // INT32 instructions a thread spends to address one 16-byte chunk it gathers from the page
  // pool: our paged kernel's PTX per tile and thread (d = 128, 64 keys: 16 chunks) holds 8
  // div.s32 by the runtime page size (up to 20 instructions each, CUDA C++ Programming Guide,
  // arithmetic instructions), 64 64-bit adds, 32 64-bit shifts (2 each), 32 64-bit multiplies
  // (3 each), the block-table index and 16 selects: about 570 instructions, 36 per chunk.
  // Contiguous tiles need a few per chunk (not modelled).
  static constexpr std::int64_t kPagedAddressOpsPerChunk = 36;

  struct SplitCta {
    std::int64_t split, qm, kv, b, hk, q0, qr, r0, jb, je;
  };

  SplitCta split_cta(std::int64_t cta) const {
    SplitCta c{};
    const std::int64_t qb = cta % tr_;
    c.split = (cta / tr_) % t_.splits;
    c.qm = cta / (tr_ * t_.splits);                            // a head, or a packed group
    c.kv = p_.packs_query_group() ? c.qm : c.qm / p_.group();  // its K/V head
    c.b = c.kv / p_.kv_head_count();
    c.hk = c.kv % p_.kv_head_count();
    c.q0 = qb * t_.block_q;
    c.qr = std::min(t_.block_q, q_rows_ - c.q0);
    c.r0 = c.qm * q_rows_ + c.q0;  // first row in the flat [B*H*N] row space
    // This split's K/V blocks; causal stops at the block of the last row's diagonal key.
    c.jb = c.split * blocks_per_split_;
    c.je = std::min(tc_, c.jb + blocks_per_split_);
    if (p_.causal) {
      c.je = std::min(c.je, (c.q0 + c.qr - 1 + p_.seq_kv - p_.seq) / t_.block_kv + 1);
    }
    return c;
  }

  bool emit_split_part(std::int64_t cta, std::int64_t part, std::vector<TileOp>& out) const {
    const SplitCta c = split_cta(cta);
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes(), kv_eb = p_.kv_elem_bytes();
    const std::int64_t dv = p_.value_dim();  // V's and O's columns (a latent's, or d)
    const std::int64_t warps = std::max(1, t_.threads / 32);
    const std::int64_t offset = p_.seq_kv - p_.seq;      // bottom-right causal alignment
    const TileRef o{TensorId::O, 0, c.r0, c.qr, 0, dv};  // rO (qr, dv)
    if (c.jb >= c.je) {  // nothing to attend to: O = 0 and lse = -inf, ignored by the reduce
      out.push_back(costs::init_state(o));
      out.push_back(costs::finalize_partial(o, dv));
      store_partials(c.split, c.r0, c.qr, out);
      return false;
    }
    if (part == 0) {
      out.push_back(TileOp::load({TensorId::Q, 0, c.r0, c.qr, 0, d}));  // gQ -> sQ (qr, d)
      if (paged_) {  // the split's slice of the block table, before any page is gathered
        const std::int64_t first = c.jb * t_.block_kv / p_.page_tokens;
        const std::int64_t last = (std::min(c.je * t_.block_kv, p_.seq_kv) - 1) / p_.page_tokens;
        out.push_back(TileOp::load({TensorId::block_table, 0, c.b, 1, first, last - first + 1},
                                   OnChip::reg));  // (1, pages)
      }
      out.push_back(costs::init_state(o));
    }
    const std::int64_t from = c.jb + part * kBlocksPerPart;
    const std::int64_t to = std::min(c.je, from + kBlocksPerPart);
    for (std::int64_t j = from; j < to; ++j) {
      const std::int64_t k0 = j * t_.block_kv;
      const std::int64_t kr = std::min(t_.block_kv, p_.seq_kv - k0);
      load_kv(TensorId::K, c.kv, c.b, c.hk, k0, kr, out);  // gK -> sK (kr, d)
      // A latent cache: P V reads V as sK's first dv columns, already on chip.
      if (!p_.latent()) load_kv(TensorId::V, c.kv, c.b, c.hk, k0, kr, out);  // gV -> sV (kr, d)
      const TileRef s{TensorId::S, c.qm, c.q0, c.qr, k0, kr};                // rS (qr, kr)
      // Warps take 16-row m-tiles of the query tile (rows past qr are padding the kernel
      // computes anyway); warps left over split the tile's keys (our decode kernel: a 16-row
      // tile, each of 4 warps a quarter of the keys; FlashAttention's: 64 rows, a warp each).
      // Every warp reads its m-tiles of Q and its keys of K and V from shared memory.
      const std::int64_t m_tiles = ceil_div(t_.block_q, 16);
      const std::int64_t row_warps = std::min(warps, m_tiles);
      const std::int64_t key_warps = std::max<std::int64_t>(1, warps / row_warps);
      const std::int64_t q_reads = key_warps * m_tiles * 16 * d * eb;
      // K and V stay in their stored type in shared memory (an fp8 cache is copied as is). V is
      // dv columns wide: a latent's first dv columns of the K tile, or a V tile of d.
      const std::int64_t k_reads = row_warps * kr * d * kv_eb;
      const std::int64_t v_reads = row_warps * kr * dv * kv_eb;
      TileOp qk = costs::scores(s, d, q_reads + k_reads);
      TileOp pv = costs::pv(s, dv, v_reads);
      if (p_.kv_converted()) {
        // An fp8 cache: each warp converts the K (V) elements it read to --dtype in registers
        // before Q K^T (P V); the mma.sync takes fp16/bf16 operands. The per-tensor scales fold
        // into the softmax scale and the output, at no per-element cost. A latent's V is K's
        // elements, converted once for both products (as FlashMLA's FP8 kernel dequantizes a
        // K tile once).
        costs::convert_fp8_operand(qk, row_warps * kr * d);
        if (!p_.latent()) costs::convert_fp8_operand(pv, row_warps * kr * dv);
      }
      out.push_back(qk);
      const bool crosses_diagonal = p_.causal && k0 + kr - 1 > c.q0 + offset;
      if (crosses_diagonal || p_.mask) out.push_back(costs::mask(s));
      out.push_back(costs::online_softmax(s, dv));
      out.push_back(pv);
    }
    if (to < c.je) return true;
    if (t_.splits > 1) {
      out.push_back(costs::finalize_partial(o, dv));
      store_partials(c.split, c.r0, c.qr, out);
      return false;
    }
    out.push_back(costs::finalize(o, dv));
    out.push_back(TileOp::store(o, OnChip::smem));
    out.push_back(TileOp::store({TensorId::L, 0, c.r0, c.qr, 0, 1}, OnChip::reg));
    return false;
  }

  // K or V rows [k0, k0 + kr) of K/V head `kv`: one tile, or the pieces of the pages it spans.
  void load_kv(TensorId t, std::int64_t kv, std::int64_t b, std::int64_t hk, std::int64_t k0,
               std::int64_t kr, std::vector<TileOp>& out) const {
    const std::int64_t d = p_.head_dim;
    if (!paged_) {
      out.push_back(TileOp::load({t, kv, k0, kr, 0, d}));
      return;
    }
    const std::int64_t pt = p_.page_tokens, hkv = p_.kv_head_count();
    for (std::int64_t tok = k0; tok < k0 + kr;) {
      const std::int64_t off = tok % pt;
      const std::int64_t n = std::min(pt - off, k0 + kr - tok);
      const std::int64_t page = p_.block_table->at(b, tok / pt);
      const TileRef piece{t, page * hkv + hk, off, n, 0, d};  // (n, d) of one page
      TileOp op = tok == k0 ? TileOp::load(piece) : TileOp::gather(piece);
      op.int_ops = kPagedAddressOpsPerChunk * ceil_div(n * d * p_.kv_elem_bytes(), 16);
      out.push_back(op);
      tok += n;
    }
  }

  void store_partials(std::int64_t split, std::int64_t r0, std::int64_t qr,
                      std::vector<TileOp>& out) const {
    const std::int64_t dv = p_.value_dim();
    out.push_back(TileOp::store({TensorId::partial_O, split, r0, qr, 0, dv}));   // fp32 (qr, dv)
    out.push_back(TileOp::store({TensorId::partial_lse, split, r0, qr, 0, 1}));  // fp32 (qr, 1)
  }

  void emit_reduce(std::int64_t cta, std::vector<TileOp>& out) const {
    const std::int64_t d = p_.value_dim(), rows = p_.bh() * p_.seq;  // O's columns
    const std::int64_t r0 = cta * reduce_rows(d);
    const std::int64_t rr = std::min(reduce_rows(d), rows - r0);
    const TileRef o{TensorId::O, 0, r0, rr, 0, d};  // rO (rr, d)
    out.push_back(costs::init_state(o));
    for (std::int64_t s = 0; s < t_.splits; ++s) {
      out.push_back(TileOp::load({TensorId::partial_lse, s, r0, rr, 0, 1}, OnChip::reg));
      out.push_back(TileOp::load({TensorId::partial_O, s, r0, rr, 0, d}, OnChip::reg));
      out.push_back(costs::combine_partial(o, d));
    }
    out.push_back(costs::finalize(o, d));
    out.push_back(TileOp::store(o, OnChip::reg));
    out.push_back(TileOp::store({TensorId::L, 0, r0, rr, 0, 1}, OnChip::reg));
  }

  AttentionProblem p_;
  Tiling t_;
  bool paged_;
  std::int64_t smem_bytes_;
  int regs_;
  std::int64_t q_matrices_ = 0, q_rows_ = 0, tr_ = 0, tc_ = 0, blocks_per_split_ = 0;
};

using closed_form_parts::u;
using closed_form_parts::u64;

// Split-KV decoding (flash-decoding, paged), all heads together. Per query tile (a head's query
// block, or a packed group's) and split s of the Tc K/V blocks, ceil(Tc/S) blocks each: Q in,
// the split's K and V rows in, (paged) the int32 ids of the pages those rows lie on, and out
// either O and L (S = 1) or the fp32 partial O and lse (also for a split left without blocks).
// With S > 1 the reduce kernel reads all S partials of every row once and writes O and L.
// A latent cache (multi-head latent attention): the split's rows of K alone (V is their first
// C columns, already read), and O and the partials of C columns.
ReadWriteBytes split_kv(const AttentionProblem& p, std::int64_t bq, std::int64_t bk,
                        std::int64_t splits, bool paged) {
  const u64 eb = u(p.elem_bytes()), kv_eb = u(p.kv_elem_bytes()), d = u(p.head_dim);
  const u64 dv = u(p.value_dim()), kv_tensors = p.latent() ? 1 : 2;
  const bool packed = p.packs_query_group();
  const u64 tiles_per_row = u(p.batch * (packed ? p.kv_head_count() : p.heads));
  const std::int64_t rows = packed ? p.group() * p.seq : p.seq;
  const std::int64_t tc = (p.seq_kv + bk - 1) / bk, per_split = (tc + splits - 1) / splits;
  ReadWriteBytes one;  // one query matrix (a head, or a packed group)
  for (std::int64_t q0 = 0; q0 < rows; q0 += bq) {
    const std::int64_t last_row = std::min(bq, rows - q0) + q0 - 1;
    const u64 qr = u(last_row - q0 + 1);
    // Causal: blocks up to the one holding the last row's diagonal key (a packed group is one
    // query position, which sees every key).
    const std::int64_t reach =
        p.causal && !packed ? std::min(tc, (last_row + p.seq_kv - p.seq) / bk + 1) : tc;
    for (std::int64_t s = 0; s < splits; ++s) {
      const std::int64_t first = s * per_split;
      const std::int64_t end = std::min({tc, first + per_split, reach});
      if (first < end) {
        const std::int64_t k_begin = first * bk, k_end = std::min(end * bk, p.seq_kv);
        one.read += qr * d * eb + kv_tensors * u(k_end - k_begin) * d * kv_eb;  // K, V as stored
        if (paged) one.read += 4 * u((k_end - 1) / p.page_tokens - k_begin / p.page_tokens + 1);
      }
      one.write += splits > 1 ? qr * dv * 4 + qr * 4 : qr * dv * eb + qr * 4;
    }
  }
  ReadWriteBytes rw{one.read * tiles_per_row, one.write * tiles_per_row};
  if (splits > 1) {
    const u64 r = u(p.bh() * p.seq);
    rw.read += u(splits) * r * (dv * 4 + 4);
    rw.write += r * (dv * eb + 4);
  }
  return rw;
}

}  // namespace

Planned plan_split_kv(const AttentionProblem& p, const HardwareProfile& hw,
                      const TilingRequest& req, bool paged) {
  const std::string algo = paged ? "paged" : "flash-decoding";
  ensure(p.pass == Pass::fwd, "{} planned for --pass {} (check_applicable refuses it)", algo,
         pass_name(p.pass));
  if (p.dropout > 0) {
    throw ConfigError(fmt::format(
        "--dropout {}: {} has no dropout (FlashAttention's split-KV kernels have none either)",
        p.dropout, algo));
  }
  Planned out;
  Tiling& t = out.tiling;
  const std::int64_t eb = p.elem_bytes(), kv_eb = p.kv_elem_bytes(), d = p.head_dim;
  const std::int64_t dv = p.value_dim();  // O's columns: a latent's, or d
  const int max_regs = hw.sm.max_registers_per_thread.value;
  if (p.latent()) {
    // FlashMLA's tiles: 64 query rows (packed heads) x 64 keys of the 576-column latent cache.
    // Its CTA is 2 warpgroups (256 threads), which hold the fp32 O (64 x 512) and S accumulators
    // in 144 registers a thread where 128 threads would need 288: the default is the fewest
    // warpgroups whose threads hold them within the register limit (query_stationary's rule),
    // 128 threads for a small latent, 256 for DeepSeek's.
    t.block_q = req.block_q.value_or(64);
    t.block_kv = req.block_kv.value_or(64);
    constexpr int kWarpgroup = 128;  // threads
    int groups = 1;
    while (groups < 8 &&
           fp32_accumulator_registers(t.block_q, t.block_kv, dv, groups * kWarpgroup) > max_regs) {
      ++groups;
    }
    t.threads = req.threads.value_or(groups * kWarpgroup);
  } else {
    // FlashAttention-2's split-KV kernel: 64 query rows, 256/128/64 K/V rows for d <= 64/128/above.
    t.block_q = req.block_q.value_or(64);
    t.block_kv = req.block_kv.value_or((d <= 64 ? 256 : (d <= 128 ? 128 : 64)));
    t.threads = req.threads.value_or(128);
  }
  // K/V buffer pairs, as flash2 counts them: FlashAttention's split-KV kernel has one (its copies
  // still overlap the products, kv_pipeline_depth); our measured decode kernel has two. A latent
  // cache's buffers hold K alone, which both products read, so one buffer does not overlap its
  // next copy: FlashMLA double-buffers K (Q and two 64 x 576 bf16 K tiles, 216 KiB), the default
  // where two fit in shared memory (one where not: an A100's 164 KiB).
  const std::int64_t kv_tensors = p.latent() ? 1 : 2;
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  const auto smem_of = [&](std::int64_t buffers) {
    return (t.block_q * eb + kv_tensors * buffers * t.block_kv * kv_eb) * d;
  };
  t.pipeline_stages = req.pipeline_stages.value_or(p.latent() && smem_of(2) <= limit ? 2 : 1);
  const std::int64_t kv_buffers = t.pipeline_stages;
  const std::int64_t smem = smem_of(kv_buffers);
  if (smem > limit) {
    const std::string types =
        p.kv_converted() ? fmt::format("Q {}, {} {}", dtype_name(p.dtype),
                                       p.latent() ? "K" : "K and V", dtype_name(p.kv_type()))
                         : std::string(dtype_name(p.dtype));
    out.infeasible_reason =
        p.latent()
            ? fmt::format(
                  "{} tile does not fit in shared memory: Q {}x{} plus {} buffer(s) of the "
                  "latent K {}x{} ({}) need {} bytes, {} allows {} bytes per CTA",
                  algo, t.block_q, d, kv_buffers, t.block_kv, d, types, smem, hw.name, limit)
            : fmt::format(
                  "{} tile does not fit in shared memory: Q {}x{} plus {} buffer pair(s) of "
                  "K and V {}x{} ({}) need {} bytes, {} allows {} bytes per CTA",
                  algo, t.block_q, d, kv_buffers, t.block_kv, d, types, smem, hw.name, limit);
    return out;
  }
  // A latent's O is hundreds of columns: where a thread's share of the fp32 O and S accumulators
  // alone is past the register limit, the kernel spills, which only a compiler's report can time
  // (as query_stationary refuses it).
  const std::int64_t accumulators =
      fp32_accumulator_registers(t.block_q, t.block_kv, dv, t.threads);
  if (p.latent() && !req.registers_per_thread && accumulators > max_regs) {
    out.infeasible_reason = fmt::format(
        "{} with {} threads: the O ({}x{}) and S ({}x{}) accumulators in fp32 alone take {} "
        "registers a thread, {} allows {}; such a kernel spills: use more --threads (FlashMLA "
        "runs 256) or smaller blocks",
        algo, t.threads, t.block_q, dv, t.block_q, t.block_kv, accumulators, hw.name, max_regs);
    return out;
  }
  const int regs = accumulator_registers(t, dv, req);
  t.registers_per_thread = regs;

  const std::int64_t tc = ceil_div(p.seq_kv, t.block_kv);
  const bool packed = p.packs_query_group();
  const std::int64_t q_tiles = p.batch * (packed ? p.kv_head_count() : p.heads) *
                               ceil_div(packed ? p.group() * p.seq : p.seq, t.block_q);
  if (req.splits && *req.splits > tc) {
    throw ConfigError(fmt::format(
        "--splits {} exceeds the {} K/V blocks of N_kv = {} at block_kv {}: every split needs "
        "at least one block",
        *req.splits, tc, p.seq_kv, t.block_kv));
  }
  if (req.splits) {
    t.splits = *req.splits;
  } else {
    KernelSpec split;
    split.threads_per_cta = t.threads;
    split.smem_bytes_per_cta = smem;
    split.registers_per_thread = regs;
    const Occupancy occ = occupancy(hw, split);
    if (occ.ctas_per_sm == 0) {
      out.infeasible_reason = fmt::format("{} split kernel does not fit on an SM of {}: {}", algo,
                                          hw.name, occ.limiter);
      return out;
    }
    t.splits =
        num_splits_heuristic(q_tiles, std::int64_t{hw.sm.count.value} * occ.ctas_per_sm, tc, 128);
  }
  if (paged) {
    ensure(p.block_table != nullptr && p.page_tokens > 0,
           "paged attention planned without a block table (simulate() draws one)");
    check_block_table(*p.block_table, p.batch, pages_for(p.seq_kv, p.page_tokens));
  }
  out.schedule = std::make_unique<SplitKvSchedule>(p, t, paged, smem, regs);
  return out;
}

ReadWriteBytes split_kv_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                    std::int64_t block_kv, std::int64_t splits, bool paged) {
  if (!runs_forward(p.pass)) return {};
  return split_kv(p, block_q, block_kv, std::max<std::int64_t>(splits, 1), paged);
}

Dataflow split_kv_dataflow() {
  Dataflow f;
  f.name = "split_kv";
  f.pass = Pass::fwd;
  f.summary =
      "K/V split into chunks attended in parallel, partial O and log-sum-exp combined by a "
      "reduce kernel (Flash-Decoding)";
  f.mechanisms = kOurMmaSyncMechanisms;
  f.plan = [](const AttentionProblem& p, const HardwareProfile& hw, const TilingRequest& req,
              const DataflowUse&) { return plan_split_kv(p, hw, req, false); };
  f.closed_form = [](const AttentionProblem& p, const Tiling& t, const BlockMask*) {
    return split_kv_closed_form(p, t.block_q, t.block_kv, t.splits, false);
  };
  f.paper_step = [](const std::string& kernel, const TileOp& op, const DataflowUse&) {
    return paper::split_kv(kernel, op);
  };
  f.capabilities.splits = true;
  f.capabilities.packs_gqa = true;
  f.capabilities.kv_dtype = true;  // --kv-dtype fp8: an FP8 K/V cache (decode.hpp)
  f.capabilities.latent = true;    // --latent-dim: V read from a latent K cache (decode.hpp)
  return f;
}

}  // namespace iosim
