#pragma once
#include <span>
#include <string_view>

namespace iosim {

/// A model shipped in models/, embedded in the binary at build time.
struct EmbeddedModel {
  std::string_view name;  // the file stem, e.g. "llama-3-8b"
  std::string_view yaml;  // the file's bytes
};

/// The embedded models (generated from models/*.yaml by CMakeLists.txt).
std::span<const EmbeddedModel> embedded_models();

}  // namespace iosim
