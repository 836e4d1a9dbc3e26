// wg1_mma_fwd instantiations (wg1_instances.hpp).
#include "../kernels/wg1_mma_fwd.cuh"
#include "wg1_instances.hpp"
#include "wg1_ops.hpp"

namespace iosim_cuda {

namespace {

using fp16 = half;
using bf16 = __nv_bfloat16;

template <typename T, int kD, int kBQ, int kBKV, int kStages>
void wg1_mma_op(const char* dtype, const AttnParams& p, RoleOp* op, FlashTiling* tiling,
                int* registers) {
  using Cfg = Wg1MmaConfig<kD, kBQ, kBKV, kStages>;
  auto* kernel = &wg1_mma_fwd_kernel<T, kD, kBQ, kBKV, kStages>;
  IOSIM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        Cfg::kSmemBytes));
  cudaFuncAttributes fa{};
  IOSIM_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
  *registers = fa.numRegs;
  const dim3 grid((p.seq + kBQ - 1) / kBQ, p.batch, p.heads);
  op->role = "attention";
  op->kernel = std::string("wg1_mma_fwd_kernel<") + dtype + ", " + std::to_string(kD) + ", " +
               std::to_string(kBQ) + ", " + std::to_string(kBKV) + ", " + std::to_string(kStages) +
               ">";
  op->grid = {static_cast<int>(grid.x), static_cast<int>(grid.y), static_cast<int>(grid.z)};
  op->block = {Cfg::kThreads, 1, 1};
  op->smem_bytes = Cfg::kSmemBytes;
  op->launch = [kernel, grid, p](cudaStream_t stream) {
    kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p);
    IOSIM_CUDA_CHECK(cudaGetLastError());
  };
  *tiling = {Cfg::kThreads, Cfg::kSmemBytes, kStages, "cp.async"};
}

}  // namespace

std::string wg1_instance_list(const std::vector<std::string>& tuples) {
  std::string s;
  for (const auto& t : tuples) s += (s.empty() ? "(" : " (") + t + ")";
  return s;
}

bool make_wg1_mma_op(const std::string& dtype, int d, int block_q, int block_kv, int stages,
                     const AttnParams& p, RoleOp* op, FlashTiling* tiling, int* registers,
                     std::string* why) {
  std::vector<std::string> have;
#define IOSIM_TRY(T, D, BQ, BKV, S)                                                      \
  if (dtype == #T && d == D && block_q == BQ && block_kv == BKV && stages == S) {        \
    wg1_mma_op<T, D, BQ, BKV, S>(#T, p, op, tiling, registers);                          \
    return true;                                                                         \
  }                                                                                      \
  have.push_back(#T ", " #D ", " #BQ ", " #BKV ", " #S);
  IOSIM_WG1_MMA_INSTANCES(IOSIM_TRY)
#undef IOSIM_TRY
  *why = "wg1_mma_fwd has no instantiation for this case; compiled (dtype, d, block_q, "
         "block_kv, stages): " + wg1_instance_list(have);
  return false;
}

}  // namespace iosim_cuda
