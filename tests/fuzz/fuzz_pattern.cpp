// libFuzzer target: block-sparse pattern specs (--pattern) and pattern files, and paged block
// tables. The first byte picks the reader.
#include "sim/schedule/block_mask.hpp"
#include "sim/schedule/block_table.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  return iosim::fuzz::guarded([&] {
    switch (data[0] % 3) {
      case 0:
        iosim::parse_block_grid(text, "fuzz.txt");
        break;
      case 1:
        iosim::parse_block_table(text, "fuzz.txt");
        break;
      default:
        if (text.rfind("file:", 0) != 0) iosim::parse_block_pattern(text);  // no file reads
    }
  });
}
