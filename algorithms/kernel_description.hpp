#pragma once
// A kernel description: what a user can say of an attention kernel without writing C++. Two halves:
//  - the dataflow (what each CTA does to which tiles in what order) decides the bytes;
//  - the mechanisms (MMA family, load path, warp roles, pipeline depth, persistent grid, the
//    launch facts a compiler reports) decide, with the dataflow, the time.
// Any dataflow combines with any mechanism the engine models. The built-in algorithm names are
// presets of descriptions (kernel_presets()); a user writes the same thing as a YAML file
// (`--kernel FILE`, schemas/kernel.schema.json) or a Python dict (`iosim.run(kernel={...})`).
//
// Where each mechanism acts (docs/kernels.md says the same for users):
//  - mma: the tensor-core rate (mma.sync reaches the profile's measured
//    compute.mma_sync_flops_per_clk_per_sm; wgmma the tensor peak), and the shared-memory operand
//    reads the query-stationary forward emits (mma.sync: every warp reads the K/V tile through
//    ldmatrix; wgmma: every warpgroup once; wgmma_rs takes P from registers, wgmma_ss from
//    shared memory); with wgmma the tensor cores read their operands asynchronously (one pipe).
//  - warp_roles: uniform (every warp loads and computes), producer_consumer (a producer
//    warpgroup issues the copies, block_q / 64 consumer warpgroups compute and cooperate),
//    pingpong (the consumers take turns on the tensor cores, one's softmax under another's GEMMs).
//  - load: cp_async and tma are asynchronous copies that overlap compute as deep as the stages
//    allow; plain loads go through registers, so a stage's copy waits for the previous compute
//    (pipeline depth 1). The engine times cp.async and TMA alike (no issue cost is modelled).
//  - stages: shared-memory buffers of the streamed operand (Tiling::pipeline_stages).
//  - persistent: the main-loop kernel's tiles are taken in turn by one resident CTA per slot
//    (KernelSpec::persistent): the engine gives each next tile to the slot that frees first either
//    way, but only a kernel that launches a CTA per tile pays the profile's slot refill between
//    them (HardwareProfile::cta_dispatch).
//  - launch: threads, registers per thread and shared memory per CTA replace iosim's estimates
//    (they set occupancy).
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace iosim {

/// How the kernel drives the tensor cores.
enum class MmaFamily { mma_sync, wgmma_ss, wgmma_rs };
/// How tiles reach shared memory.
enum class LoadPath { plain, cp_async, tma };
/// What the warps of a CTA do.
enum class WarpRoles { uniform, producer_consumer, pingpong };
/// When a step waits for the last asynchronous MMA it issued. `step`: before the step ends, so the
/// K/V buffer it read is free for the next copy at once. `next_step`: in the next step (Triton's
/// pipelined wgmma on Hopper: the P V product of step j is waited for at step j+1's Q K^T), so
/// that buffer stays held one step longer and copies run one tile less ahead than the stages
/// allow (issue #46: measured in its TritonGPU IR, tile_sweep_2026-12-06/profile_triton).
enum class MmaWait { step, next_step };
/// The order in which a query-stationary CTA visits its K/V blocks. FlashAttention-2's and -3's
/// kernels walk them from the last (under causal masking the block of the diagonal, masked
/// first) down to block 0; a kernel written after the paper's Algorithm 1 (ours in
/// cuda_validate/, Triton's tutorial) walks them up from 0. The bytes a CTA reads are the same;
/// which CTAs read a block at the same time is not: walking up, the CTAs that start together
/// stream K/V in step and share each block through the L2, walking down they start at their own
/// diagonals and share it only as far as the L2 keeps a head's K/V (issue #47).
enum class KvOrder { ascending, descending };

/// The mechanisms of a description; a field left out takes its dataflow preset's value.
struct Mechanisms {
  std::optional<MmaFamily> mma;
  std::optional<LoadPath> load;
  std::optional<WarpRoles> warp_roles;
  std::optional<bool> persistent;
  std::optional<MmaWait> mma_wait;
};

/// Mechanisms with every field resolved.
struct ResolvedMechanisms {
  MmaFamily mma = MmaFamily::mma_sync;
  LoadPath load = LoadPath::cp_async;
  WarpRoles warp_roles = WarpRoles::uniform;
  bool persistent = false;
  MmaWait mma_wait = MmaWait::step;
  bool wgmma() const { return mma != MmaFamily::mma_sync; }
};

struct KernelDescription {
  std::string name;         // shown as the run's algorithm
  std::string summary;      // a preset's one line for reports; empty: "kernel description SOURCE"
  std::string source;       // where it came from (a file, "preset flash2", "the kernel dict")
  std::string forward;      // a forward dataflow, or "" (none: --pass fwd is refused)
  std::string backward;     // a backward dataflow, or "" (none: --pass bwd and fwdbwd are refused)
  bool block_mask = false;  // query_stationary: only a block mask's nonzero blocks (--pattern)
  KvOrder kv_order = KvOrder::ascending;  // query_stationary: the K/V blocks' visiting order
  TilingRequest tiles;                    // tiles and launch facts; CLI flags replace them
  std::optional<std::int64_t> smem_bytes_per_cta;  // launch fact: replaces the estimate
  Mechanisms mechanisms;
};

/// Parses a description from a JSON value (a YAML file read by load_kernel_description, or a
/// Python dict); `source` names it in messages. Throws ConfigError naming the source, the key
/// path and the reason (unknown key with a "did you mean", wrong type, unknown dataflow or
/// mechanism, a value out of range), listing every problem at once.
KernelDescription parse_kernel_description(const nlohmann::json& doc, const std::string& source);

/// Reads and parses a YAML (or JSON) description file.
KernelDescription load_kernel_description(const std::filesystem::path& path);

/// The description as a JSON object with every field it sets (what `iosim kernels --show` prints
/// as YAML, and what the run's JSON reports under "kernel_description").
nlohmann::json kernel_description_json(const KernelDescription& d);
/// The same as YAML text, with a comment line per section.
std::string kernel_description_yaml(const KernelDescription& d);

/// The preset descriptions of the built-in algorithms, in the registry's order.
const std::vector<KernelDescription>& kernel_presets();
/// The preset called `name`; throws ConfigError listing the presets otherwise.
const KernelDescription& kernel_preset(const std::string& name);

/// The mechanisms `d` resolves to: its own where given, else those its forward dataflow's
/// schedule is written with (else its backward's; algorithms/dataflow.hpp).
ResolvedMechanisms resolve_mechanisms(const KernelDescription& d);

/// An Algorithm that plans `d` (described_algorithm.cpp) as its dataflows' entries say
/// (algorithms/dataflow.hpp): the kernels its backward was written with where `d` is exactly those
/// (FusedPasses), else each pass by its own dataflow; its mechanisms applied, its tiles as the
/// request's defaults, its paper lines its dataflows'. Checks `d` against `profile` (a mechanism
/// the GPU lacks, such as wgmma on an A100) and throws ConfigError naming the source.
Algorithm described_algorithm(const KernelDescription& d, const HardwareProfile& profile);
/// The same Algorithm, unchecked: a preset's, registered as a built-in algorithm (its mechanisms
/// are checked against a run's GPU by check_preset_runs_on).
Algorithm described_algorithm(const KernelDescription& d);

/// Throws ConfigError, `what` first, when `hw` lacks a mechanism of `mech`: wgmma or TMA on a GPU
/// without them (an A100). `instead` says what to do (default: the mechanism to use instead).
void check_mechanisms_on(const std::string& what, const ResolvedMechanisms& mech,
                         const HardwareProfile& hw, const std::string& instead = "");

/// The same check for the built-in algorithm `algorithm` where a preset describes it (flash3's
/// wgmma and TMA), so that `--algo flash3` and `--kernel flash3` on an A100 are refused as a
/// description with those mechanisms is; the unfused preset (standard: the vendor library's
/// GEMMs, on any GPU) and algorithms without a preset pass.
void check_preset_runs_on(const std::string& algorithm, const HardwareProfile& hw);

/// The request's tiling with the description's tiles and launch facts under it: a field the
/// request sets (a CLI flag) wins.
TilingRequest described_tiling(const KernelDescription& d, const TilingRequest& requested);

/// Sets what `m` decides of kernel `k`: the tensor instruction, the producer warps (a producer
/// warpgroup unless the roles are uniform), `consumers` warpgroups that compute, how the pipes
/// overlap (ping-pong; with wgmma the tensor cores' asynchronous operand reads; a lockstep kernel
/// stays lockstep), for plain loads a pipeline depth of 1, and with `mma_wait: next_step` one
/// tile less of look-ahead (at least 1).
void apply_mechanisms(KernelSpec& k, const ResolvedMechanisms& m, int consumers);

/// Lower-case names as descriptions spell them.
const char* mma_name(MmaFamily m);
const char* load_name(LoadPath l);
const char* warp_roles_name(WarpRoles w);
const char* mma_wait_name(MmaWait w);

}  // namespace iosim
