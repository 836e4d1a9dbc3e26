#include "reports/svg_chart.hpp"

#include <fmt/format.h>

#include <cmath>

#include "sim/base/html_text.hpp"

namespace iosim {
namespace {

std::string decade_text(int k) {
  return fmt::format("{:g}", std::pow(10.0, k));
}

}  // namespace

std::string svg_text(double x, double y, const std::string& s, const char* cls,
                     const char* anchor) {
  return fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\"{}>{}</text>\n", x, y,
                     anchor, *cls ? fmt::format(" class=\"{}\"", cls) : "", html_escape(s));
}

std::string svg_open(double w, double h, const char* cls) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{}\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\">\n",
      cls, w, h, w, h);
}

double LogAxis::at(double v) const {
  return p0 + (std::log10(v) - lo) / (hi - lo) * (p1 - p0);
}

RooflinePlot roofline_plot(double x_min, double x_max, double y_min, double y_max) {
  return {{std::log10(x_min) - 0.5, std::log10(x_max) + 0.5, 80, 720},
          {std::log10(y_min) - 1, std::log10(y_max) + 0.3, 380, 50}};
}

std::string roofline_axes(const RooflinePlot& plot, const std::string& x_title) {
  const LogAxis& ax = plot.x;
  const LogAxis& ay = plot.y;
  std::string s =
      "<clipPath id=\"iosim-plot\"><rect x=\"80\" y=\"50\" width=\"640\" height=\"330\"/>"
      "</clipPath>\n";
  for (int k = static_cast<int>(std::ceil(ax.lo)); k <= static_cast<int>(std::floor(ax.hi)); ++k) {
    const double px = ax.at(std::pow(10.0, k));
    s += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" y1=\"50\" x2=\"{0:.1f}\" y2=\"380\"/>\n",
                     px);
    s += svg_text(px, 396, decade_text(k), "axis");
  }
  for (int k = static_cast<int>(std::floor(ay.hi)); k >= static_cast<int>(std::ceil(ay.lo)); --k) {
    const double py = ay.at(std::pow(10.0, k));
    s += fmt::format("<line class=\"grid\" x1=\"80\" y1=\"{0:.1f}\" x2=\"720\" y2=\"{0:.1f}\"/>\n",
                     py);
    s += svg_text(74, py + 4, decade_text(k), "axis", "end");
  }
  s += "<line class=\"frame\" x1=\"80\" y1=\"380\" x2=\"720\" y2=\"380\"/>\n"
       "<line class=\"frame\" x1=\"80\" y1=\"50\" x2=\"80\" y2=\"380\"/>\n";
  s += svg_text(400, 414, x_title, "axis");
  s += "<text x=\"22\" y=\"215\" text-anchor=\"middle\" class=\"axis\" "
       "transform=\"rotate(-90 22 215)\">TFLOP/s (log)</text>\n";
  return s;
}

std::string bandwidth_roof(const RooflinePlot& plot, const char* cls, double gbps,
                           double peak_tflops) {
  const LogAxis& ax = plot.x;
  const LogAxis& ay = plot.y;
  const double ridge = peak_tflops * 1e12 / (gbps * 1e9);
  const double x0 = std::pow(10.0, ax.lo);
  return fmt::format(
      "<polyline class=\"roof {}\" clip-path=\"url(#iosim-plot)\" "
      "points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>\n",
      cls, ax.at(x0), ay.at(gbps * 1e9 * x0 / 1e12), ax.at(ridge), ay.at(peak_tflops), ax.at(ridge),
      ay.at(peak_tflops));
}

std::string compute_roof(const RooflinePlot& plot, double from, double peak_tflops) {
  return fmt::format("<polyline class=\"roof compute\" points=\"{:.1f},{:.1f} {:.1f},{:.1f}\"/>\n",
                     plot.x.at(from), plot.y.at(peak_tflops), 720.0, plot.y.at(peak_tflops));
}

}  // namespace iosim
