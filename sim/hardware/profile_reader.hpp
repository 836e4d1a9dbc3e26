#pragma once
// The walk of one profile document (yaml-cpp nodes) into a HardwareProfile: every key known and
// present, every number a {value, source} pair, each problem noted at its line. Used by the
// loader (profile_loader.cpp) and the value checks (profile_checks.cpp).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/base/suggest.hpp"
#include "sim/hardware/profile.hpp"
#include "sim/hardware/profile_schema.hpp"

namespace iosim::profile_yaml {

inline std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

inline std::string describe_kind(const YAML::Node& node) {
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
// Defined in profile_checks.cpp.
void validate(const HardwareProfile& p, Reader& reader);

}  // namespace iosim::profile_yaml
