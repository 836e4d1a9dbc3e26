// One part of the tile sweep's configurations: built once per part (CMakeLists.txt) with
// IOSIM_SWEEP_FN (the part's function, sweep_kernel.hpp), IOSIM_SWEEP_LIST (its list,
// sweep_instances.hpp) and IOSIM_SWEEP_TMA (1: wg1_tma_fwd, X(d, bq, bkv, stages), sm_90a;
// 0: wg1_mma_fwd, X(d, bq, bkv, stages, warps)).
#if !IOSIM_SWEEP_TMA
#define IOSIM_WG1_NO_TMA_OP
#endif
#include "../runner/wg1_op_templates.cuh"
#include "sweep_instances.hpp"
#include "sweep_kernel.hpp"

namespace iosim_cuda {

void IOSIM_SWEEP_FN(std::vector<SweepKernel>& out) {
#if IOSIM_SWEEP_TMA
#define IOSIM_ENTRY(D, BQ, BKV, S) \
  out.push_back({"wg1_tma", D, BQ, BKV, S, 4, &wg1_tma_op<half, D, BQ, BKV, S>});
#else
#define IOSIM_ENTRY(D, BQ, BKV, S, W) \
  out.push_back({"wg1_mma", D, BQ, BKV, S, W, &wg1_mma_op<half, D, BQ, BKV, S, W>});
#endif
  IOSIM_SWEEP_LIST(IOSIM_ENTRY)
#undef IOSIM_ENTRY
}

}  // namespace iosim_cuda
