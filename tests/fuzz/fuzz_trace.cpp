// libFuzzer target: `iosim kvcache --trace` CSV request traces.
#include "kvcache/workload.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return iosim::fuzz::guarded(
      [&] { iosim::kvcache::parse_trace(text, "fuzz.csv", iosim::kvcache::StreamSpec{}); });
}
