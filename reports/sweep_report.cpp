#include "reports/sweep_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "api/tune.hpp"
#include "reports/sweep_report_detail.hpp"
#include "reports/validation_writers.hpp"
#include "reports/writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/html_text.hpp"
#include "sim/base/json_text.hpp"
#include "sim/base/text_file.hpp"

// The page's stylesheet and scripts: reports/assets/, embedded at build time (CMakeLists.txt,
// iosim_embed_assets).
namespace iosim::assets {
extern const std::string_view sweep_report_css;
extern const std::string_view error_capture_js;
extern const std::string_view sweep_report_js;
}  // namespace iosim::assets

namespace iosim {
namespace {

using nlohmann::json;
using sweep_report_detail::heatmap_html;
using sweep_report_detail::heatmap_markdown;
using sweep_report_detail::inapplicable;
using sweep_report_detail::markdown_table;
using sweep_report_detail::OtherField;
using sweep_report_detail::tile_header;
using sweep_report_detail::tile_text;
using sweep_report_detail::varying_fields;
using sweep_report_detail::varying_tiling;

// Each distinct message of the inapplicable points, with how many points it skipped.
std::map<std::string, int> skipped_points(const SweepData& data) {
  std::map<std::string, int> out;
  for (const SweepRow& r : data.rows) {
    if (!inapplicable(r)) continue;
    std::string m = r.infeasible_reason;
    if (m.rfind("invalid input: ", 0) == 0) m.erase(0, std::string("invalid input: ").size());
    ++out[m];
  }
  return out;
}

std::string ratio_text(double a, double b) {
  return b > 0 ? fmt::format("{:.2f}x", a / b) : std::string("-");
}

// The other feasible tilings of a problem within the tie band of its fastest (tune's kTieBand,
// iosim's own measured ranking error), fastest first: "none", or "128 x 64 (+2.1%), ..." (at most
// three named, then how many more). iosim cannot tell these apart from the best on a GPU.
std::string ties_text(const SweepData& data, const BestBlock& b,
                      const std::vector<const OtherField*>& axes) {
  const double best = data.rows[b.by_time].time_s;
  std::vector<std::size_t> ties;
  for (const std::size_t i : b.rows) {
    const SweepRow& r = data.rows[i];
    if (i != b.by_time && r.feasible && r.time_s <= best * (1.0 + kTieBand)) ties.push_back(i);
  }
  std::stable_sort(ties.begin(), ties.end(), [&](std::size_t x, std::size_t y) {
    return data.rows[x].time_s < data.rows[y].time_s;
  });
  if (ties.empty()) return "none";
  std::string s;
  const std::size_t named = std::min<std::size_t>(ties.size(), 3);
  for (std::size_t k = 0; k < named; ++k) {
    const SweepRow& r = data.rows[ties[k]];
    s += fmt::format("{}{} (+{:.1f}%)", k == 0 ? "" : ", ", tile_text(r, axes),
                     best > 0 ? 100 * (r.time_s / best - 1) : 0.0);
  }
  if (ties.size() > named) s += fmt::format(", and {} more", ties.size() - named);
  return s;
}

// The best-block table as rows of cells; the header first.
std::vector<std::vector<std::string>> best_table(const SweepData& data) {
  const std::vector<const OtherField*> other = varying_fields(data);
  const std::vector<const OtherField*> axes = varying_tiling(data, true);
  const std::string tile = tile_header(axes);
  std::vector<std::string> header = {"profile", "algorithm", "d", "N"};
  for (const OtherField* f : other) header.push_back(f->name);
  for (const std::string& h :
       {fmt::format("best {} (HBM)", tile), std::string("HBM bytes (incl. dirty at end)"),
        std::string("HBM / two-level lower bound"), std::string("L2 bytes"),
        fmt::format("best {} (time)", tile), std::string("time"), std::string("bound"),
        fmt::format("also within {:g}% (tie band)", 100 * kTieBand),
        std::string("feasible / tried")}) {
    header.push_back(h);
  }
  std::vector<std::vector<std::string>> table = {header};
  for (const BestBlock& b : best_blocks(data)) {
    const SweepRow& f = data.rows[b.first];
    if (b.feasible == 0 && inapplicable(f)) continue;  // listed under "skipped" instead
    std::vector<std::string> row = {f.profile, f.algorithm, std::to_string(f.head_dim),
                                    std::to_string(f.seq)};
    for (const OtherField* o : other) row.push_back(o->text(f));
    if (b.feasible == 0) {
      row.push_back("none fits");
      for (int i = 0; i < 7; ++i) row.push_back("-");
    } else {
      const SweepRow& h = data.rows[b.by_hbm];
      const SweepRow& t = data.rows[b.by_time];
      row.push_back(tile_text(h, axes));
      row.push_back(human_bytes(h.hbm_bytes()));
      row.push_back(ratio_text(h.hbm_bytes(), h.lower_bound_bytes));
      row.push_back(human_bytes(h.l2_bytes()));
      row.push_back(tile_text(t, axes));
      row.push_back(human_seconds(t.time_s));
      row.push_back(t.bound);
      row.push_back(ties_text(data, b, axes));
    }
    row.push_back(fmt::format("{} / {}", b.feasible, b.tried));
    table.push_back(std::move(row));
  }
  return table;
}

// Infeasible points: header first.
std::vector<std::vector<std::string>> infeasible_table(const SweepData& data) {
  const std::vector<const OtherField*> axes = varying_tiling(data, false);
  std::vector<std::vector<std::string>> table = {
      {"profile", "algorithm", "B", "H", "N", "N_kv", "d", tile_header(axes), "reason"}};
  for (const SweepRow& r : data.rows) {
    if (r.feasible || inapplicable(r)) continue;
    table.push_back({r.profile, r.algorithm, std::to_string(r.batch), std::to_string(r.heads),
                     std::to_string(r.seq), std::to_string(r.seq_kv), std::to_string(r.head_dim),
                     tile_text(r, axes), r.infeasible_reason});
  }
  return table;
}

std::string html_table(const std::vector<std::vector<std::string>>& t, const char* id) {
  std::string s = fmt::format("<table id=\"{}\">\n<thead><tr>", id);
  for (const std::string& c : t[0]) s += fmt::format("<th>{}</th>", html_escape(c));
  s += "</tr></thead>\n<tbody>\n";
  for (std::size_t i = 1; i < t.size(); ++i) {
    s += "<tr>";
    for (const std::string& c : t[i]) s += fmt::format("<td>{}</td>", html_escape(c));
    s += "</tr>\n";
  }
  return s + "</tbody></table>\n";
}

std::string sources_text(const SweepData& data) {
  std::string s;
  for (const std::string& f : data.sources) s += (s.empty() ? "" : ", ") + f;
  return s;
}

std::size_t feasible_count(const SweepData& data) {
  return static_cast<std::size_t>(std::count_if(data.rows.begin(), data.rows.end(),
                                                [](const SweepRow& r) { return r.feasible; }));
}

std::size_t inapplicable_count(const SweepData& data) {
  return static_cast<std::size_t>(std::count_if(data.rows.begin(), data.rows.end(), inapplicable));
}

// "18 rows, 12 feasible, 0 infeasible, 6 skipped (a swept flag does not apply)".
std::string counts_text(const SweepData& data) {
  const std::size_t feasible = feasible_count(data), skipped = inapplicable_count(data);
  std::string s = fmt::format("{} rows, {} feasible, {} infeasible", data.rows.size(), feasible,
                              data.rows.size() - feasible - skipped);
  if (skipped > 0) s += fmt::format(", {} skipped (a swept flag does not apply)", skipped);
  return s;
}

// The page's data: short keys because a large sweep embeds many rows.
json page_data(const SweepData& data, const ValidationResult* validation) {
  // A point's tile as the tables name it: a chart of a sweep over stages that labelled its pick
  // "192x128" hid which stage count it was.
  const std::vector<const OtherField*> axes = varying_tiling(data, true);
  json rows = json::array();
  for (const SweepRow& r : data.rows) {
    if (inapplicable(r)) continue;
    json j = {{"p", r.profile},
              {"a", r.algorithm},
              {"dt", r.dtype},
              {"pass", r.pass},
              {"l2", r.l2},
              {"cold", r.cold_l2},
              {"clk", r.requested_clock_mhz},
              {"B", r.batch},
              {"H", r.heads},
              {"N", r.seq},
              {"Nkv", r.seq_kv},
              {"d", r.head_dim},
              {"causal", r.causal},
              {"mask", r.mask},
              {"drop", r.dropout},
              {"pat", r.pattern},
              {"bq", r.block_q},
              {"bkv", r.block_kv},
              {"tile", tile_text(r, axes)},
              {"ok", r.feasible},
              {"hkv", r.kv_heads},
              {"S", r.splits},
              {"pgt", r.page_tokens}};
    if (r.feasible) {
      j["hbm"] = r.hbm_bytes();
      j["l2b"] = r.l2_bytes();
      j["fl"] = r.flops;
      j["t"] = r.time_s;
      j["bound"] = r.bound;
      j["ran"] = r.sm_clock_mhz;  // the clock it ran at: a value, not part of its series
      j["comp"] = r.compulsory_bytes;
      j["cf"] = r.closed_form_bytes;
      j["lb"] = r.lower_bound_bytes;
      json pt = json::object();
      // HBM as the tables count it: with the lines left dirty in L2 at the end (the output's,
      // often: it had no HBM bar when they were all still dirty).
      for (const auto& [name, v] : r.per_tensor) pt[name] = {v[0] + v[1] + v[4], v[2] + v[3]};
      j["pt"] = pt;
    }
    rows.push_back(std::move(j));
  }
  json profiles = json::object();
  for (const auto& [name, p] : data.profiles) {
    profiles[name] = {{"description", p.description},
                      {"hbm_gbps", p.hbm_gbps},
                      {"l2_gbps", p.l2_gbps},
                      {"tensor_tflops", p.tensor_tflops}};
  }
  json cases = nullptr;
  if (validation != nullptr) {
    cases = json::array();
    for (const CaseResult& c : validation->cases) {
      if (!c.skipped_reason.empty()) continue;
      json m = json::object();
      for (int i = 0; i < kMetricCount; ++i) {
        m[metric_name(kMetrics[i])] = {c.metrics[i].predicted, c.metrics[i].measured};
      }
      cases.push_back({{"id", c.id}, {"schedule", c.schedule}, {"profile", c.profile}, {"m", m}});
    }
  }
  return {{"rows", rows}, {"profiles", profiles}, {"validation", cases}};
}

// JSON inside <script> must not contain "</" (it could close the element).
std::string script_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') out += '\\';
  }
  return out;
}

std::string validation_html(const ValidationResult& v) {
  std::vector<std::vector<std::string>> t = validation_summary_table(v);
  for (std::string& c : t[0]) {  // without the Markdown's bold marks of the headline columns
    for (std::size_t k = c.find("**"); k != std::string::npos; k = c.find("**")) c.erase(k, 2);
  }
  return html_table(t, "validation-summary");
}

// The points left out because a swept flag does not apply to their algorithm, one line per message.
std::vector<std::string> skipped_lines(const SweepData& data) {
  std::vector<std::string> out;
  for (const auto& [message, count] : skipped_points(data)) {
    out.push_back(fmt::format("Skipped {} point{}: {}.", count, count == 1 ? "" : "s", message));
  }
  return out;
}

}  // namespace

std::string sweep_report_markdown(const SweepData& data, const ValidationResult* validation) {
  std::string s = "# iosim sweep report\n\n";
  s += fmt::format("Sources: {}. {}", sources_text(data), counts_text(data));
  s += data.duplicate_rows > 0
           ? fmt::format(", {} duplicate rows dropped.\n\n", data.duplicate_rows)
           : ".\n\n";
  for (const std::string& c : data.coverage) s += fmt::format("- {}\n", c);
  for (const std::string& c : skipped_lines(data)) s += fmt::format("- {}\n", c);
  s += "\n## Best block size per (N, d, profile, algorithm)\n\n";
  s += "Best by HBM bytes (ties: less time) and by simulated time (ties: fewer HBM bytes). "
       "HBM bytes count the lines still dirty in L2 at the end as written. The lower bound is, "
       "per pass, the larger of the compulsory bytes and the N N_kv d^2 / M term of the theory: "
       "a bound on the two-level model's HBM<->SRAM traffic (no L2), which the HBM bytes of a row "
       "run with the L2 off never fall below. With the L2 on, HBM bytes are DRAM bytes after the "
       "L2, which keeps on chip reuse that the two-level model sends to HBM: they may fall below "
       "the bound (a ratio under 1x), and in a run of both passes below the compulsory bytes too "
       "(the backward reads from the L2 what the forward left there). ";
  s += fmt::format(
      "\"Also within {0:g}% (tie band)\": the other tilings whose time is within {0:g}% of the "
      "best's, which iosim cannot order on a GPU (on the measured tile sweeps it ordered such "
      "pairs about as a coin toss; `iosim tune` marks the same band).\n\n",
      100 * kTieBand);
  s += markdown_table(best_table(data));
  s += "\n## Time by tile (Br x Bc): which tile is fastest\n\n";
  s += "Simulated time of each tile, block_q (Br) down and block_kv (Bc) across, per problem (each "
       "N of a table, and each N_kv where it varies); the fastest tile is **bold**, \"best\" "
       "(ties: fewer HBM bytes), and the others say how much slower they are; where the rows of a "
       "problem differ in stages, threads or another tiling flag, a cell is its tile's fastest "
       "row, whose values follow in brackets. \"infeasible\": the tile does not fit (see "
       "Infeasible points); empty: not tried.\n";
  s += heatmap_markdown(data);
  if (validation != nullptr) {
    s += "\n## Predicted vs measured\n\n";
    s += validation_markdown(*validation);
  }
  const auto infeasible = infeasible_table(data);
  if (infeasible.size() > 1) {
    s += fmt::format("\n## Infeasible points ({})\n\n", infeasible.size() - 1);
    s += markdown_table(infeasible);
  }
  s += "\nCharts: the HTML report of the same sweep (`iosim report ... --html FILE`).\n";
  return s;
}

std::string sweep_report_html(const SweepData& data, const ValidationResult* validation,
                              const std::string& chartjs_source) {
  // A blank line before each asset, as the page always had.
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>iosim sweep report</title>\n<style>\n\n";
  s += assets::sweep_report_css;
  s += "</style>\n<script>\n\n";
  // Before Chart.js, so that errors while it loads are recorded too.
  s += assets::error_capture_js;
  s += "</script>\n<script>\n";
  s += script_safe(chartjs_source);
  s += "\n</script>\n</head>\n<body data-status=\"pending\">\n<h1>iosim sweep report</h1>\n";
  s += fmt::format("<p class=\"meta\">Sources: {}. {}{}.</p>\n", html_escape(sources_text(data)),
                   html_escape(counts_text(data)),
                   data.duplicate_rows > 0
                       ? fmt::format(", {} duplicate rows dropped", data.duplicate_rows)
                       : "");
  s += "<ul class=\"meta\">";
  for (const std::string& c : data.coverage) s += fmt::format("<li>{}</li>", html_escape(c));
  for (const std::string& c : skipped_lines(data)) s += fmt::format("<li>{}</li>", html_escape(c));
  s += "</ul>\n";
  s += R"(<div id="controls">
<label>profile <select id="sel-profile"></select></label>
<label>head dim d <select id="sel-d"></select></label>
<label>configuration <select id="sel-variant"></select></label>
<label>block size <select id="sel-block"></select></label>
</div>
<section id="tile-heatmaps"><h2>Time vs tile (Br x Bc): which tile is fastest</h2>
<p class="note">Simulated time of each tile, block_q (Br) down and block_kv (Bc) across, one table per algorithm at the chosen profile and d, a band of rows per N.
Within each N: &#9733; marks the fastest tile (ties: fewer HBM bytes); the colour runs from green (the fastest) through yellow to red (twice its time or more).
Hatched: the tile does not fit (hover for why); empty: not tried. Hover a cell for its time, HBM bytes, bound and clock.</p>
<div class="heatmaps">
)";
  s += heatmap_html(data);
  s += R"(</div></section>
<section><h2>HBM and L2 bytes vs block size</h2>
<p class="note">One chart per algorithm, one colour per N: HBM (DRAM) bytes solid, L2 (SM&lt;-&gt;L2) bytes dashed.
HBM bytes count the lines still dirty in L2 when the run ends as written (they are, after it).
Gaps are infeasible block sizes. Several block_q for one block_kv: the one with fewest HBM bytes.</p>
<div id="by-block" class="grid"></div></section>
<section><h2>Bytes and time vs N</h2>
<p class="note">Each algorithm at the chosen block size ("best": fewest HBM bytes for bytes, least time for time).
Compulsory: read Q, K, V and write O once (per pass). Two-level lower bound: per pass the larger of the compulsory bytes and the N N_kv d&sup2;/M term for this GPU's SRAM.
Both bound the two-level model's HBM&lt;-&gt;SRAM traffic (no L2): points run with the L2 off never fall below them (HBM bytes include the lines left dirty in L2 at the end).
With the L2 on, HBM bytes are DRAM bytes after the L2, which keeps on chip reuse that the two-level model sends to HBM: they may fall below the lower bound, and in a run of both passes below the compulsory line (the backward reads from the L2 what the forward left there).</p>
<div id="by-n" class="grid"></div></section>
<section><h2>Per-tensor bytes</h2>
<p class="note">At <label>N <select id="sel-tensor-n"></select></label>, each algorithm at the chosen block size (reads + writes; HBM writes include each tensor's lines left dirty in L2 at the end, written back after the run, as the tables' HBM bytes do).</p>
<div id="by-tensor" class="grid"></div></section>
<section><h2>Roofline</h2>
<p class="note">Every feasible point of each profile: arithmetic intensity (FLOPs per HBM byte) against achieved FLOP/s.
Roofs: peak tensor-core FLOP/s and the achievable HBM bandwidth (solid), L2 bandwidth (dashed).</p>
<div id="roofline" class="grid"></div></section>
)";
  if (validation != nullptr) {
    s += R"(<section><h2>Predicted vs measured</h2>
<p class="note">Each measured case re-predicted as it was measured (cold L2, the measured SM clock); on the diagonal the model is exact.</p>
<div id="validation" class="grid"></div>
)";
    s += validation_html(*validation);
    s += "</section>\n";
  }
  s += "<section><h2>Best block size per (N, d, profile, algorithm)</h2>\n";
  s += html_table(best_table(data), "best-blocks");
  s += "</section>\n";
  const auto infeasible = infeasible_table(data);
  if (infeasible.size() > 1) {
    s += fmt::format("<section><h2>Infeasible points ({})</h2>\n", infeasible.size() - 1);
    s += html_table(infeasible, "infeasible");
    s += "</section>\n";
  }
  s += "<p class=\"meta\">Charts drawn by Chart.js (MIT licence), inlined in this file.</p>\n";
  s += "<script type=\"application/json\" id=\"iosim-data\">";
  s += script_safe(json_text(page_data(data, validation)));
  s += "</script>\n<script>\n\n";
  s += assets::sweep_report_js;
  s += "</script>\n</body>\n</html>\n";
  return s;
}

#ifdef IOSIM_EMBEDDED_CHARTJS
namespace assets {
extern const std::string_view IOSIM_EMBEDDED_CHARTJS;
}  // namespace assets
bool chartjs_embedded() {
  return true;
}
#else
bool chartjs_embedded() {
  return false;
}
#endif

std::string load_chartjs(const std::string& path) {
  std::string file = path;
  if (file.empty()) {
    const char* env = std::getenv("IOSIM_CHARTJS");
    if (env != nullptr && *env != '\0') {
      file = env;
    } else {
#ifdef IOSIM_EMBEDDED_CHARTJS
      return std::string(assets::IOSIM_EMBEDDED_CHARTJS);
#else
      file = kDebianChartJs;
#endif
    }
  }
  std::error_code ec;
  if (!std::filesystem::exists(file, ec) && !ec) {
    throw ConfigError(fmt::format(
        "Chart.js not found at '{}': install Debian's libjs-chart.js (scripts/install_deps.sh) "
        "or pass --chartjs FILE",
        file));
  }
  // Chart.js is ~200 KiB minified; 16 MiB refuses /dev/zero and FIFOs like any input.
  const std::string js = read_text_file(file, "Chart.js file", std::size_t{16} << 20);
  if (js.find("Chart") == std::string::npos) {
    throw ConfigError(fmt::format("'{}' does not look like Chart.js", file));
  }
  return js;
}

}  // namespace iosim
