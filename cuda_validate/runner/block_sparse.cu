// Block-sparse instantiations (extra_ops.hpp): flash2's configurations, so a block-sparse
// case and a flash2 case of the same tiling differ only in the blocks they visit.
#include "extra_ops.hpp"
#include "flash_ops.cuh"

// X(d, block_q, block_kv, warps)
#define IOSIM_BLOCK_SPARSE_INSTANCES(X) X(64, 128, 64, 4) X(64, 128, 128, 8) X(128, 128, 64, 8)

namespace iosim_cuda {
namespace {

template <int kD, int kBQ, int kBKV, int kWarps>
void block_sparse_op(Instance<kD, kBQ, kBKV, kWarps>, const BlockSparseParams& p, RoleOp* op,
                     FlashTiling* tiling) {
  using Cfg = Flash2Config<kD, kBQ, kBKV, kWarps>;
  const dim3 grid((p.attn.seq + kBQ - 1) / kBQ, p.attn.batch, p.attn.heads);
  kernel_role_op("attention", &block_sparse_fwd_kernel<kD, kBQ, kBKV, kWarps>,
                 kernel_label<kD, kBQ, kBKV, kWarps>("block_sparse_fwd_kernel"), grid,
                 Cfg::kThreads, Cfg::kSmemBytes, op, p);
  *tiling = {Cfg::kThreads, Cfg::kSmemBytes, Cfg::kStages, "cp.async"};
}

}  // namespace

std::vector<std::array<int, 4>> block_sparse_instances() {
  return {IOSIM_BLOCK_SPARSE_INSTANCES(IOSIM_INSTANCE_ROW)};
}

bool make_block_sparse_op(int d, int block_q, int block_kv, const BlockSparseParams& p, RoleOp* op,
                          FlashTiling* tiling, std::string* why) {
  auto build = [&](auto instance) { block_sparse_op(instance, p, op, tiling); };
  IOSIM_BLOCK_SPARSE_INSTANCES(IOSIM_TRY_INSTANCE)
  *why = no_instance("block-sparse", d, block_q, block_kv, block_sparse_instances());
  return false;
}

}  // namespace iosim_cuda
