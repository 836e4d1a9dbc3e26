#include "api/json_schema.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <regex>
#include <set>
#include <string_view>

#include "sim/base/errors.hpp"

namespace iosim {
namespace assets {
extern const std::string_view run_schema_json;
extern const std::string_view sweep_schema_json;
extern const std::string_view kernel_schema_json;
extern const std::string_view measurements_schema_json;
}  // namespace assets

namespace {

using json = nlohmann::json;

// The keywords first_error() checks, and the annotations it leaves alone.
const std::set<std::string>& known_keywords() {
  static const std::set<std::string> known = {"type",
                                              "enum",
                                              "const",
                                              "properties",
                                              "required",
                                              "additionalProperties",
                                              "items",
                                              "minItems",
                                              "maxItems",
                                              "minimum",
                                              "maximum",
                                              "exclusiveMinimum",
                                              "exclusiveMaximum",
                                              "minLength",
                                              "maxLength",
                                              "pattern",
                                              "allOf",
                                              "anyOf",
                                              "oneOf",
                                              "not",
                                              "if",
                                              "then",
                                              "else",
                                              "$ref",
                                              "description",
                                              "title",
                                              "format",
                                              "default",
                                              "$id",
                                              "$schema",
                                              "$defs",
                                              "examples",
                                              "minProperties",
                                              "maxProperties"};
  return known;
}

std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

bool has_type(const json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "string") return v.is_string();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    if (v.is_number_integer() || v.is_number_unsigned()) return true;
    // JSON has one number type: 3.0 is an integer to JSON Schema.
    return v.is_number_float() && std::isfinite(v.get<double>()) &&
           v.get<double>() == std::floor(v.get<double>());
  }
  return false;
}

// "integer" -> "an integer", as type_name() names a value's type.
std::string article(const std::string& type) {
  if (type == "null") return type;
  return (type == "integer" || type == "array" || type == "object" ? "an " : "a ") + type;
}

// s[key], or an empty array where `s` has no such key: the schema's own value, not a copy of it
// (the checks run for every key of every row of a file).
const json& member_or_empty(const json& s, const char* key) {
  static const json empty = json::array();
  const auto it = s.find(key);
  return it == s.end() ? empty : *it;
}

std::string child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

class Checker {
 public:
  explicit Checker(const std::map<std::string, json>& documents) : documents_(documents) {}

  // "" or the first disagreement of `v` (at `path`) with schema `s` of document `doc`.
  std::string check(const json& v, const json& s, const std::string& doc,
                    const std::string& path) const {
    if (s.is_boolean()) return s.get<bool>() ? "" : at(path, "is not allowed here");
    if (const auto ref = s.find("$ref"); ref != s.end()) {
      const auto [target, target_doc] = resolve(ref->get<std::string>(), doc);
      if (std::string e = check(v, target, target_doc, path); !e.empty()) return e;
    }
    if (const auto t = s.find("type"); t != s.end()) {
      std::vector<std::string> types;
      if (t->is_string()) types.push_back(t->get<std::string>());
      for (const json& one : t->is_array() ? *t : json::array()) types.push_back(one);
      bool ok = false;
      for (const std::string& type : types) ok = ok || has_type(v, type);
      if (!ok) {
        std::vector<std::string> named;
        for (const std::string& type : types) named.push_back(article(type));
        return at(path, fmt::format("must be {}, not {}", fmt::join(named, " or "), type_name(v)));
      }
    }
    if (const auto c = s.find("const"); c != s.end() && v != *c) {
      return at(path, fmt::format("must be {}", c->dump()));
    }
    if (const auto e = s.find("enum"); e != s.end()) {
      bool ok = false;
      for (const json& one : *e) ok = ok || v == one;
      if (!ok) return at(path, fmt::format("must be one of {}", e->dump()));
    }
    if (v.is_number()) {
      if (std::string e = bounds(v.get<double>(), s, path); !e.empty()) return e;
    }
    if (v.is_string()) {
      const std::string text = v.get<std::string>();
      if (s.contains("minLength") && text.size() < s["minLength"].get<std::size_t>()) {
        return at(path, fmt::format("must have at least {} characters", s["minLength"].dump()));
      }
      if (s.contains("maxLength") && text.size() > s["maxLength"].get<std::size_t>()) {
        return at(path, fmt::format("must have at most {} characters", s["maxLength"].dump()));
      }
      if (s.contains("pattern") &&
          !std::regex_search(text, std::regex(s["pattern"].get<std::string>()))) {
        return at(path, fmt::format("must match {}", s["pattern"].dump()));
      }
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>()) {
        return at(path, fmt::format("must have at least {} items", s["minItems"].dump()));
      }
      if (s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>()) {
        return at(path, fmt::format("must have at most {} items", s["maxItems"].dump()));
      }
      if (const auto items = s.find("items"); items != s.end()) {
        for (std::size_t i = 0; i < v.size(); ++i) {
          std::string e = check(v[i], *items, doc, fmt::format("{}[{}]", path, i));
          if (!e.empty()) return e;
        }
      }
    }
    if (v.is_object()) {
      if (std::string e = object(v, s, doc, path); !e.empty()) return e;
    }
    return combinators(v, s, doc, path);
  }

 private:
  static std::string at(const std::string& path, const std::string& what) {
    return fmt::format("{} {}", path.empty() ? "the document" : path, what);
  }

  static std::string bounds(double x, const json& s, const std::string& path) {
    if (s.contains("minimum") && x < s["minimum"].get<double>()) {
      return at(path, fmt::format("must be at least {}", s["minimum"].dump()));
    }
    if (s.contains("maximum") && x > s["maximum"].get<double>()) {
      return at(path, fmt::format("must be at most {}", s["maximum"].dump()));
    }
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) {
      return at(path, fmt::format("must be above {}", s["exclusiveMinimum"].dump()));
    }
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) {
      return at(path, fmt::format("must be below {}", s["exclusiveMaximum"].dump()));
    }
    return "";
  }

  std::string object(const json& v, const json& s, const std::string& doc,
                     const std::string& path) const {
    if (s.contains("minProperties") && v.size() < s["minProperties"].get<std::size_t>()) {
      return at(path, fmt::format("must have at least {} keys", s["minProperties"].dump()));
    }
    if (s.contains("maxProperties") && v.size() > s["maxProperties"].get<std::size_t>()) {
      return at(path, fmt::format("must have at most {} keys", s["maxProperties"].dump()));
    }
    for (const json& key : member_or_empty(s, "required")) {
      if (!v.contains(key.get<std::string>())) {
        return at(path, fmt::format("lacks the key \"{}\"", key.get<std::string>()));
      }
    }
    const json& props = member_or_empty(s, "properties");
    for (const auto& [key, value] : v.items()) {
      if (const auto p = props.find(key); p != props.end()) {
        if (std::string e = check(value, *p, doc, child(path, key)); !e.empty()) return e;
      } else if (const auto extra = s.find("additionalProperties"); extra != s.end()) {
        if (extra->is_boolean() && !extra->get<bool>()) {
          return at(path, fmt::format("has a key \"{}\" that its schema does not define", key));
        }
        if (std::string e = check(value, *extra, doc, child(path, key)); !e.empty()) return e;
      }
    }
    return "";
  }

  std::string combinators(const json& v, const json& s, const std::string& doc,
                          const std::string& path) const {
    for (const json& one : member_or_empty(s, "allOf")) {
      if (std::string e = check(v, one, doc, path); !e.empty()) return e;
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      std::string first;
      int matches = 0;
      for (const json& one : s[key]) {
        const std::string e = check(v, one, doc, path);
        matches += e.empty();
        if (!e.empty() && first.empty()) first = e;
      }
      if (matches == 0) return first;  // the first alternative's reason: the one most expected
      if (std::string_view(key) == "oneOf" && matches > 1) {
        return at(path, "matches more than one of its alternatives");
      }
    }
    if (const auto n = s.find("not"); n != s.end() && check(v, *n, doc, path).empty()) {
      return at(path, fmt::format("must not match {}", n->dump()));
    }
    if (const auto i = s.find("if"); i != s.end()) {
      const char* branch = check(v, *i, doc, path).empty() ? "then" : "else";
      if (s.contains(branch)) return check(v, s[branch], doc, path);
    }
    return "";
  }

  // "other.schema.json#/pointer" or "#/pointer" -> the schema it names and its document.
  std::pair<const json&, std::string> resolve(const std::string& ref,
                                              const std::string& doc) const {
    const std::size_t hash = ref.find('#');
    const std::string name = hash == 0 ? doc : ref.substr(0, hash);
    const auto d = documents_.find(name);
    ensure(d != documents_.end(), "JSON schema {}: $ref to {}, which is not embedded", doc, ref);
    const std::string pointer = hash == std::string::npos ? "" : ref.substr(hash + 1);
    return {d->second.at(json::json_pointer(pointer)), name};
  }

  const std::map<std::string, json>& documents_;
};

void collect_refs(const json& s, std::vector<std::string>& out) {
  if (s.is_object()) {
    for (const auto& [key, value] : s.items()) {
      if (key == "$ref" && value.is_string()) out.push_back(value.get<std::string>());
      collect_refs(value, out);
    }
  } else if (s.is_array()) {
    for (const json& one : s) collect_refs(one, out);
  }
}

void collect_unknown(const json& s, std::set<std::string>& out, bool in_properties) {
  if (!s.is_object()) return;
  for (const auto& [key, value] : s.items()) {
    // The keys of "properties" and "$defs" are names, not keywords; their values are schemas.
    if (in_properties) {
      collect_unknown(value, out, false);
      continue;
    }
    if (!known_keywords().count(key)) out.insert(key);
    if (key == "properties" || key == "$defs") {
      collect_unknown(value, out, true);
    } else if (value.is_array()) {
      for (const json& one : value) collect_unknown(one, out, false);
    } else if (value.is_object() && key != "const" && key != "default") {
      collect_unknown(value, out, false);
    }
  }
}

}  // namespace

JsonSchemas::JsonSchemas(const std::map<std::string, std::string>& documents) {
  for (const auto& [name, text] : documents) documents_.emplace(name, json::parse(text));
}

const JsonSchemas& JsonSchemas::embedded() {
  static const JsonSchemas schemas(std::map<std::string, std::string>{
      {"run.schema.json", std::string(assets::run_schema_json)},
      {"sweep.schema.json", std::string(assets::sweep_schema_json)},
      {"kernel.schema.json", std::string(assets::kernel_schema_json)},
      {"measurements.schema.json", std::string(assets::measurements_schema_json)}});
  return schemas;
}

std::string JsonSchemas::first_error(const json& value, const std::string& schema) const {
  const auto d = documents_.find(schema);
  ensure(d != documents_.end(), "JSON schema {} is not embedded", schema);
  return Checker(documents_).check(value, d->second, schema, "");
}

std::string JsonSchemas::unknown_keywords(const std::string& schema) const {
  const auto d = documents_.find(schema);
  ensure(d != documents_.end(), "JSON schema {} is not embedded", schema);
  std::set<std::string> out;
  collect_unknown(d->second, out, false);
  return fmt::format("{}", fmt::join(out, ", "));
}

std::string JsonSchemas::unresolved_refs(const std::string& schema) const {
  const auto d = documents_.find(schema);
  ensure(d != documents_.end(), "JSON schema {} is not embedded", schema);
  std::vector<std::string> refs, bad;
  collect_refs(d->second, refs);
  for (const std::string& ref : refs) {
    const std::size_t hash = ref.find('#');
    const auto target = documents_.find(hash == 0 ? schema : ref.substr(0, hash));
    const std::string pointer = hash == std::string::npos ? "" : ref.substr(hash + 1);
    if (target == documents_.end() || !target->second.contains(json::json_pointer(pointer))) {
      bad.push_back(ref);
    }
  }
  return fmt::format("{}", fmt::join(bad, ", "));
}

}  // namespace iosim
