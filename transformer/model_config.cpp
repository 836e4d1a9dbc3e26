#include "transformer/model_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "sim/base/errors.hpp"
#include "sim/base/suggest.hpp"
#include "sim/base/text_file.hpp"
#include "sim/base/yaml_reader.hpp"
#include "transformer/builtin_models.hpp"

namespace iosim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every key is required: a model whose MLP width or vocabulary silently took a default would
// give a layer of the wrong size without a word.
const std::vector<std::string> kKeys = {
    "name",     "description",       "hidden_size", "attention_heads", "kv_heads",
    "head_dim", "intermediate_size", "mlp",         "layers",          "vocab_size",
    "norm",     "tied_embeddings",   "qkv_bias",    "sliding_window"};
const std::vector<std::string> kValueKeys = {"value", "source"};

std::string describe(const json& v) {
  if (v.is_string()) return fmt::format("the string '{}'", v.get<std::string>());
  return fmt::format("{} {}", v.type_name(), v.dump());
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

  template <typename Enum>
  Enum choice(const std::string& key,
              const std::vector<std::pair<std::string, Enum>>& options) const {
    const json& v = sourced(key);
    std::vector<std::string> names;
    for (const auto& [name, unused] : options) names.push_back(name);
    if (!v.is_string()) {
      fail(key, fmt::format("expected one of {}, got {}", fmt::join(names, ", "), describe(v)));
    }
    const std::string s = v.get<std::string>();
    for (const auto& [name, e] : options) {
      if (name == s) return e;
    }
    fail(key,
         fmt::format("'{}' is not one of {}{}", s, fmt::join(names, ", "), did_you_mean(s, names)));
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
  return kind == MlpKind::gated_silu ? "gated_silu" : "gelu";
}

const char* norm_kind_name(NormKind kind) {
  return kind == NormKind::rms_norm ? "rms_norm" : "layer_norm";
}

ModelConfig parse_model_config(const std::string& yaml_text, const std::string& origin) {
  const json root = read_yaml_json(yaml_text, origin, "model configuration");
  if (!root.is_object()) {
    throw ConfigError(fmt::format("{}: expected a map with keys {}, got {}", origin,
                                  fmt::join(kKeys, ", "), root.type_name()));
  }
  for (const auto& [key, unused] : root.items()) {
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      throw ConfigError(fmt::format("{}: unknown key '{}'{}; valid keys: {}", origin, key,
                                    did_you_mean(key, kKeys), fmt::join(kKeys, ", ")));
    }
  }
  for (const std::string& key : kKeys) {
    if (!root.contains(key)) {
      throw ConfigError(fmt::format("{}: missing required key '{}'", origin, key));
    }
  }
  const Reader r(root, origin);
  ModelConfig m;
  m.name = r.plain_string("name");
  m.description = r.plain_string("description");
  // The bounds are far beyond any published model and keep every product of them (a layer's
  // weights, tokens x vocabulary) well inside 64 bits.
  m.hidden_size = r.integer("hidden_size", 1, 1 << 20);
  m.attention_heads = r.integer("attention_heads", 1, 4096);
  m.kv_heads = r.integer("kv_heads", 1, m.attention_heads);
  if (m.attention_heads % m.kv_heads != 0) {
    r.fail("kv_heads",
           fmt::format("= {} does not divide attention_heads = {}", m.kv_heads, m.attention_heads));
  }
  m.head_dim = r.integer("head_dim", 1, 1024);
  m.intermediate_size = r.integer("intermediate_size", 1, 1 << 22);
  m.mlp = r.choice<MlpKind>("mlp", {{"gated_silu", MlpKind::gated_silu}, {"gelu", MlpKind::gelu}});
  m.layers = r.integer("layers", 1, 1024);
  m.vocab_size = r.integer("vocab_size", 1, 1 << 24);
  m.norm = r.choice<NormKind>(
      "norm", {{"rms_norm", NormKind::rms_norm}, {"layer_norm", NormKind::layer_norm}});
  m.tied_embeddings = r.boolean("tied_embeddings");
  m.qkv_bias = r.boolean("qkv_bias");
  m.sliding_window = r.integer("sliding_window", 0, std::numeric_limits<std::int32_t>::max());
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
