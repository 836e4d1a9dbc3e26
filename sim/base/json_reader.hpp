#pragma once
// Reading the JSON files users give (measured data, sweep files). nlohmann/json takes a key given
// twice in one object and keeps the last value without a word: a measured file with two
// "time_s" (an edit gone wrong, two files pasted together) was validated against whichever came
// last. Such a file is refused instead, naming the key.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "sim/base/errors.hpp"

namespace iosim {

/// `text` parsed as JSON. Throws ConfigError "`where`: not valid JSON: ..." for a syntax error and
/// "`where`: the key 'K' appears twice in one object" for a repeated key.
inline nlohmann::json parse_json_strictly(const std::string& text, const std::string& where) {
  using nlohmann::json;
  std::vector<std::set<std::string>> keys;  // of each object being read, innermost last
  const json::parser_callback_t no_repeats = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty() &&
               !keys.back().insert(parsed.get<std::string>()).second) {
      throw ConfigError(fmt::format("{}: the key '{}' appears twice in one object", where,
                                    parsed.get<std::string>()));
    }
    return true;
  };
  try {
    return json::parse(text, no_repeats);
  } catch (const json::exception& e) {
    throw ConfigError(fmt::format("{}: not valid JSON: {}", where, e.what()));
  }
}

}  // namespace iosim
