#pragma once
#include <span>

#include "sim/base/embedded_yaml.hpp"

namespace iosim {

/// The profiles of hwprofiles/, embedded at build time, sorted by name (generated from
/// hwprofiles/*.yaml by CMakeLists.txt).
std::span<const EmbeddedYaml> embedded_profiles();

}  // namespace iosim
