// The unfused schedule as frameworks run it: two strided-batched cuBLAS GEMMs
// (fp16 in/out, fp32 compute) with S and P materialized in global memory.
//
// cuBLAS is column-major; a row-major (rows, cols) matrix is its transpose
// there. So S (N, Nkv) row-major = S^T (Nkv, N) column-major = K Q^T, and
// O (N, d) row-major = O^T (d, N) column-major = V^T P^T.
#include "../kernels/standard_attn.cuh"
#include "ops.cuh"

namespace iosim_cuda {

std::vector<RoleOp> make_standard_ops(cublasHandle_t handle, const AttnParams& p, int d,
                                      half* gS, half* gP) {
  const int n = p.seq;
  const int n_kv = p.seq_kv;
  const int bh = p.batch * p.heads;
  std::vector<RoleOp> ops;

  RoleOp qk;
  qk.role = "gemm_qk";
  qk.kernel = "cublasGemmStridedBatchedEx(T,N, m=Nkv, n=N, k=d)";
  qk.launch = [=](cudaStream_t stream) {
    const float alpha = p.scale, beta = 0.f;
    IOSIM_CUBLAS_CHECK(cublasSetStream(handle, stream));
    IOSIM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, n_kv, n, d, &alpha,  //
        p.gK, CUDA_R_16F, d, static_cast<long long>(n_kv) * d,  // A = K^T stored, op T -> K
        p.gQ, CUDA_R_16F, d, static_cast<long long>(n) * d,     // B = Q^T
        &beta, gS, CUDA_R_16F, n_kv, static_cast<long long>(n) * n_kv, bh,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  ops.push_back(qk);

  if (p.causal) {
    RoleOp mask;
    const int64_t n_chunks = static_cast<int64_t>(bh) * n * n_kv / 8;
    const int threads = 256;
    const int64_t blocks = (n_chunks + threads - 1) / threads;
    mask.role = "mask";
    mask.kernel = "causal_mask_kernel";
    mask.grid = {static_cast<int>(blocks), 1, 1};
    mask.block = {threads, 1, 1};
    mask.launch = [=](cudaStream_t stream) {
      causal_mask_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(gS, n_chunks, n,
                                                                                 n_kv);
      IOSIM_CUDA_CHECK(cudaGetLastError());
    };
    ops.push_back(mask);
  }

  RoleOp softmax;
  const int smem = n_kv * 2;  // one fp16 row
  IOSIM_CUDA_CHECK(cudaFuncSetAttribute(&softmax_rows_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  softmax.role = "softmax";
  softmax.kernel = "softmax_rows_kernel";
  softmax.grid = {bh * n, 1, 1};
  softmax.block = {kSoftmaxThreads, 1, 1};
  softmax.smem_bytes = smem;
  softmax.launch = [=](cudaStream_t stream) {
    softmax_rows_kernel<<<bh * n, kSoftmaxThreads, smem, stream>>>(gS, gP, n_kv);
    IOSIM_CUDA_CHECK(cudaGetLastError());
  };
  ops.push_back(softmax);

  RoleOp pv;
  pv.role = "gemm_pv";
  pv.kernel = "cublasGemmStridedBatchedEx(N,N, m=d, n=N, k=Nkv)";
  pv.launch = [=](cudaStream_t stream) {
    const float alpha = 1.f, beta = 0.f;
    IOSIM_CUBLAS_CHECK(cublasSetStream(handle, stream));
    IOSIM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, d, n, n_kv, &alpha,  //
        p.gV, CUDA_R_16F, d, static_cast<long long>(n_kv) * d,  // A = V^T
        gP, CUDA_R_16F, n_kv, static_cast<long long>(n) * n_kv,  // B = P^T
        &beta, p.gO, CUDA_R_16F, d, static_cast<long long>(n) * d, bh, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
  };
  ops.push_back(pv);
  return ops;
}

}  // namespace iosim_cuda
