#pragma once
// `iosim layer --html`: a sweep of layer runs as one self-contained page (no script, no network).
// Writers only: every number comes from the LayerReports; these functions place and label them.
//
//   - Time per op: one stacked bar per point (the layer's ops, in execution order), so that what
//     grows with the swept axis shows as the segment that grows. Each bar is a
//     <g class="bar" data-point="..."> and each segment a <rect class="op" data-op="...">.
//   - The roofline: every op of every point as a dot labelled with its op and point number, at
//     its FLOPs per HBM byte and its achieved TFLOP/s, under the tensor-core and HBM roofs.
#include <string>

#include "api/layer_flags.hpp"

namespace iosim {

/// The page of `run` (one point or more).
std::string layer_sweep_html(const LayerSweepRun& run);

}  // namespace iosim
