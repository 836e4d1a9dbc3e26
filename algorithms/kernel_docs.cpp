// What a kernel description's schema rows (kernel_schema.hpp) say to a reader: docs/kernels.md's
// key table (`iosim kernels --keys --format md`) and schemas/kernel.schema.json (`iosim kernels
// --schema`). Both are checked against the committed files (scripts/readme_tables.sh,
// tests/schema_test.sh), so that neither drifts from the rows, as model_docs.cpp's are for model
// files. A dataflow key's names are the registry's (algorithms/registry.cpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/dataflow.hpp"
#include "algorithms/kernel_schema.hpp"
#include "sim/base/sourced_schema.hpp"

namespace iosim {
namespace {

using kernel_yaml::Key;
using kernel_yaml::Kind;

// The names a key's value must be one of: a dataflow's (the registry's), an enum's; empty for any
// other key.
std::vector<std::string> names_of(const Key& k) {
  std::vector<std::string> names;
  if (k.kind == Kind::forward || k.kind == Kind::backward) {
    for (const Dataflow* d : k.kind == Kind::forward ? forward_dataflows() : backward_dataflows()) {
      names.emplace_back(d->name);
    }
  } else {
    for (const char* name : kernel_yaml::choices(k)) names.emplace_back(name);
  }
  return names;
}

std::string dotted(const Key& k) {
  return *k.section == '\0' ? std::string(k.key) : fmt::format("{}.{}", k.section, k.key);
}

// The values a key takes and the checks across keys, in words: the table's "values" column.
std::string values_text(const Key& k) {
  std::string out;
  switch (k.kind) {
    case Kind::text:
      out = "text (1 to 200 characters)";
      break;
    case Kind::boolean:
      out = "`true`/`false`";
      if (k.omitted != nullptr) out += fmt::format(" (default {})", k.omitted);
      break;
    case Kind::integer:
      out = fmt::format("{} to {}", k.lo, k.hi);
      break;
    case Kind::forward:
    case Kind::backward:
    case Kind::choice: {
      const char* sep = "";
      for (const std::string& name : names_of(k)) {
        out += fmt::format("{}`{}`{}", sep, name,
                           k.omitted != nullptr && name == k.omitted ? " (default)" : "");
        sep = ", ";
      }
      break;
    }
  }
  if (k.required != nullptr) out += "; required";
  if (const char* across = kernel_yaml::across_text(k.across)) out += fmt::format("; {}", across);
  return out;
}

}  // namespace

std::string kernel_mechanisms_line() {
  std::string out = "mechanisms:";
  const char* sep = " ";
  for (const Key& k : kernel_yaml::kKeys) {
    if (std::string_view(k.section) != "mechanisms") continue;
    std::vector<std::string> values = names_of(k);
    if (k.kind == Kind::boolean) values = {"true", "false"};
    out += fmt::format("{}{} {}", sep, k.key, fmt::join(values, " | "));
    sep = "; ";
  }
  return out;
}

std::string kernel_key_table(bool markdown) {
  std::string out;
  if (markdown) out += "| key | values | meaning |\n| --- | --- | --- |\n";
  for (const Key& k : kernel_yaml::kKeys) {
    if (markdown) {
      out += fmt::format("| `{}` | {} | {} |\n", dotted(k), values_text(k), k.doc);
    } else {
      out += fmt::format("{:<34} {}\n{:<34} {}\n", dotted(k), values_text(k), "", k.doc);
    }
  }
  return out;
}

namespace {

using Json = nlohmann::ordered_json;

// A key's schema: its kind's type and bounds as JSON Schema says them, its doc and checks across
// keys as its description.
Json key_schema(const Key& k) {
  std::string description = k.doc;
  if (const char* across = kernel_yaml::across_text(k.across)) {
    description += fmt::format(" ({})", across);
  }
  Json out{{"description", std::move(description)}};
  switch (k.kind) {
    case Kind::text:
      out["type"] = "string";
      out["minLength"] = 1;
      out["maxLength"] = 200;
      break;
    case Kind::boolean:
      out["type"] = "boolean";
      break;
    case Kind::integer:
      out["type"] = "integer";
      out["minimum"] = k.lo;
      out["maximum"] = k.hi;
      break;
    case Kind::forward:
    case Kind::backward:
    case Kind::choice:
      out["enum"] = names_of(k);
      break;
  }
  return out;
}

}  // namespace

std::string kernel_json_schema() {
  Json properties = Json::object();
  Json required = Json::array();
  for (const Key& k : kernel_yaml::kKeys) {
    if (*k.section != '\0') continue;
    properties[k.key] = key_schema(k);
    if (k.required != nullptr) required.push_back(k.key);
  }
  for (const kernel_yaml::Section& s : kernel_yaml::kSections) {
    Json keys = Json::object();
    for (const Key& k : kernel_yaml::kKeys) {
      if (k.section == std::string_view(s.name)) keys[k.key] = key_schema(k);
    }
    Json section{{"description", s.doc}, {"type", "object"}, {"additionalProperties", false}};
    if (s.schema_extra != nullptr) {
      const Json extra = Json::parse(s.schema_extra);
      for (const auto& [key, value] : extra.items()) section[key] = value;
    }
    section["properties"] = std::move(keys);
    properties[s.name] = std::move(section);
    if (s.required != nullptr) required.push_back(s.name);
  }
  return rows_schema_text(
      "kernel", "iosim kernel description",
      "An attention kernel as iosim runs it: its dataflow (decides the bytes) and its mechanisms "
      "(with the dataflow, decide the time). Written as YAML for `iosim run --kernel FILE`, as a "
      "dict for `iosim.run(kernel=...)`, or inside a measured case as \"kernel\"; docs/kernels.md "
      "explains each field. Written by `iosim kernels --schema` from the rows of "
      "algorithms/kernel_schema.hpp (tests/schema_test.sh fails when this file differs). The "
      "parser checks more than a schema can say: the checks across keys (each key's description "
      "names them) and that the dataflow section names a forward or a backward.",
      std::move(required), std::move(properties));
}

}  // namespace iosim
