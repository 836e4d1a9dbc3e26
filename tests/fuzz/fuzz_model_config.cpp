// libFuzzer target: the model configuration reader (YAML text -> ModelConfig, with its checks).
#include "tests/fuzz/fuzz_support.hpp"
#include "transformer/model_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return iosim::fuzz::guarded([&] { iosim::parse_model_config(text, "fuzz.yaml"); });
}
