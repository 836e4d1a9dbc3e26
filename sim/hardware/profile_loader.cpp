// The one place that reads profiles. It turns a profile file into a HardwareProfile and refuses
// anything it does not fully understand: every key must be known, every key present, every number
// a {value, source} pair, and the numbers must describe a machine that can exist. The YAML text's
// checks are in yaml_documents.cpp, the schema in profile_schema.hpp, the walk of a document in
// profile_reader.hpp and the values' checks in profile_checks.cpp.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/base/suggest.hpp"
#include "sim/base/text_file.hpp"
#include "sim/hardware/builtin_profiles.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/hardware/profile_overrides.hpp"
#include "sim/hardware/profile_reader.hpp"
#include "sim/hardware/profile_schema.hpp"
#include "sim/hardware/yaml_documents.hpp"

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

using namespace profile_yaml;
namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

HardwareProfile read_profile(const YAML::Node& root, Reader& reader) {
  if (!root.IsMap()) {
    reader.fail(fmt::format("the top level must be a map with keys {}, got {}",
                            join(kRequiredTopKeys), describe_kind(root)));
  }
  reader.check_map(root, "", kTopKeys, "a profile map", kOptionalTopKeys);
  HardwareProfile profile;
  profile.name = reader.read_text(root["name"], "name", "a non-empty string");
  // The name is one line of every table and page (a "\n" escape split the run's header line).
  if (const int c = first_control_character_in_line(profile.name); c >= 0) {
    reader.note_at("name", fmt::format("'name' must be one line of text: it holds the control "
                                       "character U+{:04X}",
                                       c));
  }
  profile.description = reader.read_text(root["description"], "description", "a non-empty string");
  read_section(reader, root, "sm", kSmFields, profile.sm);
  read_section(reader, root, "compute", kComputeFields, profile.compute);
  read_section(reader, root, "l2", kL2Fields, profile.l2);
  read_section(reader, root, "hbm", kHbmFields, profile.hbm);
  read_section(reader, root, "launch", kLaunchFields, profile.launch);
  for_each_optional_section(profile, [&](const char* section, const auto& fields, auto& spec) {
    spec.present = root.IsMap() && root[section].IsDefined();
    if (spec.present) read_section(reader, root, section, fields, spec);
  });
  // Values are checked once every key reads: a missing or unreadable one would look like a 0.
  if (reader.ok()) validate(profile, reader);
  reader.throw_if_any();
  return profile;
}

template <typename Spec, std::size_t N>
void append_values(std::string& out, const Spec& spec,
                   const std::array<profile_yaml::Field<Spec>, N>& fields) {
  for (const auto& f : fields) {
    std::visit([&](auto member) { out += fmt::format("{};", (spec.*member).value); }, f.member);
  }
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
      std::vector<std::string> known;  // the optional sections' keys too (power.limit_w)
      for_each_known_section([&](const char* section, const auto& fields) {
        for (const auto& f : fields) known.push_back(std::string(section) + "." + f.key);
      });
      errors.push_back(
          fmt::format("--set {}: unknown profile key{}", o.key, did_you_mean(o.key, known)));
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
      if (v != std::floor(v)) {
        errors.push_back(
            fmt::format("--set {}={}: {} takes a whole number", o.key, o.value, o.key));
        continue;
      }
      if (std::abs(v) > 9.2e18) {  // past a 64-bit integer (--set l2.size_bytes=1e30)
        errors.push_back(fmt::format("--set {}={}: {} is out of range for {} (at most 9.2e18)",
                                     o.key, o.value, o.value, o.key));
        continue;
      }
      text = fmt::format("{}", static_cast<long long>(v));
    }
    applied += fmt::format("{}{}={}", applied.empty() ? "" : ";", o.key, text);
    const std::size_t dot = o.key.find('.');
    YAML::Node section = root[o.key.substr(0, dot)];
    if (root.IsMap() && !section.IsDefined()) {  // an optional section the profile leaves out
      for (const OptionalSection& s : kOptionalSections) {
        if (o.key.substr(0, dot) == s.name) {
          errors.push_back(fmt::format("--set {}: the profile has no {} section ({})", o.key,
                                       s.name, s.without));
        }
      }
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

HardwareProfile parse_profile_with(const std::string& yaml_text, const std::string& origin,
                                   const std::vector<ProfileOverride>& overrides,
                                   std::string& applied) {
  std::vector<YAML::Node> documents = load_yaml_documents(yaml_text, origin, "profile");
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

HardwareProfile parse_profile(const std::string& yaml_text, const std::string& origin) {
  std::string applied;
  return parse_profile_with(yaml_text, origin, {}, applied);
}

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
    for (const EmbeddedYaml& p : embedded_profiles()) names.emplace_back(p.name);
    std::sort(names.begin(), names.end());
    return names;
  }
  return yaml_stems_in(dir, "profile", "IOSIM_PROFILE_DIR");
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
  for (const EmbeddedYaml& p : embedded_profiles()) {
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
    ProfileOverride o{t.substr(0, eq), t.substr(eq + 1)};
    // A key set twice is refused as a profile file's duplicate key is: the last one won, and the
    // title showed both values (issue #50 S9). A sweep lists a key's values in one --set.
    const auto first = std::find_if(out.begin(), out.end(),
                                    [&](const ProfileOverride& x) { return x.key == o.key; });
    if (first != out.end()) {
      errors.push_back(
          fmt::format("--set {} is given twice ({} and {}); give it once (a sweep "
                      "lists its values in one --set)",
                      o.key, first->value, o.value));
      continue;
    }
    out.push_back(std::move(o));
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

std::string profile_fingerprint(const HardwareProfile& p) {
  std::string out;
  for_each_section(p, [&](const char*, const auto& fields, const auto& spec) {
    append_values(out, spec, fields);
  });
  for_each_optional_section(p, [&](const char* section, const auto& fields, const auto& spec) {
    out += spec.present ? std::string(section) + ";" : "-;";
    if (spec.present) append_values(out, spec, fields);
  });
  return out;
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
