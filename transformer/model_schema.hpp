#pragma once
// The schema of a model's YAML (models/*.yaml, transformer/model_config.hpp's ModelConfig): each
// key declared once, in one row: the member it fills (whose type says string, integer, boolean or
// one of a list), one line of doc (what it is and the config.json key it comes from), an integer's
// bounds, and the check across keys in words. Everything else reads the rows: the reader
// (model_config.cpp: unknown key with "did you mean", missing key, type, range), models/README.md's
// key table (`iosim models --keys --format md`, checked by scripts/readme_tables.sh) and
// schemas/model.schema.json (`iosim models --schema`, checked by tests/schema_test.sh), both
// written in model_docs.cpp, as profile_schema.hpp's rows are for profiles.
#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "transformer/model_config.hpp"

namespace iosim::model_yaml {

// The member a key fills. A std::string is a plain string (name, description); every other key is
// a {value, source} map whose value is an integer, a boolean or one of an enum's names.
using Member = std::variant<std::string ModelConfig::*, std::int64_t ModelConfig::*,
                            bool ModelConfig::*, MlpKind ModelConfig::*, NormKind ModelConfig::*>;

// An enum's names in its order: the value read is the enum at the name's position.
inline constexpr std::array<const char*, 2> kMlpKindNames{"gated_silu", "gelu"};
inline constexpr std::array<const char*, 2> kNormKindNames{"rms_norm", "layer_norm"};
inline std::span<const char* const> choice_names(MlpKind ModelConfig::*) {
  return kMlpKindNames;
}
inline std::span<const char* const> choice_names(NormKind ModelConfig::*) {
  return kNormKindNames;
}

// One row: a key, its member, its doc line, an integer's range [lo, hi] (at most `at_most`'s
// value too when set: a key read before it), the checks across keys that parse_model_config()
// writes out, in words for the docs' table, and whether the key is one of the optional group of
// multi-head latent attention (`mla`: all of the group or none).
struct Key {
  const char* key;
  Member member;
  const char* doc;
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  const char* at_most = nullptr;
  const char* across = nullptr;
  bool mla = false;
};

// The MLA group's check across keys, in words (its rows' `across`).
inline constexpr const char* kMlaAcross =
    "with all of the MLA keys or none; with them, `head_dim` = `qk_nope_head_dim` + "
    "`qk_rope_head_dim` and `kv_heads` = `attention_heads`";

// Every key but the MLA group's is required: a model whose MLP width or vocabulary silently took a
// default would give a layer of the wrong size without a word. The MLA keys are one group, given
// all together (a model with multi-head latent attention) or not at all (every other model: the
// files written before the group stay valid); a group given in part is refused. The bounds are
// far beyond any published model and keep every product of them (a layer's weights, tokens x
// vocabulary) well inside 64 bits; the MLA group's keep the latent decode's head (kv_lora_rank +
// qk_rope_head_dim) and the query/key head (qk_nope_head_dim + qk_rope_head_dim) within the
// attention's 1024 columns. The order is the order keys are read and checked in (kv_heads after
// attention_heads, which bounds it; the MLA group last, checked once read).
inline const std::array<Key, 19> kModelKeys{{
    {"name", &ModelConfig::name, "the model's name; for a built-in model, equal to the file stem"},
    {"description", &ModelConfig::description, "human name of the model"},
    {"hidden_size", &ModelConfig::hidden_size, "model width (`hidden_size`)", 1, 1 << 20},
    {"attention_heads", &ModelConfig::attention_heads, "query heads (`num_attention_heads`)", 1,
     4096},
    {"kv_heads", &ModelConfig::kv_heads, "key/value heads (`num_key_value_heads`)", 1, 4096,
     "attention_heads", "dividing it"},
    {"head_dim", &ModelConfig::head_dim,
     "per head (`head_dim`, else `hidden_size / num_attention_heads`)", 1, 1024},
    {"intermediate_size", &ModelConfig::intermediate_size, "MLP width (`intermediate_size`)", 1,
     1 << 22},
    {"mlp", &ModelConfig::mlp,
     "`gated_silu` (SwiGLU: gate and up projections, SiLU(gate) x up, down projection; "
     "`hidden_act: silu` with `gate_proj`/`up_proj`) or `gelu` (up, GELU, down)"},
    {"layers", &ModelConfig::layers, "decoder layers (`num_hidden_layers`)", 1, 1024},
    {"vocab_size", &ModelConfig::vocab_size, "vocabulary (`vocab_size`)", 1, 1 << 24},
    {"norm", &ModelConfig::norm, "`rms_norm` or `layer_norm`"},
    {"tied_embeddings", &ModelConfig::tied_embeddings,
     "LM head shares the embedding matrix (`tie_word_embeddings`)"},
    {"qkv_bias", &ModelConfig::qkv_bias, "the q, k, v projections add a bias"},
    {"sliding_window", &ModelConfig::sliding_window,
     "attention window in tokens, 0 for none (`sliding_window`)", 0,
     std::numeric_limits<std::int32_t>::max()},
    {"q_lora_rank", &ModelConfig::q_lora_rank,
     "MLA: the query's low-rank bottleneck (`q_lora_rank`; 0 or `null` there: one `q_proj`)", 0,
     1 << 20, nullptr, kMlaAcross, true},
    {"kv_lora_rank", &ModelConfig::kv_lora_rank,
     "MLA: columns of the latent K/V cache a token (`kv_lora_rank`)", 1, 768, nullptr, kMlaAcross,
     true},
    {"qk_nope_head_dim", &ModelConfig::qk_nope_head_dim,
     "MLA: a query/key head's columns without rotary embedding (`qk_nope_head_dim`)", 1, 768,
     nullptr, kMlaAcross, true},
    {"qk_rope_head_dim", &ModelConfig::qk_rope_head_dim,
     "MLA: a query/key head's rotary columns, the key's shared by the heads (`qk_rope_head_dim`)",
     0, 256, nullptr, kMlaAcross, true},
    {"v_head_dim", &ModelConfig::v_head_dim, "MLA: a value head's columns (`v_head_dim`)", 1, 1024,
     nullptr, kMlaAcross, true},
}};

// The type a row's member reads as: "string" (plain or one of a list), "integer", "boolean".
inline const char* type_name(const Key& k) {
  return std::visit(
      [](auto m) -> const char* {
        using T = std::remove_reference_t<decltype(ModelConfig{}.*m)>;
        if constexpr (std::is_same_v<T, std::int64_t>) return "integer";
        if constexpr (std::is_same_v<T, bool>) return "boolean";
        return "string";
      },
      k.member);
}

// Whether the key is a {value, source} map (every key but the plain strings).
inline bool sourced(const Key& k) {
  return !std::holds_alternative<std::string ModelConfig::*>(k.member);
}

// The names an enum key's value must be one of; empty for any other key.
inline std::span<const char* const> choices(const Key& k) {
  return std::visit(
      [](auto m) -> std::span<const char* const> {
        using T = std::remove_reference_t<decltype(ModelConfig{}.*m)>;
        if constexpr (std::is_enum_v<T>) {
          return choice_names(m);
        } else {
          return {};
        }
      },
      k.member);
}

inline std::vector<std::string> key_names() {
  std::vector<std::string> names;
  for (const Key& k : kModelKeys) names.emplace_back(k.key);
  return names;
}

/// The MLA group's keys, in the rows' order.
inline std::vector<std::string> mla_key_names() {
  std::vector<std::string> names;
  for (const Key& k : kModelKeys) {
    if (k.mla) names.emplace_back(k.key);
  }
  return names;
}

}  // namespace iosim::model_yaml

namespace iosim {

/// The model keys, from their rows: one line of type and check and one of doc each, or,
/// `markdown`, models/README.md's table (`iosim models --keys [--format md]`).
std::string model_key_table(bool markdown);

/// The JSON Schema of a model file read as JSON (schemas/model.schema.json, `iosim models
/// --schema`).
std::string model_json_schema();

}  // namespace iosim
