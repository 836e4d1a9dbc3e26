#pragma once
// `iosim explain --html`: the trace as one self-contained page (no network) with a stepper: HBM
// and on-chip tiles light up as they are read and written, counters advance, numbers show.
// The page's script and style are teach/assets/, embedded at build time.
#include <string>

#include "teach/trace.hpp"

namespace iosim::teach {

/// The whole page.
std::string trace_html(const Trace& trace);

}  // namespace iosim::teach
