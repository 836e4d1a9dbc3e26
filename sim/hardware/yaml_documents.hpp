#pragma once
// YAML text into yaml-cpp documents, after the checks every YAML input gets (UTF-8 text, no anchors
// or aliases, at most one document), for profiles (profile_loader.cpp) and other YAML read as JSON
// (read_yaml_json(), sim/base/yaml_reader.hpp).
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace iosim {

/// The YAML documents of `yaml_text` (none or one). `origin` (a path) names the text in messages,
/// `what` the kind of file ("profile"). Throws ConfigError on text that fails the checks or does
/// not parse.
std::vector<YAML::Node> load_yaml_documents(const std::string& yaml_text, const std::string& origin,
                                            const std::string& what);

}  // namespace iosim
