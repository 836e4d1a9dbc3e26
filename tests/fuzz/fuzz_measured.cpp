// libFuzzer target: the measured-data reader of `iosim validate` (JSON -> cases -> predictions).
// Each input gets a 0.2 s budget: a valid case with a huge shape is slow, not a bug.
#include "api/validation.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = iosim::fuzz::as_file(data, size, ".json");
  iosim::run_control::set_budget(0.2, "(fuzz)");
  return iosim::fuzz::guarded([&] { iosim::validate_measurements(path, "h100-sxm5-80gb"); });
}
