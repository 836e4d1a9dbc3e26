#pragma once
// HTML text of iosim's pages (the sweep report, explain's stepper and comparison): a name or a
// description may come from the user (a profile's YAML, a kernel description's name) and must not
// become markup.
#include <string>

namespace iosim {

/// `s` with &, <, > and " written as entities: safe in an element's text and in a quoted attribute.
inline std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace iosim
