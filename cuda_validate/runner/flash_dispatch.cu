// Picks the compiled flash instantiation for a case (see flash_instances.hpp).
#include <sstream>

#include "flash_instances.hpp"
#include "ops.cuh"

namespace iosim_cuda {

bool flash2_d64_op(int d, int block_q, int block_kv, const AttnParams& p, RoleOp* op,
                   FlashTiling* t);
bool flash2_d128_op(int d, int block_q, int block_kv, const AttnParams& p, RoleOp* op,
                    FlashTiling* t);
bool flash1_any_op(int d, int block_q, int block_kv, const AttnParams& p, RoleOp* op,
                   FlashTiling* t);

std::vector<std::array<int, 4>> flash2_instances() {
  return {IOSIM_FLASH2_D64_INSTANCES(IOSIM_INSTANCE_ROW)
              IOSIM_FLASH2_D128_INSTANCES(IOSIM_INSTANCE_ROW)};
}

std::vector<std::array<int, 4>> flash1_instances() {
  return {IOSIM_FLASH1_INSTANCES(IOSIM_INSTANCE_ROW)};
}

std::string no_instance(const char* schedule, int d, int block_q, int block_kv,
                        const std::vector<std::array<int, 4>>& have) {
  std::ostringstream msg;
  msg << schedule << " has no instantiation for d=" << d << " block_q=" << block_q
      << " block_kv=" << block_kv << "; compiled (d, block_q, block_kv):";
  for (const auto& i : have) msg << " (" << i[0] << "," << i[1] << "," << i[2] << ")";
  return msg.str();
}

bool make_flash2_op(int d, int block_q, int block_kv, const AttnParams& p, RoleOp* op,
                    FlashTiling* tiling, std::string* why) {
  const bool found = flash2_d64_op(d, block_q, block_kv, p, op, tiling) ||
                     flash2_d128_op(d, block_q, block_kv, p, op, tiling);
  if (!found) *why = no_instance("flash2", d, block_q, block_kv, flash2_instances());
  return found;
}

bool make_flash1_op(int d, int block_q, int block_kv, const AttnParams& p, RoleOp* op,
                    FlashTiling* tiling, std::string* why) {
  const bool found = flash1_any_op(d, block_q, block_kv, p, op, tiling);
  if (!found) *why = no_instance("flash1", d, block_q, block_kv, flash1_instances());
  return found;
}

}  // namespace iosim_cuda
