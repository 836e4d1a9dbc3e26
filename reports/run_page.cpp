#include "reports/run_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <vector>

#include "reports/run_page_tensors.hpp"
#include "reports/svg_chart.hpp"
#include "reports/writers.hpp"
#include "sim/base/html_text.hpp"

// The page's stylesheets and script: reports/assets/, embedded at build time (CMakeLists.txt,
// iosim_embed_assets).
namespace iosim::assets {
extern const std::string_view run_chart_css;
extern const std::string_view run_page_css;
extern const std::string_view error_capture_js;
extern const std::string_view run_page_js;
}  // namespace iosim::assets

namespace iosim {
namespace {

// Width of every chart, in SVG units.
constexpr double kWidth = kChartWidth;
constexpr double kMemoryHeight = 250;
constexpr double kRooflineHeight = 420;

std::string esc(const std::string& s) {
  return html_escape(s);
}

std::string bytes_text(std::uint64_t b) {
  return human_bytes(static_cast<double>(b));
}

double share(double part, double whole) {
  return whole > 0 ? part / whole : 0.0;
}

// GB/s as the table prints them: four digits, whole numbers from 1000 on.
std::string gbps_text(double gbps) {
  return gbps >= 1000 ? fmt::format("{:.0f} GB/s", gbps) : fmt::format("{:.4g} GB/s", gbps);
}

std::string pct_text(double part, double whole) {
  return fmt::format("{:.1f}%", 100 * share(part, whole));
}

// The arrowheads of the memory chart's links.
std::string arrow_defs() {
  return "<defs>\n"
         "<marker id=\"iosim-arrow-read\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
         "markerWidth=\"4\" markerHeight=\"4\" orient=\"auto-start-reverse\">"
         "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#2c7bb6\"/></marker>\n"
         "<marker id=\"iosim-arrow-write\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
         "markerWidth=\"4\" markerHeight=\"4\" orient=\"auto-start-reverse\">"
         "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#d7191c\"/></marker>\n"
         "</defs>\n";
}

// One link of the memory chart: the bytes toward the registers (reads, lower arrow, pointing
// left) and toward HBM (writes, upper arrow, pointing right), and the link's share of its
// bandwidth. Stroke width grows with the share, as Nsight Compute colours busy links.
struct Link {
  const char* id;
  const char* read_label;
  const char* write_label;
  std::uint64_t read_bytes, write_bytes;
  double gbps, peak_gbps;
  const char* peak_name;
  bool bypassed;  // the L2 of a two-level run
};

std::string link_svg(const Link& l, double x0, double x1, double y_write, double y_read) {
  const double mid = (x0 + x1) / 2;
  std::string s = fmt::format(
      "<g class=\"link\" data-link=\"{}\" data-read-bytes=\"{}\" data-write-bytes=\"{}\" "
      "data-peak-fraction=\"{:.6g}\">\n",
      l.id, l.read_bytes, l.write_bytes, share(l.gbps, l.peak_gbps));
  if (l.bypassed) {
    s += svg_text(mid, (y_write + y_read) / 2 + 4, "bypassed", "small");
    return s + "</g>\n";
  }
  const double width = 1.5 + 6 * std::min(1.0, share(l.gbps, l.peak_gbps));
  s += fmt::format(
      "<line class=\"write\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke-width=\"{:.1f}\" marker-end=\"url(#iosim-arrow-write)\"/>\n",
      x0 + 4, y_write, x1 - 4, y_write, width);
  s += fmt::format(
      "<line class=\"read\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke-width=\"{:.1f}\" marker-end=\"url(#iosim-arrow-read)\"/>\n",
      x1 - 4, y_read, x0 + 4, y_read, width);
  s += svg_text(mid, y_write - 8, fmt::format("{} {}", l.write_label, bytes_text(l.write_bytes)));
  s += svg_text(mid, y_read + 18, fmt::format("{} {}", l.read_label, bytes_text(l.read_bytes)));
  const double middle = (y_write + y_read) / 2;
  s += svg_text(mid, middle - 1,
                fmt::format("{} of {}", pct_text(l.gbps, l.peak_gbps), gbps_text(l.peak_gbps)),
                "pct");
  s += svg_text(mid, middle + 13, l.peak_name, "small");
  return s + "</g>\n";
}

std::string box_svg(double x, double y, double w, double h, const std::string& name,
                    const std::vector<std::string>& lines, bool off = false) {
  std::string s = fmt::format(
      "<rect class=\"box{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
      "rx=\"6\"/>\n",
      off ? " off" : "", x, y, w, h);
  s += svg_text(x + w / 2, y + 24, name, "box-name");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    s += svg_text(x + w / 2, y + 46 + 17 * static_cast<double>(i), lines[i], "small");
  }
  return s;
}

// The memory chart in its own coordinates: kWidth x kMemoryHeight.
std::string memory_chart(const Report& r) {
  const Counters& t = r.engine.total;
  const Report::Achieved& a = r.achieved;
  const bool l2 = r.request.engine.l2_enabled;
  const double box_w = 150, box_h = 120, gap = 150, top = 50;
  const double x[] = {20, 20 + box_w + gap, 20 + 2 * (box_w + gap), 20 + 3 * (box_w + gap)};
  std::string s = arrow_defs();
  s += svg_text(20, 24,
                fmt::format("Memory chart: {} in {} at {:.0f} MHz", r.request.algorithm,
                            human_seconds(r.engine.time_s), r.sm_clock_mhz),
                "title", "start");
  s += box_svg(x[0], top, box_w, box_h, "Registers",
               {"tensor cores", fmt::format("{:.4g} TFLOP/s", a.tensor_tflops),
                fmt::format("{} of peak", pct_text(a.tensor_tflops, a.tensor_peak_tflops))});
  s += box_svg(x[1], top, box_w, box_h, "Shared memory",
               {fmt::format("{} per CTA", bytes_text(static_cast<std::uint64_t>(r.sram_bytes))),
                gbps_text(a.smem_gbps)});
  s += box_svg(
      x[2], top, box_w, box_h, "L2 cache",
      l2 ? std::vector<std::string>{fmt::format("hit rate {:.1f}%", 100 * a.l2_read_hit_rate),
                                    "of reads", fmt::format("{:.4g} GB/s", a.l2_gbps)}
         : std::vector<std::string>{"off:", "two-level model", "HBM <-> SM"},
      !l2);
  std::vector<std::string> hbm = {gbps_text(a.hbm_gbps), "during the run"};
  if (l2) hbm.push_back(fmt::format("+ {} dirty at end", bytes_text(t.l2_dirty_at_end_bytes)));
  s += box_svg(x[3], top, box_w, box_h, "HBM", hbm);
  const Link links[] = {
      {"smem", "read", "written", t.smem_read_bytes, t.smem_write_bytes, a.smem_gbps,
       a.smem_peak_gbps, "smem bandwidth", false},
      {"l2", "read", "write", t.l2.read_total(), t.l2.write_total(), a.l2_gbps, a.l2_peak_gbps,
       "L2 bandwidth", !l2},
      {"hbm", "read", "write", t.hbm.read_total(), t.hbm.write_total(), a.hbm_gbps, a.hbm_peak_gbps,
       "HBM bandwidth", false},
  };
  for (int i = 0; i < 3; ++i) {
    s += link_svg(links[i], x[i] + box_w, x[i + 1], top + 30, top + 95);
  }
  s += svg_text(
      20, top + box_h + 40,
      "Red: toward HBM (writes); blue: toward the registers (reads); thicker: busier. Shared "
      "memory is written by the tiles loaded into it,",
      "small", "start");
  s +=
      svg_text(20, top + box_h + 55,
               "read by the operands of the warps and tensor cores and by the tiles stored through "
               "it. Each share: the link's bytes over the run's time",
               "small", "start");
  s += svg_text(20, top + box_h + 70,
                fmt::format("({}) against its bandwidth at {:.0f} MHz (HBM: the datasheet's).",
                            human_seconds(r.engine.time_s), r.sm_clock_mhz),
                "small", "start");
  return s;
}

struct RoofPoint {
  std::string label;
  double x, y;  // FLOPs per byte, TFLOP/s
  const char* colour;
};

// The roofline in its own coordinates: kWidth x kRooflineHeight.
std::string roofline_chart(const Report& r) {
  const Report::Achieved& a = r.achieved;
  const bool l2 = r.request.engine.l2_enabled;
  const double peak = a.tensor_peak_tflops;
  std::vector<RoofPoint> points;
  std::vector<std::string> left_out;
  // A point: the engine's tensor-core TFLOP/s at the intensity of its FLOPs over its bytes.
  auto add = [&](const std::string& label, const std::string& short_name, const Counters& c,
                 double tflops, bool per_l2, const char* colour) {
    const std::uint64_t bytes =
        per_l2 ? c.l2.read_total() + c.l2.write_total() : c.hbm.read_total() + c.hbm.write_total();
    if (c.tensor_flops == 0 || bytes == 0 || !(tflops > 0)) {
      left_out.push_back(c.tensor_flops == 0
                             ? fmt::format("{}: no tensor-core FLOPs", short_name)
                             : fmt::format("{}: no {} bytes", short_name, per_l2 ? "L2" : "HBM"));
      return;
    }
    const double x = static_cast<double>(c.tensor_flops) / static_cast<double>(bytes);
    points.push_back({label, x, tflops, colour});
  };
  add(fmt::format("{} per HBM byte", r.request.algorithm), "the run", r.engine.total,
      a.tensor_tflops, false, "#d95f02");
  if (l2) {
    add(fmt::format("{} per L2 byte", r.request.algorithm), "the run", r.engine.total,
        a.tensor_tflops, true, "#7570b3");
  }
  if (r.engine.kernels.size() > 1) {
    for (const KernelResult& k : r.engine.kernels) {
      add(fmt::format("kernel {} per HBM byte", k.spec.name), k.spec.name, k.counters,
          k.achieved_tensor_tflops, false, "#555555");
    }
  }
  const double ridge_hbm = peak * 1e12 / (a.hbm_peak_gbps * 1e9);
  const double ridge_l2 = peak * 1e12 / (a.l2_peak_gbps * 1e9);
  double xmin = ridge_l2, xmax = ridge_hbm, ymin = peak, ymax = peak;
  for (const RoofPoint& p : points) {
    xmin = std::min(xmin, p.x);
    xmax = std::max(xmax, p.x);
    ymin = std::min(ymin, p.y);
  }
  // Half a decade beyond the points and roofs, a decade under the lowest point's FLOP/s.
  const RooflinePlot plot = roofline_plot(xmin, xmax, ymin, ymax);
  const LogAxis& ax = plot.x;
  const LogAxis& ay = plot.y;
  std::string s =
      svg_text(20, 24,
               fmt::format("Roofline at {:.0f} MHz: tensor-core FLOPs per byte against TFLOP/s",
                           r.sm_clock_mhz),
               "title", "start");
  s += roofline_axes(plot, "tensor-core FLOPs per byte (log)");
  s += bandwidth_roof(plot, "hbm", a.hbm_peak_gbps, peak);
  if (l2) s += bandwidth_roof(plot, "l2", a.l2_peak_gbps, peak);
  s += compute_roof(plot, std::min(ridge_hbm, ridge_l2), peak);
  int n = 0;
  for (const RoofPoint& p : points) {
    const double px = ax.at(p.x), py = ay.at(p.y);
    s += fmt::format(
        "<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"{}\" "
        "data-intensity=\"{:.6g}\" data-tflops=\"{:.6g}\"/>\n",
        px, py, p.colour, p.x, p.y);
    // A number beside each point, the legend's; labels in full would collide (kernels of one
    // run sit close together).
    s += svg_text(px + 8, py - 7, std::to_string(++n), "pct", "start");
  }
  // The legend: the roofs, then each point's numbers.
  SvgLegend lg{s};
  const auto legend = [&](const std::string& line, const char* cls) { lg.line(line, cls); };
  legend("Roofs", "box-name");
  legend(fmt::format("tensor-core peak {:.4g} TFLOP/s", peak), "");
  legend(fmt::format("HBM {}, ridge {:.4g} FLOP/B", gbps_text(a.hbm_peak_gbps), ridge_hbm), "");
  if (l2) {
    legend(fmt::format("L2 {} (dashed), ridge {:.4g}", gbps_text(a.l2_peak_gbps), ridge_l2), "");
  }
  lg.y += 8;
  legend("Points", "box-name");
  int k = 0;
  for (const RoofPoint& p : points) {
    // Two lines: the number and label, then the numbers.
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n", lg.x + 4,
                     lg.y - 4, p.colour);
    s += svg_text(lg.x + 12, lg.y, fmt::format("{} {}", ++k, p.label), "", "start");
    lg.y += 17;
    legend(fmt::format("  {:.4g} FLOP/B, {:.4g} TFLOP/s ({})", p.x, p.y, pct_text(p.y, peak)),
           "small");
  }
  // The bound the attribution names (the "Where the time goes" bar): why the point sits where it
  // does under the roofs.
  if (const TimeAttribution& ta = r.engine.time_attribution; ta.total() > 0) {
    lg.y += 8;
    legend(fmt::format("{}-bound", r.bound), "box-name");
    legend(fmt::format("  largest share of the time: {} {}", time_row_label(ta.largest()),
                       pct_text(ta[ta.largest()], ta.total())),
           "small");
  }
  if (!left_out.empty()) legend("Not drawn:", "small");
  for (const std::string& l : left_out) legend(fmt::format("  {}", l), "small");
  return s;
}

// The kernel timeline: one row per kernel, in turn; launch overhead, CTAs running, tail.
std::string timeline_chart(const Report& r, double& height) {
  const double left = 150, right = kWidth - 30, row = 40, top = 40;
  const double total = r.engine.time_s;
  height = top + row * static_cast<double>(r.engine.kernels.size()) + 60;
  auto at = [&](double t) { return left + (right - left) * share(t, total); };
  std::string s =
      svg_text(20, 24,
               fmt::format("Kernel timeline: {} kernel{} in {}", r.engine.kernels.size(),
                           r.engine.kernels.size() == 1 ? "" : "s", human_seconds(total)),
               "title", "start");
  double start = 0;
  double y = top;
  for (const KernelResult& k : r.engine.kernels) {
    const double end = start + k.time_s;
    auto bar = [&](const char* cls, double t0, double t1) {
      const double x0 = at(t0);
      return fmt::format(
          "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"22\"/>\n", cls,
          x0, y, std::max(at(t1) - x0, 0.6));
    };
    s += fmt::format("<g class=\"kernel\" data-kernel=\"{}\" data-time-s=\"{:.9g}\">\n",
                     esc(k.spec.name), k.time_s);
    s += svg_text(left - 8, y + 15, k.spec.name, "", "end");
    s += bar("launch", start, start + k.launch_s);
    s += bar("body", start + k.launch_s, end - k.tail_s);
    s += bar("tail", end - k.tail_s, end);
    const bool marks = k.wave_end_s.size() + 1 <= 200 && !k.wave_end_s.empty();
    if (marks) {
      for (double w : k.wave_end_s) {
        if (w >= k.time_s - k.tail_s) continue;  // inside the tail, drawn there
        s += fmt::format(
            "<line class=\"wave\" x1=\"{0:.2f}\" y1=\"{1:.1f}\" x2=\"{0:.2f}\" y2=\"{2:.1f}\"/>\n",
            at(start + w), y, y + 22);
      }
    }
    s += svg_text(left, y + 35,
                  fmt::format("{}: {:.3g} waves of {} CTAs/SM, tail {} ({}), launch {}{}",
                              human_seconds(k.time_s), k.waves, k.occupancy.ctas_per_sm,
                              human_seconds(k.tail_s), pct_text(k.tail_s, k.time_s),
                              human_seconds(k.launch_s),
                              marks || k.waves < 2 ? "" : " (too many waves to mark)"),
                  "small", "start");
    s += "</g>\n";
    start = end;
    y += row;
  }
  for (int i = 0; i <= 4; ++i) {
    const double t = total * i / 4;
    s += svg_text(at(t), y + 14, human_seconds(t), "axis");
  }
  s += svg_text(
      left, y + 34,
      "Grey: launch overhead. Blue: CTAs running; a white mark where each whole wave's worth "
      "of CTAs has finished.",
      "small", "start");
  s += svg_text(left, y + 49,
                "Orange: the tail, from the first CTA slot left with nothing to start to the last "
                "CTA's end.",
                "small", "start");
  return s;
}

std::string headline_table(const Report& r) {
  const Report::Achieved& a = r.achieved;
  const Counters& t = r.engine.total;
  std::string s =
      "<table id=\"achieved\">\n<thead><tr><th>what</th><th>achieved</th><th>peak at the "
      "run's clock</th><th>share</th></tr></thead>\n<tbody>\n";
  auto row = [&](const std::string& what, const std::string& v, const std::string& peak,
                 const std::string& pct) {
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", esc(what), esc(v),
                     esc(peak), esc(pct));
  };
  row("tensor-core FLOP/s", fmt::format("{:.4g} TFLOP/s", a.tensor_tflops),
      fmt::format("{:.4g} TFLOP/s", a.tensor_peak_tflops),
      pct_text(a.tensor_tflops, a.tensor_peak_tflops));
  row("HBM bandwidth", gbps_text(a.hbm_gbps), gbps_text(a.hbm_peak_gbps),
      pct_text(a.hbm_gbps, a.hbm_peak_gbps));
  if (r.request.engine.l2_enabled) {
    row("L2 bandwidth", fmt::format("{:.4g} GB/s", a.l2_gbps),
        fmt::format("{:.4g} GB/s", a.l2_peak_gbps), pct_text(a.l2_gbps, a.l2_peak_gbps));
    row("L2 hit rate of reads", fmt::format("{:.1f}%", 100 * a.l2_read_hit_rate), "-", "-");
  }
  row("shared-memory bandwidth", gbps_text(a.smem_gbps), gbps_text(a.smem_peak_gbps),
      pct_text(a.smem_gbps, a.smem_peak_gbps));
  row("time", human_seconds(r.engine.time_s), "-", fmt::format("{}-bound", r.bound));
  row("HBM bytes (incl. dirty at end)", bytes_text(t.hbm_total_bytes()), "-", "-");
  // The bound is of the two-level count (HBM <-> SRAM, no L2); with the L2 on, the HBM bytes it
  // is set against are DRAM bytes after the L2, which may fall below it: the row says so.
  const bool l2 = r.request.engine.l2_enabled;
  row("lower bound (two-level count, --l2 off)", bytes_text(r.bounds.lower_bound_bytes), "-",
      fmt::format("{} / bound {:.2f}x{}", l2 ? "HBM after the L2" : "HBM",
                  share(static_cast<double>(t.hbm_total_bytes()),
                        static_cast<double>(r.bounds.lower_bound_bytes)),
                  l2 ? " (may be below 1: the L2 keeps reuse on chip)" : ""));
  return s + "</tbody></table>\n";
}

// Where the time goes (sim/engine/time_attribution.hpp): the run's time as one bar split by the
// resource that bound it, each row's share, and the largest row (the run's bound) named; its table
// below. In its own coordinates: kWidth x kAttributionHeight.
constexpr double kAttributionHeight = 150;
constexpr std::array<const char*, kTimeRows> kTimeRowColours = {
    "#1b9e77", "#66a61e", "#e6ab02", "#7570b3", "#d95f02", "#a6761d", "#bbbbbb", "#666666"};

std::string attribution_chart(const Report& r) {
  const TimeAttribution& a = r.engine.time_attribution;
  const double total = a.total();
  std::string s =
      svg_text(20, 24,
               fmt::format("Where the time goes: {} by the resource that bound it ({}-bound)",
                           human_seconds(r.engine.time_s), r.bound),
               "title", "start");
  const double x0 = 20, width = kWidth - 40, y = 40, h = 36;
  double x = x0;
  for (TimeRow row : kAllTimeRows) {
    const double w = total > 0 ? width * a[row] / total : 0.0;
    if (w <= 0) continue;
    s += fmt::format(
        "<rect class=\"share\" x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"{:.0f}\" "
        "fill=\"{}\" data-row=\"{}\" data-seconds=\"{:.6g}\"><title>{}: {} ({})</title></rect>\n",
        x, y, w, h, kTimeRowColours[static_cast<std::size_t>(row)], time_row_key(row), a[row],
        time_row_label(row), human_seconds(a[row]), pct_text(a[row], total));
    if (w > 44) s += svg_text(x + w / 2, y + h / 2 + 4, pct_text(a[row], total), "pct", "middle");
    x += w;
  }
  // The legend: two rows of four.
  for (std::size_t i = 0; i < kTimeRows; ++i) {
    const TimeRow row = kAllTimeRows[i];
    const double lx = x0 + static_cast<double>(i % 4) * (width / 4);
    const double ly = y + h + 24 + static_cast<double>(i / 4) * 20;
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>\n",
                     lx, ly - 9, kTimeRowColours[i]);
    s += svg_text(lx + 14, ly,
                  fmt::format("{} {}{}", time_row_label(row), pct_text(a[row], total),
                              row == a.largest() ? " (largest)" : ""),
                  row == a.largest() ? "box-name" : "small", "start");
  }
  return s;
}

std::string attribution_table(const Report& r) {
  const TimeAttribution& a = r.engine.time_attribution;
  std::string s = "<table id=\"time\">\n<thead><tr><th>resource</th><th>time</th><th>share</th>";
  for (const KernelResult& k : r.engine.kernels) s += fmt::format("<th>{}</th>", esc(k.spec.name));
  s += "</tr></thead>\n<tbody>\n";
  for (TimeRow row : kAllTimeRows) {
    s += fmt::format("<tr data-row=\"{}\"><td>{}</td><td>{}</td><td>{}</td>", time_row_key(row),
                     esc(std::string(time_row_label(row))), human_seconds(a[row]),
                     pct_text(a[row], a.total()));
    for (const KernelResult& k : r.engine.kernels) {
      s += fmt::format("<td>{}</td>", human_seconds(k.time_attribution[row]));
    }
    s += "</tr>\n";
  }
  return s + "</tbody></table>\n";
}

std::string kernel_table(const Report& r) {
  std::string s =
      "<table id=\"kernels\">\n<thead><tr><th>kernel</th><th>CTAs</th><th>CTAs/SM</th>"
      "<th>waves</th><th>time</th><th>tail</th><th>launch</th><th>bound</th><th>HBM read</th>"
      "<th>HBM write</th><th>L2 read</th><th>L2 write</th></tr></thead>\n<tbody>\n";
  for (const KernelResult& k : r.engine.kernels) {
    const Counters& c = k.counters;
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3g}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        esc(k.spec.name), k.spec.grid.count(), k.occupancy.ctas_per_sm, k.waves,
        human_seconds(k.time_s), human_seconds(k.tail_s), human_seconds(k.launch_s), esc(k.bound),
        bytes_text(c.hbm.read_total()), bytes_text(c.hbm.write_total()),
        bytes_text(c.l2.read_total()), bytes_text(c.l2.write_total()));
  }
  return s + "</tbody></table>\n";
}

std::string chart_style() {
  return fmt::format("<style>\n{}</style>\n", assets::run_chart_css);
}

}  // namespace

namespace run_page_parts {

const char* const kAttributionNote =
    "Every moment of every SM that holds the kernel's CTAs is charged to "
    "what its CTA slot waited on: a pipe computing, a copy's server (HBM, the L2) and then its "
    "latency, a CTA's launch, or nothing left to start (idle: the last wave's tail). SMs that "
    "hold no CTA are idle but for the share of the time HBM (or the L2) was busy. The rows sum "
    "to the run's time; the largest names the bound (docs/model.md, \"Where the time "
    "goes\").";
const char* const kRooflineNote =
    "Arithmetic intensity counts tensor-core FLOPs (the work the tensor-core "
    "roof bounds) per HBM byte read and written during the run, and per L2 byte. "
    "A point under the HBM roof's slope is held by HBM; one near the flat roof by the tensor "
    "cores.";

std::string page_head(const std::string& title) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  s += fmt::format("<title>{}</title>\n<style>\n", esc(title));
  s += assets::run_page_css;
  s += "</style>\n<script>\n";
  s += assets::error_capture_js;
  s += "</script>\n</head>\n<body data-status=\"pending\">\n";
  return s + fmt::format("<h1>{}</h1>\n", esc(title));
}

std::string page_tail() {
  std::string s = "<script>\n";
  s += assets::run_page_js;
  return s + "</script>\n</body>\n</html>\n";
}

std::string achieved_table(const Report& r) {
  return headline_table(r);
}

std::string attribution_svg(const Report& r) {
  return svg_open(kWidth, kAttributionHeight, "chart attribution") + chart_style() +
         attribution_chart(r) + "</svg>\n";
}

std::string time_table(const Report& r) {
  return attribution_table(r);
}

std::string memory_svg(const Report& r) {
  return svg_open(kWidth, kMemoryHeight, "chart memory") + chart_style() + memory_chart(r) +
         "</svg>\n";
}

std::string roofline_svg(const Report& r) {
  return svg_open(kWidth, kRooflineHeight, "chart roofline") + chart_style() + roofline_chart(r) +
         "</svg>\n";
}

std::string timeline_svg(const Report& r) {
  double height = 0;
  const std::string timeline = timeline_chart(r, height);
  return svg_open(kWidth, height, "chart timeline") + chart_style() + timeline + "</svg>\n";
}

std::string kernels_table(const Report& r) {
  return kernel_table(r);
}

}  // namespace run_page_parts

std::string run_svg(const Report& r) {
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += svg_open(kWidth, kMemoryHeight + kRooflineHeight, "chart");
  s += chart_style();
  s += memory_chart(r);
  s += fmt::format("<g transform=\"translate(0 {:.0f})\">\n", kMemoryHeight);
  s += roofline_chart(r);
  s += "</g>\n</svg>\n";
  return s;
}

std::string run_html(const Report& r) {
  using namespace run_page_parts;
  const AttentionProblem& p = r.request.problem;
  std::string s =
      page_head(fmt::format("iosim run: {} on {}", r.request.algorithm, r.profile_description));
  s += fmt::format(
      "<p class=\"meta\">B={} H={} N={} N_kv={} {} {}{} pass={}, block_q={} block_kv={}, L2 {}, "
      "SM clock {:.0f} MHz. The table of the same run: <code>iosim run</code> without "
      "<code>--html</code>.</p>\n",
      p.batch, p.heads, p.seq, p.seq_kv, head_dim_text(p), dtype_text(p), p.causal ? " causal" : "",
      pass_name(p.pass), r.tiling.block_q, r.tiling.block_kv,
      r.request.engine.l2_enabled ? "on" : "off (two-level model)", r.sm_clock_mhz);
  s += "<section><h2>Achieved</h2>\n";
  s += achieved_table(r);
  s += "</section>\n<section><h2>Where the time goes</h2>\n";
  s += attribution_svg(r);
  s += time_table(r);
  s += fmt::format("<p class=\"note\">{}</p>\n", kAttributionNote);
  s += "</section>\n<section><h2>Memory chart</h2>\n";
  s += memory_svg(r) + "</section>\n";
  s += run_page_detail::tensor_bytes_section(r, chart_style());
  s += "<section><h2>Roofline</h2>\n";
  s += roofline_svg(r);
  s += fmt::format("<p class=\"note\">{}</p>\n</section>\n", kRooflineNote);
  s += "<section><h2>Kernel timeline</h2>\n";
  s += timeline_svg(r);
  s += kernels_table(r);
  s += "</section>\n";
  return s + page_tail();
}

}  // namespace iosim
