#pragma once
// The dataflows: what a kernel description's `dataflow.forward` and `dataflow.backward` name, one
// entry each in the table of registry.cpp, each written in its schedule's file. An entry owns what
// carries its dataflow out: its planner (which builds the schedule, whose emit_cta_part emits its
// operations), its closed form, the papers' lines its operations follow (`iosim explain`) and what
// a description of it may say. Planning a description (described_algorithm) asks its entries;
// nothing picks a planner by a name.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/kernel_description.hpp"

namespace iosim {

/// The mechanisms of our FlashAttention-2-family kernels (flash1, flash2, split-KV, paged):
/// mma.sync, cp.async, uniform warps, a CTA per tile, each MMA waited for in its step.
inline constexpr ResolvedMechanisms kOurMmaSyncMechanisms{MmaFamily::mma_sync, LoadPath::cp_async,
                                                          WarpRoles::uniform, false, MmaWait::step};

/// What a dataflow's hooks are told of the kernel that carries it out: a description's.
struct DataflowUse {
  std::string name;               // the description's name (its kernels are "<name>_fwd", ...)
  ResolvedMechanisms mechanisms;  // as the description resolves them
  bool block_mask = false;
  KvOrder kv_order = KvOrder::ascending;
};

/// Planning one pass (or, FusedPasses, every pass) of a description.
using DataflowPlanFn = std::function<Planned(const AttentionProblem&, const HardwareProfile&,
                                             const TilingRequest&, const DataflowUse&)>;
/// The paper lines of the operations of a description's kernels (Algorithm::paper_step).
using DataflowPaperFn =
    std::function<PaperStep(const std::string& kernel, const TileOp& op, const DataflowUse&)>;

/// The kernels a backward dataflow was written with: a forward of `forward` with the backward's
/// own mechanisms, planned together as one program (one planner for --pass fwd, bwd and fwdbwd,
/// and one closed form). A description of exactly these runs them (the presets standard, flash1,
/// flash2, block-sparse and flash3 are such descriptions); any other plans its passes apart.
struct FusedPasses {
  const char* forward = "";         // the forward dataflow
  bool block_mask = false;          // a description with a block mask may run them too
  bool flags_tile_forward = false;  // Capabilities::flags_tile_forward of the pair
  DataflowPlanFn plan;
  Algorithm::ClosedFormFn closed_form;
  DataflowPaperFn paper_step;
};

/// One dataflow: its entry in the registry.
struct Dataflow {
  const char* name = "";
  Pass pass = Pass::fwd;     // fwd: a forward dataflow; bwd: a backward one
  const char* summary = "";  // one line for `iosim kernels`
  // The mechanisms its schedule's kernels are written with: a description that states none
  // gets them (its forward's, else its backward's). nullopt: none of its own (mma.sync, cp.async,
  // uniform warps, unless the description says otherwise).
  std::optional<ResolvedMechanisms> mechanisms;
  // plan applies the description's mechanisms itself; otherwise, where they are not the
  // entry's own, they replace those of its main-loop kernels after planning.
  bool plans_mechanisms = false;
  DataflowPlanFn plan;                  // its pass alone (p.pass is `pass`)
  Algorithm::ClosedFormFn closed_form;  // its pass alone
  // The lines of every operation of a description with this forward dataflow (or with this
  // backward and no forward), both passes' kernels.
  DataflowPaperFn paper_step;
  Algorithm::WorkFn estimated_work;  // forward: a description's (null: tiled_estimated_work)
  // Forward: what a description with this forward accepts (its other fields follow from the
  // description: backward, fp8, warpgroups, ...). Backward: forward_stages, for a description
  // with no forward.
  Capabilities capabilities;
  bool fp8_with_wgmma = false;   // forward: --dtype fp8 where the description's MMA is wgmma
  bool gqa_backward = false;     // backward: Capabilities::gqa_backward
  bool window_backward = false;  // backward: Capabilities::window_backward
  // Its own mechanisms describe a vendor library's kernels, which exist for every GPU (unfused:
  // cuBLAS), so they are no requirement on the GPU.
  bool runs_on_any_gpu = false;
  // What a description of it may state besides the dataflow's name.
  bool block_mask = false;           // dataflow.block_mask
  bool kv_order = false;             // dataflow.kv_order
  bool spills = false;               // launch.local_bytes_per_thread (alone: no other dataflow)
  bool score_chunk = false;          // tiles.score_chunk
  bool pass_steps = false;           // tiles.query_step, tiles.key_step
  std::optional<FusedPasses> fused;  // backward: the forward it was written with
};

/// Every dataflow, forward then backward (registry.cpp's table).
const std::vector<Dataflow>& dataflows();
/// The dataflows a description may name as its forward, and as its backward, in the table's order.
const std::vector<const Dataflow*>& forward_dataflows();
const std::vector<const Dataflow*>& backward_dataflows();
/// The kernels `d` describes exactly, its backward's with their forward (planned together), or
/// null: its passes are planned apart (described_algorithm.cpp).
const FusedPasses* fused_passes(const KernelDescription& d);
/// The dataflow of `list` called `name`, or null.
const Dataflow* find_dataflow(const std::vector<const Dataflow*>& list, const std::string& name);

}  // namespace iosim
