// Reading a measured file's keys by type for `iosim validate`: each message names the file, the
// case and the key (`where`), never a CLI flag the user of validate did not type, where
// nlohmann::json's own said "type must be string, but is number" and named no key.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "api/validation_detail.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_text.hpp"

namespace iosim::validation_detail {

using nlohmann::json;

namespace {

// The value of `key` when present and not null.
const json* present(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

ConfigError wrong_type(const std::string& where, const char* key, const json& v,
                       const char* expected) {
  return ConfigError(fmt::format("{}: '{}' = {} is not {}", where, key, json_text(v), expected));
}

}  // namespace

double number_at(const json& obj, const char* key, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end()) throw ConfigError(fmt::format("{}: missing number '{}'", where, key));
  if (!it->is_number()) {
    throw ConfigError(fmt::format("{}: '{}' = {} is not a number", where, key, json_text(*it)));
  }
  return it->get<double>();
}

// A whole number of `obj` in [lo, hi]; the message names the file's key, not a CLI flag the user
// never typed.
std::int64_t int_at(const json& obj, const char* key, const std::string& where, std::int64_t lo,
                    std::int64_t hi) {
  const double v = number_at(obj, key, where);
  if (!(v >= static_cast<double>(lo) && v <= static_cast<double>(hi)) || v != std::floor(v)) {
    throw ConfigError(fmt::format("{}: '{}' = {} must be a whole number in [{}, {}]", where, key,
                                  obj.at(key).dump(), lo, hi));
  }
  return static_cast<std::int64_t>(v);
}

std::string string_or(const json& obj, const char* key, const std::string& fallback,
                      const std::string& where) {
  const json* v = present(obj, key);
  if (!v) return fallback;
  if (!v->is_string()) throw wrong_type(where, key, *v, "a string");
  return v->get<std::string>();
}

bool bool_or(const json& obj, const char* key, bool fallback, const std::string& where) {
  const json* v = present(obj, key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw wrong_type(where, key, *v, "true or false");
  return v->get<bool>();
}

double number_or(const json& obj, const char* key, double fallback, const std::string& where) {
  return present(obj, key) ? number_at(obj, key, where) : fallback;
}

std::int64_t count_or(const json& obj, const char* key, std::int64_t fallback,
                      const std::string& where) {
  return present(obj, key) ? int_at(obj, key, where, 0, (std::int64_t{1} << 31) - 1) : fallback;
}

const json& object_or_empty(const json& obj, const char* key, const std::string& where) {
  static const json kEmpty = json::object();
  const json* v = present(obj, key);
  if (!v) return kEmpty;
  if (!v->is_object()) throw wrong_type(where, key, *v, "an object");
  return *v;
}

}  // namespace iosim::validation_detail
