#pragma once
// `iosim report`: a Markdown summary and one self-contained HTML page (charts drawn by Chart.js,
// inlined, so the page opens offline) of one or more sweep files and, optionally, validation
// results. Writers only format what the sweep files and validate_measurements() hold.
//
// The HTML page marks its state on <body> for automated checks (tests/browser_test.sh):
// data-status="ok" once every <canvas> has drawn something and no script error occurred,
// data-charts-expected / data-charts-drawn count the canvases, data-errors the script errors.
#include <string>

#include "api/validation.hpp"
#include "reports/sweep_file.hpp"

namespace iosim {

/// The Markdown report: sources, best block size per problem, the time of every tile of each
/// problem (tile_heatmaps(): the fastest marked, the others as "+N%" over it, "infeasible" where
/// the tile does not fit), validation summary, infeasible points. `validation` may be null.
std::string sweep_report_markdown(const SweepData& data, const ValidationResult* validation);

/// The HTML report. `chartjs_source` is Chart.js's UMD build (see load_chartjs()), inlined.
/// The heatmaps are HTML tables (coloured by time over the problem's best, the best marked with a
/// star; the page shows those of the selected profile and d); the charts are drawn by the page's
/// script. `validation` may be null; with it the page adds predicted-vs-measured charts.
std::string sweep_report_html(const SweepData& data, const ValidationResult* validation,
                              const std::string& chartjs_source);

/// Where Debian's libjs-chart.js puts the UMD build of Chart.js.
inline constexpr const char* kDebianChartJs = "/usr/share/javascript/chart.js/chart.min.js";

/// Reads Chart.js from `path`, else from $IOSIM_CHARTJS, else the copy embedded at build time
/// (chartjs_embedded()), else from kDebianChartJs. Throws ConfigError saying how to install it
/// when the file is missing or is not Chart.js.
std::string load_chartjs(const std::string& path = "");

/// Whether this binary carries Chart.js (libjs-chart.js was there when it was configured).
bool chartjs_embedded();

}  // namespace iosim
