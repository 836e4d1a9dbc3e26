// libFuzzer target: sweep files as `iosim report` reads them (JSON or CSV -> rows, profiles,
// coverage), then the best tiles, the time-vs-tile heatmaps and the Markdown report of them.
#include "reports/sweep_file.hpp"
#include "reports/sweep_report.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = iosim::fuzz::as_file(data, size, ".json");
  return iosim::fuzz::guarded([&] {
    const iosim::SweepData sweeps = iosim::load_sweeps({path});
    (void)iosim::tile_heatmaps(sweeps);
    (void)iosim::sweep_report_markdown(sweeps, nullptr);
  });
}
