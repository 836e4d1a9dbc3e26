// wg1_mma_fwd instantiations (wg1_instances.hpp), and the wg1 dispatch both kernels use.
#define IOSIM_WG1_NO_TMA_OP  // built for sm_90: no wgmma
#include "wg1_instances.hpp"
#include "wg1_op_templates.cuh"

namespace iosim_cuda {

namespace {

using fp16 = half;
using bf16 = __nv_bfloat16;

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
    have += std::string(have.empty() ? "(" : " (") + i.dtype + ", " + std::to_string(i.d) + ", " +
            std::to_string(i.block_q) + ", " + std::to_string(i.block_kv) + ", " +
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
