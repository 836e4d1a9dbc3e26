#include "reports/tune_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>

#include "reports/run_page.hpp"
#include "reports/svg_chart.hpp"
#include "reports/tune_writers.hpp"
#include "reports/writers.hpp"
#include "sim/base/html_text.hpp"
#include "sim/base/human_units.hpp"

namespace iosim::assets {
extern const std::string_view run_chart_css;
}  // namespace iosim::assets

namespace iosim {
// Named, not anonymous: the reports library is a unity build (see compare_writers.cpp).
namespace tune_page {

using nlohmann::json;

// Bars drawn: past this many, the chart would be unreadable; the table holds the rest.
constexpr std::size_t kMaxBars = 40;
// The axis starts here (time over the best's), not at 0.
constexpr double kAxisFrom = 0.95;
constexpr double kBarHeight = 16, kBarGap = 4, kTop = 44, kLeft = 250, kRight = 1000;

std::string tiling_label(const json& p) {
  return fmt::format("{} x {}, {} stages, {} threads", p.at("block_q").get<std::int64_t>(),
                     p.at("block_kv").get<std::int64_t>(), p.at("stages").get<int>(),
                     p.at("threads").get<int>());
}

bool same_tiling(const json& a, const json& b) {
  for (const char* k : {"block_q", "block_kv", "stages", "threads"}) {
    if (a.at(k) != b.at(k)) return false;
  }
  return true;
}

// One bar per ranked tiling (at most kMaxBars): its length the time over the best's, from 1 at
// the left edge's scale; the tie band as a shaded strip.
std::string bars_svg(const json& doc) {
  const json& ranked = doc.at("ranked");
  const std::size_t n = std::min(ranked.size(), kMaxBars);
  double worst = 1.0;
  for (std::size_t i = 0; i < n; ++i)
    worst = std::max(worst, ranked[i].at("time_over_best").get<double>());
  const double hi = std::max(worst, 1.0 + doc.at("tie_band").get<double>()) * 1.02;
  // From just under the best, so that what separates the tilings, a few percent, shows.
  const double lo = kAxisFrom;
  const auto x_of = [&](double ratio) {
    return kLeft + (kRight - kLeft) * (ratio - lo) / (hi - lo);
  };
  const double height = kTop + static_cast<double>(n) * (kBarHeight + kBarGap) + 40;
  std::string s = svg_open(kChartWidth, height, "chart tune") +
                  fmt::format(
                      "<style>\n{}rect.tie {{ fill: #e8f3e8; }}\nrect.bar {{ fill: "
                      "#6b9bd1; }}\nrect.bar.default {{ fill: #f0a04b; }}\n</style>\n",
                      assets::run_chart_css);
  s += svg_text(
      20, 24,
      "Simulated time of each tiling over the best's (shorter is faster; the axis starts at 0.95)",
      "title", "start");
  const double bottom = kTop + static_cast<double>(n) * (kBarHeight + kBarGap);
  s += fmt::format(
      "<rect class=\"tie\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>\n",
      x_of(1.0), kTop - 4, x_of(1.0 + doc.at("tie_band").get<double>()) - x_of(1.0),
      bottom - kTop + 4);
  for (int i = 0; i <= 4; ++i) {
    const double ratio = lo + (hi - lo) * i / 4;
    s += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n",
        x_of(ratio), kTop - 4, bottom);
    s += svg_text(x_of(ratio), bottom + 16, fmt::format("{:.2f}", ratio), "axis");
  }
  const json& def = doc.at("default");
  for (std::size_t i = 0; i < n; ++i) {
    const json& p = ranked[i];
    const double y = kTop + static_cast<double>(i) * (kBarHeight + kBarGap);
    const bool is_default = def.at("feasible").get<bool>() && same_tiling(p, def);
    const double ratio = p.at("time_over_best").get<double>();
    s += fmt::format(
        "<g data-rank=\"{}\" data-time-s=\"{:.9g}\" data-tie=\"{}\">\n<rect class=\"bar{}\" "
        "x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{}: {} ({:.3f} x the "
        "best)</title></rect>\n",
        p.at("rank").get<std::size_t>(), p.at("time_s").get<double>(),
        p.at("within_tie_band").get<bool>() ? "true" : "false", is_default ? " default" : "", kLeft,
        y, x_of(ratio) - kLeft, kBarHeight, html_escape(tiling_label(p)),
        human_seconds(p.at("time_s").get<double>()), ratio);
    s += svg_text(kLeft - 8, y + 12,
                  fmt::format("{}{}. {}", p.at("rank").get<std::size_t>(),
                              p.at("within_tie_band").get<bool>() ? "*" : "", tiling_label(p)),
                  "small", "end");
    s += svg_text(x_of(ratio) + 6, y + 12, human_seconds(p.at("time_s").get<double>()), "small",
                  "start");
    s += "</g>\n";
  }
  return s + "</svg>\n";
}

std::string ranked_table(const json& doc) {
  std::string s =
      "<table id=\"ranked\">\n<thead><tr><th>rank</th><th>block_q</th><th>block_kv</th>"
      "<th>stages</th><th>threads</th><th>time</th><th>/ best</th><th>bound</th>"
      "<th>CTAs/SM</th><th>waves</th><th>HBM</th></tr></thead>\n<tbody>\n";
  for (const json& p : doc.at("ranked")) {
    s += fmt::format(
        "<tr{}><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td>"
        "<td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td></tr>\n",
        p.at("within_tie_band").get<bool>() ? " class=\"tie\"" : "",
        p.at("rank").get<std::size_t>(), p.at("within_tie_band").get<bool>() ? "*" : "",
        p.at("block_q").get<std::int64_t>(), p.at("block_kv").get<std::int64_t>(),
        p.at("stages").get<int>(), p.at("threads").get<int>(),
        human_seconds(p.at("time_s").get<double>()), p.at("time_over_best").get<double>(),
        html_escape(p.at("bound").get<std::string>()), p.at("ctas_per_sm").get<int>(),
        p.at("waves").get<double>(), human_bytes(p.at("hbm_total_bytes").get<double>()));
  }
  return s + "</tbody></table>\n";
}

std::string infeasible_table(const json& doc) {
  const json& list = doc.at("infeasible_points");
  if (list.empty()) return "<p>Every tiling of the space is feasible.</p>\n";
  std::string s =
      "<table id=\"infeasible\">\n<thead><tr><th>block_q</th><th>block_kv</th><th>stages</th>"
      "<th>threads</th><th style=\"text-align: left\">why not</th></tr></thead>\n<tbody>\n";
  const auto cell = [](const json& v) {
    return v.get<std::int64_t>() > 0 ? std::to_string(v.get<std::int64_t>()) : std::string("-");
  };
  for (const json& p : list) {
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align: "
        "left\">{}</td></tr>\n",
        cell(p.at("block_q")), cell(p.at("block_kv")), cell(p.at("stages")), cell(p.at("threads")),
        html_escape(p.at("infeasible_reason").get<std::string>()));
  }
  return s + "</tbody></table>\n";
}

}  // namespace tune_page

std::string tune_html(const TuneResult& result, std::size_t top) {
  using namespace tune_page;
  const json doc = tune_to_json(result, top);
  const Report& any = result.algorithm_default;
  std::string s = run_page_parts::page_head(
      fmt::format("iosim tune: {} on {}", any.request.algorithm, any.profile_description));
  const auto list = [](const json& values) {
    std::string out;
    for (const json& v : values) {
      if (!out.empty()) out += ',';
      const std::int64_t x = v.get<std::int64_t>();
      out += x > 0 ? fmt::format("{}", x) : std::string("auto");
    }
    return out;
  };

  const json& space = doc.at("space");
  s += fmt::format(
      "<p class=\"meta\">{}, L2 {}. Space: block_q {} x block_kv {} x stages {} x threads {}: {} "
      "tilings, {} feasible, {} infeasible. The same ranking: <code>iosim tune</code> without "
      "<code>--html</code> (or <code>--format json</code>).</p>\n",
      html_escape(problem_text(any.request.problem)),
      any.request.engine.l2_enabled ? "on" : "off (two-level model)", list(space.at("block_q")),
      list(space.at("block_kv")), list(space.at("stages")), list(space.at("threads")),
      doc.at("points").get<std::size_t>(), doc.at("feasible").get<std::size_t>(),
      doc.at("infeasible").get<std::size_t>());
  s += "<section><h2>Ranked</h2>\n" + bars_svg(doc);
  s += fmt::format(
      "<p class=\"note\">Shaded, and marked *: within {:g}% of the best (<code>--tie-band</code>), "
      "closer than iosim's time model can tell apart: time those on the GPU. In orange: the "
      "algorithm's own tiling.</p>\n",
      100 * doc.at("tie_band").get<double>());
  s += ranked_table(doc);
  if (doc.at("ranked").size() < doc.at("feasible").get<std::size_t>()) {
    s +=
        fmt::format("<p class=\"note\">{} more feasible tilings (<code>--top 0</code>: all).</p>\n",
                    doc.at("feasible").get<std::size_t>() - doc.at("ranked").size());
  }
  const json& def = doc.at("default");
  s += "</section>\n<section><h2>The algorithm's own tiling</h2>\n<p>";
  if (!def.at("feasible").get<bool>()) {
    s += fmt::format("{}: infeasible: {}", html_escape(tiling_label(def)),
                     html_escape(def.at("infeasible_reason").get<std::string>()));
  } else {
    s += fmt::format(
        "{}: {}, {:.3f} x the best{}", html_escape(tiling_label(def)),
        human_seconds(def.at("time_s").get<double>()), def.at("time_over_best").get<double>(),
        def.at("rank").is_null() ? std::string(", outside the space")
                                 : fmt::format(", rank {}", def.at("rank").get<std::size_t>()));
  }
  s += "</p>\n</section>\n<section><h2>Infeasible</h2>\n" + infeasible_table(doc) + "</section>\n";
  return s + run_page_parts::page_tail();
}

}  // namespace iosim
