// Cases whose inputs are more than Q, K, V of one shape: block-sparse (a block list),
// flash-decoding and paged (grouped kv heads, splits, a page pool and block table).
// Each owns its device tensors and brings its own check, since its reference differs
// (block mask, kv-head mapping). The runner's main loop measures their roles exactly
// as it measures flash2's (warm-up, time / ncu / cupti modes).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../kernels/block_sparse_fwd.cuh"
#include "../kernels/decode_fwd.cuh"
#include "../kernels/mla_decode_fwd.cuh"
#include "../kernels/two_pass_bwd.cuh"
#include "ops.cuh"
#include "suite.hpp"

namespace iosim_cuda {

struct ExtraCase {
  std::vector<RoleOp> ops;
  std::string tiling_json;
  // Poisons O and L with NaN, runs the ops once more, compares sampled rows with the fp32
  // reference; returns the case's "check" object and sets *passed.
  std::function<std::string(cudaStream_t, bool* passed)> check;
  std::shared_ptr<void> storage;  // the device tensors; freed with the case
  std::string kernel_json;        // iosim's kernel description (two-pass backward); empty: none
};

// The on-chip plan of the two-pass backward's main kernel.
struct BwdTiling {
  int threads = 0;
  int smem_bytes_per_cta = 0;
  int pipeline_stages = 0;
  int registers_per_thread = 0;  // cudaFuncGetAttributes: what ptxas -v prints
  int score_chunk = 0;           // score columns held in registers at a time (both passes)
};

// The fp32 reference of sampled query rows (dense heads, no block mask) that holds no whole score
// row in shared memory (reference_ext.cuh): for flash1/flash2 cases whose Nkv scores do not fit
// the shared memory reference_rows_kernel keeps them in (Nkv past ~56k: issue #47's edge suite).
void launch_reference_rows_ext(const half* gQ, const half* gK, const half* gV, const int* g_rows,
                               int n_rows, int batch_heads, int heads, int seq, int seq_kv, int d,
                               float scale, bool causal, float* ref_O, float* ref_L,
                               cudaStream_t stream);

// block-sparse, flash-decoding or paged, or a backward pass (pass=bwd).
bool is_extra_case(const Case& c);

// Allocates and fills the case's tensors (random inputs from `seed`), builds the block list
// or page pool, and its roles. Throws std::runtime_error (or CudaError) with the reason when
// the case cannot run (no instantiation, too little device memory, empty splits).
ExtraCase make_extra_case(const Case& c, uint32_t seed, cudaStream_t stream);

// The roles of a block-sparse case (one "attention" kernel), or false with `why` filled when
// no instantiation matches (d, block_q, block_kv); block_sparse.cu.
bool make_block_sparse_op(int d, int block_q, int block_kv, const BlockSparseParams& p, RoleOp* op,
                          FlashTiling* tiling, std::string* why);

// The split kernel of flash-decoding / paged (role "split", or "attention" when splits == 1
// and it writes O itself) and the reduce kernel (role "reduce"); decode.cu. False with `why`
// when no instantiation matches (d, block_kv).
bool make_decode_ops(int d, int block_kv, bool paged, const DecodeParams& p,
                     std::vector<RoleOp>* ops, FlashTiling* tiling, std::string* why);

// The reduce role of a split decode (splits > 1): decode_reduce_kernel<kD> over the partial
// outputs of p (kD: the output columns, d, or the latent width of an MLA case).
template <int kD>
RoleOp decode_reduce_role_op(const DecodeParams& p) {
  constexpr int kRowsPerCta = decode_reduce_rows_per_cta(kD);
  const long long rows = static_cast<long long>(p.batch) * p.heads * p.seq;
  const dim3 rgrid(static_cast<unsigned>((rows + kRowsPerCta - 1) / kRowsPerCta));
  RoleOp reduce;
  reduce.role = "reduce";
  reduce.kernel = "decode_reduce_kernel<" + std::to_string(kD) + ">";
  reduce.grid = {static_cast<int>(rgrid.x), 1, 1};
  reduce.block = {kReduceThreads, 1, 1};
  reduce.smem_bytes = 0;
  reduce.launch = [rgrid, p](cudaStream_t stream) {
    decode_reduce_kernel<kD><<<rgrid, kReduceThreads, 0, stream>>>(p);
    IOSIM_CUDA_CHECK(cudaGetLastError());
  };
  return reduce;
}

// Latent-KV (MLA) decoding, mla_decode_fwd.cuh (mla_decode.cu): the split kernel (role "split",
// or "attention" when splits == 1 and it writes O itself) over the (B, Nkv, d) cache or its page
// pool, and decode_reduce_kernel<dv> (role "reduce"). p.kv_heads is 1. False with `why` when no
// instantiation matches (d, dv, block_kv) or the launch's shared memory is too large.
bool make_mla_decode_ops(int d, int dv, int block_kv, bool paged, const DecodeParams& p,
                         std::vector<RoleOp>* ops, FlashTiling* tiling, std::string* why);
std::vector<std::array<int, 3>> mla_decode_instances();  // (d, dv, block_kv)

// The instantiated tuples, for errors and the README: block-sparse (d, block_q, block_kv,
// warps); decode (d, block_kv, warps).
std::vector<std::array<int, 4>> block_sparse_instances();
std::vector<std::array<int, 3>> decode_instances();

// The two-pass backward's roles "bwd_pre" (D = rowsum(dO * O)) and "bwd_main" (dK, dV, then
// dQ); two_pass_bwd.cu. False with `why` when no instantiation matches (d, block_q, block_kv).
bool make_two_pass_bwd_ops(int d, int block_q, int block_kv, const BwdParams& p,
                           std::vector<RoleOp>* ops, BwdTiling* tiling, std::string* why);
std::vector<std::array<int, 4>> two_pass_bwd_instances();

}  // namespace iosim_cuda
