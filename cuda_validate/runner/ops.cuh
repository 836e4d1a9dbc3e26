// What the runner launches for a case: a list of roles (gemm_qk, mask,
// softmax, gemm_pv for standard; one "attention" role for flash1/flash2),
// each a callable that enqueues its kernel(s) on a stream.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../kernels/common.cuh"

namespace iosim_cuda {

// A CUDA or cuBLAS call failed; the message names the call, file and line.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The CudaError of a failed call: its text, the file and line, then the library's message.
#define IOSIM_CALL_ERROR(call_text, message)                                        \
  ::iosim_cuda::CudaError(std::string(call_text) + " failed at " + __FILE__ + ":" + \
                          std::to_string(__LINE__) + ": " + (message))

#define IOSIM_CUDA_CHECK(call)                                                        \
  do {                                                                                \
    const cudaError_t err_ = (call);                                                  \
    if (err_ != cudaSuccess) throw IOSIM_CALL_ERROR(#call, cudaGetErrorString(err_)); \
  } while (0)

#define IOSIM_CUBLAS_CHECK(call)                                                                 \
  do {                                                                                           \
    const cublasStatus_t st_ = (call);                                                           \
    if (st_ != CUBLAS_STATUS_SUCCESS) throw IOSIM_CALL_ERROR(#call, cublasGetStatusString(st_)); \
  } while (0)

struct RoleOp {
  std::string role;    // gemm_qk | mask | softmax | gemm_pv | attention
  std::string kernel;  // our kernel (template arguments spelled out) or the cuBLAS call
  std::array<int, 3> grid{0, 0, 0};  // zeros where cuBLAS chooses
  std::array<int, 3> block{0, 0, 0};
  int smem_bytes = 0;  // dynamic shared memory per CTA
  std::function<void(cudaStream_t)> launch;
  // Static shared memory per CTA (cudaFuncGetAttributes; 0 where not asked): a kernel description
  // gives the two together, what the SM allocates (ncu's launch__shared_mem_per_block). Last, so
  // that the roles built field by field in order need not name it.
  int static_smem_bytes = 0;
  // Local memory per thread (cudaFuncGetAttributes' localSizeBytes: register spills and local
  // arrays; 0 where not asked). The runner's builds refuse spills; the tile sweep records them.
  int local_bytes_per_thread = 0;
};

// Fills op as the role `role` of kernel<<<grid, threads, smem, stream>>>(args...), labelled
// `label`, after raising the kernel's dynamic shared memory limit to smem.
template <typename... Params, typename... Args>
void kernel_role_op(const char* role, void (*kernel)(Params...), const std::string& label,
                    dim3 grid, int threads, int smem, RoleOp* op, Args... args) {
  IOSIM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  op->role = role;
  op->kernel = label;
  op->grid = {static_cast<int>(grid.x), static_cast<int>(grid.y), static_cast<int>(grid.z)};
  op->block = {threads, 1, 1};
  op->smem_bytes = smem;
  op->launch = [=](cudaStream_t stream) {
    kernel<<<grid, threads, smem, stream>>>(args...);
    IOSIM_CUDA_CHECK(cudaGetLastError());
  };
}

// The on-chip plan of a flash kernel, as recorded in the measured file.
struct FlashTiling {
  int threads = 0;
  int smem_bytes_per_cta = 0;
  int pipeline_stages = 0;
  std::string copy;  // "cp.async"
};

// Makes the single "attention" role of a flash2 / flash1 case, or returns false
// with `why` filled when no instantiation matches (d, block_q, block_kv).
bool make_flash2_op(int d, int block_q, int block_kv, const AttnParams& p, RoleOp* op,
                    FlashTiling* tiling, std::string* why);
bool make_flash1_op(int d, int block_q, int block_kv, const AttnParams& p, RoleOp* op,
                    FlashTiling* tiling, std::string* why);

// The instantiated (d, block_q, block_kv, warps) tuples, for the README and errors.
std::vector<std::array<int, 4>> flash2_instances();
std::vector<std::array<int, 4>> flash1_instances();

// "<schedule> has no instantiation for d=.. block_q=.. block_kv=..; compiled (d, block_q,
// block_kv): (..) ..": the `why` of a (d, block_q, block_kv) that no instance in `have` matches.
std::string no_instance(const char* schedule, int d, int block_q, int block_kv,
                        const std::vector<std::array<int, 4>>& have);

// One compiled instance of a list X(d, block_q, block_kv, warps), as a type.
template <int D, int BQ, int BKV, int W>
struct Instance {
  static constexpr int d = D, block_q = BQ, block_kv = BKV, warps = W;
};

// X-macro helpers over such a list: IOSIM_INSTANCE_ROW makes an initializer list of the instances
// ({IOSIM_..._INSTANCES(IOSIM_INSTANCE_ROW)}); IOSIM_TRY_INSTANCE, in a function of int d,
// block_q, block_kv that returns bool, calls its lambda build(Instance<..>{}) (which builds the
// instance's ops) and returns true for the instance they name.
#define IOSIM_INSTANCE_ROW(D, BQ, BKV, W) {D, BQ, BKV, W},
#define IOSIM_TRY_INSTANCE(D, BQ, BKV, W)           \
  if (d == D && block_q == BQ && block_kv == BKV) { \
    build(Instance<D, BQ, BKV, W>{});               \
    return true;                                    \
  }

// The unfused schedule's roles: S = scale Q K^T (cuBLAS), [mask], softmax, O = P V (cuBLAS).
// gS and gP are (B, H, N, Nkv) fp16 buffers owned by the caller.
std::vector<RoleOp> make_standard_ops(cublasHandle_t handle, const AttnParams& p, int d, half* gS,
                                      half* gP);

}  // namespace iosim_cuda
