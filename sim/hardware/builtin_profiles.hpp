#pragma once
#include <span>
#include <string_view>

namespace iosim {

/// A profile shipped in hwprofiles/, embedded in the binary at build time.
struct EmbeddedProfile {
  std::string_view name;  // the file stem, e.g. "h100-sxm5-80gb"
  std::string_view yaml;  // the file's bytes
};

/// The embedded profiles, sorted by name (generated from hwprofiles/*.yaml by CMakeLists.txt).
std::span<const EmbeddedProfile> embedded_profiles();

}  // namespace iosim
