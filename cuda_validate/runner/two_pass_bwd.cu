// Two-pass backward instantiations (extra_ops.hpp, kernels/two_pass_bwd.cuh): the
// preprocessing kernel (role "bwd_pre") and the main kernel (role "bwd_main").
#include "../kernels/two_pass_bwd.cuh"
#include "extra_ops.hpp"
#include "flash_ops.cuh"

// X(d, block_q, block_kv, warps). Left out for d = 128: block_kv = 128 (4 warps would hold
// 2 key m-tiles of dK and dV each, 256 fp32 registers a thread; 8 warps leave pass 2 half an
// m-tile per warp) and block_q = 128 (2 query m-tiles of dQ a warp: ptxas spills 192 bytes
// at 255 registers, nvcc 13.0).
#define IOSIM_TWO_PASS_BWD_INSTANCES(X) \
  X(64, 64, 64, 4) X(64, 64, 128, 4) X(64, 128, 64, 4) X(128, 64, 64, 4)

namespace iosim_cuda {
namespace {

template <int kD, int kBQ, int kBKV, int kWarps>
void two_pass_bwd_ops(Instance<kD, kBQ, kBKV, kWarps>, const BwdParams& p, std::vector<RoleOp>* ops,
                      BwdTiling* tiling) {
  using Cfg = TwoPassBwdConfig<kD, kBQ, kBKV, kWarps>;
  auto* pre = &bwd_pre_kernel<kD>;
  const long long pre_threads = static_cast<long long>(p.batch) * p.heads * p.seq * (kD / 8);
  const dim3 pre_grid(static_cast<unsigned>((pre_threads + kBwdPreThreads - 1) / kBwdPreThreads));
  ops->push_back(RoleOp{"bwd_pre",
                        "bwd_pre_kernel<" + std::to_string(kD) + ">",
                        {static_cast<int>(pre_grid.x), 1, 1},
                        {kBwdPreThreads, 1, 1},
                        0,
                        [pre, pre_grid, p](cudaStream_t stream) {
                          pre<<<pre_grid, kBwdPreThreads, 0, stream>>>(p);
                          IOSIM_CUDA_CHECK(cudaGetLastError());
                        }});

  auto* kernel = &two_pass_bwd_kernel<kD, kBQ, kBKV, kWarps>;
  const int tr = (p.seq + kBQ - 1) / kBQ, tc = (p.seq_kv + kBKV - 1) / kBKV;
  const dim3 grid(static_cast<unsigned>(tr > tc ? tr : tc), p.batch, p.heads);
  RoleOp op;
  kernel_role_op("bwd_main", kernel, kernel_label<kD, kBQ, kBKV, kWarps>("two_pass_bwd_kernel"),
                 grid, Cfg::kThreads, Cfg::kSmemBytes, &op, p);
  cudaFuncAttributes attr{};
  IOSIM_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  ops->push_back(op);
  tiling->threads = Cfg::kThreads;
  tiling->smem_bytes_per_cta = Cfg::kSmemBytes;
  tiling->pipeline_stages = Cfg::kStages;
  tiling->registers_per_thread = attr.numRegs;
  tiling->score_chunk = Cfg::kChunk;
}

}  // namespace

std::vector<std::array<int, 4>> two_pass_bwd_instances() {
  return {IOSIM_TWO_PASS_BWD_INSTANCES(IOSIM_INSTANCE_ROW)};
}

bool make_two_pass_bwd_ops(int d, int block_q, int block_kv, const BwdParams& p,
                           std::vector<RoleOp>* ops, BwdTiling* tiling, std::string* why) {
  auto build = [&](auto instance) { two_pass_bwd_ops(instance, p, ops, tiling); };
  IOSIM_TWO_PASS_BWD_INSTANCES(IOSIM_TRY_INSTANCE)
  *why = no_instance("two-pass backward", d, block_q, block_kv, two_pass_bwd_instances());
  return false;
}

}  // namespace iosim_cuda
