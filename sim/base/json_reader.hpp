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
#include "sim/base/text_file.hpp"

namespace iosim {

/// True when `text`, which is not valid JSON, reads as a CSV table: one of its first lines holds a
/// comma outside braces and brackets (an Nsight Compute export, whose first lines may be
/// "==PROF==" notes, or a sweep's CSV).
inline bool looks_like_csv(const std::string& text) {
  std::size_t start = 0;
  for (int line = 0; line < 8 && start < text.size(); ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string l = text.substr(start, end - start);
    start = end + 1;
    if (l.find_first_of("{[") != std::string::npos) return false;
    if (l.find(',') != std::string::npos) return true;
  }
  return false;
}

/// What nlohmann::json's exception says, without the library's own words for it: what() is
/// "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error while parsing
/// value - ...", of which a user's message keeps "line 3, column 5: syntax error while parsing
/// value - ..." (issue #50: the bracketed name is an internal error's text, not a message).
inline std::string json_error_text(const nlohmann::json::exception& e) {
  std::string text = e.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const std::size_t close = text.find("] ");
    if (close != std::string::npos) text.erase(0, close + 2);
  }
  for (const char* prefix : {"parse error at ", "parse error: "}) {
    if (text.rfind(prefix, 0) == 0) text.erase(0, std::string(prefix).size());
  }
  return text;
}

/// `text` parsed as JSON. Throws ConfigError "`where`: not valid JSON: ..." for a syntax error and
/// "`where`: the key 'K' appears twice in one object" for a repeated key. A CSV table given where
/// JSON goes is named as one, with `csv_hint` (what to do with it), not as a JSON syntax error.
inline nlohmann::json parse_json_strictly(const std::string& text, const std::string& where,
                                          const std::string& csv_hint = "") {
  using nlohmann::json;
  std::vector<std::set<std::string>> keys;  // of each object being read, innermost last
  std::string last_key;
  const json::parser_callback_t no_repeats = [&](int, json::parse_event_t event, json& parsed) {
    // A control character from an escape ("\u0000"): raw, JSON refuses it; escaped, it went on
    // into names and reports (issue #50's fifth probe).
    if ((event == json::parse_event_t::key || event == json::parse_event_t::value) &&
        parsed.is_string()) {
      if (const int c = first_control_character(parsed.get_ref<const std::string&>()); c >= 0) {
        throw ConfigError(fmt::format(
            "{}: {} holds the control character U+{:04X} (written \\u{:04x}): not text", where,
            event == json::parse_event_t::key ? std::string("a key")
            : last_key.empty()                ? std::string("a string")
                                              : "the value of '" + last_key + "'",
            c, c));
      }
      if (event == json::parse_event_t::key) last_key = parsed.get<std::string>();
    }
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
    if (looks_like_csv(text)) {
      throw ConfigError(fmt::format("{}: a CSV file, not JSON{}{}", where,
                                    csv_hint.empty() ? "" : "; ", csv_hint));
    }
    throw ConfigError(fmt::format("{}: not valid JSON: {}", where, json_error_text(e)));
  }
}

}  // namespace iosim
