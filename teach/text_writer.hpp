#pragma once
// `iosim explain`'s terminal output: a Trace as narrated steps, and traces side by side.
// Writers only write: every number comes from the Trace.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "teach/trace.hpp"

namespace iosim::teach {

struct TextOptions {
  bool color = false;                     // ANSI colors (a terminal)
  std::optional<std::size_t> step;        // show only step K (1-based)
  std::optional<std::size_t> until;       // show steps 1..K
  std::optional<std::int64_t> focus_cta;  // show only the steps of this CTA (in every kernel)
};

/// The narrated trace: a header (problem, tiling, kernels, the paper's algorithm), the steps the
/// options select, and a summary that holds the totals against the closed form and the bounds.
/// Throws ConfigError when --step or --until is past the last step.
void write_trace(std::ostream& out, const Trace& trace, const TextOptions& options);
/// Throws ConfigError when --step, --until or --focus (in `options`) is past the trace; write_trace
/// checks it, and `explain --html` before it writes its page (it ignored them, issue #50 S3).
void check_text_options(const Trace& trace, const TextOptions& options);

/// The header of write_trace (problem, tiling, kernels, the paper's algorithm) alone.
void write_trace_header(std::ostream& out, const Trace& trace, bool color);
/// The summary of write_trace (totals against the closed form and the bounds) alone.
void write_trace_summary(std::ostream& out, const Trace& trace, bool color);

/// Two or more schedules on the same problem side by side, one column each in the order given:
/// the title, the table of compare_rows, and write_compare_notes.
void write_compare(std::ostream& out, const std::vector<Trace>& traces, bool color);

/// The first line of write_compare: the algorithms, the problem and the profile.
std::string compare_title(const std::vector<Trace>& traces);

/// A row of write_compare's table: what it counts, and one cell per trace.
struct CompareRow {
  std::string label;
  std::vector<std::string> cells;
};
/// The table of write_compare: the algorithms' names (label ""), their blocks, kernels, steps,
/// bytes at each level (run_totals), closed form and lower bound.
std::vector<CompareRow> compare_rows(const std::vector<Trace>& traces);

/// The lines under write_compare's table: each schedule's HBM bytes against the fewest, and the
/// orders of Theorem 2 of the FlashAttention paper for the problem.
void write_compare_notes(std::ostream& out, const std::vector<Trace>& traces, bool color);

}  // namespace iosim::teach
