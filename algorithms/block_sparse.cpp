// Block-sparse FlashAttention (Dao et al. 2022, section 3.3 and Proposition 4): FlashAttention-2's
// kernels, forward and backward, over the nonzero blocks of a block_q x block_kv block mask chosen
// with --pattern (sim/block_mask.hpp). Zero blocks are skipped entirely: no loads, no FLOPs. With
// no --pattern every block is computed (s = 1).
#include "algorithms/passes.hpp"
#include "algorithms/schedules.hpp"

namespace iosim {
namespace {

class BlockSparse final : public Algorithm {
 public:
  std::string name() const override { return "block-sparse"; }
  std::string summary() const override {
    return "block-sparse FlashAttention: FlashAttention-2 over the nonzero blocks of --pattern";
  }

  Planned plan(const AttentionProblem& p, const HardwareProfile& hw,
               const Tiling& req) const override {
    return plan_flash2_family(p, hw, req, true);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_block_sparse_algorithm() {
  return std::make_unique<BlockSparse>();
}

}  // namespace iosim
