// Planning a kernel description as its dataflows' entries say (algorithms/dataflow.hpp): the
// kernels its backward was written with where it describes exactly those, else each pass by its
// own dataflow's planner; its mechanisms applied to the main-loop kernels (or by the planner that
// takes them itself), its tiles as the request's defaults.
#include <fmt/format.h>

#include <functional>

#include "algorithms/dataflow.hpp"
#include "algorithms/kernel_description.hpp"
#include "algorithms/passes.hpp"
#include "sim/base/errors.hpp"

namespace iosim {

namespace {

bool same(const ResolvedMechanisms& a, const ResolvedMechanisms& b) {
  return a.mma == b.mma && a.load == b.load && a.warp_roles == b.warp_roles &&
         a.persistent == b.persistent && a.mma_wait == b.mma_wait;
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

// `mech` on the main-loop kernels of a planned schedule of dataflow `df`, unless they are the
// ones its schedule is written with (its kernels stay as they are); every time where it has none.
void with_mechanisms(Planned& planned, const ResolvedMechanisms& mech, const Dataflow& df) {
  if (!planned.feasible() || (df.mechanisms && same(mech, *df.mechanisms))) return;
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

// Pass p.pass of dataflow `df` with the description's mechanisms.
Planned plan_pass(const Dataflow& df, const AttentionProblem& p, const HardwareProfile& profile,
                  const TilingRequest& req, const DataflowUse& use) {
  Planned planned = df.plan(p, profile, req, use);
  if (!df.plans_mechanisms) with_mechanisms(planned, use.mechanisms, df);
  return planned;
}

// The dataflows of a description, with what they are told of it.
struct Described {
  const Dataflow* forward = nullptr;   // null: none
  const Dataflow* backward = nullptr;  // null: none
  const FusedPasses* fused = nullptr;  // the backward's kernels with their forward, where `d` is
  DataflowUse use;
};

Described describe(const KernelDescription& d) {
  Described out;
  out.forward = find_dataflow(forward_dataflows(), d.forward);
  out.backward = find_dataflow(backward_dataflows(), d.backward);
  out.use = {d.name, resolve_mechanisms(d), d.block_mask, d.kv_order};
  // Exactly the kernels the backward was written with: its forward, its mechanisms, K/V walked
  // up as theirs do, a block mask only where they take one.
  const Dataflow* b = out.backward;
  if (out.forward != nullptr && b != nullptr && b->fused && b->mechanisms &&
      find_dataflow(forward_dataflows(), b->fused->forward) == out.forward &&
      same(out.use.mechanisms, *b->mechanisms) && d.kv_order == KvOrder::ascending &&
      (!d.block_mask || b->fused->block_mask)) {
    out.fused = &*b->fused;
  }
  return out;
}

// The description's schedule for p.pass: its backward's kernels with their forward where it is
// exactly those; else the forward's and the backward's dataflows planned apart and run in turn.
Planned plan_described(const Described& dd, const AttentionProblem& p,
                       const HardwareProfile& profile, const TilingRequest& req) {
  const auto plan_forward = [&](const AttentionProblem& pf, const TilingRequest& r) {
    return plan_pass(*dd.forward, pf, profile, r, dd.use);
  };
  const auto plan_backward = [&](const AttentionProblem& pb, const TilingRequest& r) {
    return plan_pass(*dd.backward, pb, profile, r, dd.use);
  };
  Planned planned;
  if (dd.fused != nullptr) {
    planned = dd.fused->plan(p, profile, req, dd.use);
  } else if (p.pass == Pass::fwd) {
    planned = plan_forward(p, req);
  } else if (p.pass == Pass::bwd) {
    planned = plan_backward(p, req);
  } else {
    // Both passes: the forward, then the backward with its own tiles where the description
    // (or --backward-block-q/-kv) gives them, as one schedule (L2 carried over).
    AttentionProblem pf = p, pb = p;
    pf.pass = Pass::fwd;
    pb.pass = Pass::bwd;
    Planned f = plan_forward(pf, req);
    if (!f.feasible()) return f;
    TilingRequest rb = req;
    if (req.backward_block_q) rb.block_q = req.backward_block_q;
    if (req.backward_block_kv) rb.block_kv = req.backward_block_kv;
    Planned b = plan_backward(pb, rb);
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

}  // namespace

const FusedPasses* fused_passes(const KernelDescription& d) {
  return describe(d).fused;
}

ResolvedMechanisms resolve_mechanisms(const KernelDescription& d) {
  // A dataflow with no mechanisms of its own (two_pass alone) starts from mma.sync, cp.async,
  // uniform warps.
  ResolvedMechanisms m;
  const Dataflow* f = find_dataflow(forward_dataflows(), d.forward);
  const Dataflow* b = find_dataflow(backward_dataflows(), d.backward);
  if (f != nullptr && f->mechanisms) {
    m = *f->mechanisms;
  } else if (b != nullptr && b->mechanisms) {
    m = *b->mechanisms;
  }
  if (d.mechanisms.mma) m.mma = *d.mechanisms.mma;
  if (d.mechanisms.load) m.load = *d.mechanisms.load;
  if (d.mechanisms.warp_roles) m.warp_roles = *d.mechanisms.warp_roles;
  if (d.mechanisms.persistent) m.persistent = *d.mechanisms.persistent;
  if (d.mechanisms.mma_wait) m.mma_wait = *d.mechanisms.mma_wait;
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
    if (p.name != algorithm) continue;
    // The unfused dataflow's GEMMs are the vendor library's (cuBLAS), which has kernels for every
    // GPU: its wgmma and TMA describe the Hopper ones, and are no requirement.
    const Dataflow* f = find_dataflow(forward_dataflows(), p.forward);
    if (f != nullptr && f->runs_on_any_gpu) continue;
    check_mechanisms_on(fmt::format("{} (its mechanisms: iosim kernels --show {})", p.name, p.name),
                        resolve_mechanisms(p), hw,
                        "run an algorithm without them (flash2: mma_sync, cp_async), or a Hopper "
                        "profile");
  }
}

namespace {

// The preset `d` describes again (its dataflows and mechanisms), or null: a mechanism the GPU
// lacks is refused in the preset's words (its name, as --algo's).
const KernelDescription* same_preset(const KernelDescription& d, const ResolvedMechanisms& mech) {
  for (const KernelDescription& p : kernel_presets()) {
    if (p.forward == d.forward && p.backward == d.backward && p.block_mask == d.block_mask &&
        p.kv_order == d.kv_order && same(resolve_mechanisms(p), mech)) {
      return &p;
    }
  }
  return nullptr;
}

// What a description accepts: its forward dataflow's, and what its mechanisms and its other
// dataflow allow.
Capabilities described_capabilities(const Described& dd, const KernelDescription& d) {
  const ResolvedMechanisms& mech = dd.use.mechanisms;
  Capabilities c;
  if (dd.forward != nullptr) c = dd.forward->capabilities;
  if (d.block_mask) c.block_pattern = true;
  c.backward = dd.backward != nullptr;
  c.fp8 = mech.wgmma() && dd.forward != nullptr && dd.forward->fp8_with_wgmma;
  c.warpgroups = mech.warp_roles != WarpRoles::uniform;
  c.gqa_backward = dd.backward != nullptr && dd.backward->gqa_backward;
  // A window skips blocks by position; a block mask is its own choice of blocks.
  if (d.block_mask) c.window = false;
  c.window_backward = c.window && dd.backward != nullptr && dd.backward->window_backward;
  // Both passes planned apart: the flags tile the forward, the backward keeps its own tiles
  // (tiles.backward_block_q/kv, --backward-block-q/-kv); planned together, as their kernels say.
  c.flags_tile_forward = dd.fused != nullptr ? dd.fused->flags_tile_forward
                                             : dd.forward != nullptr && dd.backward != nullptr;
  c.one_stage = mech.load == LoadPath::plain;
  if (dd.forward == nullptr && dd.backward != nullptr) {
    c.forward_stages = dd.backward->capabilities.forward_stages;
  }
  return c;
}

}  // namespace

Algorithm described_algorithm(const KernelDescription& d, const HardwareProfile& hw) {
  const ResolvedMechanisms mech = resolve_mechanisms(d);
  if (mech.mma_wait == MmaWait::next_step && (!mech.wgmma() || mech.load == LoadPath::plain)) {
    throw ConfigError(fmt::format(
        "{}: mechanisms.mma_wait next_step holds a K/V buffer for an asynchronous MMA waited for "
        "in the next step: it needs mma wgmma_ss or wgmma_rs and load cp_async or tma (this "
        "description: mma {}, load {}); leave mma_wait out or set it to step",
        d.source, mma_name(mech.mma), load_name(mech.load)));
  }
  // A mechanism the GPU lacks; a preset's own mechanisms are checked as its --algo is.
  if (const KernelDescription* preset = same_preset(d, mech)) {
    check_preset_runs_on(preset->name, hw);
  } else {
    check_mechanisms_on(d.source, mech, hw);
  }
  return described_algorithm(d);
}

Algorithm described_algorithm(const KernelDescription& d) {
  const Described dd = describe(d);
  Algorithm a;
  a.name = d.name;
  a.summary = d.summary.empty() ? fmt::format("kernel description {}", d.source) : d.summary;
  a.capabilities = described_capabilities(dd, d);
  const KernelDescription desc = d;
  a.plan = [desc, dd](const AttentionProblem& p, const HardwareProfile& profile,
                      const TilingRequest& requested) -> Planned {
    if (runs_forward(p.pass) && dd.forward == nullptr) {
      throw ConfigError(
          fmt::format("--pass {}: {} names no forward dataflow (dataflow.forward); use --pass bwd",
                      pass_name(p.pass), desc.source));
    }
    TilingRequest tiles = described_tiling(desc, requested);
    // Plain loads go through registers, so each copy waits for the compute: the engine times
    // them one stage deep (apply_mechanisms). More buffers would be shared memory asked for and
    // never filled ahead, with occupancy lost to it: what runs is one stage, or it is refused.
    if (dd.use.mechanisms.load == LoadPath::plain) {
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
      planned = plan_described(dd, p, profile, tiles);
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
  // The two-level closed form: the fused kernels' own, else each pass's (the forward's and the
  // backward's tiles).
  a.closed_form = [dd](const AttentionProblem& p, const Tiling& t,
                       const BlockMask* blocks) -> ReadWriteBytes {
    if (dd.fused != nullptr) return dd.fused->closed_form(p, t, blocks);
    ReadWriteBytes total;
    if (runs_forward(p.pass)) {
      AttentionProblem pf = p;
      pf.pass = Pass::fwd;
      Tiling tf = t;
      tf.backward_block_q = tf.backward_block_kv = 0;
      total += dd.forward->closed_form(pf, tf, blocks);
    }
    if (runs_backward(p.pass)) {
      AttentionProblem pb = p;
      pb.pass = Pass::bwd;
      Tiling tb = t;
      if (p.pass == Pass::fwdbwd) {
        tb.block_q = t.backward_block_q;
        tb.block_kv = t.backward_block_kv;
      }
      total += dd.backward->closed_form(pb, tb, blocks);
    }
    return total;
  };
  if (dd.forward != nullptr) a.estimated_work = dd.forward->estimated_work;
  // The paper lines: the fused kernels' (flash3's forward follows none), else the forward
  // dataflow's (both passes' kernels), else the backward's.
  const DataflowPaperFn& paper = dd.fused != nullptr     ? dd.fused->paper_step
                                 : dd.forward != nullptr ? dd.forward->paper_step
                                                         : dd.backward->paper_step;
  a.paper_step = [paper, use = dd.use](const std::string& kernel, const TileOp& op) {
    return paper(kernel, op, use);
  };
  return a;
}

}  // namespace iosim
