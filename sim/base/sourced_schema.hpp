#pragma once
// The JSON Schemas of profile and model files, written from their rows
// (sim/hardware/profile_docs.cpp, transformer/model_docs.cpp): every number there is a map of
// exactly `value` and `source` (where the value comes from), and the document around the keys is
// the same for both.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace iosim {

/// {value, source}: `value` as the schema `value` says, `source` a non-empty string.
inline nlohmann::ordered_json sourced_value_schema(std::string description,
                                                   nlohmann::ordered_json value) {
  return nlohmann::ordered_json{
      {"type", "object"},
      {"description", std::move(description)},
      {"required", nlohmann::ordered_json::array({"value", "source"})},
      {"additionalProperties", false},
      {"properties",
       {{"value", std::move(value)}, {"source", {{"type", "string"}, {"minLength", 1}}}}}};
}

/// schemas/NAME.schema.json's text: a closed object of `required` keys and `properties`, with its
/// title and description, as `iosim profiles --schema` and `iosim models --schema` print it.
inline std::string rows_schema_text(const std::string& name, std::string title,
                                    std::string description, nlohmann::ordered_json required,
                                    nlohmann::ordered_json properties) {
  const nlohmann::ordered_json schema{
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"$id", "https://iosim.invalid/schemas/" + name + ".schema.json"},
      {"title", std::move(title)},
      {"description", std::move(description)},
      {"type", "object"},
      {"required", std::move(required)},
      {"additionalProperties", false},
      {"properties", std::move(properties)}};
  return schema.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace iosim
