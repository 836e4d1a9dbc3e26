// libFuzzer target: the readers of issue #30's classes that take a number or a size from the
// user and must refuse, not take, what they cannot hold. The first byte picks one:
//   0: --max-memory's size (a result is at least one byte and below 2^63);
//   1: a --set override, applied to the H100 profile (decimal, finite, in the key's range);
//   2: a block pattern with a sequence length from the next two bytes: the block mask asks the
//      memory budget (256 MiB here) before it takes its blocks.
#include <cstdlib>

#include "sim/base/memory_budget.hpp"
#include "sim/hardware/profile_overrides.hpp"
#include "sim/schedule/block_mask.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 3, size - 3);
  iosim::memory_budget::set_bytes(std::uint64_t{1} << 28, "the fuzz target");
  return iosim::fuzz::guarded([&] {
    switch (data[0] % 3) {
      case 0: {
        const std::uint64_t bytes = iosim::memory_budget::parse_size(text, "--max-memory");
        if (bytes < 1 || bytes > (std::uint64_t{1} << 63)) std::abort();
        break;
      }
      case 1:
        iosim::load_profile("h100-sxm5-80gb", iosim::parse_profile_overrides({text}));
        break;
      default: {
        iosim::AttentionProblem p;
        // Up to 2^24 tokens in steps of 256: masks from one block to 2^34 of them.
        p.seq = p.seq_kv = 256 * (1 + (static_cast<std::int64_t>(data[1]) << 8 | data[2]));
        p.pattern = std::make_shared<iosim::BlockPattern>(iosim::parse_block_pattern(text));
        const iosim::BlockMask mask(p, 128, 128);
        if (mask.nonzero_blocks() > mask.rows() * mask.cols()) std::abort();
      }
    }
  });
}
