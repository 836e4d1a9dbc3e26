#pragma once
// `iosim run --html` and `--svg`: one run as pictures. Writers only: every number comes from the
// Report (the engine's counters and timeline, Report::Achieved's rates and peaks at the run's
// clock); these functions place and label them.
//
//   - The memory chart, in the manner of Nsight Compute's: registers <-> shared memory <-> L2 <->
//     HBM, the bytes on each link in each direction, each link's share of its bandwidth over the
//     run's time, the L2's hit rate of reads.
//   - The roofline: the run (and, in a run of several kernels, each kernel with tensor-core work)
//     against the HBM and L2 roofs and the tensor-core roof at the run's clock, points labelled.
//   - The timeline (the page only): each kernel in turn, its launch overhead, its waves and its
//     tail (KernelResult::launch_s, wave_end_s, tail_s).
//
// The page marks its state on <body> for tests/run_browser_test.sh: data-status="ok" once every
// chart has drawn and no script error occurred; data-charts-expected / data-charts-drawn count the
// charts, data-errors the script errors. Each link of the memory chart carries its exact bytes as
// data-read-bytes and data-write-bytes.
#include <string>

#include "api/iosim.hpp"

namespace iosim {

/// The memory chart above the roofline, as one standalone SVG document. `r` must be feasible.
std::string run_svg(const Report& r);

/// The self-contained page (no network): the run's numbers, the memory chart, the roofline and
/// the kernel timeline. `r` must be feasible.
std::string run_html(const Report& r);

/// The pieces run_html() is made of, which the page of several kernels side by side
/// (compare_page.hpp) sets in columns: the page's head (its style and error capture, an <h1>
/// of `title`) and tail (the script that marks <body>'s data-status), each chart as an inline
/// <svg class="chart ...">, and the tables. Each `r` must be feasible.
namespace run_page_parts {
extern const char* const kAttributionNote;  // below the time table: what the rows charge
extern const char* const kRooflineNote;     // below the roofline: what the intensity counts
std::string page_head(const std::string& title);
std::string page_tail();
std::string achieved_table(const Report& r);   // achieved rates against the peaks
std::string attribution_svg(const Report& r);  // where the time goes, as one bar
std::string time_table(const Report& r);       // the same by resource and kernel
std::string memory_svg(const Report& r);
std::string roofline_svg(const Report& r);
std::string timeline_svg(const Report& r);
std::string kernels_table(const Report& r);  // one row per GPU kernel
}  // namespace run_page_parts

}  // namespace iosim
