// One configuration of the tile sweep: its family and tile parameters, and the function that
// makes its launch for a problem (runner/ops.cuh's RoleOp).
#pragma once

#include <vector>

#include "../runner/ops.cuh"

namespace iosim_cuda {

struct SweepKernel {
  const char* family;  // "wg1_tma" or "wg1_mma"
  int d, block_q, block_kv, stages, warps;
  void (*make)(const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers);
};

// Each part's list (sweep_part.cu, compiled once per part); tile_sweep.cu gathers them.
#define IOSIM_SWEEP_PARTS(X)                                                                \
  X(sweep_tma_d64_q64)                                                                      \
  X(sweep_tma_d64_q128) X(sweep_tma_d128_q64) X(sweep_tma_d128_q128) X(sweep_mma_d64_q64w4) \
      X(sweep_mma_d64_q128w4) X(sweep_mma_d64_q128w8) X(sweep_mma_d128_q64w4)               \
          X(sweep_mma_d128_q128w4) X(sweep_mma_d128_q128w8)
#define IOSIM_SWEEP_DECLARE(fn) void fn(std::vector<SweepKernel>& out);
IOSIM_SWEEP_PARTS(IOSIM_SWEEP_DECLARE)
#undef IOSIM_SWEEP_DECLARE

}  // namespace iosim_cuda
