#pragma once
// A YAML file shipped with iosim and embedded in the binary at build time (CMakeLists.txt's
// iosim_embed_yaml_table): the built-in hardware profiles and models.
#include <string_view>

namespace iosim {

struct EmbeddedYaml {
  std::string_view name;  // the file stem, e.g. "h100-sxm5-80gb"
  std::string_view yaml;  // the file's bytes
};

}  // namespace iosim
