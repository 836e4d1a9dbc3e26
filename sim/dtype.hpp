#pragma once
// Element types of the attention inputs and outputs.
#include <cstdint>
#include <string>
#include <string_view>

namespace iosim {

enum class Dtype { fp16, bf16, fp32 };

/// Bytes per element.
constexpr std::int64_t dtype_bytes(Dtype t) {
  return t == Dtype::fp32 ? 4 : 2;
}

/// "fp16", "bf16" or "fp32".
std::string_view dtype_name(Dtype t);

/// Parses "fp16" | "bf16" | "fp32"; throws ConfigError otherwise.
Dtype parse_dtype(std::string_view s);

}  // namespace iosim
