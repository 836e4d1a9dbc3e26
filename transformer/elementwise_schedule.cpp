#include "transformer/elementwise_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "algorithms/standard_tiles.hpp"
#include "sim/base/errors.hpp"

namespace iosim {
namespace {

using standard_tiles::ElementwiseTiling;

bool is_norm(ElementwiseKind k) {
  return k == ElementwiseKind::rms_norm || k == ElementwiseKind::layer_norm;
}

constexpr int kThreads = 256;

// A CTA-wide sum of one value per thread: log2(32) shuffle rounds, a barrier and a round through
// shared memory for the warps' partials, then a dependent combine of the kThreads / 32 partials
// (the reduction costs::softmax_rows counts).
constexpr std::int64_t kReductionTrips = 5 + 1 + 1;
constexpr std::int64_t kReductionOps = 5 + kThreads / 32;

// PyTorch's TensorIterator kernel for operands that are not contiguous (elementwise_kernel<128,
// 4>, ATen's Loops.cuh): 128 threads, each 4 elements, 128 apart.
constexpr int kSerialThreads = 128;
constexpr std::int64_t kSerialElemsPerThread = 4;

bool reads_gate_up(ElementwiseKind k) {
  return k == ElementwiseKind::gated_silu || k == ElementwiseKind::silu ||
         k == ElementwiseKind::gate_mul;
}

ElementwiseTiling tiling_of(const ElementwiseProblem& p) {
  // A norm reduces over its whole row: one row per CTA, as vLLM's and PyTorch's RMSNorm kernels
  // launch a block per token.
  if (is_norm(p.kind)) return ElementwiseTiling::one_row(p.cols);
  ElementwiseTiling t(p.cols, false);  // rows x cols chunks of 8192 elements
  if (p.loop == ElementwiseLoop::serial) {
    // The serial kernel's CTA: 128 threads x 4 elements of the flattened output.
    constexpr std::int64_t elems = kSerialThreads * kSerialElemsPerThread;
    t.rows = std::max<std::int64_t>(1, elems / p.cols);
    t.cols = std::min(p.cols, elems);
  }
  return t;
}

class ElementwiseSchedule final : public WholeCtaSchedule {
 public:
  explicit ElementwiseSchedule(const ElementwiseProblem& p)
      : p_(p),
        serial_(p.loop == ElementwiseLoop::serial && !is_norm(p.kind)),
        tile_(tiling_of(p)),
        tc_(ceil_div(p.cols, tile_.cols)),
        tr_(ceil_div(p.rows, tile_.rows)) {}

  std::vector<TensorDecl> tensors() const override {
    const std::int64_t eb = dtype_bytes(p_.dtype);
    const std::int64_t in_cols = reads_gate_up(p_.kind) ? 2 * p_.cols : p_.cols;
    std::vector<TensorDecl> out = {{TensorId::X, 1, p_.rows, in_cols, eb},
                                   {TensorId::Y, 1, p_.rows, p_.cols, eb}};
    if (is_norm(p_.kind)) out.push_back({TensorId::W, 1, 1, p_.cols, eb});
    if (p_.kind == ElementwiseKind::layer_norm) out.push_back({TensorId::bias, 1, 1, p_.cols, eb});
    if (p_.kind == ElementwiseKind::residual_add || p_.kind == ElementwiseKind::gate_mul)
      out.push_back({TensorId::R, 1, p_.rows, p_.cols, eb});
    return out;
  }

  std::vector<KernelSpec> kernels() const override {
    KernelSpec s;
    s.name = p_.name;
    s.role = is_norm(p_.kind)                           ? "norm"
             : p_.kind == ElementwiseKind::residual_add ? "residual"
                                                        : "activation";
    s.grid = {tc_, tr_, 1};
    s.threads_per_cta = serial_ ? kSerialThreads : kThreads;
    s.smem_bytes_per_cta = is_norm(p_.kind) ? (kThreads / 32) * 4 : 0;  // the warps' partial sums
    s.registers_per_thread = 32;
    s.pipeline_stages = 1;
    s.mma_dtype = p_.dtype;
    return {s};
  }

 protected:
  void emit_whole_cta(std::size_t /*kernel*/, std::int64_t cta,
                      std::vector<TileOp>& out) const override {
    const std::int64_t c = cta % tc_, r = cta / tc_;
    const std::int64_t r0 = r * tile_.rows, rows = std::min(tile_.rows, p_.rows - r0);
    const std::int64_t c0 = c * tile_.cols, cols = std::min(tile_.cols, p_.cols - c0);
    if (!serial_) {
      emit_elements(r0, rows, c0, cols, out);
      return;
    }
    // One element per thread at a time: the CTA's 128-element steps in order, each loaded, worked
    // and stored before the next is loaded. (A tile of whole rows steps over its rows.)
    if (rows == 1) {
      for (std::int64_t s0 = c0; s0 < c0 + cols; s0 += kSerialThreads)
        emit_elements(r0, 1, s0, std::min<std::int64_t>(kSerialThreads, c0 + cols - s0), out);
    } else {
      const std::int64_t step_rows = std::max<std::int64_t>(1, kSerialThreads / cols);
      for (std::int64_t s0 = r0; s0 < r0 + rows; s0 += step_rows)
        emit_elements(s0, std::min(step_rows, r0 + rows - s0), c0, cols, out);
    }
  }

 private:
  // Loads, work and store of rows x cols elements from (r0, c0).
  void emit_elements(std::int64_t r0, std::int64_t rows, std::int64_t c0, std::int64_t cols,
                     std::vector<TileOp>& out) const {
    const TileRef y{TensorId::Y, 0, r0, rows, c0, cols};
    const std::int64_t n = rows * cols;
    // The gate half (gated_silu, silu), the up half (gate_mul) or the whole row of X.
    const std::int64_t x0 = p_.kind == ElementwiseKind::gate_mul ? p_.cols + c0 : c0;
    out.push_back(TileOp::load({TensorId::X, 0, r0, rows, x0, cols}, OnChip::reg));
    TileOp op;
    op.kind = OpKind::compute;
    op.tile = y;
    // Per-thread elements of a row (16-byte vectors of 8 at least), for the norms' chains.
    const std::int64_t per_thread = std::max<std::int64_t>(8, ceil_div(cols, kThreads));
    switch (p_.kind) {
      case ElementwiseKind::rms_norm:
        out.push_back(TileOp::load({TensorId::W, 0, 0, 1, c0, cols}, OnChip::reg));
        op.compute = ComputeKind::norm_rows;
        // x^2 accumulated, then x * rstd * w: 3 per element; the mean and rsqrt per row.
        op.fp32_flops = 3 * n + rows;
        op.sfu_ops = rows;
        op.smem_round_trips = rows * kReductionTrips;
        op.chain_fp32_ops = rows * (per_thread + kReductionOps);
        break;
      case ElementwiseKind::layer_norm:
        out.push_back(TileOp::load({TensorId::W, 0, 0, 1, c0, cols}, OnChip::reg));
        out.push_back(TileOp::load({TensorId::bias, 0, 0, 1, c0, cols}, OnChip::reg));
        op.compute = ComputeKind::norm_rows;
        // Sum; (x - mean)^2 accumulated; (x - mean) * rstd * w + b: 6 per element; two
        // reductions (mean, then variance) and an rsqrt per row.
        op.fp32_flops = 6 * n + 2 * rows;
        op.sfu_ops = rows;
        op.smem_round_trips = rows * 2 * kReductionTrips;
        op.chain_fp32_ops = rows * (2 * per_thread + 2 * kReductionOps);
        break;
      case ElementwiseKind::residual_add:
        out.push_back(TileOp::load({TensorId::R, 0, r0, rows, c0, cols}, OnChip::reg));
        op.compute = ComputeKind::residual_add;
        op.fp32_flops = n;
        break;
      case ElementwiseKind::gated_silu:
        // The up half of the same rows of X.
        out.push_back(TileOp::load({TensorId::X, 0, r0, rows, p_.cols + c0, cols}, OnChip::reg));
        op.compute = ComputeKind::activation;
        // g / (1 + e^-g) * u: an add and two multiplies; an exp and a reciprocal.
        op.fp32_flops = 3 * n;
        op.sfu_ops = 2 * n;
        break;
      case ElementwiseKind::silu:
        op.compute = ComputeKind::activation;
        // g / (1 + e^-g): an add and a multiply; an exp and a reciprocal.
        op.fp32_flops = 2 * n;
        op.sfu_ops = 2 * n;
        break;
      case ElementwiseKind::gate_mul:
        out.push_back(TileOp::load({TensorId::R, 0, r0, rows, c0, cols}, OnChip::reg));
        op.compute = ComputeKind::activation;
        op.fp32_flops = n;
        break;
      case ElementwiseKind::gelu:
        op.compute = ComputeKind::activation;
        // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): 7 multiplies and adds, one tanh.
        op.fp32_flops = 7 * n;
        op.sfu_ops = n;
        break;
    }
    out.push_back(op);
    out.push_back(TileOp::store(y));
  }

  ElementwiseProblem p_;
  bool serial_;
  ElementwiseTiling tile_;
  std::int64_t tc_, tr_;
};

}  // namespace

std::unique_ptr<Schedule> make_elementwise_schedule(const ElementwiseProblem& p) {
  if (p.rows <= 0 || p.cols <= 0) {
    throw ConfigError(
        fmt::format("{}: rows ({}) and columns ({}) must be positive", p.name, p.rows, p.cols));
  }
  return std::make_unique<ElementwiseSchedule>(p);
}

ElementwiseBytes elementwise_closed_form(const ElementwiseProblem& p) {
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  const std::uint64_t eb = u(dtype_bytes(p.dtype)), out = u(p.rows) * u(p.cols) * eb;
  ElementwiseBytes b;
  b.write = out;
  switch (p.kind) {
    case ElementwiseKind::rms_norm:
      b.read = out + u(p.rows) * u(p.cols) * eb;  // X, and the weight row per token
      break;
    case ElementwiseKind::layer_norm:
      b.read = out + 2 * u(p.rows) * u(p.cols) * eb;  // X, the weight and the bias per token
      break;
    case ElementwiseKind::residual_add:
    case ElementwiseKind::gated_silu:
      b.read = 2 * out;  // X and R, or the gate and up halves
      break;
    case ElementwiseKind::gelu:
    case ElementwiseKind::silu:
      b.read = out;  // X, or the gate half
      break;
    case ElementwiseKind::gate_mul:
      b.read = 2 * out;  // the SiLU's output and the up half
      break;
  }
  return b;
}

}  // namespace iosim
