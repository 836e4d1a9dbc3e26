#pragma once
// `iosim explain --html`: the trace as one self-contained page (no network) with a stepper: HBM
// and on-chip tiles light up as they are read and written, counters advance, numbers show.
// The page's script and style are teach/assets/, embedded at build time. With --compare, a static
// page of several traces' totals.
#include <string>
#include <vector>

#include "teach/trace.hpp"

namespace iosim::teach {

/// The whole page.
std::string trace_html(const Trace& trace);

/// `iosim explain --compare ... --html`: two or more traces of the same problem as one static,
/// self-contained page (no script): a bar chart (inline SVG) of each schedule's bytes at each
/// level, the table of write_compare and its notes.
std::string compare_html(const std::vector<Trace>& traces);

}  // namespace iosim::teach
