#pragma once
// What the files of `iosim report` share (sweep_report.cpp writes the report,
// sweep_report_columns.cpp picks the columns and names the tiles, sweep_heatmap.cpp draws the
// time-vs-tile heatmaps); not part of the API, which is reports/sweep_report.hpp.
#include <string>
#include <vector>

#include "reports/sweep_file.hpp"

namespace iosim::sweep_report_detail {

// Problem fields that are not always shown: a column appears only when the rows differ in it.
struct OtherField {
  const char* name;
  std::string (*text)(const SweepRow&);
};

// A point whose swept flag does not apply to its algorithm: left out of the report, which says so
// once per message (sweep_report_columns.cpp).
bool inapplicable(const SweepRow& r);

// The problem fields (B, H, N_kv, dtype, ...) in which the rows differ: a column each.
std::vector<const OtherField*> varying_fields(const SweepData& data);

// The tiling axes (stages, threads, ...) in which the rows of some problem differ;
// `feasible_only`: among the rows that ran (the ones a best tile is chosen from).
std::vector<const OtherField*> varying_tiling(const SweepData& data, bool feasible_only);

// Br x Bc and the other tiling axes that vary: "192 x 128, stages 3".
std::string tile_text(const SweepRow& r, const std::vector<const OtherField*>& axes);

// The tiling axes but Br x Bc of a heatmap's cell: " (stages 3)", or "" when none vary.
std::string axes_suffix(const SweepRow& r, const std::vector<const OtherField*>& axes);

// A table header naming the tile's axes: "Br x Bc, stages".
std::string tile_header(const std::vector<const OtherField*>& axes);

// A Markdown table of rows of cells, the header first.
std::string markdown_table(const std::vector<std::vector<std::string>>& t);

// The time-vs-tile heatmaps (sweep_heatmap.cpp): one Markdown table, or one HTML table, per
// (profile, algorithm, d and the other fields that vary but N).
std::string heatmap_markdown(const SweepData& data);
std::string heatmap_html(const SweepData& data);

}  // namespace iosim::sweep_report_detail
