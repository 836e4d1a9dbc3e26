#pragma once
// A transformer model's shape, as its published configuration gives it (models/*.yaml, each value
// with its source). decoder_layer() builds one layer's operations from it (decoder_layer.hpp).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace iosim {

/// The MLP of a layer: gated (SwiGLU: gate and up projections, SiLU(gate) x up, down projection)
/// or plain (up projection, GELU, down projection).
enum class MlpKind { gated_silu, gelu };
enum class NormKind { rms_norm, layer_norm };

struct ModelConfig {
  std::string name;
  std::string description;
  std::int64_t hidden_size = 0;
  std::int64_t attention_heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate_size = 0;
  MlpKind mlp = MlpKind::gated_silu;
  std::int64_t layers = 0;
  std::int64_t vocab_size = 0;
  NormKind norm = NormKind::rms_norm;
  bool tied_embeddings = false;
  bool qkv_bias = false;
  std::int64_t sliding_window = 0;  // tokens; 0: full attention
  // Multi-head latent attention (DeepSeek-V2/V3's MLA): all five given or none (kv_lora_rank 0).
  // The query goes through a rank-q_lora_rank bottleneck (0: one q_proj), keys and values through
  // one latent of kv_lora_rank columns a token plus a shared rotary key of qk_rope_head_dim; each
  // head's query and key are qk_nope_head_dim + qk_rope_head_dim wide, its value v_head_dim.
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  std::filesystem::path source_file;

  /// Whether the model's attention is multi-head latent attention (its MLA keys given).
  bool mla() const { return kv_lora_rank > 0; }
};

/// The model of YAML text `yaml_text`; `origin` names it in messages. Throws ConfigError naming
/// the key for an unknown key (with a "did you mean"), a missing key, a value of the wrong type
/// or out of range, a check across keys that fails (some of the optional MLA keys without the
/// others among them).
ModelConfig parse_model_config(const std::string& yaml_text, const std::string& origin);

/// A built-in model by name (models/<name>.yaml, compiled in; the files of $IOSIM_MODEL_DIR when
/// it is set) or, for anything that exists, contains '/' or ends in .yaml/.yml, that file.
ModelConfig load_model_config(const std::string& name_or_path);

/// The built-in models' names, sorted.
std::vector<std::string> builtin_model_names();

const char* mlp_kind_name(MlpKind kind);
const char* norm_kind_name(NormKind kind);

}  // namespace iosim
