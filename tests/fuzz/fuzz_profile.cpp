// libFuzzer target: the profile loader (YAML text -> HardwareProfile, with all its checks).
#include "sim/hardware/profile.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return iosim::fuzz::guarded([&] { iosim::parse_profile(text, "fuzz.yaml"); });
}
