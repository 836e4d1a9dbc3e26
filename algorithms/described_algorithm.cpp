// Planning a kernel description: its dataflows carried out by their owners' schedules (or the
// query-stationary forward and the two-pass backward, which take the mechanisms themselves), its
// mechanisms applied to the main-loop kernels, its tiles as the request's defaults.
#include <fmt/format.h>

#include <functional>

#include "algorithms/kernel_description.hpp"
#include "algorithms/passes.hpp"
#include "algorithms/query_stationary.hpp"
#include "algorithms/two_pass_backward.hpp"
#include "sim/base/errors.hpp"

namespace iosim {

namespace {

// The preset that carries out dataflow `name` (its owner), or null (two_pass: no built-in
// algorithm runs it).
const KernelDescription* owner_preset(const std::vector<DataflowInfo>& list,
                                      const std::string& name) {
  const DataflowInfo* info = find_dataflow(list, name);
  if (info == nullptr || *info->owner == '\0') return nullptr;
  return &kernel_preset(info->owner);
}

bool same(const ResolvedMechanisms& a, const ResolvedMechanisms& b) {
  return a.mma == b.mma && a.load == b.load && a.warp_roles == b.warp_roles &&
         a.persistent == b.persistent;
}

// The preset's own mechanisms, as it resolves them.
ResolvedMechanisms preset_mechanisms(const KernelDescription& p) {
  return {*p.mechanisms.mma, *p.mechanisms.load, *p.mechanisms.warp_roles,
          *p.mechanisms.persistent};
}

// A schedule of another dataflow with the description's mechanisms on its main-loop kernels
// (KernelSpec::main_loop) and the launch facts the description states.
class WithMechanisms final : public Schedule {
 public:
  WithMechanisms(std::unique_ptr<Schedule> inner, std::optional<ResolvedMechanisms> mech,
                 std::optional<std::int64_t> smem)
      : inner_(std::move(inner)), mech_(mech), smem_(smem) {}

  std::vector<TensorDecl> tensors() const override { return inner_->tensors(); }
  std::vector<KernelSpec> kernels() const override {
    std::vector<KernelSpec> ks = inner_->kernels();
    for (KernelSpec& k : ks) {
      if (!k.main_loop) continue;
      if (smem_) k.smem_bytes_per_cta = *smem_;
      if (!mech_) continue;
      // Uniform warps: every warpgroup computes (with wgmma); else all but the producer.
      const int warpgroups = std::max(1, k.threads_per_cta / 128);
      const int consumers = mech_->warp_roles != WarpRoles::uniform ? std::max(1, warpgroups - 1)
                            : mech_->wgmma()                        ? warpgroups
                                                                    : 0;
      apply_mechanisms(k, *mech_, consumers);
    }
    return ks;
  }
  bool emit_cta_part(std::size_t kernel, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    return inner_->emit_cta_part(kernel, cta, part, out);
  }
  Repetition repetition(std::size_t kernel) const override { return inner_->repetition(kernel); }
  PartRange steady_parts(std::size_t kernel, std::int64_t cta) const override {
    return inner_->steady_parts(kernel, cta);
  }

 private:
  std::unique_ptr<Schedule> inner_;
  std::optional<ResolvedMechanisms> mech_;
  std::optional<std::int64_t> smem_;
};

// `mech` on the main-loop kernels of a planned schedule of `owner`'s dataflow, unless they are
// the owner's own (its kernels stay as they are); every time where no preset owns the dataflow.
void with_mechanisms(Planned& planned, const ResolvedMechanisms& mech,
                     const KernelDescription* owner) {
  if (!planned.feasible() || (owner != nullptr && same(mech, preset_mechanisms(*owner)))) return;
  planned.schedule =
      std::make_unique<WithMechanisms>(std::move(planned.schedule), mech, std::nullopt);
}

// The main-loop kernel's shared memory against the GPU's limit: a stated launch fact that does
// not fit is an infeasible tiling, as a computed one is.
void check_stated_smem(const KernelDescription& d, const HardwareProfile& hw, Planned& planned) {
  if (!d.smem_bytes_per_cta || !planned.feasible()) return;
  const std::int64_t limit = hw.sm.smem_per_cta_max_bytes.value;
  if (*d.smem_bytes_per_cta > limit) {
    planned.schedule.reset();
    planned.infeasible_reason =
        fmt::format("{}: launch.smem_bytes_per_cta {} does not fit: {} allows {} bytes per CTA",
                    d.source, *d.smem_bytes_per_cta, hw.name, limit);
  }
}

using PassPlanner =
    std::function<Planned(const AttentionProblem&, const HardwareProfile&, const TilingRequest&)>;

// The description's schedule for p.pass: the preset's own planner where the description is a
// preset; else the forward's and the backward's dataflows planned apart and run in turn.
Planned plan_described(const Algorithm* preset_algorithm, const PassPlanner& plan_forward,
                       const PassPlanner& plan_backward, const AttentionProblem& p,
                       const HardwareProfile& profile, const TilingRequest& req) {
  Planned planned;
  if (preset_algorithm != nullptr) {
    planned = preset_algorithm->plan(p, profile, req);
  } else if (p.pass == Pass::fwd) {
    planned = plan_forward(p, profile, req);
  } else if (p.pass == Pass::bwd) {
    planned = plan_backward(p, profile, req);
  } else {
    // Both passes: the forward, then the backward with its own tiles where the description
    // (or --backward-block-q/-kv) gives them, as one schedule (L2 carried over).
    AttentionProblem pf = p, pb = p;
    pf.pass = Pass::fwd;
    pb.pass = Pass::bwd;
    Planned f = plan_forward(pf, profile, req);
    if (!f.feasible()) return f;
    TilingRequest rb = req;
    if (req.backward_block_q) rb.block_q = req.backward_block_q;
    if (req.backward_block_kv) rb.block_kv = req.backward_block_kv;
    Planned b = plan_backward(pb, profile, rb);
    if (!b.feasible()) return b;
    planned.tiling = f.tiling;
    planned.tiling.backward_block_q = b.tiling.block_q;
    planned.tiling.backward_block_kv = b.tiling.block_kv;
    planned.blocks = f.blocks;
    planned.schedule = sequence(std::move(f.schedule), std::move(b.schedule));
    return planned;
  }
  return planned;
}

// The built-in algorithm whose paper lines `d`'s operations carry out (`iosim explain`): its
// forward dataflow's owner, else its backward's; the two-pass backward computes FlashAttention-2's
// Algorithm 2 lines in another loop order ("flash2").
std::string paper_algorithm_of(const KernelDescription& d) {
  const bool block = d.block_mask;
  if (const KernelDescription* f = owner_preset(forward_dataflows(), d.forward)) {
    return block ? "block-sparse" : f->name;
  }
  if (const KernelDescription* b = owner_preset(backward_dataflows(), d.backward)) return b->name;
  return "flash2";
}

}  // namespace

ResolvedMechanisms resolve_mechanisms(const KernelDescription& d) {
  ResolvedMechanisms base;
  const KernelDescription* owner = owner_preset(forward_dataflows(), d.forward);
  if (owner == nullptr) owner = owner_preset(backward_dataflows(), d.backward);
  if (owner != nullptr && owner != &d) base = preset_mechanisms(*owner);
  // A dataflow no preset carries out (two_pass alone) starts from mma.sync, cp.async, uniform.
  ResolvedMechanisms m = base;
  if (d.mechanisms.mma) m.mma = *d.mechanisms.mma;
  if (d.mechanisms.load) m.load = *d.mechanisms.load;
  if (d.mechanisms.warp_roles) m.warp_roles = *d.mechanisms.warp_roles;
  if (d.mechanisms.persistent) m.persistent = *d.mechanisms.persistent;
  return m;
}

TilingRequest described_tiling(const KernelDescription& d, const TilingRequest& requested) {
  TilingRequest t = d.tiles;
  const auto over = [](auto& field, const auto& flag) {
    if (flag) field = flag;
  };
  over(t.block_q, requested.block_q);
  over(t.block_kv, requested.block_kv);
  over(t.threads, requested.threads);
  over(t.pipeline_stages, requested.pipeline_stages);
  over(t.registers_per_thread, requested.registers_per_thread);
  over(t.local_bytes_per_thread, requested.local_bytes_per_thread);
  over(t.splits, requested.splits);
  over(t.warpgroups, requested.warpgroups);
  over(t.backward_block_q, requested.backward_block_q);
  over(t.backward_block_kv, requested.backward_block_kv);
  return t;
}

void check_mechanisms_on(const std::string& what, const ResolvedMechanisms& mech,
                         const HardwareProfile& hw, const std::string& instead) {
  if (mech.wgmma() && hw.compute.wgmma_latency_cycles.value <= 0) {
    throw ConfigError(fmt::format(
        "{}: mechanisms.mma {} needs wgmma, which profile '{}' does not have (a Hopper-class "
        "GPU; compute.wgmma_latency_cycles is 0); {}",
        what, mma_name(mech.mma), hw.name, instead.empty() ? "use mma_sync" : instead));
  }
  if (mech.load == LoadPath::tma && hw.compute.wgmma_latency_cycles.value <= 0) {
    throw ConfigError(fmt::format(
        "{}: mechanisms.load tma needs the Tensor Memory Accelerator, which profile '{}' does not "
        "have (a Hopper-class GPU); {}",
        what, hw.name, instead.empty() ? "use cp_async or plain" : instead));
  }
}

void check_preset_runs_on(const std::string& algorithm, const HardwareProfile& hw) {
  for (const KernelDescription& p : kernel_presets()) {
    // The unfused dataflow's GEMMs are the vendor library's (cuBLAS), which has kernels for every
    // GPU: its wgmma and TMA describe the Hopper ones, and are no requirement.
    if (p.name != algorithm || p.forward == "unfused") continue;
    check_mechanisms_on(fmt::format("{} (its mechanisms: iosim kernels --show {})", p.name, p.name),
                        preset_mechanisms(p), hw,
                        "run an algorithm without them (flash2: mma_sync, cp_async), or a Hopper "
                        "profile");
  }
}

Algorithm described_algorithm(const KernelDescription& d, const HardwareProfile& hw,
                              const Registry& registry) {
  const ResolvedMechanisms mech = resolve_mechanisms(d);
  const KernelDescription* fwd_owner = owner_preset(forward_dataflows(), d.forward);
  const KernelDescription* bwd_owner = owner_preset(backward_dataflows(), d.backward);

  Algorithm a;
  a.name = d.name;
  a.summary = fmt::format("kernel description {}", d.source);
  // What the description accepts follows its dataflows' owners.
  Capabilities& c = a.capabilities;
  if (fwd_owner != nullptr) c = registry.get(fwd_owner->name).capabilities;
  if (d.block_mask) c.block_pattern = true;
  c.backward = !d.backward.empty();
  c.fp8 = mech.wgmma() && d.forward == "query_stationary";
  c.warpgroups = mech.warp_roles != WarpRoles::uniform;
  c.gqa_backward = d.backward == "kv_stationary_reduce_dq";
  c.flags_tile_forward = false;
  c.one_stage = mech.load == LoadPath::plain;
  if (fwd_owner == nullptr && bwd_owner != nullptr) {
    c.forward_stages = registry.get(bwd_owner->name).capabilities.forward_stages;
  }

  // A description whose dataflows and mechanisms are exactly one preset's is that preset (its
  // planner picks one tiling for both passes as the algorithm does).
  const KernelDescription* same_preset = nullptr;
  for (const KernelDescription& p : kernel_presets()) {
    if (p.forward == d.forward && p.backward == d.backward && p.block_mask == d.block_mask &&
        p.kv_order == d.kv_order && same(preset_mechanisms(p), mech)) {
      same_preset = &p;
    }
  }
  // A mechanism the GPU lacks; a preset's own mechanisms are checked as its --algo is.
  if (same_preset != nullptr) {
    check_preset_runs_on(same_preset->name, hw);
  } else {
    check_mechanisms_on(d.source, mech, hw);
  }
  const KernelDescription desc = d;
  const Registry* reg = &registry;
  auto plan_forward = [desc, mech, fwd_owner, reg](const AttentionProblem& p,
                                                   const HardwareProfile& profile,
                                                   const TilingRequest& req) -> Planned {
    if (desc.forward == "query_stationary") {
      ResolvedMechanisms m = mech;
      if (req.warpgroups && m.warp_roles != WarpRoles::uniform) {
        m.warp_roles = *req.warpgroups == PipeOverlap::pingpong ? WarpRoles::pingpong
                                                                : WarpRoles::producer_consumer;
      }
      const bool suffixed =
          desc.name.size() >= 4 && desc.name.compare(desc.name.size() - 4, 4, "_fwd") == 0;
      return plan_query_stationary_forward(p, profile, req, m, desc.name,
                                           suffixed ? desc.name : desc.name + "_fwd",
                                           desc.block_mask, desc.kv_order);
    }
    Planned planned = reg->get(fwd_owner->name).plan(p, profile, req);
    with_mechanisms(planned, mech, fwd_owner);
    return planned;
  };
  auto plan_backward = [desc, mech, bwd_owner, reg](const AttentionProblem& p,
                                                    const HardwareProfile& profile,
                                                    const TilingRequest& req) -> Planned {
    Planned planned = bwd_owner == nullptr ? plan_two_pass_backward(p, profile, req, desc.name)
                                           : reg->get(bwd_owner->name).plan(p, profile, req);
    with_mechanisms(planned, mech, bwd_owner);
    return planned;
  };
  const Algorithm* preset_algorithm =
      same_preset != nullptr ? &registry.get(same_preset->name) : nullptr;
  if (preset_algorithm != nullptr) {
    a.capabilities = preset_algorithm->capabilities;
  } else if (!d.forward.empty() && !d.backward.empty()) {
    // Both passes planned apart: the flags tile the forward, the backward keeps its own tiles
    // (tiles.backward_block_q/kv, --backward-block-q/-kv).
    c.flags_tile_forward = true;
  }
  a.plan = [desc, mech, preset_algorithm, plan_forward, plan_backward](
               const AttentionProblem& p, const HardwareProfile& profile,
               const TilingRequest& requested) -> Planned {
    if (runs_forward(p.pass) && desc.forward.empty()) {
      throw ConfigError(
          fmt::format("--pass {}: {} names no forward dataflow (dataflow.forward); use --pass bwd",
                      pass_name(p.pass), desc.source));
    }
    TilingRequest tiles = described_tiling(desc, requested);
    // Plain loads go through registers, so each copy waits for the compute: the engine times
    // them one stage deep (apply_mechanisms). More buffers would be shared memory asked for and
    // never filled ahead, with occupancy lost to it: what runs is one stage, or it is refused.
    if (mech.load == LoadPath::plain) {
      if (tiles.pipeline_stages.value_or(1) > 1) {
        throw ConfigError(fmt::format(
            "--stages {} (or tiles.stages): {} loads through registers (mechanisms.load plain), "
            "so each copy waits for the compute and it runs one stage; use --stages 1, or load "
            "cp_async or tma for a ring of stages",
            *tiles.pipeline_stages, desc.source));
      }
      tiles.pipeline_stages = 1;
    }
    Planned planned;
    try {
      planned = plan_described(preset_algorithm, plan_forward, plan_backward, p, profile, tiles);
    } catch (const ConfigError& e) {
      // The split planner names --splits; a count the file states (tiles.splits) is the file's
      // key, not a flag the user never passed (issue #50 M2).
      const std::string flag = fmt::format("--splits {} ", tiles.splits.value_or(0));
      const std::string message = e.what();
      if (requested.splits || !tiles.splits || message.rfind(flag, 0) != 0) throw;
      throw ConfigError(fmt::format("{}: tiles.splits {} {}", desc.source, *tiles.splits,
                                    message.substr(flag.size())));
    }
    // A shared-memory size the author states replaces the estimate of the main-loop kernels.
    check_stated_smem(desc, profile, planned);
    if (planned.feasible() && desc.smem_bytes_per_cta) {
      planned.schedule = std::make_unique<WithMechanisms>(std::move(planned.schedule), std::nullopt,
                                                          desc.smem_bytes_per_cta);
    }
    return planned;
  };
  // The two-level closed form: each pass's own (the forward's and the backward's tiles).
  a.closed_form = [desc, fwd_owner, bwd_owner, reg, preset_algorithm](
                      const AttentionProblem& p, const Tiling& t,
                      const BlockMask* blocks) -> ReadWriteBytes {
    if (preset_algorithm != nullptr) return preset_algorithm->closed_form(p, t, blocks);
    ReadWriteBytes total;
    if (runs_forward(p.pass)) {
      AttentionProblem pf = p;
      pf.pass = Pass::fwd;
      Tiling tf = t;
      tf.backward_block_q = tf.backward_block_kv = 0;
      const ReadWriteBytes f = reg->get(fwd_owner->name).closed_form(pf, tf, blocks);
      total += f;
    }
    if (runs_backward(p.pass)) {
      AttentionProblem pb = p;
      pb.pass = Pass::bwd;
      Tiling tb = t;
      if (p.pass == Pass::fwdbwd) {
        tb.block_q = t.backward_block_q;
        tb.block_kv = t.backward_block_kv;
      }
      const ReadWriteBytes b = bwd_owner == nullptr
                                   ? two_pass_backward_closed_form(pb, tb.block_q, tb.block_kv)
                                   : reg->get(bwd_owner->name).closed_form(pb, tb, blocks);
      total += b;
    }
    return total;
  };
  if (fwd_owner != nullptr) a.estimated_work = registry.get(fwd_owner->name).estimated_work;
  // A preset's own lines (flash3's forward follows none), as its --algo explains them.
  a.paper_step = preset_algorithm != nullptr ? preset_algorithm->paper_step
                                             : registry.get(paper_algorithm_of(d)).paper_step;
  return a;
}

}  // namespace iosim
