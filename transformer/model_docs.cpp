// What a model's schema rows (model_schema.hpp) say to a reader: models/README.md's key table
// (`iosim models --keys --format md`) and schemas/model.schema.json (`iosim models --schema`).
// Both are checked against the committed files (scripts/readme_tables.sh, tests/schema_test.sh),
// so that neither drifts from the rows, as profile_docs.cpp's are for profiles.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "sim/base/sourced_schema.hpp"
#include "transformer/model_config.hpp"
#include "transformer/model_schema.hpp"

namespace iosim {
namespace {

using model_yaml::Key;

// What the reader checks of one key, in words: its type's or range's check, then those across
// keys.
std::string check_text(const Key& k) {
  std::string out;
  const std::string type = model_yaml::type_name(k);
  if (!model_yaml::sourced(k)) {
    out = "non-empty";
  } else if (!model_yaml::choices(k).empty()) {
    out = "one of";
    const char* sep = " ";
    for (const char* name : model_yaml::choices(k)) {
      out += fmt::format("{}`{}`", sep, name);
      sep = ", ";
    }
  } else if (type == "integer") {
    out = k.at_most != nullptr ? fmt::format("{} to `{}`", k.lo, k.at_most)
                               : fmt::format("{} to {}", k.lo, k.hi);
  }
  if (k.across != nullptr) out += (out.empty() ? "" : ", ") + std::string(k.across);
  if (k.mla) out = "optional, " + out;
  return out;
}

}  // namespace

std::string model_key_table(bool markdown) {
  std::string out;
  if (markdown) {
    out += "| key | type | meaning (config.json key) | check |\n| --- | --- | --- | --- |\n";
  }
  for (const Key& k : model_yaml::kModelKeys) {
    if (markdown) {
      out += fmt::format("| `{}` | {} | {} | {} |\n", k.key, model_yaml::type_name(k), k.doc,
                         check_text(k));
    } else {
      out += fmt::format("{:<18} {:<8} {}\n{:<18} {}\n", k.key, model_yaml::type_name(k),
                         check_text(k), "", k.doc);
    }
  }
  return out;
}

namespace {

using Json = nlohmann::ordered_json;

// A key's schema: a plain string, or a {value, source} map whose value has the row's type and
// bounds as JSON Schema says them.
Json key_schema(const Key& k) {
  if (!model_yaml::sourced(k)) {
    return Json{{"type", "string"}, {"minLength", 1}, {"description", k.doc}};
  }
  const std::string type = model_yaml::type_name(k);
  Json value{{"type", type}};
  if (!model_yaml::choices(k).empty()) {
    Json names = Json::array();
    for (const char* name : model_yaml::choices(k)) names.push_back(name);
    value["enum"] = names;
  } else if (type == "integer") {
    value["minimum"] = k.lo;
    value["maximum"] = k.hi;
  }
  std::string description = k.doc;
  if (k.mla) description += "; optional";
  if (k.at_most != nullptr) description += fmt::format("; also at most {}", k.at_most);
  if (k.across != nullptr) description += fmt::format(", {}", k.across);
  return sourced_value_schema(std::move(description), std::move(value));
}

}  // namespace

std::string model_json_schema() {
  Json properties = Json::object();
  Json required = Json::array();
  for (const Key& k : model_yaml::kModelKeys) {
    properties[k.key] = key_schema(k);
    if (!k.mla) required.push_back(k.key);
  }
  return rows_schema_text(
      "model", "iosim model configuration (models/*.yaml, read as JSON)",
      "Written by `iosim models --schema` from the rows of transformer/model_schema.hpp "
      "(tests/schema_test.sh fails when this file differs). Every key is required but the "
      "multi-head latent attention (MLA) group, which is optional; name and "
      "description are plain strings, every other key is {value, source}. The reader checks "
      "more than a schema can say: the checks across keys (each key's description names "
      "them: the MLA group all or none), duplicate keys, a built-in model's name equal to its "
      "file stem.",
      std::move(required), std::move(properties));
}

}  // namespace iosim
