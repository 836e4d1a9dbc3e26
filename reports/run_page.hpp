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

}  // namespace iosim
