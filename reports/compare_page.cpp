#include "reports/compare_page.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "reports/compare_writers.hpp"
#include "reports/run_page.hpp"
#include "reports/writers.hpp"
#include "sim/base/html_text.hpp"

namespace iosim {
// Named, not anonymous: the reports library is a unity build (see compare_writers.cpp).
namespace compare_page {

// The side-by-side table: a row per quantity, a column per kernel, then the ratios to the first.
std::string compare_table_html(const std::vector<Report>& reports) {
  std::string s = "<table id=\"compare\">\n<thead><tr><th>quantity</th>";
  for (const Report& r : reports) s += fmt::format("<th>{}</th>", html_escape(r.request.algorithm));
  for (std::size_t i = 1; i < reports.size(); ++i) {
    s += fmt::format("<th>{} / {}</th>", html_escape(reports[i].request.algorithm),
                     html_escape(reports.front().request.algorithm));
  }
  s += "</tr></thead>\n<tbody>\n";
  for (const CompareRow& row : compare_rows(reports)) {
    if (row.cells.empty()) {
      s += fmt::format("<tr class=\"heading\"><th colspan=\"{}\">{}</th></tr>\n",
                       2 * reports.size(), html_escape(row.label));
      continue;
    }
    s += fmt::format("<tr><td>{}</td>", html_escape(row.label));
    for (const std::string& cell : row.cells) s += fmt::format("<td>{}</td>", html_escape(cell));
    for (std::size_t i = 1; i < reports.size(); ++i) {
      s += fmt::format("<td>{}</td>", row.values.empty() ? "" : row.ratio(i));
    }
    s += "</tr>\n";
  }
  return s + "</tbody></table>\n";
}

// The run page's tables and charts carry ids (id="achieved", the roofline's clip path, the
// arrowheads' markers) that a page of one run holds once; a column's are prefixed with its
// number, and so are the references to them, so that the page's ids stay unique.
std::string column_ids(const std::string& html, std::size_t column) {
  const std::string prefix = fmt::format("c{}-", column + 1);
  std::string out;
  out.reserve(html.size() + 256);
  for (std::size_t at = 0; at < html.size();) {
    bool replaced = false;
    for (const char* key : {" id=\"", "url(#"}) {
      const std::string k(key);
      if (html.compare(at, k.size(), k) == 0) {
        out += k + prefix;
        at += k.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += html[at++];
  }
  return out;
}

// One section: `piece` of each run in its column, under the kernel's name.
template <class Piece>
std::string side_by_side(const std::vector<Report>& reports, Piece piece) {
  std::string s = "<div class=\"side\">\n";
  for (std::size_t i = 0; i < reports.size(); ++i) {
    s += fmt::format("<div class=\"column\" data-kernel=\"{}\"><h3>{}</h3>\n",
                     html_escape(reports[i].request.algorithm),
                     html_escape(reports[i].request.algorithm));
    s += column_ids(piece(reports[i]), i) + "</div>\n";
  }
  return s + "</div>\n";
}

}  // namespace compare_page

std::string compare_html(const std::vector<Report>& reports) {
  using namespace run_page_parts;
  using compare_page::side_by_side;
  if (reports.empty()) return "";
  std::string names;
  for (const Report& r : reports) {
    names += (names.empty() ? "" : " vs ") + r.request.algorithm;
  }
  const Report& first = reports.front();
  std::string s = page_head(fmt::format("iosim run: {} on {}", names, first.profile_description));
  // Wider than one run's page: a column per kernel, each chart scaled to its column.
  s += fmt::format(
      "<style>\nbody {{ max-width: {}px; }}\n.side {{ display: grid; grid-template-columns: "
      "repeat({}, minmax(0, 1fr)); gap: 16px; }}\n.side h3 {{ margin: 8px 0 0; font-size: 15px; "
      "}}\ntr.heading th {{ text-align: left; }}\n</style>\n",
      std::max<std::size_t>(1140, 600 * reports.size()), reports.size());
  s += fmt::format(
      "<p class=\"meta\">{}, L2 {}. Every flag but the kernel is shared; each column is that "
      "kernel's own <code>iosim run</code>. The table of the same comparison: <code>iosim "
      "run</code> without <code>--html</code>.</p>\n",
      html_escape(problem_text(first.request.problem)),
      first.request.engine.l2_enabled ? "on" : "off (two-level model)");
  s += "<section><h2>Side by side</h2>\n";
  s += compare_page::compare_table_html(reports);
  s += "<p class=\"note\">Ratios: each kernel's value over the first's. A * marks the largest "
       "share of a run's time: its bound.</p>\n</section>\n";
  s += "<section><h2>Achieved</h2>\n" + side_by_side(reports, achieved_table) + "</section>\n";
  s += "<section><h2>Where the time goes</h2>\n";
  s += side_by_side(reports, [](const Report& r) { return attribution_svg(r) + time_table(r); });
  s += fmt::format("<p class=\"note\">{}</p>\n</section>\n", kAttributionNote);
  s += "<section><h2>Memory chart</h2>\n" + side_by_side(reports, memory_svg) + "</section>\n";
  s += "<section><h2>Roofline</h2>\n" + side_by_side(reports, roofline_svg);
  s += fmt::format("<p class=\"note\">{}</p>\n</section>\n", kRooflineNote);
  s += "<section><h2>Kernel timeline</h2>\n";
  s += side_by_side(reports, [](const Report& r) { return timeline_svg(r) + kernels_table(r); });
  s += "</section>\n";
  return s + page_tail();
}

}  // namespace iosim
