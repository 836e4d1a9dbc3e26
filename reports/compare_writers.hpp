#pragma once
// Writers of a comparison (`iosim run` with several kernels, api/compare.hpp): the same quantities
// of each run side by side. Writers only: every number is a Report's; the one thing computed here
// is each column's ratio to the first, a quotient of two numbers shown beside them.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/iosim.hpp"

namespace iosim {

/// One row of the comparison: a quantity, its text in each run's column and, where a ratio to
/// the first run means something (bytes, time, FLOPs, rates), the numbers it divides.
struct CompareRow {
  std::string label;               // "HBM read"; a heading when `cells` is empty
  std::vector<std::string> cells;  // one per run
  std::vector<double> values;      // one per run, or empty: no ratio
  /// `values[i]` over `values[0]` as "0.85x", or "-" where there is no ratio.
  std::string ratio(std::size_t i) const;
};

/// The rows of the comparison of `reports` (each feasible, all of one problem and profile): the
/// tiling, the time, the bound and where the time goes, each level's bytes read and written, HBM
/// bytes per tensor, the work and the achieved rates.
std::vector<CompareRow> compare_rows(const std::vector<Report>& reports);

/// The text table: a column per run, then a ratio column per run after the first ("flash3 /
/// flash2": its value over the first's).
std::string compare_table(const std::vector<Report>& reports);

/// {"schema_version", "compare": {"kernels": names, "baseline": the first}, "runs": each run's
/// report_to_json()} (schemas/compare.schema.json).
nlohmann::json compare_to_json(const std::vector<Report>& reports);

/// The run CSV's header and one row per run (csv_header(), csv_row()), lines ending in "\n".
std::string compare_csv(const std::vector<Report>& reports);

}  // namespace iosim
