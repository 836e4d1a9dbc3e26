// Template glue from a flash kernel instantiation to a RoleOp. Each
// instantiation lives in its own translation unit (flash2_d64.cu, ...) so the
// build runs in parallel.
#pragma once

#include <string>

#include "../kernels/flash1_fwd.cuh"
#include "../kernels/flash2_fwd.cuh"
#include "ops.cuh"

namespace iosim_cuda {

template <int kD, int kBQ, int kBKV, int kWarps>
std::string kernel_label(const char* name) {
  return std::string(name) + "<" + std::to_string(kD) + ", " + std::to_string(kBQ) + ", " +
         std::to_string(kBKV) + ", " + std::to_string(kWarps) + ">";
}

template <int kD, int kBQ, int kBKV, int kWarps>
void flash2_op(Instance<kD, kBQ, kBKV, kWarps>, const AttnParams& p, RoleOp* op,
               FlashTiling* tiling) {
  using Cfg = Flash2Config<kD, kBQ, kBKV, kWarps>;
  const dim3 grid((p.seq + kBQ - 1) / kBQ, p.batch, p.heads);
  const bool window = p.window > 0;
  kernel_role_op("attention",
                 window ? &flash2_fwd_kernel<kD, kBQ, kBKV, kWarps, true>
                        : &flash2_fwd_kernel<kD, kBQ, kBKV, kWarps>,
                 kernel_label<kD, kBQ, kBKV, kWarps>(window ? "flash2_fwd_kernel_window"
                                                            : "flash2_fwd_kernel"),
                 grid, Cfg::kThreads, Cfg::kSmemBytes, op, p);
  *tiling = {Cfg::kThreads, Cfg::kSmemBytes, Cfg::kStages, "cp.async"};
}

template <int kD, int kBQ, int kBKV, int kWarps>
void flash1_op(Instance<kD, kBQ, kBKV, kWarps>, const AttnParams& p, RoleOp* op,
               FlashTiling* tiling) {
  using Cfg = Flash1Config<kD, kBQ, kBKV, kWarps>;
  const dim3 grid(p.batch * p.heads);  // grid.y = grid.z = 1
  kernel_role_op("attention", &flash1_fwd_kernel<kD, kBQ, kBKV, kWarps>,
                 kernel_label<kD, kBQ, kBKV, kWarps>("flash1_fwd_kernel"), grid, Cfg::kThreads,
                 Cfg::kSmemBytes, op, p);
  *tiling = {Cfg::kThreads, Cfg::kSmemBytes, Cfg::kStages, "cp.async"};
}

// Defines bool NAME(d, block_q, block_kv, p, op, tiling): OP's RoleOp for the instance of LIST
// (flash_instances.hpp) that (d, block_q, block_kv) name, or false when none does.
#define IOSIM_FLASH_DISPATCH(NAME, OP, LIST)                                   \
  bool NAME(int d, int block_q, int block_kv, const AttnParams& p, RoleOp* op, \
            FlashTiling* tiling) {                                             \
    auto build = [&](auto instance) { OP(instance, p, op, tiling); };          \
    LIST(IOSIM_TRY_INSTANCE)                                                   \
    return false;                                                              \
  }

}  // namespace iosim_cuda
