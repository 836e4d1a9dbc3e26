#pragma once
// YAML input other than profiles (kernel descriptions) as a JSON value, so that a YAML file and a
// Python dict reach the same checks. The reader lives beside the profile loader
// (sim/hardware/yaml_documents.cpp, which with the loader's files is the only code that includes
// yaml-cpp), and applies the same checks to the text: UTF-8, no anchors or aliases, one document.
#include <nlohmann/json.hpp>
#include <string>

namespace iosim {

/// The one YAML document of `yaml_text` as JSON (null when the text holds none): maps as objects,
/// sequences as arrays, unquoted scalars as integers, numbers, booleans or null where they read
/// as one, other scalars as strings. `origin` (a path) and `what` ("kernel description") name
/// the input in messages. Throws ConfigError on text that is not such YAML.
nlohmann::json read_yaml_json(const std::string& yaml_text, const std::string& origin,
                              const std::string& what);

}  // namespace iosim
