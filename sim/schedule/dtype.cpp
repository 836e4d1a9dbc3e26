#include "sim/schedule/dtype.hpp"

#include <string>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/base/suggest.hpp"

namespace iosim {

std::string_view dtype_name(Dtype t) {
  switch (t) {
    case Dtype::fp16:
      return "fp16";
    case Dtype::bf16:
      return "bf16";
    case Dtype::fp32:
      return "fp32";
    case Dtype::fp8:
      return "fp8";
  }
  throw InternalError("dtype_name: Dtype value out of range");
}

Dtype parse_dtype(std::string_view s) {
  if (s == "fp16") return Dtype::fp16;
  if (s == "bf16") return Dtype::bf16;
  if (s == "fp32") return Dtype::fp32;
  if (s == "fp8") return Dtype::fp8;
  const std::vector<std::string> names{"fp16", "bf16", "fp32", "fp8"};
  throw ConfigError("unknown dtype '" + std::string(s) + "'; valid dtypes: fp16, bf16, fp32, fp8" +
                    did_you_mean(s, names));
}

}  // namespace iosim
