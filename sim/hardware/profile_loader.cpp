// The one place that reads YAML. It turns a profile file into a HardwareProfile and refuses
// anything it does not fully understand: every key must be known, every key present, every number
// a {value, source} pair, and the numbers must describe a machine that can exist.
#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sim/hardware/builtin_profiles.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/yaml_reader.hpp"
#include "sim/memory/l2_cache.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/hardware/profile_overrides.hpp"
#include "sim/base/suggest.hpp"
#include "sim/base/text_file.hpp"

namespace iosim {

double HardwareProfile::tensor_flops_per_s(Dtype dtype) const {
  switch (dtype) {
    case Dtype::fp16:
      return compute.tensor_fp16_tflops.value * 1e12;
    case Dtype::bf16:
      return compute.tensor_bf16_tflops.value * 1e12;
    case Dtype::fp32:
      return compute.tensor_tf32_tflops.value * 1e12;  // fp32 operands run as tf32
    case Dtype::fp8:
      return compute.tensor_fp8_tflops.value * 1e12;  // 0 without FP8 tensor cores
  }
  throw InternalError("tensor_flops_per_s: Dtype value out of range");
}

namespace {

namespace fs = std::filesystem;

// The schema: one table per section, key name -> struct member. The key lists used for
// "unknown key" and "missing key" come from these tables, so they cannot drift from the struct.
template <typename Spec>
using Member =
    std::variant<Sourced<int> Spec::*, Sourced<std::int64_t> Spec::*, Sourced<double> Spec::*>;

template <typename Spec>
struct Field {
  const char* key;
  Member<Spec> member;
};

const std::array<Field<SmSpec>, 17> kSmFields{{
    {"count", &SmSpec::count},
    {"boost_clock_mhz", &SmSpec::boost_clock_mhz},
    {"base_clock_mhz", &SmSpec::base_clock_mhz},
    {"smem_per_sm_bytes", &SmSpec::smem_per_sm_bytes},
    {"smem_per_cta_max_bytes", &SmSpec::smem_per_cta_max_bytes},
    {"smem_reserved_per_cta_bytes", &SmSpec::smem_reserved_per_cta_bytes},
    {"registers_per_sm", &SmSpec::registers_per_sm},
    {"max_registers_per_thread", &SmSpec::max_registers_per_thread},
    {"max_threads_per_sm", &SmSpec::max_threads_per_sm},
    {"max_ctas_per_sm", &SmSpec::max_ctas_per_sm},
    {"smem_bandwidth_bytes_per_clk", &SmSpec::smem_bandwidth_bytes_per_clk},
    {"l2_to_sm_bytes_per_clk", &SmSpec::l2_to_sm_bytes_per_clk},
    {"smem_latency_cycles", &SmSpec::smem_latency_cycles},
    {"setmaxnreg_min_registers", &SmSpec::setmaxnreg_min_registers},
    {"setmaxnreg_max_registers", &SmSpec::setmaxnreg_max_registers},
    {"setmaxnreg_step_registers", &SmSpec::setmaxnreg_step_registers},
    {"setmaxnreg_cycles", &SmSpec::setmaxnreg_cycles},
}};

const std::array<Field<ComputeSpec>, 10> kComputeFields{{
    {"tensor_fp16_tflops", &ComputeSpec::tensor_fp16_tflops},
    {"tensor_bf16_tflops", &ComputeSpec::tensor_bf16_tflops},
    {"tensor_tf32_tflops", &ComputeSpec::tensor_tf32_tflops},
    {"tensor_fp8_tflops", &ComputeSpec::tensor_fp8_tflops},
    {"fp32_tflops", &ComputeSpec::fp32_tflops},
    {"sfu_ops_per_clk_per_sm", &ComputeSpec::sfu_ops_per_clk_per_sm},
    {"mma_sync_flops_per_clk_per_sm", &ComputeSpec::mma_sync_flops_per_clk_per_sm},
    {"int32_ops_per_clk_per_sm", &ComputeSpec::int32_ops_per_clk_per_sm},
    {"fp32_latency_cycles", &ComputeSpec::fp32_latency_cycles},
    {"wgmma_latency_cycles", &ComputeSpec::wgmma_latency_cycles},
}};

const std::array<Field<L2Spec>, 7> kL2Fields{{
    {"size_bytes", &L2Spec::size_bytes},
    {"line_bytes", &L2Spec::line_bytes},
    {"sector_bytes", &L2Spec::sector_bytes},
    {"bandwidth_gbps", &L2Spec::bandwidth_gbps},
    {"hit_latency_cycles", &L2Spec::hit_latency_cycles},
    {"partitions", &L2Spec::partitions},
    {"max_dirty_fraction", &L2Spec::max_dirty_fraction},
}};

const std::array<Field<HbmSpec>, 4> kHbmFields{{
    {"capacity_bytes", &HbmSpec::capacity_bytes},
    {"bandwidth_gbps", &HbmSpec::bandwidth_gbps},
    {"achievable_fraction", &HbmSpec::achievable_fraction},
    {"latency_ns", &HbmSpec::latency_ns},
}};

const std::array<Field<LaunchSpec>, 1> kLaunchFields{{
    {"kernel_overhead_us", &LaunchSpec::kernel_overhead_us},
}};

const std::array<Field<PowerSpec>, 11> kPowerFields{{
    {"limit_w", &PowerSpec::limit_w},
    {"static_w", &PowerSpec::static_w},
    {"clock_w", &PowerSpec::clock_w},
    {"voltage_clock_slope", &PowerSpec::voltage_clock_slope},
    {"tensor_fp16_pj_per_flop", &PowerSpec::tensor_fp16_pj_per_flop},
    {"tensor_fp8_pj_per_flop", &PowerSpec::tensor_fp8_pj_per_flop},
    {"tensor_mma_sync_pj_per_flop", &PowerSpec::tensor_mma_sync_pj_per_flop},
    {"fp32_pj_per_flop", &PowerSpec::fp32_pj_per_flop},
    {"sfu_pj_per_op", &PowerSpec::sfu_pj_per_op},
    {"l2_pj_per_byte", &PowerSpec::l2_pj_per_byte},
    {"hbm_pj_per_byte", &PowerSpec::hbm_pj_per_byte},
}};

const std::vector<std::string> kTopKeys{"name", "description", "sm",     "compute",
                                        "l2",   "hbm",         "launch", "power"};
// Top-level sections a profile may leave out (all their keys then, or none).
const std::vector<std::string> kOptionalTopKeys{"power"};
// The keys every profile has (messages about the top level name these).
const std::vector<std::string> kRequiredTopKeys{"name", "description", "sm",    "compute",
                                                "l2",   "hbm",         "launch"};
const std::vector<std::string> kLeafKeys{"value", "source"};

// Calls f(section, fields) for each section's table, in file order.
template <typename F>
void for_each_section(F&& f) {
  f("sm", kSmFields);
  f("compute", kComputeFields);
  f("l2", kL2Fields);
  f("hbm", kHbmFields);
  f("launch", kLaunchFields);
}

// The same with the optional sections too (key lookups: `--set power.limit_w=...`).
template <typename F>
void for_each_known_section(F&& f) {
  for_each_section(f);
  f("power", kPowerFields);
}

template <typename Spec, typename T>
constexpr bool integral_member(Sourced<T> Spec::*) {
  return std::is_integral_v<T>;
}

// Whether "section.key" holds an integer; nullopt for a key no profile has.
std::optional<bool> key_is_integer(const std::string& path) {
  std::optional<bool> out;
  for_each_known_section([&](const char* section, const auto& fields) {
    for (const auto& f : fields) {
      if (path == std::string(section) + "." + f.key) {
        out = std::visit([](auto m) { return integral_member(m); }, f.member);
      }
    }
  });
  return out;
}

template <typename Spec, std::size_t N>
std::vector<std::string> keys_of(const std::array<Field<Spec>, N>& fields) {
  std::vector<std::string> keys;
  for (const auto& f : fields) keys.emplace_back(f.key);
  return keys;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string describe_kind(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  if (node.Tag() == "!") return "the string \"" + node.Scalar() + "\"";
  return "'" + node.Scalar() + "'";
}

// Walks one document. Remembers the line of every key it has seen so that later messages,
// including the cross-field checks, can point at the line to fix. Problems are collected, not
// thrown, so that one run names all of them (throw_if_any(), one line each); only a document
// whose top level is not a map stops the walk at once.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw ConfigError(origin_ + ": " + message);
  }

  void note(const std::string& message) { errors_.push_back(origin_ + ": " + message); }

  // A message about `path`, located at its line when the key was seen.
  void note_at(const std::string& path, const std::string& message) {
    const auto it = lines_.find(path);
    if (it == lines_.end()) return note(message);
    errors_.push_back(fmt::format("{}:{}: {}", origin_, it->second, message));
  }

  bool ok() const { return errors_.empty(); }

  // Throws one ConfigError listing every problem noted, in the order found.
  void throw_if_any() const {
    if (errors_.empty()) return;
    std::string all;
    for (const std::string& e : errors_) all += (all.empty() ? "" : "\n") + e;
    throw ConfigError(all);
  }

  // `node` (the value of `path`; "" for the top level) must be a map whose keys are exactly
  // `allowed`. Unknown keys are reported before missing ones: a typo makes both, and the
  // unknown key is the one with the useful "did you mean".
  // An empty section (`launch:` and nothing under it) reads as an empty map, so the message
  // names the first key it lacks.
  // Returns false when `node` is not a map (nothing under it can be read).
  bool check_map(const YAML::Node& node, const std::string& path,
                 const std::vector<std::string>& allowed, const std::string& what,
                 const std::vector<std::string>& optional = {}) {
    if (!node.IsMap() && !node.IsNull()) {
      note_at(path, fmt::format("'{}' must be {}, got {}", path, what, describe_kind(node)));
      return false;
    }
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const YAML::Node& key_node = entry.first;
      if (!key_node.IsScalar()) {
        errors_.push_back(fmt::format("{}:{}: keys must be plain names, got {} in {}", origin_,
                                      key_node.Mark().line + 1, describe_kind(key_node),
                                      path.empty() ? "the top level" : "'" + path + "'"));
        continue;
      }
      const std::string& key = key_node.Scalar();
      const std::string full = child_path(path, key);
      const int line = key_node.Mark().line + 1;
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        errors_.push_back(fmt::format("{}:{}: unknown key '{}'{}", origin_, line, full,
                                      did_you_mean(key, allowed)));
        continue;
      }
      if (!seen.insert(key).second) {
        errors_.push_back(fmt::format("{}:{}: duplicate key '{}' (first at line {})", origin_, line,
                                      full, lines_.at(full)));
        continue;
      }
      lines_[full] = line;
    }
    for (const auto& key : allowed) {
      if (seen.count(key) == 0 &&
          std::find(optional.begin(), optional.end(), key) == optional.end()) {
        note(fmt::format("missing required key '{}'", child_path(path, key)));
      }
    }
    return true;
  }

  // A non-empty string: a name, a description or a source.
  // A missing key was noted by check_map(); it reads as "".
  std::string read_text(const YAML::Node& node, const std::string& path, const std::string& what) {
    if (!node.IsDefined()) return "";
    if (!node.IsScalar()) {
      note_at(path, fmt::format("'{}' must be {}, got {}", path, what, describe_kind(node)));
      return "";
    }
    const std::string& text = node.Scalar();
    const bool blank = std::all_of(text.begin(), text.end(), [](char c) {
      return c == ' ' || c == '\t' || c == '\n' || c == '\r';
    });
    if (blank) note_at(path, fmt::format("'{}' must be {}, got an empty string", path, what));
    return text;
  }

  // A numeric leaf: {value: <number>, source: "<citation>"}.
  template <typename T>
  void read_leaf(const YAML::Node& node, const std::string& path, Sourced<T>& out) {
    if (!node.IsDefined()) return;  // noted as missing
    if (!node.IsMap()) {
      note_at(path, fmt::format("'{}' must be a map {{value: <number>, source: \"<where the "
                                "number comes from>\"}}, got {}",
                                path, describe_kind(node)));
      return;
    }
    check_map(node, path, kLeafKeys, "a map {value, source}");
    if (node["value"].IsDefined()) out.value = read_number<T>(node["value"], path + ".value");
    out.source = read_text(node["source"], path + ".source",
                           "a non-empty string naming where the number comes from");
  }

 private:
  // A bad number is noted and reads as 0.
  template <typename T>
  T read_number(const YAML::Node& node, const std::string& path) {
    constexpr bool kInteger = std::is_integral_v<T>;
    const char* kind = kInteger ? "an integer" : "a number";
    // Quoted scalars carry the tag "!": "132" is text, not a number.
    if (!node.IsScalar() || node.Tag() == "!") {
      note_at(path, fmt::format("'{}' must be {}, got {}", path, kind, describe_kind(node)));
      return T{};
    }
    const std::string& text = node.Scalar();
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if constexpr (kInteger) {
      long long v = 0;
      const auto [end, ec] = std::from_chars(first, last, v);
      if (ec == std::errc::result_out_of_range) {
        note_at(path, fmt::format("'{}' = {} is out of range", path, text));
        return T{};
      }
      if (ec != std::errc() || end != last) {
        note_at(path, fmt::format("'{}' must be {}, got '{}'", path, kind, text));
        return T{};
      }
      if (v < static_cast<long long>(std::numeric_limits<T>::min()) ||
          v > static_cast<long long>(std::numeric_limits<T>::max())) {
        note_at(path, fmt::format("'{}' = {} is out of range", path, text));
        return T{};
      }
      return static_cast<T>(v);
    } else {
      double v = 0;
      const auto [end, ec] = std::from_chars(first, last, v);
      if (ec != std::errc() || end != last || !std::isfinite(v)) {
        note_at(path, fmt::format("'{}' must be a finite number, got '{}'", path, text));
        return T{};
      }
      return v;
    }
  }

  std::string origin_;
  std::map<std::string, int> lines_;
  std::vector<std::string> errors_;
};

template <typename Spec, std::size_t N>
void read_section(Reader& reader, const YAML::Node& root, const std::string& section,
                  const std::array<Field<Spec>, N>& fields, Spec& spec) {
  const YAML::Node node = root[section];
  if (!node.IsDefined()) return;  // noted as missing
  if (!reader.check_map(node, section, keys_of(fields), "a map of " + section + " fields")) return;
  for (const auto& field : fields) {
    const std::string path = section + "." + field.key;
    std::visit([&](auto member) { reader.read_leaf(node[field.key], path, spec.*member); },
               field.member);
  }
}

// Values that cannot describe a real GPU. Messages name the keys and the numbers.
void validate(const HardwareProfile& p, Reader& reader) {
  const auto positive = [&](const std::string& path, auto v) {
    if (!(v > 0)) reader.note_at(path, fmt::format("{} = {} must be > 0", path, v));
  };
  const auto non_negative = [&](const std::string& path, auto v) {
    if (v < 0) reader.note_at(path, fmt::format("{} = {} must be >= 0", path, v));
  };
  const SmSpec& sm = p.sm;
  positive("sm.count", sm.count.value);
  positive("sm.boost_clock_mhz", sm.boost_clock_mhz.value);
  positive("sm.base_clock_mhz", sm.base_clock_mhz.value);
  positive("sm.smem_per_sm_bytes", sm.smem_per_sm_bytes.value);
  positive("sm.smem_per_cta_max_bytes", sm.smem_per_cta_max_bytes.value);
  non_negative("sm.smem_reserved_per_cta_bytes", sm.smem_reserved_per_cta_bytes.value);
  positive("sm.registers_per_sm", sm.registers_per_sm.value);
  positive("sm.max_registers_per_thread", sm.max_registers_per_thread.value);
  positive("sm.max_threads_per_sm", sm.max_threads_per_sm.value);
  positive("sm.max_ctas_per_sm", sm.max_ctas_per_sm.value);
  positive("sm.smem_bandwidth_bytes_per_clk", sm.smem_bandwidth_bytes_per_clk.value);
  positive("sm.l2_to_sm_bytes_per_clk", sm.l2_to_sm_bytes_per_clk.value);
  non_negative("sm.smem_latency_cycles", sm.smem_latency_cycles.value);
  // 0: no register reallocation (before Hopper).
  non_negative("sm.setmaxnreg_min_registers", sm.setmaxnreg_min_registers.value);
  non_negative("sm.setmaxnreg_max_registers", sm.setmaxnreg_max_registers.value);
  non_negative("sm.setmaxnreg_step_registers", sm.setmaxnreg_step_registers.value);
  non_negative("sm.setmaxnreg_cycles", sm.setmaxnreg_cycles.value);

  const ComputeSpec& c = p.compute;
  positive("compute.tensor_fp16_tflops", c.tensor_fp16_tflops.value);
  positive("compute.tensor_bf16_tflops", c.tensor_bf16_tflops.value);
  positive("compute.tensor_tf32_tflops", c.tensor_tf32_tflops.value);
  positive("compute.fp32_tflops", c.fp32_tflops.value);
  positive("compute.sfu_ops_per_clk_per_sm", c.sfu_ops_per_clk_per_sm.value);
  positive("compute.mma_sync_flops_per_clk_per_sm", c.mma_sync_flops_per_clk_per_sm.value);
  positive("compute.int32_ops_per_clk_per_sm", c.int32_ops_per_clk_per_sm.value);
  non_negative("compute.fp32_latency_cycles", c.fp32_latency_cycles.value);
  non_negative("compute.wgmma_latency_cycles", c.wgmma_latency_cycles.value);
  non_negative("compute.tensor_fp8_tflops", c.tensor_fp8_tflops.value);  // 0: no FP8 tensor cores

  const L2Spec& l2 = p.l2;
  positive("l2.size_bytes", l2.size_bytes.value);
  positive("l2.line_bytes", l2.line_bytes.value);
  positive("l2.sector_bytes", l2.sector_bytes.value);
  positive("l2.bandwidth_gbps", l2.bandwidth_gbps.value);
  non_negative("l2.hit_latency_cycles", l2.hit_latency_cycles.value);
  positive("l2.partitions", l2.partitions.value);

  const HbmSpec& hbm = p.hbm;
  positive("hbm.capacity_bytes", hbm.capacity_bytes.value);
  positive("hbm.bandwidth_gbps", hbm.bandwidth_gbps.value);
  non_negative("hbm.latency_ns", hbm.latency_ns.value);
  non_negative("launch.kernel_overhead_us", p.launch.kernel_overhead_us.value);

  // Upper limits: beyond them a profile describes no GPU, and the model's per-SM and per-set
  // arrays would not fit in memory (sm.count = 2e9 ended in std::bad_alloc).
  const auto at_most = [&](const std::string& path, auto v, auto limit, const char* why) {
    if (v > limit) {
      reader.note_at(path, fmt::format("{} = {} exceeds {} ({})", path, v, limit, why));
    }
  };
  at_most("sm.count", sm.count.value, 4096, "iosim's limit; GPUs have up to a few hundred SMs");
  at_most("sm.boost_clock_mhz", sm.boost_clock_mhz.value, 1e5, "100 GHz");
  at_most("sm.max_threads_per_sm", sm.max_threads_per_sm.value, 1 << 16, "iosim's limit");
  at_most("sm.smem_per_sm_bytes", sm.smem_per_sm_bytes.value, std::int64_t{1} << 30, "1 GiB");
  at_most("l2.size_bytes", l2.size_bytes.value, std::int64_t{1} << 32,
          "4 GiB, iosim's limit; GPUs have up to a few hundred MiB");
  at_most("l2.partitions", l2.partitions.value, 64, "iosim's limit");
  at_most("l2.sector_bytes", l2.sector_bytes.value, 4096, "iosim's limit");
  if (sm.boost_clock_mhz.value < 1) {
    reader.note_at("sm.boost_clock_mhz",
                   fmt::format("sm.boost_clock_mhz = {} is below 1 MHz", sm.boost_clock_mhz.value));
  }
  // The L2 model tracks regions of 128 sectors; every partition must hold at least one.
  const std::int64_t region_bytes =
      static_cast<std::int64_t>(l2.sector_bytes.value) * L2Cache::kSectorsPerRegion;
  if (l2.partitions.value > 0 && l2.size_bytes.value / l2.partitions.value < region_bytes) {
    reader.note_at(
        "l2.size_bytes",
        fmt::format("l2.size_bytes = {} over l2.partitions = {} leaves less than one region of "
                    "{} sectors x {} bytes = {} bytes per partition",
                    l2.size_bytes.value, l2.partitions.value, L2Cache::kSectorsPerRegion,
                    l2.sector_bytes.value, region_bytes));
  }

  // Cross-field consistency.
  if (sm.base_clock_mhz.value > sm.boost_clock_mhz.value) {
    reader.note_at("sm.base_clock_mhz",
                   fmt::format("sm.base_clock_mhz = {} exceeds sm.boost_clock_mhz = {}",
                               sm.base_clock_mhz.value, sm.boost_clock_mhz.value));
  }
  if (sm.smem_per_cta_max_bytes.value > sm.smem_per_sm_bytes.value) {
    reader.note_at("sm.smem_per_cta_max_bytes",
                   fmt::format("sm.smem_per_cta_max_bytes = {} exceeds sm.smem_per_sm_bytes = {}",
                               sm.smem_per_cta_max_bytes.value, sm.smem_per_sm_bytes.value));
  }
  if (sm.smem_per_cta_max_bytes.value + sm.smem_reserved_per_cta_bytes.value >
      sm.smem_per_sm_bytes.value) {
    reader.note_at(
        "sm.smem_reserved_per_cta_bytes",
        fmt::format("sm.smem_per_cta_max_bytes + sm.smem_reserved_per_cta_bytes = {} + {} = {} "
                    "exceeds sm.smem_per_sm_bytes = {}",
                    sm.smem_per_cta_max_bytes.value, sm.smem_reserved_per_cta_bytes.value,
                    sm.smem_per_cta_max_bytes.value + sm.smem_reserved_per_cta_bytes.value,
                    sm.smem_per_sm_bytes.value));
  }
  if (sm.max_registers_per_thread.value > sm.registers_per_sm.value) {
    reader.note_at("sm.max_registers_per_thread",
                   fmt::format("sm.max_registers_per_thread = {} exceeds sm.registers_per_sm = {}",
                               sm.max_registers_per_thread.value, sm.registers_per_sm.value));
  }
  // A maximum of 0 says the GPU has no register reallocation; the other keys are then unused.
  if (sm.setmaxnreg_max_registers.value > 0 &&
      sm.setmaxnreg_min_registers.value > sm.setmaxnreg_max_registers.value) {
    reader.note_at(
        "sm.setmaxnreg_min_registers",
        fmt::format("sm.setmaxnreg_min_registers = {} exceeds "
                    "sm.setmaxnreg_max_registers = {}",
                    sm.setmaxnreg_min_registers.value, sm.setmaxnreg_max_registers.value));
  }
  if (sm.max_ctas_per_sm.value > sm.max_threads_per_sm.value) {
    reader.note_at("sm.max_ctas_per_sm",
                   fmt::format("sm.max_ctas_per_sm = {} exceeds sm.max_threads_per_sm = {} (a CTA "
                               "has at least one thread)",
                               sm.max_ctas_per_sm.value, sm.max_threads_per_sm.value));
  }
  // (A size that is not positive was noted above; it divides nothing.)
  if (l2.sector_bytes.value > 0 && l2.line_bytes.value % l2.sector_bytes.value != 0) {
    reader.note_at("l2.sector_bytes",
                   fmt::format("l2.sector_bytes = {} does not divide l2.line_bytes = {}",
                               l2.sector_bytes.value, l2.line_bytes.value));
  }
  if (l2.line_bytes.value > 0 && l2.size_bytes.value % l2.line_bytes.value != 0) {
    reader.note_at("l2.line_bytes",
                   fmt::format("l2.line_bytes = {} does not divide l2.size_bytes = {}",
                               l2.line_bytes.value, l2.size_bytes.value));
  }
  const auto fraction = [&](const std::string& path, double v) {
    if (!(v > 0.0 && v <= 1.0))
      reader.note_at(path, fmt::format("{} = {} is not in (0, 1]", path, v));
  };
  fraction("hbm.achievable_fraction", hbm.achievable_fraction.value);
  fraction("l2.max_dirty_fraction", l2.max_dirty_fraction.value);

  if (const PowerSpec& w = p.power; w.present) {
    positive("power.limit_w", w.limit_w.value);
    non_negative("power.static_w", w.static_w.value);
    non_negative("power.clock_w", w.clock_w.value);
    if (!(w.voltage_clock_slope.value >= 0.0 && w.voltage_clock_slope.value <= 1.0)) {
      reader.note_at("power.voltage_clock_slope",
                     fmt::format("power.voltage_clock_slope = {} is not in [0, 1]",
                                 w.voltage_clock_slope.value));
    }
    non_negative("power.tensor_fp16_pj_per_flop", w.tensor_fp16_pj_per_flop.value);
    non_negative("power.tensor_fp8_pj_per_flop", w.tensor_fp8_pj_per_flop.value);
    non_negative("power.tensor_mma_sync_pj_per_flop", w.tensor_mma_sync_pj_per_flop.value);
    non_negative("power.fp32_pj_per_flop", w.fp32_pj_per_flop.value);
    non_negative("power.sfu_pj_per_op", w.sfu_pj_per_op.value);
    non_negative("power.l2_pj_per_byte", w.l2_pj_per_byte.value);
    non_negative("power.hbm_pj_per_byte", w.hbm_pj_per_byte.value);
    if (w.static_w.value >= w.limit_w.value) {
      reader.note_at("power.static_w",
                     fmt::format("power.static_w = {} must be below power.limit_w = {}",
                                 w.static_w.value, w.limit_w.value));
    }
  }
}

HardwareProfile read_profile(const YAML::Node& root, Reader& reader) {
  if (!root.IsMap()) {
    reader.fail(fmt::format("the top level must be a map with keys {}, got {}",
                            join(kRequiredTopKeys), describe_kind(root)));
  }
  reader.check_map(root, "", kTopKeys, "a profile map", kOptionalTopKeys);
  HardwareProfile profile;
  profile.name = reader.read_text(root["name"], "name", "a non-empty string");
  profile.description = reader.read_text(root["description"], "description", "a non-empty string");
  read_section(reader, root, "sm", kSmFields, profile.sm);
  read_section(reader, root, "compute", kComputeFields, profile.compute);
  read_section(reader, root, "l2", kL2Fields, profile.l2);
  read_section(reader, root, "hbm", kHbmFields, profile.hbm);
  read_section(reader, root, "launch", kLaunchFields, profile.launch);
  profile.power.present = root.IsMap() && root["power"].IsDefined();
  if (profile.power.present) read_section(reader, root, "power", kPowerFields, profile.power);
  // Values are checked once every key reads: a missing or unreadable one would look like a 0.
  if (reader.ok()) validate(profile, reader);
  reader.throw_if_any();
  return profile;
}

std::string read_file_text(const fs::path& path) {
  return read_text_file(path, "profile file", kMaxProfileBytes);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Replaces the values of `overrides` in `root`, each {value, source: "--set"}, before the Reader
// sees it. Returns "key=value;..." with the values as written. Throws ConfigError naming every
// bad override at once: an unknown key, a value that is not a number, a fraction for an integer.
std::string apply_overrides(YAML::Node& root, const std::vector<ProfileOverride>& overrides) {
  std::vector<std::string> errors;
  std::string applied;
  for (const ProfileOverride& o : overrides) {
    const std::optional<bool> integer = key_is_integer(o.key);
    if (!integer) {
      errors.push_back(fmt::format("--set {}: unknown profile key{}", o.key,
                                   did_you_mean(o.key, profile_keys())));
      continue;
    }
    double v = 0;
    const char* first = o.value.data();
    const char* last = first + o.value.size();
    const auto [end, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || end != last || !std::isfinite(v)) {
      errors.push_back(fmt::format("--set {}={}: the value must be a number", o.key, o.value));
      continue;
    }
    std::string text = fmt::format("{}", v);
    if (*integer) {
      if (v != std::floor(v) || std::abs(v) > 9.2e18) {
        errors.push_back(
            fmt::format("--set {}={}: {} takes a whole number", o.key, o.value, o.key));
        continue;
      }
      text = fmt::format("{}", static_cast<long long>(v));
    }
    applied += fmt::format("{}{}={}", applied.empty() ? "" : ";", o.key, text);
    const std::size_t dot = o.key.find('.');
    YAML::Node section = root[o.key.substr(0, dot)];
    if (root.IsMap() && !section.IsDefined() && o.key.substr(0, dot) == "power") {
      errors.push_back(fmt::format(
          "--set {}: the profile has no power section (no power limit is modelled on it)", o.key));
      continue;
    }
    if (!root.IsMap() || !section.IsMap()) continue;  // the Reader reports the broken section
    YAML::Node leaf(YAML::NodeType::Map);
    leaf["value"] = YAML::Node(text);
    leaf["source"] = "--set on the command line";
    section[o.key.substr(dot + 1)] = leaf;
  }
  if (!errors.empty()) {
    std::string all;
    for (const std::string& e : errors) all += (all.empty() ? "" : "\n") + e;
    throw ConfigError(all);
  }
  return applied;
}

// Counts a YAML text's documents without building them. yaml-cpp 0.7's LoadAll never returns,
// allocating until memory runs out, when a ',' stands at a document's top level (", a", "[a], b",
// "\"x\", b"; found by tests/fuzz/fuzz_profile.cpp): its parser ends an empty document at the
// ',' without consuming it and starts the next one there, for ever. Two documents that start at
// the same place are that loop, and the token there is what the user must fix.
class DocumentCounter final : public YAML::EventHandler {
 public:
  explicit DocumentCounter(std::vector<YAML::Mark>& starts) : starts_(starts) {}
  void OnDocumentStart(const YAML::Mark& mark) override { starts_.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  std::vector<YAML::Mark>& starts_;
};

// The number of documents in yaml_text; a top-level token that would stop yaml-cpp's parser for
// ever is a ConfigError naming its line and column. Parse errors propagate as YAML exceptions.
std::size_t count_documents(const std::string& yaml_text, const std::string& origin) {
  std::istringstream in(yaml_text);
  YAML::Parser parser(in);
  std::vector<YAML::Mark> starts;
  DocumentCounter counter(starts);
  while (parser.HandleNextDocument(counter)) {
    if (starts.size() >= 2 && starts[starts.size() - 1].pos == starts[starts.size() - 2].pos) {
      const YAML::Mark& at = starts.back();
      const auto pos = static_cast<std::size_t>(std::max(at.pos, 0));
      const char c = pos < yaml_text.size() ? yaml_text[pos] : ' ';
      throw ConfigError(fmt::format(
          "{}:{}:{}: YAML syntax error: '{}' cannot stand at the top level of a document (a "
          "profile is a map of 'key: value' lines)",
          origin, at.line + 1, at.column + 1, c));
    }
  }
  return starts.size();
}

HardwareProfile parse_profile_with(const std::string& yaml_text, const std::string& origin,
                                   const std::vector<ProfileOverride>& overrides,
                                   std::string& applied);

}  // namespace

HardwareProfile parse_profile(const std::string& yaml_text, const std::string& origin) {
  std::string applied;
  return parse_profile_with(yaml_text, origin, {}, applied);
}

namespace {

// The line and offset of the first byte that is not text (UTF-8 without control characters
// other than tab, CR and LF), or 0 when all is text. yaml-cpp can take minutes and gigabytes on
// such bytes (a 206-byte file with 0xff bytes, found by tests/fuzz/fuzz_profile.cpp).
std::pair<std::size_t, std::size_t> first_non_text(const std::string& text) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t extra = 0;
    if (c == '\n') ++line;
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return {line, i + 1};
    } else if ((c & 0xe0) == 0xc0 && c >= 0xc2) {
      extra = 1;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
    } else if ((c & 0xf8) == 0xf0 && c <= 0xf4) {
      extra = 3;
    } else {
      return {line, i + 1};
    }
    for (std::size_t k = 1; k <= extra; ++k) {
      if (i + k >= text.size() || (static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) {
        return {line, i + 1};
      }
    }
    i += extra + 1;
  }
  return {0, 0};
}

// The YAML documents of `yaml_text` (none or one), after the checks every YAML input gets: UTF-8
// text, no anchors or aliases, at most one document. `what` names the kind of file ("profile").
std::vector<YAML::Node> load_documents(const std::string& yaml_text, const std::string& origin,
                                       const std::string& what) {
  if (const auto [line, offset] = first_non_text(yaml_text); line != 0) {
    throw ConfigError(fmt::format(
        "{}:{}: not a text file: byte {} (0x{:02x}) is not UTF-8 text; a {} is YAML", origin,
        line, offset, static_cast<unsigned char>(yaml_text[offset - 1]), what));
  }
  // Anchors and aliases: a profile needs none, and yaml-cpp can take minutes on a few hundred
  // bytes of malformed ones (found by tests/fuzz/fuzz_profile.cpp). A '&' or '*' that starts a
  // node (after a space, '[', '{', ',' or ':' or at a line's start) outside a quoted string or a
  // comment is refused.
  {
    std::size_t line = 1;
    char quote = 0, prev = '\n';
    bool comment = false;
    for (const char c : yaml_text) {
      if (c == '\n') {
        ++line;
        quote = 0;
        comment = false;
      } else if (!comment && quote == 0 && (c == '"' || c == '\'')) {
        quote = c;
      } else if (!comment && quote != 0 && c == quote) {
        quote = 0;
      } else if (quote == 0 && c == '#' && (prev == ' ' || prev == '\n' || prev == '\t')) {
        comment = true;
      } else if (!comment && quote == 0 && (c == '&' || c == '*') &&
                 std::string_view(" \t\n[{,:").find(prev) != std::string_view::npos) {
        throw ConfigError(
            fmt::format("{}:{}: YAML anchors and aliases ('{}') are not allowed in a {}", origin,
                        line, c, what));
      }
      prev = c;
    }
  }
  std::vector<YAML::Node> documents;
  try {
    const std::size_t count = count_documents(yaml_text, origin);
    if (count > 1) {
      throw ConfigError(fmt::format("{}: holds {} YAML documents; a {} is exactly one", origin,
                                    count, what));
    }
    if (count == 1) documents.push_back(YAML::Load(yaml_text));
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", origin, e.mark.line + 1,
                                  e.mark.column + 1, e.msg));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: cannot parse YAML: {}", origin, e.what()));
  }
  return documents;
}

// A YAML node as JSON: maps as objects, sequences as arrays, scalars as numbers where they read
// as one whole, true/false as booleans, null as null, anything else as a string.
nlohmann::json to_json(const YAML::Node& node, int depth) {
  if (depth > 32) throw ConfigError("nested deeper than 32 levels");
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& entry : node) {
        out[entry.first.as<std::string>()] = to_json(entry.second, depth + 1);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(to_json(item, depth + 1));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string text = node.Scalar();
      if (node.Tag() != "!") {  // unquoted
        if (text == "true") return true;
        if (text == "false") return false;
        if (text == "null" || text == "~") return nullptr;
        char* end = nullptr;
        errno = 0;
        const long long i = std::strtoll(text.c_str(), &end, 10);
        if (!text.empty() && end == text.c_str() + text.size() && errno == 0) return i;
        errno = 0;
        const double d = std::strtod(text.c_str(), &end);
        if (!text.empty() && end == text.c_str() + text.size() && errno == 0) return d;
      }
      return text;
    }
    default:
      return nullptr;
  }
}

}  // namespace

nlohmann::json read_yaml_json(const std::string& yaml_text, const std::string& origin,
                              const std::string& what) {
  const std::vector<YAML::Node> documents = load_documents(yaml_text, origin, what);
  if (documents.empty()) return nullptr;
  try {
    return to_json(documents[0], 0);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", origin, e.what()));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: cannot read YAML: {}", origin, e.what()));
  }
}

namespace {

HardwareProfile parse_profile_with(const std::string& yaml_text, const std::string& origin,
                                   const std::vector<ProfileOverride>& overrides,
                                   std::string& applied) {
  std::vector<YAML::Node> documents = load_documents(yaml_text, origin, "profile");
  if (documents.empty() || (documents.size() == 1 && documents[0].IsNull())) {
    throw ConfigError(fmt::format("{}: the profile is empty; expected a map with keys {}", origin,
                                  join(kRequiredTopKeys)));
  }
  if (documents.size() > 1) {
    throw ConfigError(fmt::format("{}: holds {} YAML documents; a profile is exactly one", origin,
                                  documents.size()));
  }
  applied = apply_overrides(documents[0], overrides);
  Reader reader(applied.empty() ? origin : fmt::format("{} with --set {}", origin, applied));
  try {
    return read_profile(documents[0], reader);
  } catch (const YAML::Exception& e) {
    // Every access above is checked first, so this is a bug in the walk, not in the file.
    throw InternalError(
        fmt::format("{}: unexpected YAML error while reading the profile: {}", origin, e.what()));
  }
}

}  // namespace

std::filesystem::path builtin_profile_dir() {
  if (const char* env = std::getenv("IOSIM_PROFILE_DIR"); env != nullptr && *env != '\0') {
    return fs::path(env);
  }
  return {};
}

std::vector<std::string> builtin_profile_names() {
  const fs::path dir = builtin_profile_dir();
  std::vector<std::string> names;
  if (dir.empty()) {
    for (const EmbeddedProfile& p : embedded_profiles()) names.emplace_back(p.name);
    std::sort(names.begin(), names.end());
    return names;
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw ConfigError(fmt::format(
        "built-in profile directory '{}' does not exist (IOSIM_PROFILE_DIR overrides it)",
        dir.string()));
  }
  try {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
        names.push_back(entry.path().stem().string());
      }
    }
  } catch (const fs::filesystem_error& e) {
    throw ConfigError(
        fmt::format("cannot list built-in profiles in '{}': {}", dir.string(), e.what()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string builtin_profile_text(const std::string& name) {
  const std::vector<std::string> names = builtin_profile_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw ConfigError(fmt::format("unknown profile '{}'; built-in profiles: {}{}", name,
                                  names.empty() ? "(none)" : join(names),
                                  did_you_mean(name, names)));
  }
  const fs::path dir = builtin_profile_dir();
  if (!dir.empty()) return read_file_text(dir / (name + ".yaml"));
  for (const EmbeddedProfile& p : embedded_profiles()) {
    if (p.name == name) return std::string(p.yaml);
  }
  throw InternalError(fmt::format("built-in profile '{}' listed but not embedded", name));
}

HardwareProfile load_profile(const std::string& name_or_path) {
  return load_profile(name_or_path, {});
}

HardwareProfile load_profile(const std::string& name_or_path,
                             const std::vector<ProfileOverride>& overrides) {
  std::error_code ec;
  const bool is_path = fs::is_regular_file(name_or_path, ec) ||
                       name_or_path.find('/') != std::string::npos ||
                       ends_with(name_or_path, ".yaml") || ends_with(name_or_path, ".yml");
  std::string applied;
  HardwareProfile profile;
  if (is_path) {
    const fs::path path(name_or_path);
    profile = parse_profile_with(read_file_text(path), path.string(), overrides, applied);
    profile.source_file = path;
  } else {
    const std::vector<std::string> names = builtin_profile_names();
    if (std::find(names.begin(), names.end(), name_or_path) == names.end()) {
      throw ConfigError(fmt::format("unknown profile '{}'; built-in profiles: {}{}", name_or_path,
                                    names.empty() ? "(none)" : join(names),
                                    did_you_mean(name_or_path, names)));
    }
    const std::string text = builtin_profile_text(name_or_path);
    const fs::path dir = builtin_profile_dir();
    // An embedded profile is named after the file it was built from; nothing is read from there.
    const fs::path path = (dir.empty() ? fs::path("hwprofiles") : dir) / (name_or_path + ".yaml");
    profile = parse_profile_with(text, dir.empty() ? path.string() + " (built in)" : path.string(),
                                 overrides, applied);
    profile.source_file = path;
    if (profile.name != name_or_path) {
      throw ConfigError(
          fmt::format("{}: name '{}' must equal the file stem '{}' for a built-in profile",
                      path.string(), profile.name, name_or_path));
    }
  }
  if (!applied.empty()) {
    profile.name += "[" + applied + "]";
    profile.description += " with " + applied;
  }
  return profile;
}

std::vector<ProfileOverride> parse_profile_overrides(const std::vector<std::string>& texts) {
  std::vector<ProfileOverride> out;
  std::vector<std::string> errors;
  for (const std::string& t : texts) {
    const std::size_t eq = t.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == t.size()) {
      errors.push_back(fmt::format("--set '{}' must be KEY=VALUE, e.g. l2.size_bytes=20e6", t));
      continue;
    }
    out.push_back({t.substr(0, eq), t.substr(eq + 1)});
  }
  if (!errors.empty()) {
    std::string all;
    for (const std::string& e : errors) all += (all.empty() ? "" : "\n") + e;
    throw ConfigError(all);
  }
  return out;
}

std::vector<std::string> profile_keys() {
  std::vector<std::string> keys;
  for_each_section([&](const char* section, const auto& fields) {
    for (const auto& f : fields) keys.push_back(std::string(section) + "." + f.key);
  });
  return keys;
}

std::string profile_template() {
  std::string s =
      "# An iosim hardware profile: every key is required, every number is {value, source}.\n"
      "# The source names where the number comes from: a document, a committed measurement log,\n"
      "# or the command that measured it. `iosim profiles --show NAME` prints a filled-in one.\n"
      "name: my-gpu                 # for a built-in profile: the file's stem\n"
      "description: \"My GPU\"\n";
  for_each_section([&](const char* section, const auto& fields) {
    s += fmt::format("{}:\n", section);
    for (const auto& f : fields) {
      s += fmt::format("  {}: {{value: 0, source: \"\"}}\n", f.key);
    }
  });
  return s;
}

}  // namespace iosim
