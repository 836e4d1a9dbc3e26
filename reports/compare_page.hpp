#pragma once
// `iosim run --html` with several kernels: one page, the kernels side by side. Writers only: the
// comparison's rows (compare_writers.hpp) as a table, then each section of the run page
// (run_page.hpp's parts) with a column per kernel.
#include <string>
#include <vector>

#include "api/iosim.hpp"

namespace iosim {

/// The self-contained page of `reports` (each feasible, one problem and profile). Its <body>
/// carries run_page.hpp's data-status marks, over every chart of every column.
std::string compare_html(const std::vector<Report>& reports);

}  // namespace iosim
