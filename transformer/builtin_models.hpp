#pragma once
#include <span>

#include "sim/base/embedded_yaml.hpp"

namespace iosim {

/// The models of models/, embedded at build time, sorted by name (generated from models/*.yaml
/// by CMakeLists.txt).
std::span<const EmbeddedYaml> embedded_models();

}  // namespace iosim
