#pragma once
// The contract between a schedule (algorithms/) and the engine (sim/engine/engine.hpp).
//
// A Schedule describes an attention computation as kernels launched in order. For each kernel
// it declares the grid and the per-CTA on-chip footprint; for each CTA it emits, in program
// order, the tile operations that CTA performs:
//   - load  : a tile of a global tensor into shared memory or registers,
//   - compute: work on on-chip data (FLOPs on tensor cores / FP32 units / SFUs),
//   - store : a tile from chip to a global tensor.
// Loads that precede a compute are the operands of that compute; the engine overlaps a stage's
// loads with earlier computes up to `pipeline_stages` deep. A schedule never counts bytes or
// time: the engine alone does.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/schedule/dtype.hpp"
#include "sim/schedule/tensor.hpp"
#include "sim/schedule/tile_op.hpp"

namespace iosim {

struct Dim3 {
  std::int64_t x = 1, y = 1, z = 1;
  std::int64_t count() const { return x * y * z; }
};

/// One kernel launch as the schedule configures it. CTA ids are linear blockIdx order
/// (x fastest), the order in which the hardware dispatches them.
/// How a kernel drives the tensor cores: warp-level mma.sync (Ampere style, FlashAttention-2) or
/// Hopper's warpgroup wgmma (cuBLAS, FlashAttention-3). They reach different peaks on Hopper.
enum class TensorInstruction { mma_sync, wgmma };

/// How the compute warps of a CTA share the SM's pipes within a stage (engine.hpp says how each
/// is timed).
///  - warps_per_scheduler: every warp issues its tensor-core, FP32, SFU and INT32 work in turn;
///    other warps on the same scheduler fill the gaps (Ampere-style kernels, FlashAttention-2).
///  - async_tensor: as warps_per_scheduler, but the tensor cores read their operands from shared
///    memory themselves as they go (wgmma's SS form, TMA copies): tensor-core work and the
///    shared-memory traffic are one pipe, timed as the busier of the two. Our wgmma
///    microbenchmark (cuda_validate/measurements/*/wgmma_2026-11-23) runs SS at the same rate as
///    RS.
///  - pingpong: tensor-core work is asynchronous (wgmma: issued, then waited on) and the CTA's
///    `consumer_warpgroups` take turns on the tensor cores, so that one warpgroup's softmax
///    (FP32, SFU, INT32) runs while another's GEMMs do (FlashAttention-3, Shah et al. 2024,
///    section 3.1, "pingpong scheduling").
///  - lockstep: tensor-core work asynchronous as under async_tensor (its shared-memory operand
///    reads inside it), but every consumer warpgroup goes through the same dependent phases of a
///    stage together, joined by barriers (FlashAttention-3's backward: S and dP, then P and dS
///    from them, then dQ from every warpgroup's dS): no warpgroup's FP32, SFU or INT32 work runs
///    under another's GEMMs, so the two sides of a stage add.
enum class PipeOverlap { warps_per_scheduler, async_tensor, pingpong, lockstep };

struct KernelSpec {
  std::string name;
  Dim3 grid;
  int threads_per_cta = 128;
  std::int64_t smem_bytes_per_cta = 0;
  int registers_per_thread = 64;
  int pipeline_stages = 1;  // 1: a stage's loads wait for the previous compute; 2: double buffer
  // What the kernel does, in the measured datasets' words (cuda_validate/FORMAT.md: "attention",
  // "split", "reduce", "gemm_qk", "mask", "softmax", "gemm_pv", ...); empty when none applies.
  // `iosim validate` matches measured per-kernel facts (registers) to kernels by it.
  std::string role;
  Dtype mma_dtype = Dtype::fp16;  // operand type of its tensor-core work (sets the peak rate)
  TensorInstruction tensor_instruction = TensorInstruction::wgmma;
  // Warp specialization (FlashAttention-3, cuDNN's Hopper kernels): the CTA's first
  // `producer_warps` warps only issue copies (TMA) and take no pipe time; the other warps compute.
  // 0: every warp both copies and computes.
  int producer_warps = 0;
  PipeOverlap overlap = PipeOverlap::warps_per_scheduler;
  // Warpgroups (4 warps each) that compute, taking turns under PipeOverlap::pingpong.
  int consumer_warpgroups = 0;
  // The kernel that carries its dataflow's main loop (not a pre-pass, a conversion or a
  // reduction): a kernel description's mechanisms and launch facts apply to it.
  bool main_loop = false;
  // A persistent grid (FlashAttention-3, cuDNN's and cuBLAS's Hopper kernels): the grid's CTAs
  // are the tiles that one resident CTA per slot takes in turn from a tile scheduler, so a slot
  // moves to its next tile with no CTA launch between them: the engine charges the profile's
  // CTA dispatch costs (HardwareProfile::cta_dispatch) only to the first wave.
  bool persistent = false;
  // CTAs per thread-block cluster (cuBLAS's Hopper GEMMs: 2, 4 or 8); 1, not launched in
  // clusters. A clustered kernel's CTAs run only on the SMs the GPCs' placement of whole clusters
  // leaves (HardwareProfile::clusters).
  int cluster_ctas = 1;
};

/// How a kernel's work repeats, for the engine's steady-state extrapolation
/// (sim/engine/steady_state.hpp says how it uses them). Zero: nothing declared, everything is
/// simulated.
struct Repetition {
  /// CTAs c and c + cta_period (linear blockIdx) emit the same operations at the same offsets in
  /// other matrices of the same tensors, and data that CTAs share (a head's K/V) is shared within
  /// a period, never across periods' ends: the grid is one period's work repeated.
  std::int64_t cta_period = 0;
  /// Within a CTA's steady parts (Schedule::steady_parts), part p + part_period emits what part p
  /// does with its streamed tiles (the next K/V block) moved along, and leaving out the last s of
  /// the steady parts (s a multiple of part_period) changes none of the parts that remain.
  std::int64_t part_period = 0;
  /// CTAs [k x alike_run, (k + 1) x alike_run) do the same work over the same shared data, their
  /// own rows aside (one head's query blocks over its K/V, unmasked, none ragged): a wave of CTAs
  /// that lies within one such run is any other such wave at other rows (0: none declared).
  std::int64_t alike_run = 0;
  /// CTAs [k x ramp_run, (k + 1) x ramp_run) stream the same K/V over steady parts whose count
  /// grows by the same number from one CTA to the next (a head's causal query blocks), and part p
  /// of any two of them, steady in both, emits the same work on the same streamed tiles: a CTA
  /// of the run may continue as a later one of the run from the part it is at (0: none declared).
  std::int64_t ramp_run = 0;
};

/// Parts [first, last) of a CTA (empty: none).
struct PartRange {
  std::size_t first = 0, last = 0;
};

class Schedule {
 public:
  virtual ~Schedule() = default;
  /// Global tensors the schedule reads or writes; the engine gives each an address range.
  virtual std::vector<TensorDecl> tensors() const = 0;
  /// Kernels in launch order.
  virtual std::vector<KernelSpec> kernels() const = 0;
  /// Appends to `out` part `part` (0, 1, ...) of the operations of CTA `cta` (linear blockIdx)
  /// of kernel `kernel`, in program order, and returns whether more parts follow. Schedules whose
  /// CTAs loop over a whole head emit one iteration per part, so that the engine holds a few
  /// operations of each resident CTA instead of all of them; a short CTA is one part. A part may
  /// be empty; a non-empty part must end where a stage ends (before a load, or at the CTA's end).
  virtual bool emit_cta_part(std::size_t kernel, std::int64_t cta, std::size_t part,
                             std::vector<TileOp>& out) const = 0;
  /// How kernel `kernel`'s CTAs and steps repeat (none by default).
  virtual Repetition repetition(std::size_t /*kernel*/) const { return {}; }
  /// The parts of CTA `cta` that repeat with Repetition::part_period (none by default).
  virtual PartRange steady_parts(std::size_t /*kernel*/, std::int64_t /*cta*/) const { return {}; }
  /// Appends every operation of the CTA: its parts in order.
  void emit_cta(std::size_t kernel, std::int64_t cta, std::vector<TileOp>& out) const {
    for (std::size_t part = 0; emit_cta_part(kernel, cta, part, out); ++part) {
    }
  }
};

/// A schedule whose CTAs are short enough to emit whole (a row, one K/V block's pass): one part
/// each. It implements emit_whole_cta() instead.
class WholeCtaSchedule : public Schedule {
 public:
  bool emit_cta_part(std::size_t kernel, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const final {
    if (part == 0) emit_whole_cta(kernel, cta, out);
    return false;
  }

 protected:
  /// Appends every operation of CTA `cta` of kernel `kernel`, in program order.
  virtual void emit_whole_cta(std::size_t kernel, std::int64_t cta,
                              std::vector<TileOp>& out) const = 0;
};

}  // namespace iosim
