#pragma once
// Report writers: they only format what simulate() produced; they compute nothing new.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/iosim.hpp"
#include "sim/base/human_units.hpp"

namespace iosim {

/// The JSON object of docs/DESIGN.md's contract (plus per-tensor and per-kernel detail).
nlohmann::json report_to_json(const Report& r);

/// The problem as the run table's "problem" line spells it: "B=4 H=16 N=4096 N_kv=4096 d=64 fp16
/// pass=fwd".
std::string problem_text(const AttentionProblem& p);

/// A human-readable multi-section table of one run.
std::string format_table(const Report& r);

/// CSV header line matching csv_row().
std::string csv_header();
/// One CSV line (no trailing newline) of a run's headline numbers.
std::string csv_row(const Report& r);

/// A side-by-side table of several algorithms on one problem: `two_level[i]` is run i with
/// --l2 off and `three_level[i]` the same with --l2 on.
std::string format_comparison(const std::vector<Report>& two_level,
                              const std::vector<Report>& three_level);

}  // namespace iosim
