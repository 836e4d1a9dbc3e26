#include "algorithms/kernel_description.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <span>
#include <string_view>
#include <type_traits>
#include <variant>

#include "algorithms/dataflow.hpp"
#include "algorithms/kernel_schema.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_text.hpp"
#include "sim/base/suggest.hpp"
#include "sim/base/text_file.hpp"
#include "sim/base/yaml_reader.hpp"

namespace iosim {

using nlohmann::json;

namespace {

using kernel_yaml::Across;
using kernel_yaml::Key;
using kernel_yaml::Kind;

// The name of an enum's value: its name at the value's position (kernel_schema.hpp).
template <typename E>
const char* name_of(E value) {
  const auto names = kernel_yaml::enum_names(value);
  const auto i = static_cast<std::size_t>(value);
  return i < names.size() ? names[i] : "?";
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
    // A name is one line of a table and a page: a line break or tab from an escape ("my\nkernel")
    // split the run's table line in two (issue #50's fifth probe).
    if (const int c = first_control_character_in_line(v.get_ref<const std::string&>()); c >= 0) {
      problem(
          join(path, key),
          fmt::format("a name is one line of text: it holds the control character U+{:04X}", c));
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

  // The position of the key's name in `names`.
  std::optional<std::size_t> choice(const json& parent, const std::string& path,
                                    const std::string& key, std::span<const char* const> names) {
    const std::optional<std::string> t = text(parent, path, key);
    if (!t) return std::nullopt;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (*t == names[i]) return i;
    }
    const std::vector<std::string> valid(names.begin(), names.end());
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
  return name_of(m);
}
const char* load_name(LoadPath l) {
  return name_of(l);
}
const char* warp_roles_name(WarpRoles w) {
  return name_of(w);
}
const char* mma_wait_name(MmaWait w) {
  return name_of(w);
}

namespace {

// Calls `f` with the object a member of the description belongs to and the member.
template <typename F, typename T>
decltype(auto) with_member(KernelDescription& d, T KernelDescription::*m, F&& f) {
  return f(d.*m);
}
template <typename F, typename T>
decltype(auto) with_member(KernelDescription& d, T TilingRequest::*m, F&& f) {
  return f(d.tiles.*m);
}
template <typename F, typename T>
decltype(auto) with_member(KernelDescription& d, T Mechanisms::*m, F&& f) {
  return f(d.mechanisms.*m);
}

// Reads row `k` of `section` (at `path`) into `d`: its kind's checks, then, for a dataflow, the
// registry's. Returns whether a value was read.
bool read_key(Checker& c, const json& section, const std::string& path, const Key& k,
              KernelDescription& d, const Dataflow*& forward, const Dataflow*& backward) {
  return std::visit(
      [&](auto member) {
        return with_member(d, member, [&](auto& field) -> bool {
          using Value =
              typename kernel_yaml::Unwrap<std::remove_reference_t<decltype(field)>>::type;
          if constexpr (std::is_same_v<Value, std::string>) {
            const std::optional<std::string> t = c.text(section, path, k.key);
            if (!t) return false;
            if (k.kind == Kind::text) {
              field = *t;
              return true;
            }
            const bool fwd = k.kind == Kind::forward;
            const std::vector<const Dataflow*>& list =
                fwd ? forward_dataflows() : backward_dataflows();
            const Dataflow* found = find_dataflow(list, *t);
            (fwd ? forward : backward) = found;
            if (found == nullptr) {
              const auto valid = dataflow_names(list);
              c.problem(Checker::join(path, k.key),
                        fmt::format("unknown {} dataflow '{}'{}; one of {}", k.key, *t,
                                    did_you_mean(*t, valid), fmt::join(valid, ", ")));
              return false;
            }
            field = *t;
            return true;
          } else if constexpr (std::is_same_v<Value, bool>) {
            const std::optional<bool> b = c.boolean(section, path, k.key);
            if (b) field = *b;
            return b.has_value();
          } else if constexpr (std::is_enum_v<Value>) {
            const std::optional<std::size_t> i =
                c.choice(section, path, k.key, kernel_yaml::enum_names(Value{}));
            if (i) field = static_cast<Value>(*i);
            return i.has_value();
          } else {
            const std::optional<std::int64_t> x = c.integer(section, path, k.key, k.lo, k.hi);
            if (x) field = static_cast<Value>(*x);
            return x.has_value();
          }
        });
      },
      k.member);
}

// Whether the description sets row `k`'s member (an optional one given, a string non-empty, a
// boolean true).
bool is_set(const KernelDescription& d, const Key& k) {
  KernelDescription copy = d;
  return std::visit(
      [&](auto member) {
        return with_member(copy, member, [](auto& field) -> bool {
          using F = std::remove_reference_t<decltype(field)>;
          if constexpr (std::is_same_v<F, std::string>) {
            return !field.empty();
          } else if constexpr (std::is_same_v<F, bool>) {
            return field;
          } else if constexpr (std::is_enum_v<F>) {
            return true;
          } else {
            return field.has_value();
          }
        });
      },
      k.member);
}

// Whether row `k`'s check across keys runs once its section is read (the problems' order), not
// right after the row.
bool after_section(const Key& k) {
  return k.across == Across::score_chunk || k.across == Across::pass_steps;
}

// The checks across keys of row `k` (kernel_schema.hpp's Across), right after the row where
// `read` (a value read), or for after_section(k) once its section is.
void check_across(Checker& c, const Key& k, bool read, const json& section,
                  const KernelDescription& d, const Dataflow* forward, const Dataflow* backward) {
  const std::string path = Checker::join(k.section, k.key);
  switch (k.across) {
    case Across::none:
      break;
    case Across::block_mask:
      // The section's own check runs here, after block_mask is read, as it always has: the
      // problems keep their order.
      if (!section.contains("forward") && !section.contains("backward")) {
        c.problem(k.section, "names no dataflow: give forward, backward or both");
      }
      if (d.block_mask && forward != nullptr && !forward->block_mask) {
        c.problem(path, "applies to the query_stationary forward only");
      }
      break;
    case Across::kv_order:
      if (read && (forward == nullptr || !forward->kv_order)) {
        c.problem(path, "applies to the query_stationary forward only");
      }
      break;
    case Across::score_chunk:
      if (is_set(d, k) && (backward == nullptr || !backward->score_chunk)) {
        c.problem(path, "applies to the two_pass backward only");
      }
      break;
    case Across::pass_steps:
      if (is_set(d, k) && (backward == nullptr || !backward->pass_steps)) {
        c.problem(path, "applies to the two_pass backward only");
      }
      break;
    case Across::whole_warps:
      // A CTA runs whole warps (as --threads, algorithms/registry.cpp).
      if (read && *d.tiles.threads % 32 != 0) {
        c.problem(path, "a CTA runs whole warps: a multiple of 32");
      }
      break;
    case Across::spills:
      if (read && *d.tiles.local_bytes_per_thread > 0 &&
          (forward == nullptr || !forward->spills || !d.backward.empty())) {
        // Silently ignoring the spills of another dataflow's kernel would time it as if none.
        c.problem(path, "only the query_stationary forward models spills so far");
      }
      break;
  }
}

// The keys of the top level: its rows' and the sections', in the rows' order.
std::vector<std::string> top_level_keys() {
  std::vector<std::string> keys;
  for (const Key& k : kernel_yaml::kKeys) {
    const std::string key = *k.section == '\0' ? k.key : k.section;
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  return keys;
}

std::vector<std::string> section_keys(const std::string& section) {
  std::vector<std::string> keys;
  for (const Key& k : kernel_yaml::kKeys) {
    if (k.section == section) keys.emplace_back(k.key);
  }
  return keys;
}

}  // namespace

KernelDescription parse_kernel_description(const json& doc, const std::string& source) {
  KernelDescription d;
  d.source = source;
  Checker c(source);
  const std::vector<std::string> top = top_level_keys();
  if (doc.is_null()) {
    c.problem("(top level)",
              fmt::format("the description is empty; expected keys {}", fmt::join(top, ", ")));
    c.finish();
  }
  if (!c.object(doc, "", top)) c.finish();
  // The dataflows' entries say what else a description of them may state.
  const Dataflow* forward = nullptr;
  const Dataflow* backward = nullptr;
  // Reads the rows of `section` (at `path`), each followed by its checks across keys.
  const auto read_rows = [&](const json& section, const std::string& path) {
    for (const Key& k : kernel_yaml::kKeys) {
      if (k.section != path) continue;
      const bool read = read_key(c, section, path, k, d, forward, backward);
      if (k.required != nullptr && !section.contains(k.key)) {
        c.problem(Checker::join(path, k.key), fmt::format("required: {}", k.required));
      }
      if (!after_section(k)) check_across(c, k, read, section, d, forward, backward);
    }
  };
  read_rows(doc, "");
  for (const kernel_yaml::Section& s : kernel_yaml::kSections) {
    if (!doc.contains(s.name)) {
      if (s.required != nullptr) c.problem(s.name, fmt::format("required: {}", s.required));
    } else if (const json& section = doc.at(s.name);
               c.object(section, s.name, section_keys(s.name))) {
      read_rows(section, s.name);
    }
    for (const Key& k : kernel_yaml::kKeys) {
      if (k.section == std::string_view(s.name) && after_section(k)) {
        check_across(c, k, false, json::object(), d, forward, backward);
      }
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

namespace {

// Row `k`'s value in `d` as the writer writes it, or null where the description leaves it out (an
// optional key unset, an empty dataflow) or it is the value the row says to leave out.
json shown_value(KernelDescription& d, const Key& k) {
  json v = std::visit(
      [&](auto member) {
        return with_member(d, member, [](auto& field) -> json {
          using F = std::remove_reference_t<decltype(field)>;
          using Value = typename kernel_yaml::Unwrap<F>::type;
          if constexpr (std::is_same_v<F, std::string>) {
            return field.empty() ? json() : json(field);
          } else if constexpr (std::is_same_v<F, bool>) {
            return field;
          } else if constexpr (std::is_enum_v<F>) {
            return name_of(field);
          } else if constexpr (std::is_enum_v<Value>) {
            return field ? json(name_of(*field)) : json();
          } else {
            return field ? json(*field) : json();
          }
        });
      },
      k.member);
  if (k.required != nullptr && v.is_null()) v = "";
  if (k.omitted != nullptr && !v.is_null() &&
      (v.is_string() ? v.get<std::string>() : json_text(v)) == k.omitted) {
    return json();
  }
  return v;
}

}  // namespace

json kernel_description_json(const KernelDescription& d) {
  // The mechanisms as they resolve: a description's own, else its dataflows'.
  KernelDescription shown = d;
  const ResolvedMechanisms m = resolve_mechanisms(d);
  shown.mechanisms = {m.mma, m.load, m.warp_roles, m.persistent, m.mma_wait};
  json out = json::object();
  for (const Key& k : kernel_yaml::kKeys) {
    if (*k.section != '\0') continue;
    if (json v = shown_value(shown, k); !v.is_null()) out[k.key] = std::move(v);
  }
  for (const kernel_yaml::Section& s : kernel_yaml::kSections) {
    json section = json::object();
    for (const Key& k : kernel_yaml::kKeys) {
      if (k.section != std::string_view(s.name)) continue;
      if (json v = shown_value(shown, k); !v.is_null()) section[k.key] = std::move(v);
    }
    if (!section.empty() || s.always_written) out[s.name] = std::move(section);
  }
  return out;
}

std::string kernel_description_yaml(const KernelDescription& d) {
  const json j = kernel_description_json(d);
  std::string s = "# iosim kernel description (schemas/kernel.schema.json; docs/kernels.md)\n";
  const auto line = [&](const char* indent, const char* key, const json& v) {
    s +=
        fmt::format("{}{}: {}\n", indent, key, v.is_string() ? v.get<std::string>() : json_text(v));
  };
  // In the rows' order, not the JSON object's alphabetical one.
  for (const Key& k : kernel_yaml::kKeys) {
    if (*k.section == '\0' && j.contains(k.key)) line("", k.key, j.at(k.key));
  }
  for (const kernel_yaml::Section& sec : kernel_yaml::kSections) {
    if (!j.contains(sec.name)) continue;
    s += fmt::format("{}:  # {}\n", sec.name, sec.comment);
    for (const Key& k : kernel_yaml::kKeys) {
      if (k.section == std::string_view(sec.name) && j.at(sec.name).contains(k.key)) {
        line("  ", k.key, j.at(sec.name).at(k.key));
      }
    }
  }
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
