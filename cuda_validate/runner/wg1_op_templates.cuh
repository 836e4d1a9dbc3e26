// The wg1 kernels' RoleOps as templates, one per kernel: the runner's instantiation lists
// (wg1_tma.cu, wg1_mma.cu: wg1_instances.hpp) and the tile sweep's (tile_sweep/) make their ops
// with these. wg1_tma_op needs the sm_90a target (wgmma); define IOSIM_WG1_NO_TMA_OP in a
// translation unit built for plain sm_90.
#pragma once

#include <cuda_bf16.h>

#include <type_traits>

#include "../kernels/wg1_mma_fwd.cuh"
#include "wg1_ops.hpp"
#ifndef IOSIM_WG1_NO_TMA_OP
#include "../kernels/wg1_tma_fwd.cuh"
#endif

namespace iosim_cuda {

#ifndef IOSIM_WG1_NO_TMA_OP
// (rows, d) 16-bit tensor, boxes of 64 columns x box_rows rows (the kernel's tile image).
inline CUtensorMap wg1_tma_map(bool is_bf16, const void* ptr, std::size_t rows, int d,
                               int box_rows) {
  CUtensorMap m;
  const CUresult r = iosim_hopper::make_tensor_map_2d(
      &m, is_bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, ptr,
      rows, d, 64, box_rows);
  if (r != CUDA_SUCCESS)
    throw CudaError("cuTensorMapEncodeTiled failed: CUresult " + std::to_string(r));
  return m;
}

template <typename T, int kD, int kBQ, int kBKV, int kStages>
void wg1_tma_op(const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers) {
  using Cfg = Wg1TmaConfig<kD, kBQ, kBKV, kStages>;
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  const std::size_t bh = static_cast<std::size_t>(p.batch) * p.heads;
  const CUtensorMap mq = wg1_tma_map(kBf16, p.gQ, bh * p.seq, kD, kBQ);
  const CUtensorMap mk = wg1_tma_map(kBf16, p.gK, bh * p.seq_kv, kD, kBKV);
  const CUtensorMap mv = wg1_tma_map(kBf16, p.gV, bh * p.seq_kv, kD, kBKV);
  wg1_attention_op(&wg1_tma_fwd_kernel<T, kD, kBQ, kBKV, kStages>,
                   wg1_label("wg1_tma_fwd_kernel", kBf16 ? "bf16" : "fp16", kD, kBQ, kBKV, kStages),
                   dim3((p.seq + kBQ - 1) / kBQ, p.batch, p.heads), Cfg::kThreads, Cfg::kSmemBytes,
                   op, registers, mq, mk, mv, p);
  *tiling = {Cfg::kThreads, Cfg::kSmemBytes, kStages, "tma"};
}
#endif

template <typename T, int kD, int kBQ, int kBKV, int kStages, int kWarps = 4>
void wg1_mma_op(const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers) {
  using Cfg = Wg1MmaConfig<kD, kBQ, kBKV, kStages, kWarps>;
  const char* dtype = std::is_same_v<T, __nv_bfloat16> ? "bf16" : "fp16";
  std::string label = wg1_label("wg1_mma_fwd_kernel", dtype, kD, kBQ, kBKV, kStages);
  if (kWarps != 4) label.insert(label.size() - 1, ", " + std::to_string(kWarps));
  wg1_attention_op(&wg1_mma_fwd_kernel<T, kD, kBQ, kBKV, kStages, kWarps>, label,
                   dim3((p.seq + kBQ - 1) / kBQ, p.batch, p.heads), Cfg::kThreads, Cfg::kSmemBytes,
                   op, registers, p);
  *tiling = {Cfg::kThreads, Cfg::kSmemBytes, kStages, "cp.async"};
}

}  // namespace iosim_cuda
