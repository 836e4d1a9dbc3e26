#pragma once
// An attention algorithm: given a problem and a GPU, it picks (or checks) a tiling and builds the
// Schedule the engine runs. A tiling that cannot work is a result with a reason, not an error.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/problem.hpp"
#include "sim/profile.hpp"
#include "sim/schedule.hpp"

namespace iosim {

/// Block sizes and launch shape. Zero fields mean "the algorithm's default".
struct Tiling {
  std::int64_t block_q = 0;   // Br: query rows per tile
  std::int64_t block_kv = 0;  // Bc: key/value rows per tile
  int threads = 0;            // threads per CTA of the main kernel
  // Shared-memory buffers of the streamed operand of the main kernel: K/V buffer pairs for the
  // schedules that stream K/V (flash2, block-sparse, flash-decoding, paged; see
  // kv_pipeline_depth), Q/O stages for flash1, Q stages for the flash2 backward, operand stages
  // for the GEMMs of standard.
  int pipeline_stages = 0;
  int registers_per_thread = 0;  // of the main kernel, as a compiler reported it (0: estimated)
  std::int64_t splits = 0;       // split-KV decoding: K/V chunks per query tile (0: heuristic)
};

/// The outcome of planning: a schedule, or the reason none fits.
struct Planned {
  std::unique_ptr<Schedule> schedule;
  Tiling tiling;                  // resolved: every field set
  std::string infeasible_reason;  // non-empty when no schedule fits
  std::optional<double> density;  // block-sparse only: s, the fraction of blocks computed
  bool feasible() const { return infeasible_reason.empty(); }
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  /// The CLI name ("standard", "flash1", "flash2", ...).
  virtual std::string name() const = 0;
  /// One line for `iosim --help` and reports.
  virtual std::string summary() const = 0;
  /// Resolves the tiling for `problem` on `profile` and builds the schedule.
  virtual Planned plan(const AttentionProblem& problem, const HardwareProfile& profile,
                       const Tiling& requested) const = 0;
};

/// Explicit registry of algorithms (no static self-registration).
class Registry {
 public:
  void add(std::unique_ptr<Algorithm> algorithm);
  /// The algorithm called `name`; throws ConfigError listing the valid names otherwise.
  const Algorithm& get(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<Algorithm>> algorithms_;
};

/// Adds standard, flash1, flash2, block-sparse, flash-decoding and paged.
void register_builtin_algorithms(Registry& registry);

/// A registry holding the built-in algorithms.
const Registry& builtin_registry();

/// SRAM the FlashAttention analysis calls M: the per-CTA shared-memory limit, in bytes.
std::int64_t sram_bytes(const HardwareProfile& profile);

/// Copy pipeline depth (KernelSpec::pipeline_stages) of a kernel that streams K/V through
/// `kv_buffer_pairs` pairs of shared-memory buffers. With one pair, FlashAttention issues the copy
/// of K_{j+1} before the P V_j product and that of V_{j+1} before Q K_{j+1}^T, so each copy
/// overlaps one product: tile j+1 is in flight while tile j is used, as with two pairs. Each
/// further pair adds a tile of look-ahead.
constexpr int kv_pipeline_depth(int kv_buffer_pairs) {
  return kv_buffer_pairs < 2 ? 2 : kv_buffer_pairs;
}

/// Number of tiles of size `block` covering `n`.
constexpr std::int64_t ceil_div(std::int64_t n, std::int64_t block) {
  return (n + block - 1) / block;
}

}  // namespace iosim
