#pragma once
// `iosim explain`'s terminal output: a Trace as narrated steps, and two traces side by side.
// Writers only write: every number comes from the Trace.
#include <cstdint>
#include <optional>
#include <ostream>

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

/// The header of write_trace (problem, tiling, kernels, the paper's algorithm) alone.
void write_trace_header(std::ostream& out, const Trace& trace, bool color);
/// The summary of write_trace (totals against the closed form and the bounds) alone.
void write_trace_summary(std::ostream& out, const Trace& trace, bool color);

/// Two schedules on the same problem side by side: steps, bytes per level, the ratio and the
/// orders of Theorem 2 of the FlashAttention paper.
void write_compare(std::ostream& out, const Trace& a, const Trace& b, bool color);

}  // namespace iosim::teach
