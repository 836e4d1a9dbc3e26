#include "transformer/model_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <span>
#include <type_traits>
#include <variant>

#include "sim/base/errors.hpp"
#include "sim/base/suggest.hpp"
#include "sim/base/text_file.hpp"
#include "sim/base/yaml_reader.hpp"
#include "transformer/builtin_models.hpp"
#include "transformer/model_schema.hpp"

namespace iosim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> kValueKeys = {"value", "source"};

std::string describe(const json& v) {
  if (v.is_string()) return fmt::format("the string '{}'", v.get<std::string>());
  return fmt::format("{} {}", v.type_name(), v.dump());
}

// The value `m` holds for integer key `key` (a row's `at_most`).
std::int64_t integer_value(const ModelConfig& m, const std::string& key) {
  for (const model_yaml::Key& k : model_yaml::kModelKeys) {
    if (key == k.key) return m.*std::get<std::int64_t ModelConfig::*>(k.member);
  }
  throw InternalError("model_schema.hpp: no integer key '" + key + "'");
}

class Reader {
 public:
  Reader(const json& root, std::string origin) : root_(root), origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw ConfigError(fmt::format("{}: {}: {}", origin_, key, what));
  }

  std::string plain_string(const std::string& key) const {
    const json& v = root_.at(key);
    if (!v.is_string() || v.get<std::string>().empty()) {
      fail(key, fmt::format("expected a non-empty string, got {}", describe(v)));
    }
    return v.get<std::string>();
  }

  // The `value` of a {value, source} map, after checking the map's shape and its source.
  const json& sourced(const std::string& key) const {
    const json& node = root_.at(key);
    if (!node.is_object()) {
      fail(key,
           fmt::format("expected a map {{value: ..., source: \"...\"}}, got {}", describe(node)));
    }
    for (const auto& [k, unused] : node.items()) {
      if (std::find(kValueKeys.begin(), kValueKeys.end(), k) == kValueKeys.end()) {
        fail(key, fmt::format("unknown key '{}'{}; expected value and source", k,
                              did_you_mean(k, kValueKeys)));
      }
    }
    for (const std::string& k : kValueKeys) {
      if (!node.contains(k)) fail(key, fmt::format("missing required key '{}'", k));
    }
    const json& source = node.at("source");
    if (!source.is_string() || source.get<std::string>().empty()) {
      fail(key, "source must be a non-empty string saying where the value comes from");
    }
    return node.at("value");
  }

  std::int64_t integer(const std::string& key, std::int64_t lo, std::int64_t hi) const {
    const json& v = sourced(key);
    if (!v.is_number_integer()) fail(key, fmt::format("expected an integer, got {}", describe(v)));
    const std::int64_t x = v.get<std::int64_t>();
    if (x < lo || x > hi) fail(key, fmt::format("= {} is out of range [{}, {}]", x, lo, hi));
    return x;
  }

  bool boolean(const std::string& key) const {
    const json& v = sourced(key);
    if (!v.is_boolean()) fail(key, fmt::format("expected true or false, got {}", describe(v)));
    return v.get<bool>();
  }

  // The position in `names` of the key's value.
  std::size_t choice(const std::string& key, std::span<const char* const> options) const {
    const json& v = sourced(key);
    const std::vector<std::string> names(options.begin(), options.end());
    if (!v.is_string()) {
      fail(key, fmt::format("expected one of {}, got {}", fmt::join(names, ", "), describe(v)));
    }
    const std::string s = v.get<std::string>();
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == s) return i;
    }
    fail(key,
         fmt::format("'{}' is not one of {}{}", s, fmt::join(names, ", "), did_you_mean(s, names)));
  }

  // Reads row `k` into its member of `m`; an integer's upper bound is also the value of its
  // `at_most` key, read before it.
  void read(const model_yaml::Key& k, ModelConfig& m) const {
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(m.*member)>;
          if constexpr (std::is_same_v<T, std::string>) {
            m.*member = plain_string(k.key);
            // The name is one line of the layer's tables (a "\n" escape split them).
            if (const int c = k.key == std::string_view("name")
                                  ? first_control_character_in_line(m.*member)
                                  : -1;
                c >= 0) {
              fail(k.key,
                   fmt::format(
                       "a name is one line of text: it holds the control character U+{:04X}", c));
            }
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            std::int64_t hi = k.hi;
            if (k.at_most != nullptr) hi = std::min(hi, integer_value(m, k.at_most));
            m.*member = integer(k.key, k.lo, hi);
          } else if constexpr (std::is_same_v<T, bool>) {
            m.*member = boolean(k.key);
          } else {
            m.*member = static_cast<T>(choice(k.key, model_yaml::choice_names(member)));
          }
        },
        k.member);
  }

 private:
  const json& root_;
  std::string origin_;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

fs::path builtin_model_dir() {
  if (const char* env = std::getenv("IOSIM_MODEL_DIR"); env != nullptr && *env != '\0') {
    return fs::path(env);
  }
  return {};
}

// A model file is a few kilobytes; the profiles' limit is ample.
constexpr std::size_t kMaxModelBytes = kMaxProfileBytes;

}  // namespace

const char* mlp_kind_name(MlpKind kind) {
  return model_yaml::kMlpKindNames.at(static_cast<std::size_t>(kind));
}

const char* norm_kind_name(NormKind kind) {
  return model_yaml::kNormKindNames.at(static_cast<std::size_t>(kind));
}

ModelConfig parse_model_config(const std::string& yaml_text, const std::string& origin) {
  const std::vector<std::string> keys = model_yaml::key_names();
  const json root = read_yaml_json(yaml_text, origin, "model configuration");
  if (!root.is_object()) {
    throw ConfigError(fmt::format("{}: expected a map with keys {}, got {}", origin,
                                  fmt::join(keys, ", "), root.type_name()));
  }
  for (const auto& [key, unused] : root.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      throw ConfigError(fmt::format("{}: unknown key '{}'{}; valid keys: {}", origin, key,
                                    did_you_mean(key, keys), fmt::join(keys, ", ")));
    }
  }
  for (const model_yaml::Key& k : model_yaml::kModelKeys) {
    if (!k.mla && !root.contains(k.key)) {
      throw ConfigError(fmt::format("{}: missing required key '{}'", origin, k.key));
    }
  }
  // The MLA group: all of it or none (a model with a latent but no value head would be a layer of
  // the wrong shape).
  const std::vector<std::string> mla_keys = model_yaml::mla_key_names();
  std::vector<std::string> given, missing;
  for (const std::string& key : mla_keys) (root.contains(key) ? given : missing).push_back(key);
  if (!given.empty() && !missing.empty()) {
    throw ConfigError(fmt::format(
        "{}: {} given without {}: the multi-head latent attention keys ({}) go all together or "
        "not at all",
        origin, fmt::join(given, ", "), fmt::join(missing, ", "), fmt::join(mla_keys, ", ")));
  }
  const Reader r(root, origin);
  ModelConfig m;
  for (const model_yaml::Key& k : model_yaml::kModelKeys) {
    if (k.mla && given.empty()) continue;
    r.read(k, m);
    // The checks across keys (the rows' `across`), each as soon as its key is read, so that a
    // file with several faults is refused for the first, in the rows' order.
    if (k.member == model_yaml::Member(&ModelConfig::kv_heads) &&
        m.attention_heads % m.kv_heads != 0) {
      r.fail("kv_heads", fmt::format("= {} does not divide attention_heads = {}", m.kv_heads,
                                     m.attention_heads));
    }
    // The MLA group's, once its last key is read: the heads its keys imply are the model's.
    if (k.member == model_yaml::Member(&ModelConfig::v_head_dim) && m.mla()) {
      if (m.head_dim != m.qk_nope_head_dim + m.qk_rope_head_dim) {
        r.fail("head_dim",
               fmt::format("= {}, but a multi-head latent attention model's query/key head is "
                           "qk_nope_head_dim + qk_rope_head_dim = {} + {} = {}",
                           m.head_dim, m.qk_nope_head_dim, m.qk_rope_head_dim,
                           m.qk_nope_head_dim + m.qk_rope_head_dim));
      }
      if (m.kv_heads != m.attention_heads) {
        r.fail("kv_heads",
               fmt::format("= {}, but a multi-head latent attention model has a key and a value "
                           "head per query head (attention_heads = {}) before absorption",
                           m.kv_heads, m.attention_heads));
      }
    }
  }
  return m;
}

std::vector<std::string> builtin_model_names() {
  const fs::path dir = builtin_model_dir();
  if (!dir.empty()) return yaml_stems_in(dir, "model", "IOSIM_MODEL_DIR");
  std::vector<std::string> names;
  for (const EmbeddedYaml& m : embedded_models()) names.emplace_back(m.name);
  std::sort(names.begin(), names.end());
  return names;
}

ModelConfig load_model_config(const std::string& name_or_path) {
  std::error_code ec;
  const bool is_path = fs::is_regular_file(name_or_path, ec) ||
                       name_or_path.find('/') != std::string::npos ||
                       ends_with(name_or_path, ".yaml") || ends_with(name_or_path, ".yml");
  if (is_path) {
    const fs::path path(name_or_path);
    ModelConfig m = parse_model_config(read_text_file(path, "model configuration", kMaxModelBytes),
                                       path.string());
    m.source_file = path;
    return m;
  }
  const std::vector<std::string> names = builtin_model_names();
  if (std::find(names.begin(), names.end(), name_or_path) == names.end()) {
    throw ConfigError(
        fmt::format("unknown model '{}'; built-in models: {}{}", name_or_path,
                    names.empty() ? "(none)" : fmt::format("{}", fmt::join(names, ", ")),
                    did_you_mean(name_or_path, names)));
  }
  const fs::path dir = builtin_model_dir();
  const fs::path path = (dir.empty() ? fs::path("models") : dir) / (name_or_path + ".yaml");
  std::string text;
  if (!dir.empty()) {
    text = read_text_file(path, "model configuration", kMaxModelBytes);
  } else {
    for (const EmbeddedYaml& e : embedded_models()) {
      if (e.name == name_or_path) text = std::string(e.yaml);
    }
  }
  ModelConfig m =
      parse_model_config(text, dir.empty() ? path.string() + " (built in)" : path.string());
  m.source_file = path;
  // The name is what a report prints: a built-in file that says another name would mislabel it.
  if (m.name != name_or_path) {
    throw ConfigError(
        fmt::format("{}: name '{}' must equal the file stem '{}' for a built-in model",
                    path.string(), m.name, name_or_path));
  }
  return m;
}

}  // namespace iosim
