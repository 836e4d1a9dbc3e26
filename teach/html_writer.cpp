#include "teach/html_writer.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "sim/base/html_text.hpp"
#include "sim/base/json_text.hpp"
#include "teach/text_writer.hpp"

namespace iosim::assets {
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
      step["numbers"].push_back({{"name", n.name},
                                 {"rows", n.rows},
                                 {"cols", n.cols},
                                 {"sr", n.shown_rows},
                                 {"sc", n.shown_cols},
                                 {"v", values_json(n.values)}});
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

}  // namespace

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
