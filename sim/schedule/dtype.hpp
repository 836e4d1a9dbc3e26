#pragma once
// Element types of the attention inputs and outputs.
#include <cstdint>
#include <string>
#include <string_view>

namespace iosim {

// fp8 is e4m3 (1 sign, 4 exponent, 3 mantissa bits; largest finite 448): the operand type of
// FlashAttention-3's FP8 forward (--algo flash3 only; see AttentionProblem::out_elem_bytes).
enum class Dtype { fp16, bf16, fp32, fp8 };

/// Bytes per element.
constexpr std::int64_t dtype_bytes(Dtype t) {
  return t == Dtype::fp32 ? 4 : t == Dtype::fp8 ? 1 : 2;
}

/// "fp16", "bf16", "fp32" or "fp8".
std::string_view dtype_name(Dtype t);

/// Parses "fp16" | "bf16" | "fp32" | "fp8"; throws ConfigError otherwise.
Dtype parse_dtype(std::string_view s);

}  // namespace iosim
