// Paged attention (Kwon et al. 2023) for decoding: the split-KV schedule of decode.hpp with K/V
// in pages of --page-tokens tokens, placed by a per-sequence block table (sim/block_table.hpp).
// Each split reads its slice of the block table, then gathers every K/V tile from the pages it
// overlaps; pages smaller than a K/V tile mean more, shorter runs through the L2.
#include "algorithms/decode.hpp"
#include "algorithms/schedules.hpp"

namespace iosim {
namespace {

class Paged final : public Algorithm {
 public:
  std::string name() const override { return "paged"; }
  std::string summary() const override {
    return "paged attention: split-KV decoding that gathers K/V pages through a block table";
  }

  Planned plan(const AttentionProblem& p, const HardwareProfile& hw,
               const Tiling& req) const override {
    return plan_split_kv(p, hw, req, true);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_paged_algorithm() {
  return std::make_unique<Paged>();
}

}  // namespace iosim
