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
void wg1_tma_op(const char* dtype, const AttnParams& p, RoleOp* op, FlashTiling* tiling,
                int* registers) {
  using Cfg = Wg1TmaConfig<kD, kBQ, kBKV, kStages>;
  auto* kernel = &wg1_tma_fwd_kernel<T, kD, kBQ, kBKV, kStages>;
  IOSIM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        Cfg::kSmemBytes));
  cudaFuncAttributes fa{};
  IOSIM_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
  *registers = fa.numRegs;
  constexpr bool kBf16 = std::is_same_v<T, bf16>;
  const std::size_t bh = static_cast<std::size_t>(p.batch) * p.heads;
  const CUtensorMap mq = make_map(kBf16, p.gQ, bh * p.seq, kD, kBQ);
  const CUtensorMap mk = make_map(kBf16, p.gK, bh * p.seq_kv, kD, kBKV);
  const CUtensorMap mv = make_map(kBf16, p.gV, bh * p.seq_kv, kD, kBKV);
  const dim3 grid((p.seq + kBQ - 1) / kBQ, p.batch, p.heads);
  op->role = "attention";
  op->kernel = std::string("wg1_tma_fwd_kernel<") + dtype + ", " + std::to_string(kD) + ", " +
               std::to_string(kBQ) + ", " + std::to_string(kBKV) + ", " + std::to_string(kStages) +
               ">";
  op->grid = {static_cast<int>(grid.x), static_cast<int>(grid.y), static_cast<int>(grid.z)};
  op->block = {Cfg::kThreads, 1, 1};
  op->smem_bytes = Cfg::kSmemBytes;
  op->launch = [kernel, grid, mq, mk, mv, p](cudaStream_t stream) {
    kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(mq, mk, mv, p);
    IOSIM_CUDA_CHECK(cudaGetLastError());
  };
  *tiling = {Cfg::kThreads, Cfg::kSmemBytes, kStages, "tma"};
}

}  // namespace

bool make_wg1_tma_op(const std::string& dtype, int d, int block_q, int block_kv, int stages,
                     const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers,
                     std::string* why) {
  std::vector<std::string> have;
#define IOSIM_TRY(T, D, BQ, BKV, S)                                                      \
  if (dtype == #T && d == D && block_q == BQ && block_kv == BKV && stages == S) {        \
    wg1_tma_op<T, D, BQ, BKV, S>(#T, p, op, tiling, registers);                          \
    return true;                                                                         \
  }                                                                                      \
  have.push_back(#T ", " #D ", " #BQ ", " #BKV ", " #S);
  IOSIM_WG1_TMA_INSTANCES(IOSIM_TRY)
#undef IOSIM_TRY
  *why = "wg1_tma_fwd has no instantiation for this case; compiled (dtype, d, block_q, "
         "block_kv, stages): " + wg1_instance_list(have);
  return false;
}

}  // namespace iosim_cuda
