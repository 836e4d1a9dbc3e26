// Model configurations (models/*.yaml, transformer/model_config.*): every shipped model loads with
// the numbers of its published config.json, and a wrong file is refused naming the key.
#include "transformer/model_config.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "sim/base/errors.hpp"
#include "transformer/model_schema.hpp"

using iosim::ConfigError;
using iosim::ModelConfig;

namespace {

// The message of the ConfigError `f` throws, or a marker no check looks for.
std::string model_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no ConfigError>";
}

std::string model_parse_error(const std::string& text) {
  return model_error_of([&] { iosim::parse_model_config(text, "m.yaml"); });
}

bool model_msg_has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A valid model, one line a key, so that a test can replace or drop one line.
std::string good_model_text() {
  return "name: toy\n"
         "description: a toy model\n"
         "hidden_size: {value: 512, source: \"s\"}\n"
         "attention_heads: {value: 8, source: \"s\"}\n"
         "kv_heads: {value: 2, source: \"s\"}\n"
         "head_dim: {value: 64, source: \"s\"}\n"
         "intermediate_size: {value: 1536, source: \"s\"}\n"
         "mlp: {value: gated_silu, source: \"s\"}\n"
         "layers: {value: 4, source: \"s\"}\n"
         "vocab_size: {value: 1000, source: \"s\"}\n"
         "norm: {value: rms_norm, source: \"s\"}\n"
         "tied_embeddings: {value: true, source: \"s\"}\n"
         "qkv_bias: {value: false, source: \"s\"}\n"
         "sliding_window: {value: 0, source: \"s\"}\n";
}

// `text` with the line of `key` replaced by `line` (dropped when empty).
std::string replace_model_line(const std::string& text, const std::string& key,
                               const std::string& line) {
  const std::regex re("(^|\\n)" + key + ":[^\\n]*\\n");
  std::smatch m;
  REQUIRE(std::regex_search(text, m, re));
  return text.substr(0, static_cast<std::size_t>(m.position(0))) + m[1].str() + line +
         text.substr(static_cast<std::size_t>(m.position(0) + m.length(0)));
}

// good_model_text() with the line of `key` replaced by `line` (dropped when empty).
std::string with_model_line(const std::string& key, const std::string& line) {
  return replace_model_line(good_model_text(), key, line);
}

// A valid model with multi-head latent attention: good_model_text() with the MLA group, its
// head_dim the query/key head (32 + 16) and a key/value head per query head.
std::string good_mla_model_text() {
  std::string text = good_model_text();
  text = replace_model_line(text, "kv_heads", "kv_heads: {value: 8, source: \"s\"}\n");
  text = replace_model_line(text, "head_dim", "head_dim: {value: 48, source: \"s\"}\n");
  return text +
         "q_lora_rank: {value: 96, source: \"s\"}\n"
         "kv_lora_rank: {value: 64, source: \"s\"}\n"
         "qk_nope_head_dim: {value: 32, source: \"s\"}\n"
         "qk_rope_head_dim: {value: 16, source: \"s\"}\n"
         "v_head_dim: {value: 40, source: \"s\"}\n";
}

// `text` (an MLA model's) with head_dim set to its qk_nope_head_dim + qk_rope_head_dim, the
// check across the group that a change of either must keep.
std::string with_mla_head_dim(const std::string& text) {
  const auto value = [&](const std::string& key) {
    std::smatch m;
    REQUIRE(std::regex_search(text, m, std::regex("(^|\\n)" + key + ": \\{value: (\\d+)")));
    return std::stoll(m[2].str());
  };
  return replace_model_line(text, "head_dim",
                            fmt::format("head_dim: {{value: {}, source: s}}\n",
                                        value("qk_nope_head_dim") + value("qk_rope_head_dim")));
}

}  // namespace

TEST_CASE("every shipped model loads with its config.json's numbers") {
  struct Expected {
    const char* name;
    std::int64_t hidden, heads, kv, head_dim, inter, layers, vocab, window;
    bool qkv_bias;
  };
  const std::vector<Expected> expected = {
      {"deepseek-v3", 7168, 128, 128, 192, 18432, 61, 129280, 0, false},
      {"llama-3-70b", 8192, 64, 8, 128, 28672, 80, 128256, 0, false},
      {"llama-3-8b", 4096, 32, 8, 128, 14336, 32, 128256, 0, false},
      {"mistral-7b", 4096, 32, 8, 128, 14336, 32, 32000, 4096, false},
      {"qwen2-7b", 3584, 28, 4, 128, 18944, 28, 152064, 0, true},
  };
  std::vector<std::string> names;
  for (const Expected& e : expected) names.emplace_back(e.name);
  CHECK(iosim::builtin_model_names() == names);
  for (const Expected& e : expected) {
    CAPTURE(e.name);
    const ModelConfig m = iosim::load_model_config(e.name);
    CHECK(m.name == e.name);
    CHECK(m.hidden_size == e.hidden);
    CHECK(m.attention_heads == e.heads);
    CHECK(m.kv_heads == e.kv);
    CHECK(m.head_dim == e.head_dim);
    CHECK(m.intermediate_size == e.inter);
    CHECK(m.layers == e.layers);
    CHECK(m.vocab_size == e.vocab);
    CHECK(m.sliding_window == e.window);
    CHECK(m.qkv_bias == e.qkv_bias);
    CHECK(m.mlp == iosim::MlpKind::gated_silu);
    CHECK(m.norm == iosim::NormKind::rms_norm);
    CHECK_FALSE(m.tied_embeddings);
    // DeepSeek-V3's multi-head latent attention (its config.json's MLA keys); the others have none.
    CHECK(m.mla() == (m.name == "deepseek-v3"));
    if (m.mla()) {
      CHECK(m.q_lora_rank == 1536);
      CHECK(m.kv_lora_rank == 512);
      CHECK(m.qk_nope_head_dim == 128);
      CHECK(m.qk_rope_head_dim == 64);
      CHECK(m.v_head_dim == 128);
    } else {
      CHECK(m.q_lora_rank + m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim == 0);
    }
    // The file in the source tree is what was embedded, read as a path too.
    const ModelConfig from_path =
        iosim::load_model_config(std::string(IOSIM_REPO_DIR) + "/models/" + e.name + ".yaml");
    CHECK(from_path.hidden_size == m.hidden_size);
    CHECK(from_path.vocab_size == m.vocab_size);
  }
}

TEST_CASE("every shipped model value names its source, a Hugging Face config.json or the code") {
  for (const std::string& name : iosim::builtin_model_names()) {
    std::ifstream in(std::string(IOSIM_REPO_DIR) + "/models/" + name + ".yaml");
    REQUIRE(in.good());
    std::string line;
    int sourced = 0;
    while (std::getline(in, line)) {
      if (!model_msg_has(line, "{value:")) continue;
      ++sourced;
      CAPTURE(line);
      CHECK(
          (model_msg_has(line, "https://huggingface.co/") || model_msg_has(line, "transformers")));
    }
    // 12 keys every model has, and the MLA group's 5 where it has them.
    CHECK(sourced == (iosim::load_model_config(name).mla() ? 17 : 12));
  }
}

TEST_CASE("a model name or file that is wrong is refused with what to do") {
  const std::string unknown = model_error_of([] { iosim::load_model_config("llama-3-8"); });
  CHECK(model_msg_has(unknown, "unknown model 'llama-3-8'"));
  CHECK(model_msg_has(unknown, "did you mean 'llama-3-8b'"));
  CHECK(model_msg_has(model_error_of([] { iosim::load_model_config("/no/such/model.yaml"); }),
                      "/no/such/model.yaml"));
}

TEST_CASE("bad model files give a ConfigError naming the key") {
  CHECK(iosim::parse_model_config(good_model_text(), "m.yaml").kv_heads == 2);

  SUBCASE("an unknown key, with a did-you-mean") {
    const std::string e =
        model_parse_error(good_model_text() + "vocab_szie: {value: 1, source: s}\n");
    CHECK(model_msg_has(e, "unknown key 'vocab_szie'"));
    CHECK(model_msg_has(e, "did you mean 'vocab_size'"));
  }
  SUBCASE("every key is required but the MLA group") {
    // An independent list of the keys the reader must require, then the optional group's: the
    // rows must be these.
    const std::vector<std::string> required = {
        "name",     "description",       "hidden_size", "attention_heads", "kv_heads",
        "head_dim", "intermediate_size", "mlp",         "layers",          "vocab_size",
        "norm",     "tied_embeddings",   "qkv_bias",    "sliding_window"};
    const std::vector<std::string> mla = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                          "qk_rope_head_dim", "v_head_dim"};
    std::vector<std::string> all = required;
    all.insert(all.end(), mla.begin(), mla.end());
    CHECK(iosim::model_yaml::key_names() == all);
    CHECK(iosim::model_yaml::mla_key_names() == mla);
    for (const char* key : {"name", "description", "hidden_size", "attention_heads", "kv_heads",
                            "head_dim", "intermediate_size", "mlp", "layers", "vocab_size", "norm",
                            "tied_embeddings", "qkv_bias", "sliding_window"}) {
      CAPTURE(key);
      CHECK(model_msg_has(model_parse_error(with_model_line(key, "")),
                          std::string("missing required key '") + key + "'"));
    }
  }
  SUBCASE("the MLA group: all of it or none, its heads the model's") {
    const ModelConfig m = iosim::parse_model_config(good_mla_model_text(), "m.yaml");
    CHECK(m.mla());
    CHECK(m.q_lora_rank == 96);
    CHECK(m.kv_lora_rank == 64);
    CHECK(m.qk_nope_head_dim == 32);
    CHECK(m.qk_rope_head_dim == 16);
    CHECK(m.v_head_dim == 40);
    CHECK_FALSE(iosim::parse_model_config(good_model_text(), "m.yaml").mla());
    // q_lora_rank 0: a plain q_proj, still an MLA model.
    CHECK(iosim::parse_model_config(replace_model_line(good_mla_model_text(), "q_lora_rank",
                                                       "q_lora_rank: {value: 0, source: s}\n"),
                                    "m.yaml")
              .mla());
    // Any one key of the group left out, or given alone, is refused naming the others.
    for (const std::string& key : iosim::model_yaml::mla_key_names()) {
      CAPTURE(key);
      const std::string without =
          model_parse_error(replace_model_line(good_mla_model_text(), key, ""));
      CHECK(model_msg_has(without, "given without " + key +
                                       ": the multi-head latent attention keys (q_lora_rank, "
                                       "kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, "
                                       "v_head_dim) go all together or not at all"));
      const std::string alone =
          model_parse_error(good_model_text() + key + ": {value: 64, source: s}\n");
      CHECK(model_msg_has(alone, "m.yaml: " + key + " given without "));
    }
    CHECK(model_parse_error(replace_model_line(good_mla_model_text(), "head_dim",
                                               "head_dim: {value: 64, source: s}\n")) ==
          "m.yaml: head_dim: = 64, but a multi-head latent attention model's query/key head is "
          "qk_nope_head_dim + qk_rope_head_dim = 32 + 16 = 48");
    CHECK(model_parse_error(replace_model_line(good_mla_model_text(), "kv_heads",
                                               "kv_heads: {value: 2, source: s}\n")) ==
          "m.yaml: kv_heads: = 2, but a multi-head latent attention model has a key and a value "
          "head per query head (attention_heads = 8) before absorption");
  }
  SUBCASE("a name is one line: a \"\\n\" escape split the layer's tables") {
    CHECK(model_msg_has(model_parse_error(with_model_line("name", "name: \"llama\\nx\"\n")),
                        "name: a name is one line of text: it holds the control character U+000A"));
  }
  SUBCASE("out-of-range and mistyped values") {
    CHECK(model_msg_has(
        model_parse_error(with_model_line("hidden_size", "hidden_size: {value: 0, source: s}\n")),
        "hidden_size: = 0 is out of range"));
    CHECK(model_msg_has(
        model_parse_error(with_model_line("layers", "layers: {value: 2.5, source: s}\n")),
        "layers: expected an integer"));
    CHECK(model_msg_has(
        model_parse_error(with_model_line("kv_heads", "kv_heads: {value: 3, source: s}\n")),
        "kv_heads: = 3 does not divide attention_heads = 8"));
    CHECK(model_msg_has(
        model_parse_error(with_model_line("kv_heads", "kv_heads: {value: 16, source: s}\n")),
        "kv_heads: = 16 is out of range [1, 8]"));
    CHECK(model_msg_has(
        model_parse_error(with_model_line("mlp", "mlp: {value: swiglu, source: s}\n")),
        "mlp: 'swiglu' is not one of gated_silu, gelu"));
    CHECK(model_msg_has(
        model_parse_error(with_model_line("norm", "norm: {value: rmsnorm, source: s}\n")),
        "did you mean 'rms_norm'"));
    CHECK(model_msg_has(
        model_parse_error(with_model_line("qkv_bias", "qkv_bias: {value: 1, source: s}\n")),
        "qkv_bias: expected true or false"));
  }
  SUBCASE("a value without its source, or a bare number") {
    CHECK(model_msg_has(model_parse_error(with_model_line("layers", "layers: {value: 4}\n")),
                        "layers: missing required key 'source'"));
    CHECK(model_msg_has(
        model_parse_error(with_model_line("layers", "layers: {value: 4, source: \"\"}\n")),
        "layers: source must be a non-empty string"));
    CHECK(model_msg_has(model_parse_error(with_model_line("layers", "layers: 4\n")),
                        "layers: expected a map {value: ..., source: \"...\"}"));
    CHECK(model_msg_has(
        model_parse_error(with_model_line("layers", "layers: {value: 4, source: s, unit: x}\n")),
        "layers: unknown key 'unit'"));
  }
  SUBCASE("not a map at all") {
    CHECK(model_msg_has(model_parse_error("- 1\n- 2\n"), "m.yaml: expected a map"));
  }
}

namespace {

// The line of key `k` with value text `value`: a {value, source} map, or the plain string.
std::string model_line(const iosim::model_yaml::Key& k, const std::string& value) {
  if (!iosim::model_yaml::sourced(k)) return std::string(k.key) + ": " + value + "\n";
  return std::string(k.key) + ": {value: " + value + ", source: s}\n";
}

}  // namespace

TEST_CASE("every model key's row is what the reader holds a file to") {
  using iosim::model_yaml::Key;
  using iosim::model_yaml::kModelKeys;
  const ModelConfig good = iosim::parse_model_config(good_model_text(), "m.yaml");
  // The upper bound of an integer row in good_model_text(): its own, or its at_most key's value.
  const auto upper = [&](const Key& k) {
    std::int64_t hi = k.hi;
    if (k.at_most != nullptr) {
      for (const Key& other : kModelKeys) {
        if (std::string(other.key) == k.at_most) {
          hi = std::min(hi, good.*std::get<std::int64_t ModelConfig::*>(other.member));
        }
      }
    }
    return hi;
  };
  // good_model_text() with every key bounded by another at its lowest, so that any key's own
  // bounds are accepted there (attention_heads = 1 with kv_heads = 1).
  std::string lowest = good_model_text();
  for (const Key& k : kModelKeys) {
    if (k.at_most != nullptr) {
      lowest = replace_model_line(lowest, k.key, model_line(k, std::to_string(k.lo)));
    }
  }
  for (const Key& k : kModelKeys) {
    CAPTURE(k.key);
    const std::string key = k.key;
    CHECK(std::string(k.doc).size() > 0);
    // The MLA group's rows are checked in a model that has the group, whose head_dim follows its
    // query/key head.
    const std::string base = k.mla ? good_mla_model_text() : good_model_text();
    const auto with_line = [&](const std::string& line) {
      const std::string text = replace_model_line(base, key, line);
      return k.mla && !line.empty() && model_msg_has(line, "{value: ") &&
                     std::regex_search(line, std::regex(": \\{value: \\d+, source"))
                 ? with_mla_head_dim(text)
                 : text;
    };
    // Missing: refused naming the key (an MLA key: naming it among the group's).
    if (k.mla) {
      CHECK(model_msg_has(model_parse_error(with_line("")), "given without " + key + ": "));
    } else {
      CHECK(model_parse_error(with_line("")) == "m.yaml: missing required key '" + key + "'");
    }
    // Misspelt (its last two letters swapped): refused, with this key as the guess.
    std::string typo = key;
    std::swap(typo[typo.size() - 1], typo[typo.size() - 2]);
    const std::string twice = model_parse_error(base + model_line(k, "1"));
    const std::string misspelt = model_parse_error(base + (typo + ": {value: 1, source: s}\n"));
    CHECK(model_msg_has(misspelt, "m.yaml: unknown key '" + typo + "' (did you mean '" + key +
                                      "'?); valid keys: name, description,"));
    // Given twice (the YAML reader's refusal, with the line), not read as the last one.
    CHECK(model_msg_has(twice, "duplicate key '" + key + "'"));
    const std::string type = iosim::model_yaml::type_name(k);
    if (!iosim::model_yaml::sourced(k)) {
      CHECK(model_msg_has(model_parse_error(with_line(key + ": 5\n")),
                          "m.yaml: " + key + ": expected a non-empty string, got number 5"));
      continue;
    }
    // A sourced key given bare, or without its source, names the key.
    CHECK(model_msg_has(model_parse_error(with_line(key + ": 4\n")),
                        "m.yaml: " + key + ": expected a map {value: ..., source: \"...\"}"));
    CHECK(model_parse_error(with_line(key + ": {value: 4}\n")) ==
          "m.yaml: " + key + ": missing required key 'source'");
    if (!iosim::model_yaml::choices(k).empty()) {
      // Every name is read as the enum at its position; a near miss is refused with a guess.
      for (const char* name : iosim::model_yaml::choices(k)) {
        CHECK_NOTHROW(iosim::parse_model_config(with_model_line(key, model_line(k, name)), "m"));
      }
      const std::string first = iosim::model_yaml::choices(k)[0];
      const std::string near = first.substr(0, first.size() - 1);
      CHECK(model_msg_has(model_parse_error(with_model_line(key, model_line(k, near))),
                          "m.yaml: " + key + ": '" + near + "' is not one of " + first + ", "));
      CHECK(model_msg_has(model_parse_error(with_model_line(key, model_line(k, near))),
                          "(did you mean '" + first + "'?)"));
    } else if (type == "boolean") {
      CHECK(model_parse_error(with_model_line(key, model_line(k, "1"))) ==
            "m.yaml: " + key + ": expected true or false, got number 1");
    } else {
      REQUIRE(type == "integer");
      const std::int64_t hi = upper(k);
      REQUIRE(k.lo <= hi);
      const std::string range = fmt::format("[{}, {}]", k.lo, hi);
      // The bounds are accepted (a key bounded by another in good_model_text(), whose 8 query
      // heads its bounds 1 and 8 divide; any other in `lowest`), one past either is refused
      // naming the key.
      for (const std::int64_t v : {k.lo, hi}) {
        if (k.mla) {
          CHECK_NOTHROW(
              iosim::parse_model_config(with_line(model_line(k, std::to_string(v))), "m.yaml"));
          continue;
        }
        const std::string text = k.at_most != nullptr ? good_model_text() : lowest;
        CHECK_NOTHROW(iosim::parse_model_config(
            replace_model_line(text, key, model_line(k, std::to_string(v))), "m.yaml"));
      }
      for (const std::int64_t v : {k.lo - 1, hi + 1}) {
        CHECK(model_parse_error(with_line(model_line(k, std::to_string(v)))) ==
              fmt::format("m.yaml: {}: = {} is out of range {}", key, v, range));
      }
      CHECK(model_msg_has(model_parse_error(with_line(model_line(k, "\"8\""))),
                          "m.yaml: " + key + ": expected an integer, got the string '8'"));
    }
  }
}

TEST_CASE("the model key table and schema are written from the rows (golden)") {
  const std::string md = iosim::model_key_table(true);
  CHECK(model_msg_has(md, "| key | type | meaning (config.json key) | check |\n"));
  CHECK(model_msg_has(md,
                      "| `kv_heads` | integer | key/value heads (`num_key_value_heads`) | 1 to "
                      "`attention_heads`, dividing it |\n"));
  CHECK(model_msg_has(md,
                      "| `norm` | string | `rms_norm` or `layer_norm` | one of `rms_norm`, "
                      "`layer_norm` |\n"));
  CHECK(model_msg_has(md,
                      "| `name` | string | the model's name; for a built-in model, equal to "
                      "the file stem | non-empty |\n"));
  // One line a key besides the header's two.
  CHECK(std::count(md.begin(), md.end(), '\n') ==
        static_cast<std::ptrdiff_t>(iosim::model_yaml::kModelKeys.size() + 2));
  const std::string schema = iosim::model_json_schema();
  CHECK(model_msg_has(schema, "\"$id\": \"https://iosim.invalid/schemas/model.schema.json\""));
  CHECK(model_msg_has(schema, "\"enum\": [\n            \"gated_silu\",\n            \"gelu\"\n"));
  CHECK(std::string(iosim::mlp_kind_name(iosim::MlpKind::gelu)) == "gelu");
  CHECK(std::string(iosim::norm_kind_name(iosim::NormKind::layer_norm)) == "layer_norm");
  CHECK(model_parse_error(with_model_line("kv_heads", "kv_heads: {value: 3, source: s}\n")) ==
        "m.yaml: kv_heads: = 3 does not divide attention_heads = 8");
}
