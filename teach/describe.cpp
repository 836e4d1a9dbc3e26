// The words of a trace: the line that describes each op, and the numbers in it. A compute op's
// words are its row's narration (algorithms/compute_ops.cpp).
#include <fmt/format.h>

#include "algorithms/compute_ops.hpp"
#include "teach/trace.hpp"

namespace iosim::teach {

std::string thousands(std::uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string s;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 10 * 1024) return fmt::format("{} B", bytes);
  if (bytes < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

namespace {

std::string region(const TileRef& t) {
  std::string s = fmt::format("{}[{}:{}, {}:{}]", tensor_name(t.tensor), t.row0, t.row0 + t.rows,
                              t.col0, t.col0 + t.cols);
  if (t.matrix > 0) s += fmt::format(" of matrix {}", t.matrix);
  return s;
}

}  // namespace

std::string describe(const TraceStep& step) {
  const TileOp& op = step.op;
  const char* chip = op.on_chip == OnChip::smem ? "shared memory" : "registers";
  const std::uint64_t bytes = step.bytes.hbm_two_level;
  switch (op.kind) {
    case OpKind::load:
      return fmt::format("load {} ({} x {}, {}): HBM -> {}{}{}", region(op.tile), op.tile.rows,
                         op.tile.cols, human_bytes(bytes), chip,
                         op.append ? ", below the rows already there (a gather)" : "",
                         op.in_step ? ", issued inside the step" : "");
    case OpKind::store:
      return fmt::format("store {} ({} x {}, {}): {} -> HBM", region(op.tile), op.tile.rows,
                         op.tile.cols, human_bytes(bytes), chip);
    case OpKind::reduce:
      return fmt::format(
          "atomic add into {} ({} x {}): the L2 reads the old value and keeps the sum "
          "(two-level: {} read + written)",
          region(op.tile), op.tile.rows, op.tile.cols, human_bytes(bytes / 2));
    case OpKind::compute: {
      std::string s = narrate(op);
      if (op.tensor_flops > 0) s += fmt::format(" ({} tensor-core FLOPs)", op.tensor_flops);
      return s;
    }
  }
  return {};
}

}  // namespace iosim::teach
