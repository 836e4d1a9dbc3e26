#include "algorithms/kernel_description.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "algorithms/dataflow.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_text.hpp"
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
constexpr Named<KvOrder> kKvOrder[] = {{KvOrder::ascending, "ascending"},
                                       {KvOrder::descending, "descending"}};
constexpr Named<WarpRoles> kRoles[] = {{WarpRoles::uniform, "uniform"},
                                       {WarpRoles::producer_consumer, "producer_consumer"},
                                       {WarpRoles::pingpong, "pingpong"}};
constexpr Named<MmaWait> kMmaWait[] = {{MmaWait::step, "step"}, {MmaWait::next_step, "next_step"}};

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

std::vector<std::string> dataflow_names(const std::vector<const Dataflow*>& list) {
  std::vector<std::string> out;
  for (const Dataflow* d : list) out.emplace_back(d->name);
  return out;
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
    std::string dumped = json_text(v);
    if (dumped.size() > 40) dumped = dumped.substr(0, 37) + "...";
    return fmt::format("{} {}", v.type_name(), dumped);
  }

  std::string source_;
  std::vector<std::string> problems_;
};

constexpr std::int64_t kMaxBlock = 1 << 16;

}  // namespace

void apply_mechanisms(KernelSpec& k, const ResolvedMechanisms& m, int consumers) {
  constexpr int kWarpgroupWarps = 4;
  k.tensor_instruction = m.wgmma() ? TensorInstruction::wgmma : TensorInstruction::mma_sync;
  k.producer_warps = m.warp_roles == WarpRoles::uniform ? 0 : kWarpgroupWarps;
  k.consumer_warpgroups = consumers;
  k.persistent = m.persistent;
  if (k.overlap != PipeOverlap::lockstep) {
    k.overlap = m.warp_roles == WarpRoles::pingpong ? PipeOverlap::pingpong
                : m.wgmma()                         ? PipeOverlap::async_tensor
                                                    : PipeOverlap::warps_per_scheduler;
  }
  if (m.load == LoadPath::plain) k.pipeline_stages = 1;
  // The buffer the step's last MMA read is free only once that MMA is waited for, in the next
  // step: a stage's copy waits for the compute one stage further back than the ring allows.
  if (m.mma_wait == MmaWait::next_step) k.pipeline_stages = std::max(1, k.pipeline_stages - 1);
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
const char* mma_wait_name(MmaWait w) {
  return name_of(kMmaWait, w);
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
  // The dataflows' entries say what else a description of them may state.
  const Dataflow* forward = nullptr;
  const Dataflow* backward = nullptr;
  d.name = c.text(doc, "", "name").value_or("");
  if (!doc.contains("name")) c.problem("name", "required: the kernel's name");
  if (!doc.contains("dataflow")) {
    c.problem("dataflow", "required: a map with forward and/or backward");
  } else if (const json& df = doc.at("dataflow");
             c.object(df, "dataflow", {"forward", "backward", "block_mask", "kv_order"})) {
    if (auto f = c.text(df, "dataflow", "forward")) {
      forward = find_dataflow(forward_dataflows(), *f);
      if (forward == nullptr) {
        const auto valid = dataflow_names(forward_dataflows());
        c.problem("dataflow.forward", fmt::format("unknown forward dataflow '{}'{}; one of {}", *f,
                                                  did_you_mean(*f, valid), fmt::join(valid, ", ")));
      } else {
        d.forward = *f;
      }
    }
    if (auto b = c.text(df, "dataflow", "backward")) {
      backward = find_dataflow(backward_dataflows(), *b);
      if (backward == nullptr) {
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
    if (d.block_mask && forward != nullptr && !forward->block_mask) {
      c.problem("dataflow.block_mask", "applies to the query_stationary forward only");
    }
    if (auto order = c.choice(df, "dataflow", "kv_order", kKvOrder)) {
      d.kv_order = *order;
      if (forward == nullptr || !forward->kv_order) {
        c.problem("dataflow.kv_order", "applies to the query_stationary forward only");
      }
    }
  }
  if (doc.contains("tiles")) {
    const json& t = doc.at("tiles");
    if (c.object(t, "tiles",
                 {"block_q", "block_kv", "stages", "splits", "score_chunk", "query_step",
                  "key_step", "backward_block_q", "backward_block_kv"})) {
      d.tiles.block_q = c.integer(t, "tiles", "block_q", 1, kMaxBlock);
      d.tiles.block_kv = c.integer(t, "tiles", "block_kv", 1, kMaxBlock);
      if (auto s = c.integer(t, "tiles", "stages", 1, 64)) d.tiles.pipeline_stages = int(*s);
      d.tiles.splits = c.integer(t, "tiles", "splits", 1, 1 << 20);
      d.tiles.score_chunk = c.integer(t, "tiles", "score_chunk", 1, kMaxBlock);
      d.tiles.query_step = c.integer(t, "tiles", "query_step", 1, kMaxBlock);
      d.tiles.key_step = c.integer(t, "tiles", "key_step", 1, kMaxBlock);
      d.tiles.backward_block_q = c.integer(t, "tiles", "backward_block_q", 1, kMaxBlock);
      d.tiles.backward_block_kv = c.integer(t, "tiles", "backward_block_kv", 1, kMaxBlock);
    }
  }
  if (d.tiles.score_chunk && (backward == nullptr || !backward->score_chunk)) {
    c.problem("tiles.score_chunk", "applies to the two_pass backward only");
  }
  for (const auto& [key, step] :
       {std::pair{"query_step", d.tiles.query_step}, std::pair{"key_step", d.tiles.key_step}}) {
    if (step && (backward == nullptr || !backward->pass_steps)) {
      c.problem(std::string("tiles.") + key, "applies to the two_pass backward only");
    }
  }
  if (doc.contains("mechanisms")) {
    const json& m = doc.at("mechanisms");
    if (c.object(m, "mechanisms", {"mma", "load", "warp_roles", "persistent", "mma_wait"})) {
      d.mechanisms.mma = c.choice(m, "mechanisms", "mma", kMma);
      d.mechanisms.load = c.choice(m, "mechanisms", "load", kLoad);
      d.mechanisms.warp_roles = c.choice(m, "mechanisms", "warp_roles", kRoles);
      d.mechanisms.persistent = c.boolean(m, "mechanisms", "persistent");
      d.mechanisms.mma_wait = c.choice(m, "mechanisms", "mma_wait", kMmaWait);
    }
  }
  if (doc.contains("launch")) {
    const json& l = doc.at("launch");
    if (c.object(
            l, "launch",
            {"threads", "registers_per_thread", "local_bytes_per_thread", "smem_bytes_per_cta"})) {
      if (auto t = c.integer(l, "launch", "threads", 32, 1024)) {
        d.tiles.threads = int(*t);
        // A CTA runs whole warps (as --threads, algorithms/registry.cpp).
        if (*t % 32 != 0) c.problem("launch.threads", "a CTA runs whole warps: a multiple of 32");
      }
      if (auto r = c.integer(l, "launch", "registers_per_thread", 16, 255)) {
        d.tiles.registers_per_thread = int(*r);
      }
      if (auto b = c.integer(l, "launch", "local_bytes_per_thread", 0, 512 * 1024)) {
        d.tiles.local_bytes_per_thread = int(*b);
        if (*b > 0 && (forward == nullptr || !forward->spills || !d.backward.empty())) {
          // Silently ignoring the spills of another dataflow's kernel would time it as if none.
          c.problem("launch.local_bytes_per_thread",
                    "only the query_stationary forward models spills so far");
        }
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
  if (d.kv_order != KvOrder::ascending) df["kv_order"] = name_of(kKvOrder, d.kv_order);
  out["dataflow"] = df;
  json tiles = json::object();
  const TilingRequest& t = d.tiles;
  if (t.block_q) tiles["block_q"] = *t.block_q;
  if (t.block_kv) tiles["block_kv"] = *t.block_kv;
  if (t.pipeline_stages) tiles["stages"] = *t.pipeline_stages;
  if (t.splits) tiles["splits"] = *t.splits;
  if (t.score_chunk) tiles["score_chunk"] = *t.score_chunk;
  if (t.query_step) tiles["query_step"] = *t.query_step;
  if (t.key_step) tiles["key_step"] = *t.key_step;
  if (t.backward_block_q) tiles["backward_block_q"] = *t.backward_block_q;
  if (t.backward_block_kv) tiles["backward_block_kv"] = *t.backward_block_kv;
  if (!tiles.empty()) out["tiles"] = tiles;
  const ResolvedMechanisms m = resolve_mechanisms(d);
  out["mechanisms"] = {{"mma", mma_name(m.mma)},
                       {"load", load_name(m.load)},
                       {"warp_roles", warp_roles_name(m.warp_roles)},
                       {"persistent", m.persistent}};
  // Written only where it is not the default, so that descriptions written before it read back
  // the same.
  if (m.mma_wait != MmaWait::step) out["mechanisms"]["mma_wait"] = mma_wait_name(m.mma_wait);
  json launch = json::object();
  if (t.threads) launch["threads"] = *t.threads;
  if (t.registers_per_thread) launch["registers_per_thread"] = *t.registers_per_thread;
  if (t.local_bytes_per_thread) launch["local_bytes_per_thread"] = *t.local_bytes_per_thread;
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
                                         "kv_order",
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
                                         "mma_wait",
                                         "threads",
                                         "registers_per_thread",
                                         "local_bytes_per_thread",
                                         "smem_bytes_per_cta"};
    for (const char* k : kOrder) {
      if (!j.at(key).contains(k)) continue;
      const json& v = j.at(key).at(k);
      s += fmt::format("  {}: {}\n", k, v.is_string() ? v.get<std::string>() : json_text(v));
    }
  };
  section("dataflow", "what each CTA does to which tiles: decides the bytes");
  section("tiles", "left out: the dataflow's defaults for this problem and GPU");
  section("mechanisms", "how the hardware is driven: with the dataflow, decides the time");
  section("launch", "facts from compiling the kernel; left out: iosim's estimates");
  return s;
}

namespace {

// A preset: its dataflows, run by their kernels' own mechanisms unless `mechanisms` says
// otherwise.
KernelDescription preset(std::string name, std::string summary, std::string forward,
                         std::string backward, bool block_mask = false,
                         Mechanisms mechanisms = {}) {
  KernelDescription d;
  d.source = "preset " + name;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.forward = std::move(forward);
  d.backward = std::move(backward);
  d.block_mask = block_mask;
  d.mechanisms = mechanisms;
  return d;
}

}  // namespace

const std::vector<KernelDescription>& kernel_presets() {
  // What the built-in schedules model: standard's GEMMs are cuBLAS's Hopper kernels, timed at the
  // wgmma rate with the warps overlapping the pipes, persistent where the GPU has wgmma (cuBLAS
  // launches a CTA per tile on Ampere); the FlashAttention-1/-2 family and the decoding kernels
  // are our mma.sync + cp.async kernels: each of these runs its dataflows' own mechanisms
  // (algorithms/dataflow.hpp). flash3 is FlashAttention-3's forward (wgmma, TMA, a producer
  // warpgroup, persistent) with its backward.
  static const std::vector<KernelDescription> list = {
      preset("standard", "unfused attention: S = QK^T, softmax, PV as separate kernels through HBM",
             "unfused", "unfused"),
      preset("flash1",
             "FlashAttention-1 (Algorithm 1): K/V outer loop, Q inner; O, l, m through HBM",
             "kv_stationary", "kv_stationary_dq_in_hbm"),
      preset("flash2",
             "FlashAttention-2: CTA per (Q block, batch, head), K/V streamed, O written once",
             "query_stationary", "kv_stationary_atomic_dq"),
      preset(
          "flash3",
          "FlashAttention-3 (Hopper): producer/consumer warpgroups, wgmma, ping-pong, "
          "persistent tiles; backward with warpgroups of keys and a TMA reduce-add of dQ",
          "query_stationary", "kv_stationary_reduce_dq", false,
          {MmaFamily::wgmma_rs, LoadPath::tma, WarpRoles::producer_consumer, true, std::nullopt}),
      preset("block-sparse",
             "block-sparse FlashAttention: FlashAttention-2 over the nonzero blocks of --pattern",
             "query_stationary", "kv_stationary_atomic_dq", true),
      preset("flash-decoding",
             "flash-decoding: K/V split into --splits chunks attended in parallel, then a reduce "
             "kernel combines the partial outputs by their log-sum-exp",
             "split_kv", ""),
      preset("paged",
             "paged attention: split-KV decoding that gathers K/V pages through a block table",
             "paged", ""),
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

}  // namespace iosim
