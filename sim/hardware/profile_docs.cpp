// What a profile's schema rows (profile_schema.hpp) say to a reader: hwprofiles/README.md's key
// tables (`iosim profiles --keys SECTION --format md`) and schemas/profile.schema.json
// (`iosim profiles --schema`). Both are checked against the committed files (scripts/
// readme_tables.sh, tests/schema_test.sh), so that neither drifts from the rows.
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/base/sourced_schema.hpp"
#include "sim/base/suggest.hpp"
#include "sim/hardware/profile_overrides.hpp"
#include "sim/hardware/profile_schema.hpp"

namespace iosim {

using profile_yaml::Bounds;
using profile_yaml::Field;
using profile_yaml::for_each_known_section;
using profile_yaml::integral_member;

namespace {

// A bound as the docs write it: 4096, 1e6, 1e-3, 1073741824.
std::string bound_text(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e5) return fmt::format("{}", static_cast<long long>(v));
  for (int k = -12; k <= 12; ++k) {
    const std::string power = fmt::format("1e{}", k);
    if (v == std::strtod(power.c_str(), nullptr)) return power;
  }
  return fmt::format("{}", v);
}

// What validate() checks of one key, in words: its bounds, then the checks across keys.
template <typename Spec>
std::string check_text(const Field<Spec>& f) {
  const Bounds& b = f.bounds;
  const bool positive = b.sign == Bounds::Sign::positive;
  const bool non_negative = b.sign == Bounds::Sign::non_negative;
  std::string out;
  if (b.fraction != Bounds::Interval::none) {
    out = b.fraction == Bounds::Interval::open_zero_one ? "in (0, 1]" : "in [0, 1]";
  } else if (b.unit != nullptr) {
    out = fmt::format("{}in [{}, {}]", non_negative ? "0, or " : "", bound_text(b.lo),
                      bound_text(b.hi));
  } else if (b.max_why != nullptr) {
    out = fmt::format("{}{}]",
                      positive       ? "in (0, "
                      : non_negative ? "in [0, "
                                     : "<= ",
                      bound_text(b.max));
  } else {
    out = positive ? "> 0" : non_negative ? ">= 0" : "";
  }
  if (f.across != nullptr) out += (out.empty() ? "" : ", ") + std::string(f.across);
  return out;
}

template <typename Spec, std::size_t N>
void append_key_rows(std::string& out, const char* section,
                     const std::array<Field<Spec>, N>& fields, bool markdown) {
  for (const Field<Spec>& f : fields) {
    const bool integer = std::visit([](auto m) { return integral_member(m); }, f.member);
    const char* type = integer ? "integer" : "number";
    if (markdown) {
      out +=
          fmt::format("| `{}` | {} | {} | {} | {} |\n", f.key, type, f.unit, f.doc, check_text(f));
    } else {
      out += fmt::format("{:<40} {:<8} {:<20} {}\n{:<40} {}\n", std::string(section) + "." + f.key,
                         type, f.unit, check_text(f), "", f.doc);
    }
  }
}

}  // namespace

std::string profile_key_table(const std::string& section, bool markdown) {
  std::string out;
  std::vector<std::string> sections;
  for_each_known_section([&](const char* name, const auto& fields) {
    sections.emplace_back(name);
    if (section != "all" && section != name) return;
    if (markdown) {
      if (section == "all") out += fmt::format("{}### `{}`\n\n", out.empty() ? "" : "\n", name);
      out += "| key | type | unit | meaning | check |\n| --- | --- | --- | --- | --- |\n";
    }
    append_key_rows(out, name, fields, markdown);
  });
  if (out.empty()) {
    std::string names = "all";
    for (const std::string& name : sections) names += ", " + name;
    throw ConfigError(fmt::format("--keys {}: no such profile section; sections: {}{}", section,
                                  names, did_you_mean(section, sections)));
  }
  return out;
}

namespace {

using Json = nlohmann::ordered_json;

// A key's {value, source} map: the value's type and bounds as JSON Schema says them.
template <typename Spec>
Json key_schema(const Field<Spec>& f) {
  const Bounds& b = f.bounds;
  const bool integer = std::visit([](auto m) { return integral_member(m); }, f.member);
  Json value{{"type", integer ? "integer" : "number"}};
  if (b.fraction != Bounds::Interval::none) {
    if (b.fraction == Bounds::Interval::open_zero_one) {
      value["exclusiveMinimum"] = 0;
    } else {
      value["minimum"] = 0;
    }
    value["maximum"] = 1;
  } else if (b.unit != nullptr) {
    const Json range{{"minimum", b.lo}, {"maximum", b.hi}};
    if (b.sign == Bounds::Sign::non_negative) {
      value["anyOf"] = Json::array({Json{{"const", 0}}, range});
    } else {
      value.update(range);
    }
  } else {
    if (b.sign == Bounds::Sign::positive) value["exclusiveMinimum"] = 0;
    if (b.sign == Bounds::Sign::non_negative) value["minimum"] = 0;
    if (b.max_why != nullptr) value["maximum"] = b.max;
  }
  std::string description = fmt::format("{} ({})", f.doc, f.unit);
  if (f.across != nullptr) description += fmt::format("; also {}", f.across);
  return sourced_value_schema(std::move(description), std::move(value));
}

}  // namespace

std::string profile_json_schema() {
  Json properties{
      {"name",
       {{"type", "string"},
        {"minLength", 1},
        {"description", "profile name; for a built-in profile, equal to the file stem"}}},
      {"description", {{"type", "string"}, {"description", "human name of the GPU"}}}};
  for_each_known_section([&](const char* section, const auto& fields) {
    Json keys = Json::object();
    Json required = Json::array();
    for (const auto& f : fields) {
      keys[f.key] = key_schema(f);
      required.push_back(f.key);
    }
    properties[section] = Json{{"type", "object"},
                               {"required", required},
                               {"additionalProperties", false},
                               {"properties", keys}};
  });
  Json required = Json::array();
  for (const std::string& key : profile_yaml::kRequiredTopKeys) required.push_back(key);
  std::string optional;
  for (const profile_yaml::OptionalSection& s : profile_yaml::kOptionalSections) {
    optional +=
        fmt::format("{}{} (without it, {})", optional.empty() ? "" : "; ", s.name, s.without);
  }
  return rows_schema_text(
      "profile", "iosim hardware profile (hwprofiles/*.yaml, read as JSON)",
      "Written by `iosim profiles --schema` from the rows of sim/hardware/profile_schema.hpp "
      "(tests/schema_test.sh fails when this file differs). Each number is {value, source}. "
      "The loader checks more than a schema can say: the checks across keys (each key's "
      "description names them), duplicate keys, a quoted number. Optional sections, all their "
      "keys or none: " +
          optional + ".",
      std::move(required), std::move(properties));
}

}  // namespace iosim
