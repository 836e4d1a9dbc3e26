#pragma once
// The small model the layer tests run (layer_test.cpp, layer_mixed_test.cpp): a prefill or a
// mixed step of it simulates in well under a second.
#include "api/layer.hpp"

inline iosim::ModelConfig layer_toy_model() {
  return iosim::parse_model_config(
      "name: toy\ndescription: toy\n"
      "hidden_size: {value: 512, source: s}\nattention_heads: {value: 8, source: s}\n"
      "kv_heads: {value: 2, source: s}\nhead_dim: {value: 64, source: s}\n"
      "intermediate_size: {value: 1536, source: s}\nmlp: {value: gated_silu, source: s}\n"
      "layers: {value: 6, source: s}\nvocab_size: {value: 4000, source: s}\n"
      "norm: {value: rms_norm, source: s}\ntied_embeddings: {value: false, source: s}\n"
      "qkv_bias: {value: true, source: s}\nsliding_window: {value: 0, source: s}\n",
      "toy.yaml");
}
