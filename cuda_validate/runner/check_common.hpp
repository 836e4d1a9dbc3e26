// Host-side pieces of the correctness checks that runner/main.cu (flash and standard cases) and
// extra_cases.cu (block-sparse, decode, two-pass backward) share.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "json.hpp"
#include "ops.cuh"

namespace iosim_cuda {

// Throws unless need_bytes, and 256 MiB to spare, fit the device's free memory.
inline void require_device_memory(std::size_t need_bytes) {
  std::size_t free_bytes = 0, total_bytes = 0;
  IOSIM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (need_bytes + (256ull << 20) > free_bytes)
    throw std::runtime_error("needs " + std::to_string(need_bytes) + " bytes of device memory, " +
                             std::to_string(free_bytes) + " free");
}

// The leading fields of a check's JSON, in the order the runner has always written them:
// output errors and tolerances, the L error (`lse`: encoded, e.g. "null"), the count of
// non-finite outputs and the query rows checked per head.
inline JsonObject& add_check_errors(JsonObject& o, double max_err, double max_ref, double rel_l2,
                                    double tol_abs, double tol_rel, const std::string& lse,
                                    unsigned long long nonfinite, int n_rows) {
  return o.add("max_abs_error", json_num(max_err))
      .add("max_abs_reference", json_num(max_ref))
      .add("rel_l2_error", json_num(rel_l2))
      .add("tolerance_max_abs", json_num(tol_abs))
      .add("tolerance_rel_l2", json_num(tol_rel))
      .add("lse_max_abs_error", lse)
      .add("nonfinite_outputs", json_int(static_cast<long long>(nonfinite)))
      .add("rows_checked_per_head", json_int(n_rows));
}

}  // namespace iosim_cuda
