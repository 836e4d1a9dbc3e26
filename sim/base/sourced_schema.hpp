#pragma once
// The JSON Schema of one key of a profile or model file: every number there is a map of exactly
// `value` and `source` (where the value comes from). Written once for both schemas
// (sim/hardware/profile_docs.cpp, transformer/model_docs.cpp).
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

}  // namespace iosim
