#pragma once
// SVG pieces the report pages share (reports/run_page.cpp's charts, reports/layer_page.cpp's):
// text, the document's opening tag, log axes and the roofline's frame and roofs. Writers only:
// they place what they are given. The classes they use are styled by reports/assets/run_chart.css.
#include <string>

namespace iosim {

/// Width of every chart, in SVG units.
inline constexpr double kChartWidth = 1090;

/// A <text> element at (x, y), `s` escaped; `cls` its class ("" none), `anchor` its text-anchor.
std::string svg_text(double x, double y, const std::string& s, const char* cls = "",
                     const char* anchor = "middle");

/// The opening <svg> tag of a chart `w` x `h` with class `cls`.
std::string svg_open(double w, double h, const char* cls);

/// Lines of text down the right of a roofline chart (its legend), appended to `out`: each
/// left-aligned at (x, y), the next 17 units lower.
struct SvgLegend {
  std::string& out;
  double x = 740, y = 60;
  void line(const std::string& text, const char* cls = "") {
    out += svg_text(x, y, text, cls, "start");
    y += 17;
  }
};

/// A log10 axis from 10^lo to 10^hi onto [p0, p1].
struct LogAxis {
  double lo, hi, p0, p1;
  double at(double v) const;
};

/// The plot area of a roofline: x from 80 to 720, y from 380 (bottom) to 50.
struct RooflinePlot {
  LogAxis x, y;  // x: FLOPs per byte; y: TFLOP/s
};

/// The axes of `plot` from its lowest and highest intensities and TFLOP/s: half a decade beyond
/// them along x, a decade under the lowest TFLOP/s and a third above the highest.
RooflinePlot roofline_plot(double x_min, double x_max, double y_min, double y_max);

/// The roofline's clip path, grid lines at each decade with their labels, frame and axis titles.
std::string roofline_axes(const RooflinePlot& plot, const std::string& x_title);

/// A bandwidth roof (`cls`: "hbm" or "l2"): FLOP/s = bandwidth x intensity up to the ridge, then
/// flat at `peak_tflops`.
std::string bandwidth_roof(const RooflinePlot& plot, const char* cls, double gbps,
                           double peak_tflops);

/// The compute roof: flat at `peak_tflops` from intensity `from` to the plot's right edge.
std::string compute_roof(const RooflinePlot& plot, double from, double peak_tflops);

}  // namespace iosim
