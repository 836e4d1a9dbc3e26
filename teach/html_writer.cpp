#include "teach/html_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <utility>

#include "sim/base/html_text.hpp"
#include "sim/base/json_text.hpp"
#include "sim/base/run_control.hpp"
#include "teach/text_writer.hpp"

namespace iosim::assets {
extern const std::string_view compare_css;
extern const std::string_view explain_css;
extern const std::string_view explain_js;
}  // namespace iosim::assets

namespace iosim::teach {
namespace {

using nlohmann::json;

const char* kind_name(OpKind k) {
  switch (k) {
    case OpKind::load:
      return "load";
    case OpKind::store:
      return "store";
    case OpKind::reduce:
      return "reduce";
    case OpKind::compute:
      return "compute";
  }
  return "";
}

json tile_json(const TileRef& t) {
  return {{"t", std::string(tensor_name(t.tensor))},
          {"m", t.matrix},
          {"r0", t.row0},
          {"nr", t.rows},
          {"c0", t.col0},
          {"nc", t.cols}};
}

json levels(const LevelBytes& b) {
  return json::array({b.hbm_two_level, b.l2, b.hbm});
}

// JSON has no infinities (a running max starts at -inf): those go as strings.
json values_json(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) {
    if (std::isfinite(v)) {
      out.push_back(v);
    } else {
      out.push_back(std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    }
  }
  return out;
}

json trace_json(const Trace& trace) {
  json j;
  std::ostringstream header, summary;
  write_trace_header(header, trace, false);
  write_trace_summary(summary, trace, false);
  j["header"] = header.str();
  j["summary"] = summary.str();
  j["kernels"] = json::array();
  for (const KernelSpec& k : trace.kernels) {
    j["kernels"].push_back({{"name", k.name}, {"ctas", k.grid.count()}});
  }
  j["tensors"] = json::array();
  for (std::size_t i = 0; i < trace.extents.size(); ++i) {
    const Trace::Extent& e = trace.extents[i];
    if (e.rows == 0) continue;
    j["tensors"].push_back({{"name", std::string(kTensorNames[i])},
                            {"rows", e.rows},
                            {"cols", e.cols},
                            {"matrices", e.matrices}});
  }
  j["steps"] = json::array();
  for (const TraceStep& s : trace.steps) {
    run_control::check();  // thousands of steps with numbers take seconds to write out
    json step = {{"kernel", trace.kernels[s.kernel].name},
                 {"cta", s.cta},
                 {"sm", s.sm},
                 {"kind", kind_name(s.op.kind)},
                 {"tile", tile_json(s.op.tile)},
                 {"where", s.op.on_chip == OnChip::smem ? "smem" : "reg"},
                 {"text", describe(s)},
                 {"paper", s.paper.line.empty() ? "" : s.paper.algorithm + ", " + s.paper.line},
                 {"note", s.paper.note},
                 {"bytes", levels(s.bytes)},
                 {"total", levels(s.total)},
                 {"last", s.last_of_cta}};
    step["chip"] = json::array();
    for (const OnChipTile& h : s.on_chip) {
      json t = tile_json(h.tile);
      t["where"] = h.where == OnChip::smem ? "smem" : "reg";
      t["pieces"] = json::array();
      for (const TileRef& piece : h.pieces) t["pieces"].push_back(tile_json(piece));
      step["chip"].push_back(t);
    }
    step["changed"] = json::array();
    for (TensorId t : s.changed) step["changed"].push_back(std::string(tensor_name(t)));
    step["numbers"] = json::array();
    for (const NumberTile& n : s.numbers) {
      json tile = {{"name", n.name},     {"rows", n.rows},     {"cols", n.cols},
                   {"sr", n.shown_rows}, {"sc", n.shown_cols}, {"v", values_json(n.values)}};
      if (!n.unseen.empty()) tile["unseen"] = n.unseen;
      if (!n.note.empty()) tile["note"] = n.note;
      step["numbers"].push_back(std::move(tile));
    }
    if (s.max_error) step["error"] = *s.max_error;
    j["steps"].push_back(std::move(step));
  }
  return j;
}

// JSON inside <script>: "</" would end the element early.
std::string script_safe(std::string s) {
  for (std::size_t i = 0; (i = s.find("</", i)) != std::string::npos; i += 3)
    s.replace(i, 2, "<\\/");
  return s;
}

// The compare page's chart: for each level, one horizontal bar per schedule, all on one scale.
std::string bar_chart(const std::vector<Trace>& traces, const std::vector<LevelBytes>& totals) {
  constexpr int kLabel = 170, kBar = 460, kValue = 140, kRow = 20, kTitle = 22, kGap = 10;
  constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                     "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  const std::pair<const char*, std::uint64_t LevelBytes::*> levels[] = {
      {"HBM, two-level model (the paper's)", &LevelBytes::hbm_two_level},
      {"L2 requests (L2 on)", &LevelBytes::l2},
      {"DRAM (L2 on, incl. dirty at end)", &LevelBytes::hbm}};
  std::uint64_t most = 1;
  for (const LevelBytes& b : totals) most = std::max({most, b.hbm_two_level, b.l2, b.hbm});
  std::string body;
  int y = 0;
  for (const auto& [level, field] : levels) {
    body += fmt::format("<text class=\"level\" x=\"0\" y=\"{}\">{}</text>\n", y + 15, level);
    y += kTitle;
    for (std::size_t i = 0; i < traces.size(); ++i) {
      const std::uint64_t v = totals[i].*field;
      const int width =
          v == 0 ? 0
                 : std::max(1, static_cast<int>(std::lround(kBar * static_cast<double>(v) /
                                                            static_cast<double>(most))));
      const std::string name = html_escape(traces[i].report.request.algorithm);
      const std::string value = thousands(v) + " B";
      body += fmt::format(
          "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>"
          "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>{}, {}: {}</title></rect>"
          "<text class=\"value\" x=\"{}\" y=\"{}\">{}</text>\n",
          kLabel - 6, y + 14, name, kLabel, y + 3, width, kRow - 6, kColors[i % std::size(kColors)],
          name, level, value, kLabel + width + 6, y + 14, value);
      y += kRow;
    }
    y += kGap;
  }
  const int width = kLabel + kBar + kValue;
  return fmt::format(
      "<svg class=\"chart\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"bytes at each level, one bar per "
      "algorithm\">\n{}</svg>\n",
      width, y, width, y, body);
}

}  // namespace

std::string compare_html(const std::vector<Trace>& traces) {
  const std::string title = html_escape(compare_title(traces));  // two traces or more
  std::vector<LevelBytes> totals;
  for (const Trace& t : traces) totals.push_back(run_totals(t));
  std::string s;
  s += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  s += "<title>" + title + "</title>\n<style>\n";
  s += assets::compare_css;
  s += "</style>\n</head>\n<body>\n<h1>" + title + "</h1>\n";
  s += "<h2>Bytes at each level</h2>\n";
  s += bar_chart(traces, totals);
  s += "<p class=\"note\">One scale for every bar. HBM, two-level model: the FlashAttention "
       "paper's model, HBM &harr; SRAM (as <code>--l2 off</code>). L2 requests: what the SMs ask "
       "of the L2 with it on. DRAM: HBM traffic with the L2 on (misses and write-backs, and the "
       "lines still dirty in the L2 at the end, which reach DRAM later).</p>\n";
  s += "<h2>Side by side</h2>\n<table class=\"compare\">\n";
  const std::vector<CompareRow> rows = compare_rows(traces);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    s += "<tr>";
    s +=
        r == 0 ? "<th></th>" : fmt::format("<th scope=\"row\">{}</th>", html_escape(rows[r].label));
    for (const std::string& c : rows[r].cells) {
      s += r == 0 ? "<th scope=\"col\">" + html_escape(c) + "</th>"
                  : "<td>" + html_escape(c) + "</td>";
    }
    s += "</tr>\n";
  }
  s += "</table>\n";
  std::ostringstream notes;
  write_compare_notes(notes, traces, false);
  s += "<pre id=\"notes\">" + html_escape(notes.str()) + "</pre>\n";
  s += "</body>\n</html>\n";
  return s;
}

std::string trace_html(const Trace& trace) {
  const Report& r = trace.report;
  std::string s;
  s += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  const std::string name = html_escape(r.request.algorithm);  // a kernel description's, --kernel
  s += "<title>iosim explain: " + name + "</title>\n<style>\n";
  s += assets::explain_css;
  s += "</style>\n</head>\n<body data-status=\"loading\">\n";
  s += "<h1>iosim explain: " + name + "</h1>\n";
  s += R"HTML(<pre id="header"></pre>
<div id="controls">
  <button id="back" title="previous step (left arrow)">&#9664; back</button>
  <input id="slider" type="range" min="1" value="1">
  <button id="forward" title="next step (right arrow)">forward &#9654;</button>
  <span id="position"></span>
</div>
<div id="where"></div>
<div id="text"></div>
<div id="paper"></div>
<div id="legend"></div>
<div id="panels">
  <section><h2>HBM (global memory)</h2><div id="hbm"></div></section>
  <section><h2>On chip: this CTA's shared memory and registers</h2><div id="chip"></div>
    <h2>Bytes so far</h2><div id="counters"></div></section>
</div>
<section id="numbers-section"><h2>Numbers (--execute)</h2><div id="numbers"></div></section>
<pre id="summary"></pre>
<script type="application/json" id="trace">)HTML";
  s += script_safe(json_text(trace_json(trace)));
  s += "</script>\n<script>\n";
  s += assets::explain_js;
  s += "</script>\n</body>\n</html>\n";
  return s;
}

}  // namespace iosim::teach
