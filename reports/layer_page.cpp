#include "reports/layer_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "reports/layer_writers.hpp"
#include "reports/svg_chart.hpp"
#include "reports/writers.hpp"
#include "sim/base/html_text.hpp"

// The stylesheets of iosim run's page, which this page shares (reports/assets/).
namespace iosim::assets {
extern const std::string_view run_chart_css;
extern const std::string_view run_page_css;
}  // namespace iosim::assets

namespace iosim {
namespace {

constexpr double kBarsHeight = 420;
constexpr double kLayerRooflineHeight = 460;

// Colours of the ops, by their position in the layer (ColorBrewer's Set1 and Dark2).
constexpr const char* kPalette[] = {"#e41a1c", "#377eb8", "#4daf4a", "#984ea3",
                                    "#ff7f00", "#a65628", "#f781bf", "#1b9e77",
                                    "#7570b3", "#66a61e", "#e6ab02", "#666666"};

const char* op_colour(std::size_t i) {
  return kPalette[i % std::size(kPalette)];
}

// "seq 1024, batch 4" for point i; "" for a run of one point.
std::string point_text(const LayerSweepRun& run, std::size_t i) {
  std::string s;
  for (std::size_t a = 0; a < run.axes.size(); ++a) {
    if (!s.empty()) s += ", ";
    s += fmt::format("{} {}", run.axes[a].substr(2), run.values[i][a]);
  }
  return s;
}

// The ops of the layer, in execution order, as the first point runs them.
std::vector<std::string> op_names(const LayerSweepRun& run) {
  std::vector<std::string> names;
  for (const LayerOp& op : run.reports.front().ops) names.push_back(op.name);
  return names;
}

// One stacked bar per point: the time of each op of the layer.
std::string bars_chart(const LayerSweepRun& run) {
  const std::vector<std::string> names = op_names(run);
  const double left = 80, right = 720, top = 50, bottom = 360;
  double t_max = 0;
  for (const LayerReport& r : run.reports) t_max = std::max(t_max, r.layer_time_s);
  const double n = static_cast<double>(run.reports.size());
  const double slot = (right - left) / n;
  const double width = std::min(60.0, 0.7 * slot);
  auto y_of = [&](double t) { return bottom - (bottom - top) * (t_max > 0 ? t / t_max : 0.0); };
  std::string s =
      svg_text(20, 24, "Time per op of one layer, stacked, at each point", "title", "start");
  for (int i = 0; i <= 4; ++i) {
    const double t = t_max * i / 4;
    s += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" "
        "y2=\"{1:.1f}\"/>\n",
        left, y_of(t), right);
    s += svg_text(left - 6, y_of(t) + 4, human_seconds(t), "axis", "end");
  }
  s += fmt::format(
      "<line class=\"frame\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" "
      "y2=\"{1:.1f}\"/>\n",
      left, bottom, right);
  for (std::size_t i = 0; i < run.reports.size(); ++i) {
    const LayerReport& r = run.reports[i];
    const double x = left + slot * (static_cast<double>(i) + 0.5) - width / 2;
    s += fmt::format("<g class=\"bar\" data-point=\"{}\" data-time-s=\"{:.9g}\">\n",
                     html_escape(point_text(run, i)), r.layer_time_s);
    double t = 0;
    for (const LayerOp& op : r.ops) {
      const auto at = std::find(names.begin(), names.end(), op.name);
      const std::size_t k = static_cast<std::size_t>(at - names.begin());
      s += fmt::format(
          "<rect class=\"op\" data-op=\"{}\" data-time-s=\"{:.9g}\" x=\"{:.1f}\" y=\"{:.2f}\" "
          "width=\"{:.1f}\" height=\"{:.2f}\" fill=\"{}\"><title>{}: {} ({:.1f}%)</title></rect>\n",
          html_escape(op.name), op.time_s, x, y_of(t + op.time_s), width,
          y_of(t) - y_of(t + op.time_s), op_colour(k), html_escape(op.name),
          human_seconds(op.time_s), 100 * op.share);
      t += op.time_s;
    }
    s += svg_text(x + width / 2, bottom + 16, std::to_string(i + 1), "pct");
    s += svg_text(x + width / 2, bottom + 30, point_text(run, i), "small");
    s += "</g>\n";
  }
  double y = 60;
  const double lx = 740;
  s += svg_text(lx, y, "Ops (bottom to top)", "box-name", "start");
  for (std::size_t k = 0; k < names.size(); ++k) {
    y += 17;
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>\n",
                     lx, y - 9, op_colour(k));
    s += svg_text(lx + 16, y, names[k], "", "start");
  }
  return s;
}

struct Dot {
  std::string label;  // "qkv_proj 2"
  std::string op;
  std::size_t point;
  double x, y;  // FLOPs per HBM byte, TFLOP/s
  const char* colour;
};

// Every op of every point at its FLOPs per HBM byte and its TFLOP/s, under the roofs.
std::string roofline_chart(const LayerSweepRun& run) {
  const LayerReport& first = run.reports.front();
  const double peak = first.tensor_peak_tflops;
  const double hbm_gbps = first.hbm_peak_gbps;
  const std::vector<std::string> names = op_names(run);
  std::vector<Dot> dots;
  std::vector<std::string> left_out;
  for (std::size_t i = 0; i < run.reports.size(); ++i) {
    for (const LayerOp& op : run.reports[i].ops) {
      const Counters& c = op.counters;
      const std::uint64_t bytes = c.hbm.read_total() + layer_hbm_written(c);
      const std::string label = fmt::format("{} {}", op.name, i + 1);
      if (c.flops() == 0 || bytes == 0 || !(op.time_s > 0)) {
        left_out.push_back(fmt::format("{}: no {}", label, c.flops() == 0 ? "FLOPs" : "HBM bytes"));
        continue;
      }
      const auto at = std::find(names.begin(), names.end(), op.name);
      dots.push_back({label, op.name, i + 1,
                      static_cast<double>(c.flops()) / static_cast<double>(bytes),
                      static_cast<double>(c.flops()) / op.time_s / 1e12,
                      op_colour(static_cast<std::size_t>(at - names.begin()))});
    }
  }
  const double ridge = peak * 1e12 / (hbm_gbps * 1e9);
  double xmin = ridge, xmax = ridge, ymin = peak, ymax = peak;
  for (const Dot& d : dots) {
    xmin = std::min(xmin, d.x);
    xmax = std::max(xmax, d.x);
    ymin = std::min(ymin, d.y);
  }
  const RooflinePlot plot = roofline_plot(xmin, xmax, ymin, ymax);
  std::string s =
      svg_text(20, 24, "Roofline: FLOPs per HBM byte against TFLOP/s, every op of every point",
               "title", "start");
  s += roofline_axes(plot, "FLOPs per HBM byte (log)");
  s += bandwidth_roof(plot, "hbm", hbm_gbps, peak);
  s += compute_roof(plot, ridge, peak);
  for (const Dot& d : dots) {
    const double px = plot.x.at(d.x), py = plot.y.at(d.y);
    s += fmt::format(
        "<g class=\"dot\" data-op=\"{}\" data-point=\"{}\"><circle class=\"point\" cx=\"{:.1f}\" "
        "cy=\"{:.1f}\" r=\"5\" fill=\"{}\" data-intensity=\"{:.6g}\" data-tflops=\"{:.6g}\">"
        "<title>{}: {:.4g} FLOP/B, {:.4g} TFLOP/s</title></circle>\n",
        html_escape(d.op), d.point, px, py, d.colour, d.x, d.y, html_escape(d.label), d.x, d.y);
    s += svg_text(px + 7, py - 6, d.label, "small", "start");
    s += "</g>\n";
  }
  SvgLegend lg{s};
  const auto legend = [&](const std::string& line, const char* cls) { lg.line(line, cls); };
  legend("Roofs, at the boost clock", "box-name");
  legend(fmt::format("tensor-core peak {:.4g} TFLOP/s", peak), "");
  legend(fmt::format("HBM {:.4g} GB/s, ridge {:.4g} FLOP/B", hbm_gbps, ridge), "");
  lg.y += 8;
  legend("Points", "box-name");
  for (std::size_t i = 0; i < run.reports.size(); ++i) {
    legend(fmt::format("{}: {}", i + 1, run.axes.empty() ? "the run" : point_text(run, i)), "");
  }
  if (!left_out.empty()) legend("Not drawn:", "small");
  for (const std::string& l : left_out) legend(fmt::format("  {}", l), "small");
  return s;
}

std::string points_table(const LayerSweepRun& run) {
  std::string s = "<table id=\"points\">\n<thead><tr><th>point</th>";
  for (const std::string& a : run.axes) s += fmt::format("<th>{}</th>", html_escape(a.substr(2)));
  s += "<th>tokens</th><th>keys</th><th>layer time</th><th>attention share</th><th>step "
       "time</th></tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < run.reports.size(); ++i) {
    const LayerReport& r = run.reports[i];
    s += fmt::format("<tr><td>{}</td>", i + 1);
    for (std::int64_t v : run.values[i]) s += fmt::format("<td>{}</td>", v);
    double attention = 0;
    for (const LayerOp& op : r.ops) attention += op.kind == "attention" ? op.share : 0.0;
    s += fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td><td>{}</td></tr>\n",
                     r.tokens, r.seq_kv, human_seconds(r.layer_time_s), 100 * attention,
                     human_seconds(r.step_time_s));
  }
  return s + "</tbody></table>\n";
}

std::string layer_chart_style() {
  return fmt::format("<style>\n{}</style>\n", assets::run_chart_css);
}

}  // namespace

std::string layer_sweep_html(const LayerSweepRun& run) {
  if (run.reports.empty()) return "";
  const LayerReport& first = run.reports.front();
  const LayerRequest& r = first.request;
  const std::string title = fmt::format("iosim layer: {} on {}, {}", r.model.name, first.profile,
                                        layer_phase_name(r.phase));
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  s += fmt::format("<title>{}</title>\n<style>\n", html_escape(title));
  s += assets::run_page_css;
  s += "</style>\n</head>\n<body>\n";
  s += fmt::format("<h1>{}</h1>\n", html_escape(title));
  std::string over;
  for (const std::string& a : run.axes) over += (over.empty() ? " over " : " x ") + a.substr(2);
  s += fmt::format(
      "<p class=\"meta\">{} point{}{}; tp {}, {}, L2 {}. The tables of the same runs: "
      "<code>iosim layer</code> without <code>--html</code>.</p>\n",
      run.reports.size(), run.reports.size() == 1 ? "" : "s", over, r.tp, r.dtype,
      r.l2_enabled ? "on" : "off");
  s += "<section><h2>Points</h2>\n" + points_table(run) + "</section>\n";
  s += "<section><h2>Time per op</h2>\n";
  s += svg_open(kChartWidth, kBarsHeight, "chart bars") + layer_chart_style() + bars_chart(run) +
       "</svg>\n</section>\n";
  s += "<section><h2>Roofline</h2>\n";
  s += svg_open(kChartWidth, kLayerRooflineHeight, "chart roofline") + layer_chart_style() +
       roofline_chart(run) + "</svg>\n";
  s += "<p class=\"note\">Arithmetic intensity counts all of an op's FLOPs (tensor-core and "
       "elementwise) per HBM byte read and written, the lines it leaves dirty in L2 included. "
       "The roofs are the tensor cores' and HBM's at the boost clock; each op ran at its own "
       "clock (the tables' clock column). Elementwise ops are held by the CUDA cores and HBM, "
       "not by the tensor-core roof.</p>\n</section>\n";
  return s + "</body>\n</html>\n";
}

}  // namespace iosim
