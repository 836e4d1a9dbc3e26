#pragma once
// An attention algorithm: given a problem and a GPU, it picks (or checks) a tiling and builds the
// Schedule the engine runs. A tiling that cannot work is a result with a reason, not an error.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/io_formulas.hpp"
#include "algorithms/paper_steps.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/schedule/problem.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim {

class BlockMask;  // sim/schedule/block_mask.hpp

/// Block sizes and launch shape as a user asks for them; a field left out takes the algorithm's
/// default. Given values must be positive.
struct TilingRequest {
  std::optional<std::int64_t> block_q;      // Br: query rows per tile
  std::optional<std::int64_t> block_kv;     // Bc: key/value rows per tile
  std::optional<int> threads;               // threads per CTA of the main kernel
  std::optional<int> pipeline_stages;       // see Tiling::pipeline_stages and StagesCount
  std::optional<int> registers_per_thread;  // of the main kernel, as a compiler reported it
  // Local memory per thread of the main kernel (register spills), as the compiler reported it.
  std::optional<int> local_bytes_per_thread;
  std::optional<std::int64_t> splits;                // split-KV decoding: K/V chunks per query tile
  std::optional<std::int64_t> score_chunk;           // see Tiling::score_chunk
  std::optional<std::int64_t> query_step, key_step;  // see Tiling::query_step
  // Warp-specialized kernels: how the consumer warpgroups share the tensor cores (--warpgroups).
  std::optional<PipeOverlap> warpgroups;
  // The backward main kernel's blocks in a run of both passes whose flags tile the forward
  // (Capabilities::flags_tile_forward): --backward-block-q, --backward-block-kv.
  std::optional<std::int64_t> backward_block_q, backward_block_kv;
};

/// The warpgroup arrangement named `name` as --warpgroups and the measured files'
/// `variant.warpgroups` spell it: "pingpong" (PipeOverlap::pingpong) or "cooperative"
/// (PipeOverlap::async_tensor); nullopt for any other name (the caller says where it came from).
inline std::optional<PipeOverlap> warpgroup_arrangement(std::string_view name) {
  if (name == "pingpong") return PipeOverlap::pingpong;
  if (name == "cooperative") return PipeOverlap::async_tensor;
  return std::nullopt;
}

/// Block sizes and launch shape of a planned schedule: every field resolved.
struct Tiling {
  std::int64_t block_q = 0;   // Br: query rows per tile
  std::int64_t block_kv = 0;  // Bc: key/value rows per tile
  int threads = 0;            // threads per CTA of the main kernel
  // Shared-memory buffers of the streamed operand of the main kernel: K/V buffer pairs for the
  // schedules that stream K/V (flash2, block-sparse, flash-decoding, paged; see
  // kv_pipeline_depth), Q/O stages for flash1, Q stages for the flash2 backward, operand stages
  // for the GEMMs of standard.
  int pipeline_stages = 0;
  int registers_per_thread = 0;  // of the main kernel: estimated, or as a compiler reported it
  std::int64_t splits = 0;       // split-KV decoding: K/V chunks per query tile (0: none)
  // The two-pass backward: columns of a score tile a warp holds in registers at a time; each
  // chunk re-reads the warp's rows of the tile's row operand from shared memory (0: the whole
  // tile at once, the row operand read once per step).
  std::int64_t score_chunk = 0;
  // The two-pass backward: rows of the tile each pass streams past the block it keeps: query
  // rows a step in pass 1 (past a key block of block_kv rows), key rows a step in pass 2 (past a
  // query block of block_q rows). Resolved to block_q and block_kv where a description leaves
  // them out; a kernel may keep 128-row blocks and stream 32-row steps in both passes.
  std::int64_t query_step = 0, key_step = 0;
  // The backward main kernel's blocks where they differ from the forward's in a run of both
  // passes (flash3: each kernel keeps FlashAttention-3's tiles); 0: block_q and block_kv.
  std::int64_t backward_block_q = 0, backward_block_kv = 0;
  int local_bytes_per_thread = 0;  // of the main kernel: spills, as a compiler reported them
};

/// The outcome of planning: a schedule, or the reason none fits.
struct Planned {
  std::unique_ptr<Schedule> schedule;
  Tiling tiling;                            // resolved: every field set
  std::string infeasible_reason;            // non-empty when no schedule fits
  std::shared_ptr<const BlockMask> blocks;  // block-sparse only: the mask of the resolved blocks
  bool feasible() const { return infeasible_reason.empty(); }
};

/// What `--stages` counts in an algorithm's forward main kernel.
enum class StagesCount {
  kv_buffer_pairs,     // K/V buffer pairs streamed through shared memory (kv_pipeline_depth)
  q_o_stages,          // Q/O tiles in flight (FlashAttention-1's inner loop over Q)
  gemm_operand_stages  // operand stages of each GEMM kernel (standard attention)
};

/// What the rest of the program may ask about an algorithm without knowing its name.
struct Capabilities {
  bool block_pattern = false;        // --pattern: computes only a block mask's nonzero blocks
  bool splits = false;               // --splits: split-KV decoding
  bool pages = false;                // --page-tokens, --block-table: K/V gathered through pages
  bool materializes_scores = false;  // S and P go through HBM (the unfused baseline)
  bool backward = true;              // --pass bwd and fwdbwd: it has a backward schedule
  bool warpgroups = false;           // --warpgroups: consumer warpgroups ping-pong or cooperate
  bool fp8 = false;                  // --dtype fp8: an e4m3 forward (FP8 tensor cores)
  // --kv-dtype fp8 beside --dtype fp16 or bf16: its forward loads K and V in their stored type
  // and converts them on chip before its MMAs (a decode kernel reading an FP8 K/V cache).
  bool kv_dtype = false;
  // --latent-dim: its forward reads a latent K cache whose first latent_dim columns are V
  // (multi-head latent attention's absorbed decode, FlashMLA), loading no V tensor.
  bool latent = false;
  bool packs_gqa = false;     // --pack-gqa: its forward can pack a query group (packs_query_group)
  bool gqa_backward = false;  // --kv-heads < --heads with --pass bwd or fwdbwd
  // --window: a token-exact sliding window, K/V blocks wholly outside it skipped, its edge
  // blocks computed whole and masked: in the forward, and with window_backward in the backward.
  bool window = false;
  bool window_backward = false;
  // In a run of both passes the tiling flags tile the forward kernel and the backward keeps its
  // own tiles (flash3); otherwise one tiling, the backward's, serves both passes.
  bool flags_tile_forward = false;
  StagesCount forward_stages = StagesCount::kv_buffer_pairs;
  // Its copies wait for the compute (a kernel description's plain loads): one stage runs, and
  // --stages above 1 is refused.
  bool one_stage = false;
};

/// An attention algorithm: its name, what it accepts, how it plans a schedule, its closed-form IO,
/// its cost to simulate and the papers' lines its operations carry out. Built-in algorithms are one
/// file each; registry.cpp lists them.
struct Algorithm {
  using PlanFn =
      std::function<Planned(const AttentionProblem&, const HardwareProfile&, const TilingRequest&)>;
  using ClosedFormFn =
      std::function<ReadWriteBytes(const AttentionProblem&, const Tiling&, const BlockMask*)>;
  using WorkFn = std::function<double(const AttentionProblem&, const TilingRequest&)>;
  using PaperStepFn = std::function<PaperStep(const std::string& kernel_name, const TileOp& op)>;

  std::string name;     // the CLI name ("standard", "flash1", "flash2", ...)
  std::string summary;  // one line for --help and reports
  Capabilities capabilities;
  /// Resolves the requested tiling for a problem on a GPU and builds the
  /// schedule, or says why none fits.
  PlanFn plan;
  /// The exact two-level bytes for a resolved tiling (algorithms/io_formulas.hpp, written
  /// independently of the schedule, in the algorithm's file); `blocks` is the block mask when
  /// capabilities.block_pattern.
  ClosedFormFn closed_form;
  /// Relative cost of simulating a request (the sweep starts costly points first); null: the
  /// tiled estimate (tiled_estimated_work).
  WorkFn estimated_work;
  /// For `iosim explain`: the paper's algorithm that kernel `kernel_name` of its schedule follows
  /// and the line of it `op` carries out (algorithms/paper_steps.hpp); null: its operations follow
  /// no paper's lines.
  PaperStepFn paper_step;
};

/// Explicit registry of algorithms (no static self-registration).
class Registry {
 public:
  void add(Algorithm algorithm);
  /// The algorithm called `name`; throws ConfigError listing the valid names otherwise.
  const Algorithm& get(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<Algorithm> algorithms_;
};

/// Adds the built-in algorithms (registry.cpp's table).
void register_builtin_algorithms(Registry& registry);

/// A registry holding the built-in algorithms.
const Registry& builtin_registry();

/// Relative simulation cost of a tiled schedule: about 20 L2 lookups per tile it visits, each
/// pass counted (a backward about 3 forwards). Block sizes left out count as 128.
double tiled_estimated_work(const AttentionProblem& p, const TilingRequest& requested);

/// The cost estimate of `algorithm` for a request (its own, or tiled_estimated_work).
double estimated_work(const Algorithm& algorithm, const AttentionProblem& p,
                      const TilingRequest& requested);

/// Throws ConfigError when the request uses an input `algorithm` does not accept (--pattern,
/// --splits, --page-tokens, --block-table, --dtype fp8, --kv-dtype, --latent-dim, --window), naming
/// the flag and
/// the algorithms that accept it, or gives a tiling value that is not positive.
/// Refuses a thread count that is not whole warps (ConfigError naming --threads and the two
/// nearest counts that are): a CTA launches whole warps of 32 threads.
void check_whole_warps(int threads);

void check_applicable(const Algorithm& algorithm, const AttentionProblem& p,
                      const TilingRequest& requested, const Registry& registry);

/// SRAM the FlashAttention analysis calls M: the per-CTA shared-memory limit, in bytes.
std::int64_t sram_bytes(const HardwareProfile& profile);

/// Copy pipeline depth (KernelSpec::pipeline_stages) of a kernel that streams K/V through
/// `kv_buffer_pairs` pairs of shared-memory buffers. With one pair, FlashAttention issues the copy
/// of K_{j+1} before the P V_j product and that of V_{j+1} before Q K_{j+1}^T, so each copy
/// overlaps one product: tile j+1 is in flight while tile j is used, as with two pairs. Each
/// further pair adds a tile of look-ahead.
constexpr int kv_pipeline_depth(int kv_buffer_pairs) {
  return kv_buffer_pairs < 2 ? 2 : kv_buffer_pairs;
}

/// A thread's share of the O (block_q x d) and S (block_q x block_kv) tiles accumulated in FP32
/// registers spread over `threads`, in registers.
inline std::int64_t fp32_accumulator_registers(std::int64_t block_q, std::int64_t block_kv,
                                               std::int64_t head_dim, std::int64_t threads) {
  return (block_q * head_dim + block_q * block_kv) / threads;
}

/// Registers per thread of a kernel whose O (block_q x d) and S (block_q x block_kv) tiles
/// accumulate in FP32 registers spread over the CTA's threads, plus about 40 for addresses and
/// fragments, at most 255; a compiler's report (`requested`) wins.
inline int accumulator_registers(const Tiling& t, std::int64_t head_dim,
                                 const TilingRequest& requested) {
  const std::int64_t acc = fp32_accumulator_registers(t.block_q, t.block_kv, head_dim, t.threads);
  return requested.registers_per_thread.value_or(
      static_cast<int>(std::min<std::int64_t>(acc + 40, 255)));
}

/// Registers per thread of a FlashAttention-style forward kernel whose warps split the Q tile's
/// rows and multiply with m16 tensor-core fragments (FlashAttention-1 and -2, block-sparse): what
/// each thread holds through a K/V step, at most 255; a compiler's report (`requested`) wins.
/// - O (block_q x d) and S (block_q x block_kv) accumulate in FP32, spread over the threads;
/// - P, S's probabilities converted to the input type for the P V product (the A operand),
///   packed 4 / elem_bytes to a 32-bit register, live beside S while the product is issued;
/// - the running max and sum of each row a thread holds: a C fragment gives a thread 2 of a m16
///   tile's rows, so 2 x 2 per m16 tile of its warp (block_q / 16 / warps tiles);
/// - about 40 for addresses, loop state and the fragments being loaded, as before.
/// Measured (ptxas, sm_90, our kernels): d = 64 with 128 x 64 tiles and 4 warps holds 234-239
/// (this gives 208, 2 CTAs of 128 threads per SM, as measured; the accumulators alone, 168, give
/// 3).
inline int row_split_registers(const Tiling& t, std::int64_t head_dim, std::int64_t elem_bytes,
                               const TilingRequest& requested) {
  const std::int64_t o = t.block_q * head_dim / t.threads;
  const std::int64_t s = t.block_q * t.block_kv / t.threads;
  const std::int64_t p = s * elem_bytes / 4;
  const std::int64_t warps = std::max<std::int64_t>(1, t.threads / 32);
  const std::int64_t m_tiles = std::max<std::int64_t>(1, t.block_q / (16 * warps));
  const std::int64_t rows = 4 * m_tiles;
  return requested.registers_per_thread.value_or(
      static_cast<int>(std::min<std::int64_t>(o + s + p + rows + 40, 255)));
}

/// Number of tiles of size `block` covering `n`.
constexpr std::int64_t ceil_div(std::int64_t n, std::int64_t block) {
  return (n + block - 1) / block;
}

}  // namespace iosim
