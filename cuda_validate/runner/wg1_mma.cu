// wg1_mma_fwd instantiations (wg1_instances.hpp), and the wg1 dispatch both kernels use.
#include "../kernels/wg1_mma_fwd.cuh"
#include "wg1_instances.hpp"
#include "wg1_ops.hpp"

namespace iosim_cuda {

namespace {

using fp16 = half;
using bf16 = __nv_bfloat16;

template <typename T, int kD, int kBQ, int kBKV, int kStages>
void wg1_mma_op(const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers) {
  using Cfg = Wg1MmaConfig<kD, kBQ, kBKV, kStages>;
  const char* dtype = std::is_same_v<T, bf16> ? "bf16" : "fp16";
  wg1_attention_op(&wg1_mma_fwd_kernel<T, kD, kBQ, kBKV, kStages>,
                   wg1_label("wg1_mma_fwd_kernel", dtype, kD, kBQ, kBKV, kStages),
                   dim3((p.seq + kBQ - 1) / kBQ, p.batch, p.heads), Cfg::kThreads,
                   Cfg::kSmemBytes, op, registers, p);
  *tiling = {Cfg::kThreads, Cfg::kSmemBytes, kStages, "cp.async"};
}

}  // namespace

bool wg1_dispatch(const char* kernel, const std::vector<Wg1Instance>& instances,
                  const std::string& dtype, int d, int block_q, int block_kv, int stages,
                  const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers,
                  std::string* why) {
  std::string have;
  for (const auto& i : instances) {
    if (dtype == i.dtype && d == i.d && block_q == i.block_q && block_kv == i.block_kv &&
        stages == i.stages) {
      i.make(p, op, tiling, registers);
      return true;
    }
    have += std::string(have.empty() ? "(" : " (") + i.dtype + ", " + std::to_string(i.d) +
            ", " + std::to_string(i.block_q) + ", " + std::to_string(i.block_kv) + ", " +
            std::to_string(i.stages) + ")";
  }
  *why = std::string(kernel) + " has no instantiation for this case; compiled (dtype, d, " +
         "block_q, block_kv, stages): " + have;
  return false;
}

#define IOSIM_ENTRY(T, D, BQ, BKV, S) {#T, D, BQ, BKV, S, &wg1_mma_op<T, D, BQ, BKV, S>},

const std::vector<Wg1Instance>& wg1_mma_instances() {
  static const std::vector<Wg1Instance> instances = {IOSIM_WG1_MMA_INSTANCES(IOSIM_ENTRY)};
  return instances;
}

#undef IOSIM_ENTRY

#ifdef IOSIM_NO_WG1_TMA  // nvcc without sm_90a (CMakeLists.txt): no wg1_tma_fwd instance
const std::vector<Wg1Instance>& wg1_tma_instances() {
  static const std::vector<Wg1Instance> none;
  return none;
}
#endif

}  // namespace iosim_cuda
