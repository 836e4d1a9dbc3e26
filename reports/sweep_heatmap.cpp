// The time-vs-tile heatmaps of `iosim report`: a table per (profile, algorithm, d and the other
// fields that vary but N), a row per N and block_q, a column per block_kv.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include "reports/sweep_report_detail.hpp"
#include "sim/base/html_text.hpp"
#include "sim/base/human_units.hpp"

namespace iosim::sweep_report_detail {
namespace {

// The time-vs-tile heatmaps, one table per (profile, algorithm, d and the other fields that vary
// but N): a row per N and block_q, a column per block_kv. Each N is a problem of its own: its
// best tile is marked and its other tiles are coloured by their time over the best's.
struct HeatmapTable {
  std::string profile, title;
  bool by_nkv = false;  // N_kv varies: a column of its own beside N (decoding sweeps)
  std::int64_t head_dim = 0;
  std::vector<std::int64_t> block_kv;  // ascending: the union of its heatmaps' columns
  std::vector<const TileHeatmap*> maps;
};

std::vector<HeatmapTable> heatmap_tables(const SweepData& data,
                                         const std::vector<TileHeatmap>& maps) {
  const std::vector<const OtherField*> other = varying_fields(data);
  std::vector<HeatmapTable> out;
  std::map<std::string, std::size_t> index;
  for (const TileHeatmap& h : maps) {
    const SweepRow& f = data.rows[h.best.first];
    if (h.best.feasible == 0 && inapplicable(f)) continue;  // listed under "skipped"
    std::string title = fmt::format("{}, {}, d={}", f.profile, f.algorithm, f.head_dim);
    bool by_nkv = false;
    for (const OtherField* o : other) {
      if (std::string_view(o->name) == "N_kv") {
        by_nkv = true;  // a column, not a table each
      } else {
        title += fmt::format(", {} {}", o->name, o->text(f));
      }
    }
    auto [it, added] = index.emplace(title, out.size());
    if (added) out.push_back({f.profile, title, by_nkv, f.head_dim, {}, {}});
    HeatmapTable& t = out[it->second];
    t.maps.push_back(&h);
    for (std::int64_t kv : h.block_kv) {
      if (std::find(t.block_kv.begin(), t.block_kv.end(), kv) == t.block_kv.end())
        t.block_kv.push_back(kv);
    }
    std::sort(t.block_kv.begin(), t.block_kv.end());
  }
  return out;
}

// The cell of `h` at (block_q index q, block_kv value kv); null when the tile was not tried.
const TileCell* cell_at(const TileHeatmap& h, std::size_t q, std::int64_t kv) {
  const auto it = std::find(h.block_kv.begin(), h.block_kv.end(), kv);
  if (it == h.block_kv.end()) return nullptr;
  const TileCell& c = h.at(q, static_cast<std::size_t>(it - h.block_kv.begin()));
  return c.tried ? &c : nullptr;
}

// A tile's time after the best's: "+12%".
std::string slower_text(double t, double best) {
  return best > 0 ? fmt::format("+{:.0f}%", (t / best - 1.0) * 100.0) : std::string("-");
}

// A cell's colour: green at the problem's best time, through yellow to red at twice it or more.
std::string heat_colour(double t, double best) {
  const double x = best > 0 ? std::clamp(std::log2(t / best), 0.0, 1.0) : 1.0;
  return fmt::format("hsl({:.0f}, 70%, 78%)", 120.0 * (1.0 - x));
}

}  // namespace

std::string heatmap_markdown(const SweepData& data) {
  const std::vector<TileHeatmap> maps = tile_heatmaps(data);
  const std::vector<HeatmapTable> tables = heatmap_tables(data, maps);
  // A cell is a tile's fastest row: the stages (threads, ...) it ran with where those vary.
  const std::vector<const OtherField*> axes = varying_tiling(data, true);
  std::string s;
  for (const HeatmapTable& t : tables) {
    std::vector<std::vector<std::string>> rows = {{"N"}};
    if (t.by_nkv) rows[0].push_back("N_kv");
    rows[0].push_back("Br \\ Bc");
    for (std::int64_t kv : t.block_kv) rows[0].push_back(std::to_string(kv));
    for (const TileHeatmap* h : t.maps) {
      const SweepRow& f = data.rows[h->best.first];
      const double best = h->best.feasible > 0 ? data.rows[h->best.by_time].time_s : 0.0;
      for (std::size_t q = 0; q < h->block_q.size(); ++q) {
        std::vector<std::string> row = {std::to_string(f.seq)};
        if (t.by_nkv) row.push_back(std::to_string(f.seq_kv));
        row.push_back(std::to_string(h->block_q[q]));
        for (std::int64_t kv : t.block_kv) {
          const TileCell* c = cell_at(*h, q, kv);
          if (c == nullptr) {
            row.push_back("");
          } else if (!c->feasible) {
            row.push_back("infeasible");
          } else if (h->best.feasible > 0 && c->row == h->best.by_time) {
            const SweepRow& r = data.rows[c->row];
            row.push_back(
                fmt::format("**{}** best{}", human_seconds(r.time_s), axes_suffix(r, axes)));
          } else {
            const SweepRow& r = data.rows[c->row];
            row.push_back(fmt::format("{} {}{}", human_seconds(r.time_s),
                                      slower_text(r.time_s, best), axes_suffix(r, axes)));
          }
        }
        rows.push_back(std::move(row));
      }
    }
    s += fmt::format("\n### {}\n\n", t.title);
    s += markdown_table(rows);
  }
  return s;
}

std::string heatmap_html(const SweepData& data) {
  const std::vector<TileHeatmap> maps = tile_heatmaps(data);
  const std::vector<const OtherField*> axes = varying_tiling(data, true);
  std::string s;
  for (const HeatmapTable& t : heatmap_tables(data, maps)) {
    s += fmt::format(
        "<div class=\"heatmap\" data-profile=\"{}\" data-d=\"{}\"><h3>{}</h3>\n"
        "<table class=\"tiles\"><thead><tr><th>N</th>{}<th>Br \\ Bc</th>",
        html_escape(t.profile), t.head_dim, html_escape(t.title), t.by_nkv ? "<th>N_kv</th>" : "");
    for (std::int64_t kv : t.block_kv) s += fmt::format("<th>{}</th>", kv);
    s += "</tr></thead>\n<tbody>\n";
    for (const TileHeatmap* h : t.maps) {
      const SweepRow& f = data.rows[h->best.first];
      const double best = h->best.feasible > 0 ? data.rows[h->best.by_time].time_s : 0.0;
      for (std::size_t q = 0; q < h->block_q.size(); ++q) {
        // The first row of each N starts a new problem: a rule above it.
        s += q == 0 ? "<tr class=\"shape\">" : "<tr>";
        s += fmt::format("<th>{}</th>", f.seq);
        if (t.by_nkv) s += fmt::format("<th>{}</th>", f.seq_kv);
        s += fmt::format("<th>{}</th>", h->block_q[q]);
        for (std::int64_t kv : t.block_kv) {
          const TileCell* c = cell_at(*h, q, kv);
          if (c == nullptr) {
            s += "<td class=\"untried\"></td>";
            continue;
          }
          const SweepRow& r = data.rows[c->row];
          const std::string tile = fmt::format("{} N={} Br x Bc = {} x {}{}", r.algorithm, r.seq,
                                               r.block_q, r.block_kv, axes_suffix(r, axes));
          if (!c->feasible) {
            s += fmt::format("<td class=\"infeasible\" title=\"{}: {}\">infeasible</td>",
                             html_escape(tile), html_escape(r.infeasible_reason));
            continue;
          }
          const bool is_best = c->row == h->best.by_time;
          const std::string hover = fmt::format(
              "{}: {}{}, HBM {}, {}-bound, at {:.0f} MHz", tile, human_seconds(r.time_s),
              is_best ? " (best)" : "", human_bytes(r.hbm_bytes()), r.bound, r.sm_clock_mhz);
          s += fmt::format(
              "<td{} style=\"background:{}\" title=\"{}\">{}</td>",
              is_best ? " class=\"best\"" : "", heat_colour(r.time_s, best), html_escape(hover),
              is_best ? fmt::format("&#9733; {}{}", human_seconds(r.time_s),
                                    axes.empty() ? std::string()
                                                 : fmt::format(" <small>{}</small>",
                                                               html_escape(axes_suffix(r, axes))))
                      : fmt::format("{} <small>{}</small>", human_seconds(r.time_s),
                                    slower_text(r.time_s, best)));
        }
        s += "</tr>\n";
      }
    }
    s += "</tbody></table></div>\n";
  }
  return s;
}

}  // namespace iosim::sweep_report_detail
