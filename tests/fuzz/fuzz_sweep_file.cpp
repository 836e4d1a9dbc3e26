// libFuzzer target: sweep files as `iosim report` reads them (JSON -> rows, profiles, coverage).
#include "reports/sweep_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = iosim::fuzz::as_file(data, size, ".json");
  return iosim::fuzz::guarded([&] { iosim::load_sweeps({path}); });
}
