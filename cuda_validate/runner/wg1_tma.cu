// wg1_tma_fwd instantiations (compiled for sm_90a: wgmma; CMakeLists.txt builds this file
// apart from the sm_90 runner sources and links it in).
#include "wg1_instances.hpp"
#include "wg1_op_templates.cuh"

namespace iosim_cuda {

using fp16 = half;
using bf16 = __nv_bfloat16;

#define IOSIM_ENTRY(T, D, BQ, BKV, S) {#T, D, BQ, BKV, S, &wg1_tma_op<T, D, BQ, BKV, S>},

const std::vector<Wg1Instance>& wg1_tma_instances() {
  static const std::vector<Wg1Instance> instances = {IOSIM_WG1_TMA_INSTANCES(IOSIM_ENTRY)};
  return instances;
}

#undef IOSIM_ENTRY

}  // namespace iosim_cuda
