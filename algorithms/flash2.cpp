// FlashAttention-2 forward (Dao 2023): one CTA per (Q block, batch, head), launched with grid
// (Tr, B, H) so that CTAs of the same head run side by side and share K/V in L2. A CTA loads
// its Q tile once, streams K_j, V_j (j = 0..Tc-1; causal stops at the diagonal), keeps the
// running max m, sum l and output O on chip, and writes O and the log-sum-exp L once.
#include <algorithm>
#include <fmt/format.h>

#include "algorithms/schedules.hpp"
#include "algorithms/tile_costs.hpp"

namespace iosim {
namespace {

class Flash2Schedule final : public Schedule {
 public:
  Flash2Schedule(const AttentionProblem& p, const Tiling& t, std::int64_t smem_bytes, int regs)
      : p_(p), t_(t), smem_bytes_(smem_bytes), regs_(regs) {}

  std::vector<TensorDecl> tensors() const override {
    const std::int64_t eb = p_.elem_bytes(), bh = p_.bh(), d = p_.head_dim;
    return {{TensorId::Q, bh, p_.seq, d, eb},
            {TensorId::K, bh, p_.seq_kv, d, eb},
            {TensorId::V, bh, p_.seq_kv, d, eb},
            {TensorId::O, bh, p_.seq, d, eb},
            {TensorId::L, bh, p_.seq, 1, 4}};
  }

  std::vector<KernelSpec> kernels() const override {
    KernelSpec k;
    k.name = "flash2_fwd";
    k.grid = {ceil_div(p_.seq, t_.block_q), p_.batch, p_.heads};
    k.threads_per_cta = t_.threads;
    k.smem_bytes_per_cta = smem_bytes_;
    k.registers_per_thread = regs_;
    k.pipeline_stages = t_.pipeline_stages;
    k.mma_dtype = p_.dtype;
    k.tensor_instruction = TensorInstruction::mma_sync;  // warp-level MMA, as FlashAttention-2
    return {k};
  }

  void emit_cta(std::size_t, std::int64_t cta, std::vector<TileOp>& out) const override {
    const std::int64_t tr = ceil_div(p_.seq, t_.block_q);
    const std::int64_t qb = cta % tr;
    const std::int64_t b = (cta / tr) % p_.batch;
    const std::int64_t h = cta / (tr * p_.batch);
    const std::int64_t bh = b * p_.heads + h;
    const std::int64_t d = p_.head_dim, eb = p_.elem_bytes();
    const std::int64_t q0 = qb * t_.block_q;
    const std::int64_t qr = std::min(t_.block_q, p_.seq - q0);
    const std::int64_t warps = std::max(1, t_.threads / 32);
    const std::int64_t offset = p_.seq_kv - p_.seq;  // bottom-right causal alignment

    out.push_back(TileOp::load({TensorId::Q, bh, q0, qr, 0, d}));  // gQ -> sQ (qr, d)
    out.push_back(costs::init_state({TensorId::O, bh, q0, qr, 0, d}));
    const std::int64_t tc = ceil_div(p_.seq_kv, t_.block_kv);
    // The last key any row of this block sees decides where the causal loop stops.
    const std::int64_t last_block =
        p_.causal ? std::min(tc - 1, (q0 + qr - 1 + offset) / t_.block_kv) : tc - 1;
    for (std::int64_t j = 0; j <= last_block; ++j) {
      const std::int64_t k0 = j * t_.block_kv;
      const std::int64_t kr = std::min(t_.block_kv, p_.seq_kv - k0);
      out.push_back(TileOp::load({TensorId::K, bh, k0, kr, 0, d}));  // gK -> sK (kr, d)
      out.push_back(TileOp::load({TensorId::V, bh, k0, kr, 0, d}));  // gV -> sV (kr, d)
      const TileRef s{TensorId::S, bh, q0, qr, k0, kr};                // rS (qr, kr)
      // Each warp reads its own Q rows and the whole K (then V) tile from shared memory.
      out.push_back(costs::scores(s, d, (qr + warps * kr) * d * eb));
      const bool crosses_diagonal = p_.causal && k0 + kr - 1 > q0 + offset;
      if (crosses_diagonal || p_.mask) out.push_back(costs::mask(s));
      out.push_back(costs::online_softmax(s, d));
      if (p_.dropout > 0) out.push_back(costs::dropout({TensorId::P, bh, q0, qr, k0, kr}));
      out.push_back(costs::pv(s, d, warps * kr * d * eb));
    }
    out.push_back(costs::finalize({TensorId::O, bh, q0, qr, 0, d}, d));
    // O leaves through shared memory for coalesced 16-byte stores; L straight from registers.
    out.push_back(TileOp::store({TensorId::O, bh, q0, qr, 0, d}, OnChip::smem));
    out.push_back(TileOp::store({TensorId::L, bh, q0, qr, 0, 1}, OnChip::reg));
  }

 private:
  AttentionProblem p_;
  Tiling t_;
  std::int64_t smem_bytes_;
  int regs_;
};

class Flash2 final : public Algorithm {
 public:
  std::string name() const override { return "flash2"; }
  std::string summary() const override {
    return "FlashAttention-2: CTA per (Q block, batch, head), K/V streamed, O written once";
  }

  Planned plan(const AttentionProblem& p, const HardwareProfile& hw,
               const Tiling& req) const override {
    Planned out;
    Tiling& t = out.tiling;
    // FlashAttention-2's forward defaults on sm80/sm90: 128 x 128 for d <= 64, 128 x 64 above.
    t.block_q = req.block_q > 0 ? req.block_q : 128;
    t.block_kv = req.block_kv > 0 ? req.block_kv : (p.head_dim <= 64 ? 128 : 64);
    t.threads = req.threads > 0 ? req.threads : 128;
    t.pipeline_stages = req.pipeline_stages > 0 ? req.pipeline_stages : 2;
    const std::int64_t eb = p.elem_bytes(), d = p.head_dim;
    const std::int64_t smem = (t.block_q + 2 * t.pipeline_stages * t.block_kv) * d * eb;
    if (smem > hw.sm.smem_per_cta_max_bytes.value) {
      out.infeasible_reason = fmt::format(
          "flash2 tile does not fit in shared memory: Q {}x{} plus {} stage(s) of K and V {}x{} "
          "({}) need {} bytes, {} allows {} bytes per CTA",
          t.block_q, d, t.pipeline_stages, t.block_kv, d, dtype_name(p.dtype), smem, hw.name,
          hw.sm.smem_per_cta_max_bytes.value);
      return out;
    }
    // O and S accumulate in FP32 registers spread over the CTA's threads.
    const std::int64_t acc = (t.block_q * d + t.block_q * t.block_kv) / t.threads;
    const int regs = static_cast<int>(std::min<std::int64_t>(acc + 40, 255));
    out.schedule = std::make_unique<Flash2Schedule>(p, t, smem, regs);
    return out;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_flash2_algorithm() { return std::make_unique<Flash2>(); }

}  // namespace iosim
