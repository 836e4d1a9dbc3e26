// A minimal JSON writer for the runner's flat output (no dependency to carry
// to the device machine). Host-only.
#pragma once

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace iosim_cuda {

inline std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(ch));
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

// Numbers with full precision; NaN and infinities (not JSON) become null.
inline std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

inline std::string json_int(long long v) { return std::to_string(v); }

inline std::string json_bool(bool v) { return v ? "true" : "false"; }

// {"k": v, ...} from already-encoded values, in insertion order.
class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& encoded) {
    fields_.emplace_back(key, encoded);
    return *this;
  }
  std::string str() const {
    std::string out = "{";
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      if (i) out += ", ";
      out += json_str(fields_[i].first) + ": " + fields_[i].second;
    }
    return out + "}";
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

inline std::string json_array(const std::vector<std::string>& encoded, const char* sep = ", ") {
  std::string out = "[";
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (i) out += sep;
    out += encoded[i];
  }
  return out + "]";
}

}  // namespace iosim_cuda
