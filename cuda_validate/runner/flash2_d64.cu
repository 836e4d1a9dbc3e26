#include "flash_instances.hpp"
#include "flash_ops.cuh"

namespace iosim_cuda {

bool flash2_d64_op(int d, int block_q, int block_kv, const AttnParams& p, RoleOp* op,
                   FlashTiling* t) {
#define IOSIM_TRY(D, BQ, BKV, W) \
  IOSIM_TRY_INSTANCE(D, BQ, BKV, (flash2_op<D, BQ, BKV, W>(p, op, t)))
  IOSIM_FLASH2_D64_INSTANCES(IOSIM_TRY)
#undef IOSIM_TRY
  return false;
}

}  // namespace iosim_cuda
