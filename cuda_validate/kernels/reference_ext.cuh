// Reference and set-up kernels for the block-sparse and decoding cases: an fp32
// reference that knows grouped-query heads, block masks and latent caches (MLA: V is the
// first dv columns of K's rows) and holds no whole score row in shared memory (decode rows
// reach Nkv = 65536), and the scatter of a contiguous K/V cache into a page pool through a
// block table.
#pragma once

#include <cmath>

#include "common.cuh"

namespace iosim_cuda {

constexpr int kRefExtThreads = 256;
constexpr int kRefExtChunk = 2048;  // probabilities held in shared memory at a time

// Dynamic shared memory of reference_rows_ext_kernel for d score columns and dv output columns.
inline int reference_ext_smem_bytes(int d, int dv) {
  return (kRefExtChunk + d + (dv > kRefExtThreads ? dv : kRefExtThreads)) *
         static_cast<int>(sizeof(float));
}

struct RefExtParams {
  const half* gQ;  // (B, H, N, d)
  const half* gK;  // (B, Hkv, Nkv, d): the logical, contiguous cache
  const half* gV;  // rows of v_pitch halves, the first dv used (MLA: gV = gK)
  const int* g_rows;  // sampled query rows
  int n_rows;
  int heads;
  int kv_heads;
  int seq;
  int seq_kv;
  int d;        // Q and K columns (the score's)
  int dv;       // V and O columns; 0: d
  int v_pitch;  // halves between V rows; 0: dv
  float scale;
  bool causal;                        // bottom-right aligned
  const unsigned char* g_block_mask;  // (Tr, Tc) 0/1, or null: every block
  int block_q;
  int block_kv;
  int mask_cols;   // Tc
  float* g_ref_O;  // (B*H, n_rows, dv)
  float* g_ref_L;  // (B*H, n_rows); -inf for a row that sees no key
};

// grid (n_rows, B*H), kRefExtThreads threads, dynamic shared memory
// (kRefExtChunk + d + max(kRefExtThreads, dv)) floats (reference_ext_smem_bytes). Two passes
// over the keys (max, then exp-sum and P V in chunks); scores are recomputed rather than
// stored. dv <= kRefExtThreads: kRefExtThreads / dv thread groups split each chunk's keys;
// wider (MLA's 512): thread t sums columns t, t + kRefExtThreads, ... over all of a chunk's
// keys into shared memory.
__global__ void __launch_bounds__(kRefExtThreads) reference_rows_ext_kernel(const RefExtParams p) {
  extern __shared__ float s_ref[];
  float* sP = s_ref;              // (kRefExtChunk) probabilities of one chunk
  float* sq = sP + kRefExtChunk;  // (d)
  float* sAcc = sq + p.d;         // (max(kRefExtThreads, dv)) partial outputs
  __shared__ float s_red[kRefExtThreads / 32];

  const int r = blockIdx.x;
  const int64_t bh = blockIdx.y;
  const int64_t b = bh / p.heads;
  const int h = static_cast<int>(bh % p.heads);
  const int64_t kv_bh = b * p.kv_heads + h / (p.heads / p.kv_heads);
  const int row = p.g_rows[r];
  const int d = p.d;
  const int dv = p.dv > 0 ? p.dv : d;
  const int v_pitch = p.v_pitch > 0 ? p.v_pitch : dv;
  const half* q = p.gQ + (bh * p.seq + row) * d;
  const half* K = p.gK + kv_bh * p.seq_kv * d;
  const half* V = p.gV + kv_bh * p.seq_kv * v_pitch;
  const int last_visible = p.causal ? row + (p.seq_kv - p.seq) : p.seq_kv - 1;
  const unsigned char* mask_row =
      p.g_block_mask ? p.g_block_mask + static_cast<int64_t>(row / p.block_q) * p.mask_cols
                     : nullptr;
  const bool wide = dv > kRefExtThreads;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  auto visible = [&](int j) {
    return j <= last_visible && (mask_row == nullptr || mask_row[j / p.block_kv] != 0);
  };
  auto score = [&](int j) {
    float s = 0.f;
    for (int k = 0; k < d; ++k) s += sq[k] * __half2float(K[static_cast<int64_t>(j) * d + k]);
    return s * p.scale;
  };
  auto block_reduce = [&](float v, bool is_max) {
    for (int o = 16; o > 0; o /= 2) {
      const float other = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? fmaxf(v, other) : v + other;
    }
    __syncthreads();  // s_red may still be read from the previous reduction
    if (lane == 0) s_red[warp] = v;
    __syncthreads();
    float all = s_red[0];
    for (int w = 1; w < kRefExtThreads / 32; ++w)
      all = is_max ? fmaxf(all, s_red[w]) : all + s_red[w];
    return all;
  };

  for (int k = threadIdx.x; k < d; k += kRefExtThreads) sq[k] = __half2float(q[k]);
  if (wide)
    for (int c = threadIdx.x; c < dv; c += kRefExtThreads) sAcc[c] = 0.f;
  __syncthreads();
  float m = -INFINITY;
  for (int j = threadIdx.x; j < p.seq_kv; j += kRefExtThreads)
    if (visible(j)) m = fmaxf(m, score(j));
  m = block_reduce(m, true);

  // Thread t sums keys c0 + group, c0 + group + groups, ... for output column t % dv.
  const int groups = wide ? 1 : kRefExtThreads / dv;
  const int col = threadIdx.x % dv;
  const int group = wide ? 0 : threadIdx.x / dv;
  float sum = 0.f, acc = 0.f;
  for (int c0 = 0; c0 < p.seq_kv; c0 += kRefExtChunk) {
    const int c1 = min(p.seq_kv, c0 + kRefExtChunk);
    for (int j = c0 + threadIdx.x; j < c1; j += kRefExtThreads) {
      const float pj = (m != -INFINITY && visible(j)) ? expf(score(j) - m) : 0.f;
      sP[j - c0] = pj;
      sum += pj;
    }
    __syncthreads();
    if (wide) {
#pragma unroll 1
      for (int c = threadIdx.x; c < dv; c += kRefExtThreads) {
        float a = 0.f;
#pragma unroll 1
        for (int j = c0; j < c1; ++j)
          a += sP[j - c0] * __half2float(V[static_cast<int64_t>(j) * v_pitch + c]);
        sAcc[c] += a;
      }
    } else if (group < groups) {
      for (int j = c0 + group; j < c1; j += groups)
        acc += sP[j - c0] * __half2float(V[static_cast<int64_t>(j) * v_pitch + col]);
    }
    __syncthreads();
  }
  sum = block_reduce(sum, false);
  if (wide) {
    for (int c = threadIdx.x; c < dv; c += kRefExtThreads)
      p.g_ref_O[(bh * p.n_rows + r) * dv + c] = sum > 0.f ? sAcc[c] / sum : 0.f;
  } else {
    sAcc[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x < dv) {
      float o = 0.f;
      for (int g = 0; g < groups; ++g) o += sAcc[g * dv + threadIdx.x];
      p.g_ref_O[(bh * p.n_rows + r) * dv + threadIdx.x] = sum > 0.f ? o / sum : 0.f;
    }
  }
  if (threadIdx.x == 0 && p.g_ref_L != nullptr)
    p.g_ref_L[bh * p.n_rows + r] = sum > 0.f ? m + logf(sum) : -INFINITY;
}

// Copies a contiguous cache (B, Hkv, Nkv, d) into a page pool (pages, Hkv,
// page_tokens, d): token t of sequence b goes to page block_table[b][t / page_tokens],
// slot t % page_tokens. 16 bytes per thread.
__global__ void scatter_to_pages_kernel(const half* g_src, half* g_pool, const int* g_block_table,
                                        int batch, int kv_heads, int seq_kv, int d, int page_tokens,
                                        int pages_per_seq) {
  const int chunks = d / 8;
  const int64_t total = static_cast<int64_t>(batch) * kv_heads * seq_kv * chunks;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int chunk = static_cast<int>(i % chunks);
    const int t = static_cast<int>((i / chunks) % seq_kv);
    const int hkv = static_cast<int>((i / (static_cast<int64_t>(chunks) * seq_kv)) % kv_heads);
    const int64_t b = i / (static_cast<int64_t>(chunks) * seq_kv * kv_heads);
    const int page = g_block_table[b * pages_per_seq + t / page_tokens];
    const int64_t dst =
        ((static_cast<int64_t>(page) * kv_heads + hkv) * page_tokens + t % page_tokens) * d +
        chunk * 8;
    *reinterpret_cast<uint4*>(g_pool + dst) =
        *reinterpret_cast<const uint4*>(g_src + (i / chunks) * d + chunk * 8);
  }
}

}  // namespace iosim_cuda
