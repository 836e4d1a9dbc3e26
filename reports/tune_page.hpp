#pragma once
// `iosim tune --html`: the ranked tilings as one self-contained page. Writers only: it renders
// tune_to_json()'s document (reports/tune_writers.hpp), so that the page and the JSON cannot
// disagree: a bar per ranked tiling (its time over the best's, the tie band shaded, the
// algorithm's own tiling marked), the table with why each ranks where it does (bound, CTAs per
// SM, waves, HBM bytes), the algorithm's default and every infeasible tiling with its reason.
// Its <body> carries run_page.hpp's data-status marks.
#include <cstddef>
#include <string>

#include "api/tune.hpp"

namespace iosim {

/// The page of `result`, its `top` fastest tilings (0: all). `result` has a feasible tiling.
std::string tune_html(const TuneResult& result, std::size_t top);

}  // namespace iosim
