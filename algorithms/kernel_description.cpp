#include "algorithms/kernel_description.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>

#include "algorithms/passes.hpp"
#include "algorithms/query_stationary.hpp"
#include "algorithms/two_pass_backward.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/suggest.hpp"
#include "sim/base/text_file.hpp"
#include "sim/base/yaml_reader.hpp"

namespace iosim {

using nlohmann::json;

namespace {

template <typename E>
struct Named {
  E value;
  const char* name;
};

constexpr Named<MmaFamily> kMma[] = {{MmaFamily::mma_sync, "mma_sync"},
                                     {MmaFamily::wgmma_ss, "wgmma_ss"},
                                     {MmaFamily::wgmma_rs, "wgmma_rs"}};
constexpr Named<LoadPath> kLoad[] = {
    {LoadPath::plain, "plain"}, {LoadPath::cp_async, "cp_async"}, {LoadPath::tma, "tma"}};
constexpr Named<WarpRoles> kRoles[] = {{WarpRoles::uniform, "uniform"},
                                       {WarpRoles::producer_consumer, "producer_consumer"},
                                       {WarpRoles::pingpong, "pingpong"}};

template <typename E, std::size_t N>
const char* name_of(const Named<E> (&table)[N], E value) {
  for (const auto& n : table) {
    if (n.value == value) return n.name;
  }
  return "?";
}

template <typename E, std::size_t N>
std::vector<std::string> names_of(const Named<E> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& n : table) out.emplace_back(n.name);
  return out;
}

std::vector<std::string> dataflow_names(const std::vector<DataflowInfo>& list) {
  std::vector<std::string> out;
  for (const auto& d : list) out.emplace_back(d.name);
  return out;
}

const DataflowInfo* find_dataflow(const std::vector<DataflowInfo>& list, const std::string& name) {
  for (const auto& d : list) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

// Collects every problem of a description, then throws them together.
class Checker {
 public:
  explicit Checker(std::string source) : source_(std::move(source)) {}

  void problem(const std::string& path, const std::string& what) {
    problems_.push_back(fmt::format("{}: {}", path, what));
  }

  // Every key of `node` (at `path`) is one of `keys`.
  bool object(const json& node, const std::string& path, const std::vector<std::string>& keys) {
    if (!node.is_object()) {
      problem(path.empty() ? "(top level)" : path,
              fmt::format("expected a map with keys {}, got {}", fmt::join(keys, ", "),
                          node.type_name()));
      return false;
    }
    for (const auto& [key, value] : node.items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        problem(join(path, key), fmt::format("unknown key{}; valid keys here: {}",
                                             did_you_mean(key, keys), fmt::join(keys, ", ")));
      }
    }
    return true;
  }

  std::optional<std::int64_t> integer(const json& parent, const std::string& path,
                                      const std::string& key, std::int64_t lo, std::int64_t hi) {
    if (!parent.contains(key)) return std::nullopt;
    const json& v = parent.at(key);
    if (!v.is_number_integer()) {
      problem(join(path, key), fmt::format("expected an integer, got {}", describe(v)));
      return std::nullopt;
    }
    const std::int64_t x = v.get<std::int64_t>();
    if (x < lo || x > hi) {
      problem(join(path, key), fmt::format("{} is out of range [{}, {}]", x, lo, hi));
      return std::nullopt;
    }
    return x;
  }

  std::optional<std::string> text(const json& parent, const std::string& path,
                                  const std::string& key) {
    if (!parent.contains(key)) return std::nullopt;
    const json& v = parent.at(key);
    if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 200) {
      problem(join(path, key),
              fmt::format("expected a name (1 to 200 characters), got {}", describe(v)));
      return std::nullopt;
    }
    return v.get<std::string>();
  }

  std::optional<bool> boolean(const json& parent, const std::string& path, const std::string& key) {
    if (!parent.contains(key)) return std::nullopt;
    const json& v = parent.at(key);
    if (!v.is_boolean()) {
      problem(join(path, key), fmt::format("expected true or false, got {}", describe(v)));
      return std::nullopt;
    }
    return v.get<bool>();
  }

  template <typename E, std::size_t N>
  std::optional<E> choice(const json& parent, const std::string& path, const std::string& key,
                          const Named<E> (&table)[N]) {
    const std::optional<std::string> t = text(parent, path, key);
    if (!t) return std::nullopt;
    for (const auto& n : table) {
      if (*t == n.name) return n.value;
    }
    const std::vector<std::string> valid = names_of(table);
    problem(join(path, key), fmt::format("unknown {} '{}'{}; one of {}", key, *t,
                                         did_you_mean(*t, valid), fmt::join(valid, ", ")));
    return std::nullopt;
  }

  void finish() const {
    if (problems_.empty()) return;
    throw ConfigError(fmt::format("{}: {} problem{} in the kernel description:\n  {}", source_,
                                  problems_.size(), problems_.size() == 1 ? "" : "s",
                                  fmt::join(problems_, "\n  ")));
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  static std::string describe(const json& v) {
    std::string dumped = v.dump();
    if (dumped.size() > 40) dumped = dumped.substr(0, 37) + "...";
    return fmt::format("{} {}", v.type_name(), dumped);
  }

  std::string source_;
  std::vector<std::string> problems_;
};

constexpr std::int64_t kMaxBlock = 1 << 16;

}  // namespace

const std::vector<DataflowInfo>& forward_dataflows() {
  static const std::vector<DataflowInfo> list = {
      {"unfused", "standard",
       "S = Q K^T and P = softmax(S) through HBM: a GEMM, the softmax (and mask) kernels, a GEMM"},
      {"kv_stationary", "flash1",
       "one CTA per head loops over K/V blocks, Q blocks inside; O, l, m re-read and re-written "
       "(FlashAttention-1, Algorithm 1)"},
      {"query_stationary", "flash2",
       "one CTA per query block streams K/V, O and L written once (FlashAttention-2, -3)"},
      {"split_kv", "flash-decoding",
       "K/V split into chunks attended in parallel, partial O and log-sum-exp combined by a "
       "reduce kernel (Flash-Decoding)"},
      {"paged", "paged",
       "split-KV over a paged K/V cache gathered through a block table (PagedAttention)"},
  };
  return list;
}

const std::vector<DataflowInfo>& backward_dataflows() {
  static const std::vector<DataflowInfo> list = {
      {"unfused", "standard", "autograd over the unfused forward: one kernel per step, all in HBM"},
      {"kv_stationary_dq_in_hbm", "flash1",
       "one CTA per head, K/V outer, Q inner; dQ read, updated and written in HBM every step "
       "(FlashAttention-1, Algorithm 4)"},
      {"kv_stationary_atomic_dq", "flash2",
       "one CTA per K/V block loops over query blocks; dQ added in fp32 with atomics, converted "
       "after (FlashAttention-2)"},
      {"kv_stationary_reduce_dq", "flash3",
       "one CTA per K/V block, consumer warpgroups in lockstep, dQ added with a TMA reduce-add in "
       "fp32, converted after (FlashAttention-3)"},
      {"two_pass", "",
       "one kernel, two passes per CTA: dK, dV of a key block looping over queries, then dQ of a "
       "query block looping over keys; no atomics, no fp32 dQ in HBM"},
  };
  return list;
}

const char* mma_name(MmaFamily m) {
  return name_of(kMma, m);
}
const char* load_name(LoadPath l) {
  return name_of(kLoad, l);
}
const char* warp_roles_name(WarpRoles w) {
  return name_of(kRoles, w);
}

KernelDescription parse_kernel_description(const json& doc, const std::string& source) {
  KernelDescription d;
  d.source = source;
  Checker c(source);
  if (doc.is_null()) {
    c.problem("(top level)",
              "the description is empty; expected keys name, dataflow, tiles, "
              "mechanisms, launch");
    c.finish();
  }
  if (!c.object(doc, "", {"name", "dataflow", "tiles", "mechanisms", "launch"})) c.finish();
  d.name = c.text(doc, "", "name").value_or("");
  if (!doc.contains("name")) c.problem("name", "required: the kernel's name");
  if (!doc.contains("dataflow")) {
    c.problem("dataflow", "required: a map with forward and/or backward");
  } else if (const json& df = doc.at("dataflow");
             c.object(df, "dataflow", {"forward", "backward", "block_mask"})) {
    if (auto f = c.text(df, "dataflow", "forward")) {
      if (!find_dataflow(forward_dataflows(), *f)) {
        const auto valid = dataflow_names(forward_dataflows());
        c.problem("dataflow.forward", fmt::format("unknown forward dataflow '{}'{}; one of {}", *f,
                                                  did_you_mean(*f, valid), fmt::join(valid, ", ")));
      } else {
        d.forward = *f;
      }
    }
    if (auto b = c.text(df, "dataflow", "backward")) {
      if (!find_dataflow(backward_dataflows(), *b)) {
        const auto valid = dataflow_names(backward_dataflows());
        c.problem("dataflow.backward",
                  fmt::format("unknown backward dataflow '{}'{}; one of {}", *b,
                              did_you_mean(*b, valid), fmt::join(valid, ", ")));
      } else {
        d.backward = *b;
      }
    }
    d.block_mask = c.boolean(df, "dataflow", "block_mask").value_or(false);
    if (!df.contains("forward") && !df.contains("backward")) {
      c.problem("dataflow", "names no dataflow: give forward, backward or both");
    }
    if (d.block_mask && !d.forward.empty() && d.forward != "query_stationary") {
      c.problem("dataflow.block_mask", "applies to the query_stationary forward only");
    }
  }
  if (doc.contains("tiles")) {
    const json& t = doc.at("tiles");
    if (c.object(
            t, "tiles",
            {"block_q", "block_kv", "stages", "splits", "backward_block_q", "backward_block_kv"})) {
      d.tiles.block_q = c.integer(t, "tiles", "block_q", 1, kMaxBlock);
      d.tiles.block_kv = c.integer(t, "tiles", "block_kv", 1, kMaxBlock);
      if (auto s = c.integer(t, "tiles", "stages", 1, 64)) d.tiles.pipeline_stages = int(*s);
      d.tiles.splits = c.integer(t, "tiles", "splits", 1, 1 << 20);
      d.tiles.backward_block_q = c.integer(t, "tiles", "backward_block_q", 1, kMaxBlock);
      d.tiles.backward_block_kv = c.integer(t, "tiles", "backward_block_kv", 1, kMaxBlock);
    }
  }
  if (doc.contains("mechanisms")) {
    const json& m = doc.at("mechanisms");
    if (c.object(m, "mechanisms", {"mma", "load", "warp_roles", "persistent"})) {
      d.mechanisms.mma = c.choice(m, "mechanisms", "mma", kMma);
      d.mechanisms.load = c.choice(m, "mechanisms", "load", kLoad);
      d.mechanisms.warp_roles = c.choice(m, "mechanisms", "warp_roles", kRoles);
      d.mechanisms.persistent = c.boolean(m, "mechanisms", "persistent");
    }
  }
  if (doc.contains("launch")) {
    const json& l = doc.at("launch");
    if (c.object(l, "launch", {"threads", "registers_per_thread", "smem_bytes_per_cta"})) {
      if (auto t = c.integer(l, "launch", "threads", 32, 1024)) d.tiles.threads = int(*t);
      if (auto r = c.integer(l, "launch", "registers_per_thread", 16, 255)) {
        d.tiles.registers_per_thread = int(*r);
      }
      d.smem_bytes_per_cta = c.integer(l, "launch", "smem_bytes_per_cta", 0, 1 << 30);
    }
  }
  c.finish();
  return d;
}

KernelDescription load_kernel_description(const std::filesystem::path& path) {
  const std::string text = read_text_file(path, "kernel description", kMaxProfileBytes);
  return parse_kernel_description(read_yaml_json(text, path.string(), "kernel description"),
                                  path.string());
}

json kernel_description_json(const KernelDescription& d) {
  json out = {{"name", d.name}};
  json df = json::object();
  if (!d.forward.empty()) df["forward"] = d.forward;
  if (!d.backward.empty()) df["backward"] = d.backward;
  if (d.block_mask) df["block_mask"] = true;
  out["dataflow"] = df;
  json tiles = json::object();
  const TilingRequest& t = d.tiles;
  if (t.block_q) tiles["block_q"] = *t.block_q;
  if (t.block_kv) tiles["block_kv"] = *t.block_kv;
  if (t.pipeline_stages) tiles["stages"] = *t.pipeline_stages;
  if (t.splits) tiles["splits"] = *t.splits;
  if (t.backward_block_q) tiles["backward_block_q"] = *t.backward_block_q;
  if (t.backward_block_kv) tiles["backward_block_kv"] = *t.backward_block_kv;
  if (!tiles.empty()) out["tiles"] = tiles;
  const ResolvedMechanisms m = resolve_mechanisms(d);
  out["mechanisms"] = {{"mma", mma_name(m.mma)},
                       {"load", load_name(m.load)},
                       {"warp_roles", warp_roles_name(m.warp_roles)},
                       {"persistent", m.persistent}};
  json launch = json::object();
  if (t.threads) launch["threads"] = *t.threads;
  if (t.registers_per_thread) launch["registers_per_thread"] = *t.registers_per_thread;
  if (d.smem_bytes_per_cta) launch["smem_bytes_per_cta"] = *d.smem_bytes_per_cta;
  if (!launch.empty()) out["launch"] = launch;
  return out;
}

std::string kernel_description_yaml(const KernelDescription& d) {
  const json j = kernel_description_json(d);
  std::string s = fmt::format(
      "# iosim kernel description (schemas/kernel.schema.json; docs/kernels.md)\n"
      "name: {}\n",
      d.name);
  const auto section = [&](const char* key, const char* comment) {
    if (!j.contains(key)) return;
    s += fmt::format("{}:  # {}\n", key, comment);
    // In the order the schema lists them, not the JSON object's alphabetical one.
    static const char* const kOrder[] = {"forward",
                                         "backward",
                                         "block_mask",
                                         "block_q",
                                         "block_kv",
                                         "stages",
                                         "splits",
                                         "backward_block_q",
                                         "backward_block_kv",
                                         "mma",
                                         "load",
                                         "warp_roles",
                                         "persistent",
                                         "threads",
                                         "registers_per_thread",
                                         "smem_bytes_per_cta"};
    for (const char* k : kOrder) {
      if (!j.at(key).contains(k)) continue;
      const json& v = j.at(key).at(k);
      s += fmt::format("  {}: {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
    }
  };
  section("dataflow", "what each CTA does to which tiles: decides the bytes");
  section("tiles", "left out: the dataflow's defaults for this problem and GPU");
  section("mechanisms", "how the hardware is driven: with the dataflow, decides the time");
  section("launch", "facts from compiling the kernel; left out: iosim's estimates");
  return s;
}

namespace {

KernelDescription preset(std::string name, std::string forward, std::string backward, MmaFamily mma,
                         LoadPath load, WarpRoles roles, bool persistent, bool block_mask = false) {
  KernelDescription d;
  d.source = "preset " + name;
  d.name = std::move(name);
  d.forward = std::move(forward);
  d.backward = std::move(backward);
  d.block_mask = block_mask;
  d.mechanisms = {mma, load, roles, persistent};
  return d;
}

}  // namespace

const std::vector<KernelDescription>& kernel_presets() {
  using M = MmaFamily;
  using L = LoadPath;
  using W = WarpRoles;
  // What the built-in schedules model: standard's GEMMs are cuBLAS's Hopper kernels, timed at the
  // wgmma rate with the warps overlapping the pipes; the FlashAttention-1/-2 family and the
  // decoding kernels are our mma.sync + cp.async kernels; flash3 is FlashAttention-3's.
  static const std::vector<KernelDescription> list = {
      preset("standard", "unfused", "unfused", M::wgmma_ss, L::tma, W::uniform, false),
      preset("flash1", "kv_stationary", "kv_stationary_dq_in_hbm", M::mma_sync, L::cp_async,
             W::uniform, false),
      preset("flash2", "query_stationary", "kv_stationary_atomic_dq", M::mma_sync, L::cp_async,
             W::uniform, false),
      preset("flash3", "query_stationary", "kv_stationary_reduce_dq", M::wgmma_rs, L::tma,
             W::producer_consumer, true),
      preset("block-sparse", "query_stationary", "kv_stationary_atomic_dq", M::mma_sync,
             L::cp_async, W::uniform, false, true),
      preset("flash-decoding", "split_kv", "", M::mma_sync, L::cp_async, W::uniform, false),
      preset("paged", "paged", "", M::mma_sync, L::cp_async, W::uniform, false),
  };
  return list;
}

const KernelDescription& kernel_preset(const std::string& name) {
  for (const auto& d : kernel_presets()) {
    if (d.name == name) return d;
  }
  std::vector<std::string> valid;
  for (const auto& d : kernel_presets()) valid.push_back(d.name);
  throw ConfigError(fmt::format("unknown kernel preset '{}'; presets: {}{}", name,
                                fmt::join(valid, ", "), did_you_mean(name, valid)));
}

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
      if (mech_) apply_mechanisms(k, *mech_);
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

  // How each mechanism sets the engine's view of a kernel (engine.hpp says how each is timed).
  static void apply_mechanisms(KernelSpec& k, const ResolvedMechanisms& m) {
    constexpr int kWarpgroup = 128;
    k.tensor_instruction = m.wgmma() ? TensorInstruction::wgmma : TensorInstruction::mma_sync;
    if (m.warp_roles == WarpRoles::uniform) {
      k.producer_warps = 0;
      k.consumer_warpgroups = m.wgmma() ? std::max(1, k.threads_per_cta / kWarpgroup) : 0;
      k.overlap = m.wgmma() ? PipeOverlap::async_tensor : PipeOverlap::warps_per_scheduler;
    } else {
      k.producer_warps = kWarpgroup / 32;
      k.consumer_warpgroups = std::max(1, k.threads_per_cta / kWarpgroup - 1);
      if (k.overlap != PipeOverlap::lockstep) {
        k.overlap =
            m.warp_roles == WarpRoles::pingpong ? PipeOverlap::pingpong : PipeOverlap::async_tensor;
      }
    }
    if (m.load == LoadPath::plain) k.pipeline_stages = 1;
  }

 private:
  std::unique_ptr<Schedule> inner_;
  std::optional<ResolvedMechanisms> mech_;
  std::optional<std::int64_t> smem_;
};

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

std::string paper_algorithm_of(const KernelDescription& d) {
  const bool block = d.block_mask;
  if (const KernelDescription* f = owner_preset(forward_dataflows(), d.forward)) {
    return block ? "block-sparse" : f->name;
  }
  if (const KernelDescription* b = owner_preset(backward_dataflows(), d.backward)) return b->name;
  return "flash2";
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
  over(t.splits, requested.splits);
  over(t.warpgroups, requested.warpgroups);
  over(t.backward_block_q, requested.backward_block_q);
  over(t.backward_block_kv, requested.backward_block_kv);
  return t;
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
  if (fwd_owner == nullptr && bwd_owner != nullptr) {
    c.forward_stages = registry.get(bwd_owner->name).capabilities.forward_stages;
  }

  // A description whose dataflows and mechanisms are exactly one preset's is that preset (its
  // planner picks one tiling for both passes as the algorithm does).
  const KernelDescription* same_preset = nullptr;
  for (const KernelDescription& p : kernel_presets()) {
    if (p.forward == d.forward && p.backward == d.backward && p.block_mask == d.block_mask &&
        same(preset_mechanisms(p), mech)) {
      same_preset = &p;
    }
  }
  // A mechanism the GPU lacks, unless the description is a preset's own (standard's GEMMs are
  // timed as the vendor library runs them on any GPU).
  if (same_preset == nullptr && mech.wgmma() && hw.compute.wgmma_latency_cycles.value <= 0) {
    throw ConfigError(fmt::format(
        "{}: mechanisms.mma {} needs wgmma, which profile '{}' does not have (a Hopper-class "
        "GPU; compute.wgmma_latency_cycles is 0); use mma_sync",
        d.source, mma_name(mech.mma), hw.name));
  }
  if (same_preset == nullptr && mech.load == LoadPath::tma &&
      hw.compute.wgmma_latency_cycles.value <= 0) {
    throw ConfigError(fmt::format(
        "{}: mechanisms.load tma needs the Tensor Memory Accelerator, which profile '{}' does not "
        "have (a Hopper-class GPU); use cp_async or plain",
        d.source, hw.name));
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
                                           desc.block_mask);
    }
    Planned planned = reg->get(fwd_owner->name).plan(p, profile, req);
    // The owner's kernels as they are where the mechanisms are the owner's own.
    if (planned.feasible() && !same(mech, preset_mechanisms(*fwd_owner))) {
      planned.schedule =
          std::make_unique<WithMechanisms>(std::move(planned.schedule), mech, std::nullopt);
    }
    return planned;
  };
  auto plan_backward = [desc, mech, bwd_owner, reg](const AttentionProblem& p,
                                                    const HardwareProfile& profile,
                                                    const TilingRequest& req) -> Planned {
    Planned planned = bwd_owner == nullptr ? plan_two_pass_backward(p, profile, req, desc.name)
                                           : reg->get(bwd_owner->name).plan(p, profile, req);
    if (planned.feasible() &&
        (bwd_owner == nullptr || !same(mech, preset_mechanisms(*bwd_owner)))) {
      planned.schedule =
          std::make_unique<WithMechanisms>(std::move(planned.schedule), mech, std::nullopt);
    }
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
  a.plan = [desc, preset_algorithm, plan_forward, plan_backward](
               const AttentionProblem& p, const HardwareProfile& profile,
               const TilingRequest& requested) -> Planned {
    if (runs_forward(p.pass) && desc.forward.empty()) {
      throw ConfigError(
          fmt::format("--pass {}: {} names no forward dataflow (dataflow.forward); use --pass bwd",
                      pass_name(p.pass), desc.source));
    }
    Planned planned = plan_described(preset_algorithm, plan_forward, plan_backward, p, profile,
                                     described_tiling(desc, requested));
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
  return a;
}

}  // namespace iosim
