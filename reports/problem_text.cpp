// The one line that names a run's problem (B, H, N, d, types, mask, pass) in the run table and
// the compare and tune writers and pages (declared in reports/writers.hpp).
#include <fmt/format.h>

#include "reports/writers.hpp"
#include "sim/schedule/problem.hpp"

namespace iosim {

std::string problem_text(const AttentionProblem& p) {
  // A ragged batch named by its sequences (its N and N_kv, the longest, are a padded layout's).
  return fmt::format(
      "{} H={}{}{} {} {}{}{}{}{} pass={}",
      p.ragged() ? "ragged batch: " + ragged_batch_text(p) + ";" : fmt::format("B={}", p.batch),
      p.heads, p.kv_head_count() != p.heads ? fmt::format(" H_kv={}", p.kv_head_count()) : "",
      p.ragged() ? "" : fmt::format(" N={} N_kv={}", p.seq, p.seq_kv), head_dim_text(p),
      dtype_text(p), p.causal ? " causal" : "",
      p.window > 0 ? fmt::format(" window={}", p.window) : "", p.mask ? " mask" : "",
      p.dropout > 0 ? fmt::format(" dropout={}", p.dropout) : "", pass_name(p.pass));
}

}  // namespace iosim
