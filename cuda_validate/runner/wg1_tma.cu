// wg1_tma_fwd instantiations (compiled for sm_90a: wgmma; CMakeLists.txt builds this file
// apart from the sm_90 runner sources and links it in).
#include "../kernels/wg1_tma_fwd.cuh"
#include "wg1_instances.hpp"
#include "wg1_ops.hpp"

namespace iosim_cuda {

namespace {

using fp16 = half;
using bf16 = __nv_bfloat16;

// (rows, d) 16-bit tensor, boxes of 64 columns x box_rows rows (the kernel's tile image).
CUtensorMap make_map(bool is_bf16, const void* ptr, std::size_t rows, int d, int box_rows) {
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
  constexpr bool kBf16 = std::is_same_v<T, bf16>;
  const std::size_t bh = static_cast<std::size_t>(p.batch) * p.heads;
  const CUtensorMap mq = make_map(kBf16, p.gQ, bh * p.seq, kD, kBQ);
  const CUtensorMap mk = make_map(kBf16, p.gK, bh * p.seq_kv, kD, kBKV);
  const CUtensorMap mv = make_map(kBf16, p.gV, bh * p.seq_kv, kD, kBKV);
  wg1_attention_op(&wg1_tma_fwd_kernel<T, kD, kBQ, kBKV, kStages>,
                   wg1_label("wg1_tma_fwd_kernel", kBf16 ? "bf16" : "fp16", kD, kBQ, kBKV,
                             kStages),
                   dim3((p.seq + kBQ - 1) / kBQ, p.batch, p.heads), Cfg::kThreads,
                   Cfg::kSmemBytes, op, registers, mq, mk, mv, p);
  *tiling = {Cfg::kThreads, Cfg::kSmemBytes, kStages, "tma"};
}

}  // namespace

#define IOSIM_ENTRY(T, D, BQ, BKV, S) {#T, D, BQ, BKV, S, &wg1_tma_op<T, D, BQ, BKV, S>},

const std::vector<Wg1Instance>& wg1_tma_instances() {
  static const std::vector<Wg1Instance> instances = {IOSIM_WG1_TMA_INSTANCES(IOSIM_ENTRY)};
  return instances;
}

#undef IOSIM_ENTRY

}  // namespace iosim_cuda
