// The wg1 kernels as RoleOps (issue #27 item 5): wg1_tma_fwd (wg1_tma.cu, built for sm_90a)
// and wg1_mma_fwd (wg1_mma.cu). Instantiations: wg1_instances.hpp.
#pragma once

#include <string>
#include <vector>

#include "ops.cuh"

namespace iosim_cuda {

// One compiled instantiation: its template arguments and the function that makes its op.
struct Wg1Instance {
  const char* dtype;
  int d, block_q, block_kv, stages;
  void (*make)(const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers);
};

// The compiled instantiations of wg1_tma_fwd (wg1_tma.cu) and wg1_mma_fwd (wg1_mma.cu).
const std::vector<Wg1Instance>& wg1_tma_instances();
const std::vector<Wg1Instance>& wg1_mma_instances();

// The single "attention" role of a wg1 case, its tiling and the registers per thread of the
// kernel (cudaFuncGetAttributes: what ptxas allocated): runs the instance matching (dtype, d,
// block_q, block_kv, stages) (true), or fills `why` with the compiled list (false). p's
// pointers carry the dtype's bits (fp16 or bf16).
bool wg1_dispatch(const char* kernel, const std::vector<Wg1Instance>& instances,
                  const std::string& dtype, int d, int block_q, int block_kv, int stages,
                  const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers,
                  std::string* why);

// The role of kernel<<<grid, threads, smem, stream>>>(args...) (the dynamic shared memory
// limit raised to smem), labelled `label`; *registers and op->static_smem_bytes from
// cudaFuncGetAttributes (and op->local_bytes_per_thread).
template <typename... Params, typename... Args>
void wg1_attention_op(void (*kernel)(Params...), const std::string& label, dim3 grid, int threads,
                      int smem, RoleOp* op, int* registers, Args... args) {
  kernel_role_op("attention", kernel, label, grid, threads, smem, op, args...);
  cudaFuncAttributes fa{};
  IOSIM_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
  *registers = fa.numRegs;
  op->static_smem_bytes = static_cast<int>(fa.sharedSizeBytes);
  op->local_bytes_per_thread = static_cast<int>(fa.localSizeBytes);
}

// "name<dtype, d, block_q, block_kv, stages>"
inline std::string wg1_label(const char* name, const char* dtype, int d, int block_q, int block_kv,
                             int stages) {
  return std::string(name) + "<" + dtype + ", " + std::to_string(d) + ", " +
         std::to_string(block_q) + ", " + std::to_string(block_kv) + ", " + std::to_string(stages) +
         ">";
}

}  // namespace iosim_cuda
