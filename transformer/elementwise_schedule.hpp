#pragma once
// The elementwise ops of a transformer layer as schedules on the attention engine: the norms
// (RMSNorm, LayerNorm: a whole row per CTA, for the row's reduction), the residual add and the
// MLP's activation (SiLU(gate) x up, or GELU) in chunks of rows per CTA. Each reads its inputs
// into registers, does its small FP32/SFU work and writes its output once, as standard
// attention's mask and softmax kernels do (algorithms/standard.cpp).
#include <cstdint>
#include <memory>
#include <string>

#include "sim/schedule/dtype.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim {

enum class ElementwiseKind {
  rms_norm,      // Y = X / sqrt(mean(X^2) + eps) * W, per row; reads X and the weight W
  layer_norm,    // Y = (X - mean) / sqrt(var + eps) * W + bias, per row
  residual_add,  // Y = X + R
  gated_silu,    // Y = SiLU(gate) * up; X is [rows][2 cols], gate the first half, up the second
                 // (the fused gate_up projection's output, as vLLM's MergedColumnParallelLinear)
  gelu,          // Y = GELU(X) (tanh form)
  // PyTorch eager's SiLU(gate) * up, two kernels (F.silu, then the multiply; measured
  // launches, cuda_validate/measurements/*/layer_*/layer_time.json), each through HBM:
  silu,      // Y = SiLU(gate), the gate half of X [rows][2 cols]
  gate_mul,  // Y = R * up: R the SiLU's output [rows][cols], up the second half of X
};

/// How the kernel walks its elements. `chunks`: each thread loads all its elements before it
/// computes (vLLM's and PyTorch's vectorized kernels of contiguous tensors). `serial`: PyTorch's
/// TensorIterator kernel for an operand that is not contiguous (elementwise_kernel<128, 4>,
/// ATen's Loops.cuh): 128 threads, 4 elements each, one after another, each element's loads,
/// work and store before the next element's loads (the store may alias the next load, so the
/// compiler keeps the order): one element per thread in flight.
enum class ElementwiseLoop { chunks, serial };

struct ElementwiseProblem {
  std::string name = "elementwise";  // the kernel's name in reports
  ElementwiseKind kind = ElementwiseKind::residual_add;
  std::int64_t rows = 0;  // tokens
  std::int64_t cols = 0;  // width of the output row
  Dtype dtype = Dtype::bf16;
  ElementwiseLoop loop = ElementwiseLoop::chunks;
};

/// The schedule (one kernel). Throws ConfigError on a non-positive size.
std::unique_ptr<Schedule> make_elementwise_schedule(const ElementwiseProblem& p);

/// HBM bytes of the schedule in the two-level model (L2 off), from the dataflow: every input
/// element read once, every output element written once; the norms' weight (and LayerNorm's bias)
/// once per CTA, i.e. once per row.
struct ElementwiseBytes {
  std::uint64_t read = 0, write = 0;
};
ElementwiseBytes elementwise_closed_form(const ElementwiseProblem& p);

}  // namespace iosim
