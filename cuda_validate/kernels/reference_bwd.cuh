// fp32 reference of the attention backward on sampled rows (the two-pass backward's check,
// runner/extra_cases.cu). Both kernels read the forward's O and L as the backward's inputs
// and compute D = rowsum(dO * O) themselves.
//   reference_bwd_q_kernel:  dQ of sampled query rows (every key; its own softmax, so its L
//                            is compared with the forward's too).
//   reference_bwd_kv_kernel: dK, dV of sampled key rows (every query, with the forward's L).
// Each also copies the backward's fp16 output of its row, so no gather kernel is needed.
#pragma once

#include <cmath>

#include "two_pass_bwd.cuh"

namespace iosim_cuda {

constexpr int kRefBwdThreads = 256;

struct RefBwdParams {
  BwdParams in;       // inputs and the backward's outputs (gD unused)
  const int* g_rows;  // sampled rows: query rows (q kernel) or key rows (kv kernel)
  int n_rows;
  int d;
  float* g_ref_a;  // (B*H, n_rows, d): dQ, or dK
  float* g_ref_b;  // (B*H, n_rows, d): unused, or dV
  float* g_got_a;  // the backward's dQ, or dK, of the same rows
  float* g_got_b;  // unused, or dV
  float* g_ref_L;  // (B*H, n_rows): q kernel, the reference's own L
};

__device__ __forceinline__ float ref_bwd_dot(const half* a, const float* s_b, int d) {
  float acc = 0.f;
  for (int c = 0; c < d; ++c) acc += __half2float(a[c]) * s_b[c];
  return acc;
}

// Two length-d fp16 rows into shared fp32 vectors.
__device__ __forceinline__ void ref_bwd_load_rows(float* s_a, const half* g_a, float* s_b,
                                                  const half* g_b, int d) {
  for (int c = threadIdx.x; c < d; c += kRefBwdThreads) {
    s_a[c] = __half2float(g_a[c]);
    s_b[c] = __half2float(g_b[c]);
  }
  __syncthreads();
}

// Block-wide sum or max of one value a thread (kRefBwdThreads threads).
__device__ __forceinline__ float ref_bwd_reduce(float v, bool is_max, float* s_red) {
  for (int off = 16; off > 0; off >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = is_max ? fmaxf(v, o) : v + o;
  }
  __syncthreads();  // s_red may still be read by the previous call
  if (threadIdx.x % 32 == 0) s_red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = s_red[0];
  for (int w = 1; w < kRefBwdThreads / 32; ++w) r = is_max ? fmaxf(r, s_red[w]) : r + s_red[w];
  return r;
}

// grid (n_rows, B*H); dynamic shared memory (2 Nkv + 3 d) floats.
__global__ void __launch_bounds__(kRefBwdThreads) reference_bwd_q_kernel(const RefBwdParams rp) {
  extern __shared__ float s_ref[];
  const BwdParams& p = rp.in;
  const int d = rp.d;
  float* sS = s_ref;           // (Nkv) probabilities
  float* sdP = sS + p.seq_kv;  // (Nkv) dP, then dS
  float* sq = sdP + p.seq_kv;  // (d)
  float* sdo = sq + d;         // (d)
  float* so = sdo + d;         // (d)
  __shared__ float s_red[kRefBwdThreads / 32];
  const int r = blockIdx.x;
  const int64_t bh = blockIdx.y;
  const int row = rp.g_rows[r];
  const int64_t qrow = (bh * p.seq + row) * d;
  const half* K = p.gK + bh * p.seq_kv * d;
  const half* V = p.gV + bh * p.seq_kv * d;
  const int last_visible = p.causal ? row + (p.seq_kv - p.seq) : p.seq_kv - 1;
  ref_bwd_load_rows(sq, p.gQ + qrow, sdo, p.gdO + qrow, d);
  float m = -INFINITY;
  for (int j = threadIdx.x; j < p.seq_kv; j += kRefBwdThreads) {
    const float s =
        j <= last_visible ? p.scale * ref_bwd_dot(K + int64_t(j) * d, sq, d) : -INFINITY;
    sS[j] = s;
    sdP[j] = ref_bwd_dot(V + int64_t(j) * d, sdo, d);
    m = fmaxf(m, s);
  }
  m = ref_bwd_reduce(m, true, s_red);
  float l = 0.f;
  for (int j = threadIdx.x; j < p.seq_kv; j += kRefBwdThreads) {
    const float e = j <= last_visible ? expf(sS[j] - m) : 0.f;
    sS[j] = e;
    l += e;
  }
  l = ref_bwd_reduce(l, false, s_red);
  for (int j = threadIdx.x; j < p.seq_kv; j += kRefBwdThreads) sS[j] /= l;
  __syncthreads();
  float dsum = 0.f;
  for (int c = threadIdx.x; c < d; c += kRefBwdThreads) {
    float o = 0.f;
    for (int j = 0; j <= last_visible; ++j) o += sS[j] * __half2float(V[int64_t(j) * d + c]);
    so[c] = o;
    dsum += o * sdo[c];
  }
  const float D = ref_bwd_reduce(dsum, false, s_red);
  for (int j = threadIdx.x; j < p.seq_kv; j += kRefBwdThreads) sdP[j] = sS[j] * (sdP[j] - D);
  __syncthreads();
  const int64_t out = (bh * rp.n_rows + r) * d;
  for (int c = threadIdx.x; c < d; c += kRefBwdThreads) {
    float dq = 0.f;
    for (int j = 0; j <= last_visible; ++j) dq += sdP[j] * __half2float(K[int64_t(j) * d + c]);
    rp.g_ref_a[out + c] = p.scale * dq;
    rp.g_got_a[out + c] = __half2float(p.gdQ[qrow + c]);
  }
  if (threadIdx.x == 0) rp.g_ref_L[bh * rp.n_rows + r] = m + logf(l);
}

// grid (n_rows, B*H); dynamic shared memory (2 N + 2 d) floats.
__global__ void __launch_bounds__(kRefBwdThreads) reference_bwd_kv_kernel(const RefBwdParams rp) {
  extern __shared__ float s_ref[];
  const BwdParams& p = rp.in;
  const int d = rp.d;
  float* sP = s_ref;        // (N) P of this key for every query
  float* sdS = sP + p.seq;  // (N) dS
  float* sk = sdS + p.seq;  // (d)
  float* sv = sk + d;       // (d)
  const int64_t bh = blockIdx.y;
  const half* Q = p.gQ + bh * p.seq * d;
  const int r = blockIdx.x;
  const int key = rp.g_rows[r];
  const int64_t krow = (bh * p.seq_kv + key) * d;
  const half* O = p.gO + bh * p.seq * d;
  const half* dO = p.gdO + bh * p.seq * d;
  const float* L = p.gL + bh * p.seq;
  const int first_query = p.causal ? max(0, key - (p.seq_kv - p.seq)) : 0;
  ref_bwd_load_rows(sk, p.gK + krow, sv, p.gV + krow, d);
  for (int i = threadIdx.x; i < p.seq; i += kRefBwdThreads) {
    float pr = 0.f, ds = 0.f;
    if (i >= first_query) {
      const half* qi = Q + int64_t(i) * d;
      const half* doi = dO + int64_t(i) * d;
      const half* oi = O + int64_t(i) * d;
      pr = expf(p.scale * ref_bwd_dot(qi, sk, d) - L[i]);
      float D = 0.f;
      for (int c = 0; c < d; ++c) D += __half2float(doi[c]) * __half2float(oi[c]);
      ds = pr * (ref_bwd_dot(doi, sv, d) - D);
    }
    sP[i] = pr;
    sdS[i] = ds;
  }
  __syncthreads();
  const int64_t out = (bh * rp.n_rows + r) * d;
  for (int c = threadIdx.x; c < d; c += kRefBwdThreads) {
    float dk = 0.f, dv = 0.f;
    for (int i = first_query; i < p.seq; ++i) {
      dv += sP[i] * __half2float(dO[int64_t(i) * d + c]);
      dk += sdS[i] * __half2float(Q[int64_t(i) * d + c]);
    }
    rp.g_ref_a[out + c] = p.scale * dk;
    rp.g_ref_b[out + c] = dv;
    rp.g_got_a[out + c] = __half2float(p.gdK[krow + c]);
    rp.g_got_b[out + c] = __half2float(p.gdV[krow + c]);
  }
}

}  // namespace iosim_cuda
