// libFuzzer target: sweep value lists and ranges (--seq 512:65536:x2,100), shards, and the
// point count of their product. The first byte picks the parser.
#include "api/sweep.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  return iosim::fuzz::guarded([&] {
    switch (data[0] % 4) {
      case 0: {
        const auto a = iosim::parse_int_values("--seq", text);
        iosim::combination_count({a.size(), a.size(), a.size()});
        break;
      }
      case 1:
        iosim::parse_double_values("--dropout", text);
        break;
      case 2:
        iosim::parse_string_values("--algo", text);
        break;
      default:
        iosim::parse_shard(text);
    }
  });
}
