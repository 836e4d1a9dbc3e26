#pragma once
// JSON text of iosim's outputs. A string may hold bytes that are not UTF-8 (a file name in
// another encoding, given as a profile path or an output path); nlohmann/json's writer throws on
// them by default, which reached the user as an internal error (exit 3) after the work was done.
#include <nlohmann/json.hpp>
#include <string>

namespace iosim {

/// `j` as JSON text (`indent` as nlohmann's dump: -1 compact); bytes that are not valid UTF-8
/// are written as U+FFFD.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace iosim
