// The wg1 kernels as RoleOps (issue #27 item 5): wg1_tma_fwd (wg1_tma.cu, built for sm_90a)
// and wg1_mma_fwd (wg1_mma.cu). Instantiations: wg1_instances.hpp.
#pragma once

#include <string>
#include <vector>

#include "ops.cuh"

namespace iosim_cuda {

// The single "attention" role of a wg1 case, its tiling and the registers per thread of the
// kernel (cudaFuncGetAttributes: what ptxas allocated), or false with `why` filled when no
// instantiation matches (dtype, d, block_q, block_kv, stages). p's pointers carry T's bits
// (fp16 or bf16).
bool make_wg1_tma_op(const std::string& dtype, int d, int block_q, int block_kv, int stages,
                     const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers,
                     std::string* why);
bool make_wg1_mma_op(const std::string& dtype, int d, int block_q, int block_kv, int stages,
                     const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers,
                     std::string* why);

// "(dtype, d, block_q, block_kv, stages) ..." of a list, for errors.
std::string wg1_instance_list(const std::vector<std::string>& tuples);

}  // namespace iosim_cuda
