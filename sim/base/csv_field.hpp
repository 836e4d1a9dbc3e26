#pragma once
// CSV fields as RFC 4180 has them, for every CSV iosim writes: a text field that holds a comma,
// a quote or a line break is quoted, its quotes doubled. Unquoted, a comma in a case id or a
// profile path shifted every later column of its row.
#include <string>

namespace iosim {

/// `text` always quoted, its quotes doubled.
inline std::string csv_quoted(const std::string& text) {
  std::string q = "\"";
  for (char ch : text) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

/// `text` as a CSV field: as it is, or quoted (csv_quoted) when it holds a comma, a quote or a
/// line break.
inline std::string csv_field(const std::string& text) {
  return text.find_first_of(",\"\n\r") == std::string::npos ? text : csv_quoted(text);
}

}  // namespace iosim
