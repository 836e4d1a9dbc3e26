// Decoding attention: a few query rows per sequence against a long K/V cache.
//
// flash-decoding (split + reduce): the K/V of each (batch, kv head) is cut into
// `splits` chunks of split_tokens keys (a multiple of BLOCK_KV); one CTA per
// (split, kv head, batch) attends the query rows of that kv head to its chunk and
// writes a normalized partial output (fp32) and the chunk's log-sum-exp; the reduce
// kernel rescales and sums the splits of each row into O (fp16) and L.
// paged: the same split kernel reading K/V through a block table from a page pool
// (PagedAttention, Kwon et al. 2023). With splits == 1 the split kernel writes O and L
// itself and there is no reduce (a vLLM v1-like kernel); with splits > 1 it is
// vLLM v2's partitioned form.
//
// Layouts (all contiguous, row-major):
//   Q, O          (B, H, N, d) fp16          L              (B, H, N) fp32
//   K, V          (B, Hkv, Nkv, d) fp16      (flash-decoding)
//   K, V pools    (pages, Hkv, page_tokens, d) fp16: one (page, kv head) is one
//                 contiguous page_tokens x d block (paged)
//   block_table   (B, pages_per_seq) int32: logical page t / page_tokens of sequence b
//                 lives in physical page block_table[b][t / page_tokens]
//   partial_O     (B, H, splits, N, d) fp32, normalized by its own split's sum
//   partial_lse   (B, H, splits, N) fp32, natural log; -inf for a split with no key
// GQA: query head h reads kv head h / (H / Hkv). A CTA takes all G = H / Hkv query
// heads of its kv head, so M = G * N query rows (at most 16, one m-tile) share one
// pass over the chunk: K/V are read once per (batch, kv head), not once per head.
//
// Inside a CTA: Q (M rows, zero-padded to 16) is loaded once; K/V tiles of BLOCK_KV
// keys stream through two cp.async stages as in flash2; warp w takes keys
// [w * BLOCK_KV / warps, (w + 1) * BLOCK_KV / warps) of every tile with its own running
// max, sum and output (mma.sync m16n8k16 via warp_tile.cuh); at the end the warps'
// states are combined through shared memory (reusing the K/V stages).
#pragma once

#include "warp_tile.cuh"

namespace iosim_cuda {

struct DecodeParams {
  const half* gQ;            // (B, H, N, d)
  const half* gK;            // (B, Hkv, Nkv, d), or the K page pool when paged
  const half* gV;            // same for V
  const int* g_block_table;  // paged: (B, pages_per_seq); null otherwise
  half* gO;                  // (B, H, N, d): written by the split kernel when splits == 1
  float* gL;                 // (B, H, N)
  float* g_partial_O;        // (B, H, splits, N, d) when splits > 1
  float* g_partial_lse;      // (B, H, splits, N) when splits > 1
  int batch;
  int heads;     // H
  int kv_heads;  // Hkv, divides H
  int seq;       // N query rows per head; (H / Hkv) * N <= 16
  int seq_kv;    // Nkv
  int splits;
  int split_tokens;  // keys per split, a multiple of BLOCK_KV
  int page_tokens;   // paged only
  int pages_per_seq;
  float scale;
};

template <int kD, int kBKV, int kWarps, bool kPaged>
struct DecodeConfig {
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kKeysPerWarp = kBKV / kWarps;
  static constexpr int kQRows = 16;  // one m-tile; rows past M are zeros
  static constexpr int kStages = 2;
  static constexpr int kQTileElems = kQRows * kD;
  static constexpr int kKVTileElems = kBKV * kD;
  // sQ + sK, sV (kStages tiles each), fp16; the paged block table follows.
  static constexpr int kSmemBytes = (kQTileElems + 2 * kStages * kKVTileElems) * 2;
  // The end-of-kernel combine reuses the K/V stages: per warp O (16, kD) fp32, m, l.
  static constexpr int kCombineBytes = kWarps * 16 * (kD + 2) * 4;
  static_assert(kKeysPerWarp % 16 == 0 && kD % 64 == 0, "tile sizes");
  static_assert(kCombineBytes <= 2 * kStages * kKVTileElems * 2, "combine scratch fits");
  // Dynamic shared memory of a launch: the paged table holds one entry per page the
  // split touches.
  static int smem_bytes(int split_tokens, int page_tokens) {
    if (!kPaged) return kSmemBytes;
    return kSmemBytes + 4 * ((split_tokens + page_tokens - 1) / page_tokens + 1);
  }
};

// Rows [kv0, kv0 + kRows) of one (page pool, kv head) sequence into a swizzled
// (kRows, kD) shared tile; keys at or past kv_end are zero-filled (not read).
// s_table holds the physical pages of logical pages first_page, first_page + 1, ...
template <int kRows, int kD, int kThreads>
__device__ __forceinline__ void load_paged_tile_async(half* s_tile, const half* g_pool,
                                                      const int* s_table, int first_page, int kv0,
                                                      int kv_end, int page_tokens, int kv_heads,
                                                      int hkv) {
  constexpr int kChunksPerRow = kD / 8;
  constexpr int kChunks = kRows * kChunksPerRow;
  static_assert(kChunks % kThreads == 0, "tile chunks must divide among threads");
#pragma unroll
  for (int it = 0; it < kChunks / kThreads; ++it) {
    const int idx = it * kThreads + static_cast<int>(threadIdx.x);
    const int row = idx / kChunksPerRow;
    const int chunk = idx % kChunksPerRow;
    const int t = kv0 + row;  // logical token
    const bool valid = t < kv_end;
    const int tv = valid ? t : kv0;  // an address that exists even when nothing is read
    const int page = s_table[tv / page_tokens - first_page];
    const half* g_src =
        g_pool +
        ((static_cast<int64_t>(page) * kv_heads + hkv) * page_tokens + tv % page_tokens) * kD +
        chunk * 8;
    cp_async_16(smem_addr(s_tile + swz<kD>(row, chunk)), g_src, valid);
  }
}

template <int kD, int kBKV, int kWarps, bool kPaged>
__global__ void __launch_bounds__(kWarps * 32) decode_split_kernel(const DecodeParams p) {
  using Cfg = DecodeConfig<kD, kBKV, kWarps, kPaged>;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kKW = Cfg::kKeysPerWarp;
  constexpr int kKVT = Cfg::kKVTileElems;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  half* sQ = reinterpret_cast<half*>(smem_raw);                       // (16, kD)
  half* sK = sQ + Cfg::kQTileElems;                                   // (2, kBKV, kD)
  half* sV = sK + 2 * kKVT;                                           // (2, kBKV, kD)
  int* s_table = reinterpret_cast<int*>(smem_raw + Cfg::kSmemBytes);  // paged only

  const int split = blockIdx.x;
  const int hkv = blockIdx.y;
  const int b = blockIdx.z;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int group = p.heads / p.kv_heads;  // G query heads per kv head
  const int m_rows = group * p.seq;        // M query rows of this CTA
  // The G heads of one kv head are adjacent in (B, H, N, d): rows q_row0 .. q_row0 + M.
  const int64_t q_row0 = (static_cast<int64_t>(b) * p.heads + hkv * group) * p.seq;
  const int kv_begin = split * p.split_tokens;
  const int kv_end = min(p.seq_kv, kv_begin + p.split_tokens);
  const int n_tiles = kv_end > kv_begin ? (kv_end - kv_begin + kBKV - 1) / kBKV : 0;
  const int64_t kv_bh = static_cast<int64_t>(b) * p.kv_heads + hkv;
  const half* gK = kPaged ? p.gK : p.gK + kv_bh * p.seq_kv * kD;  // (Nkv, kD) when contiguous
  const half* gV = kPaged ? p.gV : p.gV + kv_bh * p.seq_kv * kD;
  const int first_page = kPaged ? kv_begin / p.page_tokens : 0;

  // Q rows 0..M-1 (zero-filled up to 16).
  for (int idx = threadIdx.x; idx < 16 * (kD / 8); idx += kThreads) {
    const int row = idx / (kD / 8);
    const int chunk = idx % (kD / 8);
    const bool valid = row < m_rows;
    cp_async_16(smem_addr(sQ + swz<kD>(row, chunk)),
                p.gQ + (q_row0 + (valid ? row : 0)) * kD + chunk * 8, valid);
  }
  if constexpr (kPaged) {
    // This split's slice of the block table, read once.
    const int n_pages = n_tiles > 0 ? (kv_end - 1) / p.page_tokens - first_page + 1 : 0;
    const int* g_table = p.g_block_table + static_cast<int64_t>(b) * p.pages_per_seq + first_page;
    for (int i = threadIdx.x; i < n_pages; i += kThreads) s_table[i] = g_table[i];
    __syncthreads();
  }
  auto load_kv = [&](int tile, int stage) {
    const int kv0 = kv_begin + tile * kBKV;
    if constexpr (kPaged) {
      load_paged_tile_async<kBKV, kD, kThreads>(sK + stage * kKVT, gK, s_table, first_page, kv0,
                                                kv_end, p.page_tokens, p.kv_heads, hkv);
      load_paged_tile_async<kBKV, kD, kThreads>(sV + stage * kKVT, gV, s_table, first_page, kv0,
                                                kv_end, p.page_tokens, p.kv_heads, hkv);
    } else {
      load_tile_async<kBKV, kD, kThreads>(sK + stage * kKVT, gK, kv0, kv_end);
      load_tile_async<kBKV, kD, kThreads>(sV + stage * kKVT, gV, kv0, kv_end);
    }
  };
  if (n_tiles > 0) load_kv(0, 0);
  cp_async_commit();

  const float scale_log2 = p.scale * kLog2e;
  float rO[1][kD / 8][4];  // (1 m-tile, kD/8, C fragment), fp32
  float row_m[1][2];       // running max, log2 units
  float row_l[1][2];       // running sum, this lane's part
#pragma unroll
  for (int dt = 0; dt < kD / 8; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) rO[0][dt][e] = 0.f;
  row_m[0][0] = row_m[0][1] = -INFINITY;
  row_l[0][0] = row_l[0][1] = 0.f;

  for (int j = 0; j < n_tiles; ++j) {
    const int stage = j & 1;
    if (j + 1 < n_tiles) {
      load_kv(j + 1, stage ^ 1);  // stage (j+1)&1 was last read in step j-1 (barrier since)
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    const half* sKw = sK + stage * kKVT + warp * kKW * kD;  // (kKW, kD): this warp's keys
    const half* sVw = sV + stage * kKVT + warp * kKW * kD;
    float rS[1][kKW / 8][4];
    warp_qk<kD, kKW, 1>(rS, sQ, sKw, 0, lane);
    const int kv0w = kv_begin + j * kBKV + warp * kKW;
    warp_scale_mask<kKW, 1>(rS, scale_log2, kv0w + kKW > kv_end, kv0w, 0, kv_end, 0, false, lane);
    float blk_max[1][2];
    warp_row_max<kKW, 1>(rS, blk_max);
    float m_new[1][2];
    float lane_sum[1][2];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) m_new[0][hh] = fmaxf(row_m[0][hh], blk_max[0][hh]);
    warp_exp<kKW, 1>(rS, m_new, lane_sum);
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float m_use = (m_new[0][hh] == -INFINITY) ? 0.f : m_new[0][hh];
      const float alpha = fast_exp2(row_m[0][hh] - m_use);
      row_l[0][hh] = row_l[0][hh] * alpha + lane_sum[0][hh];
      row_m[0][hh] = m_new[0][hh];
#pragma unroll
      for (int dt = 0; dt < kD / 8; ++dt) {
        rO[0][dt][2 * hh] *= alpha;
        rO[0][dt][2 * hh + 1] *= alpha;
      }
    }
    warp_pv<kD, kKW, 1>(rO, rS, sVw, lane);
    __syncthreads();  // stage j&1 is refilled in step j+1
  }
  cp_async_wait<0>();  // no tile at all: the Q group may still be in flight
  __syncthreads();

  // Combine the warps' (m, l, O) of each row through the now idle K/V stages.
  float* s_cO = reinterpret_cast<float*>(sK);  // (kWarps, 16, kD)
  float* s_cm = s_cO + kWarps * 16 * kD;       // (kWarps, 16)
  float* s_cl = s_cm + kWarps * 16;            // (kWarps, 16)
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float l = row_l[0][hh];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int row = lane / 4 + hh * 8;
    if (row < m_rows) {
      if (lane % 4 == 0) {
        s_cm[warp * 16 + row] = row_m[0][hh];
        s_cl[warp * 16 + row] = l;
      }
#pragma unroll
      for (int dt = 0; dt < kD / 8; ++dt) {
        const int col = dt * 8 + (lane % 4) * 2;
        *reinterpret_cast<float2*>(s_cO + (warp * 16 + row) * kD + col) =
            make_float2(rO[0][dt][2 * hh], rO[0][dt][2 * hh + 1]);
      }
    }
  }
  __syncthreads();

  for (int idx = threadIdx.x; idx < m_rows * kD; idx += kThreads) {
    const int row = idx / kD;
    const int col = idx % kD;
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m = fmaxf(m, s_cm[w * 16 + row]);
    const float m_use = m == -INFINITY ? 0.f : m;
    float l = 0.f, o = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float scale_w = fast_exp2(s_cm[w * 16 + row] - m_use);
      l += s_cl[w * 16 + row] * scale_w;
      o += s_cO[(w * 16 + row) * kD + col] * scale_w;
    }
    const float out = l > 0.f ? o / l : 0.f;
    const float lse = l > 0.f ? (m + log2f(l)) * kLn2 : -INFINITY;
    const int64_t q_row = q_row0 + row;  // (b, h, n) flattened; h = hkv * G + row / N
    if (p.splits == 1) {
      p.gO[q_row * kD + col] = __float2half(out);
      if (col == 0) p.gL[q_row] = lse;
    } else {
      // (B, H, splits, N, d): bh = q_row / N, n = q_row % N.
      const int64_t bh = q_row / p.seq;
      const int n = static_cast<int>(q_row % p.seq);
      const int64_t prow = (bh * p.splits + split) * p.seq + n;
      p.g_partial_O[prow * kD + col] = out;
      if (col == 0) p.g_partial_lse[prow] = lse;
    }
  }
}

// Reduce: O(b, h, n) = sum_s exp(lse_s - lse) * partial_O_s, lse = log sum_s exp(lse_s).
// min(kD / 4, 32) threads per row, each with kD / 4 / that many 16-byte fp32 loads per split
// (one at kD = 64 and 128; four at kD = 512, mla_decode_fwd.cuh's O); 128 threads per CTA;
// grid ceil(B * H * N / rows per CTA). Each row's split lse values go through shared memory.
constexpr int kReduceThreads = 128;
constexpr int kReduceMaxSplits = 256;

// Threads per output row of decode_reduce_kernel<kD>, and rows per CTA.
__host__ __device__ constexpr int decode_reduce_lanes(int d) {
  return d / 4 < 32 ? d / 4 : 32;
}
__host__ __device__ constexpr int decode_reduce_rows_per_cta(int d) {
  return kReduceThreads / decode_reduce_lanes(d);
}

template <int kD>
__global__ void __launch_bounds__(kReduceThreads) decode_reduce_kernel(const DecodeParams p) {
  constexpr int kLanes = decode_reduce_lanes(kD);  // threads per row
  constexpr int kVecs = kD / 4 / kLanes;           // float4 columns per thread
  constexpr int kRows = decode_reduce_rows_per_cta(kD);
  static_assert(kLanes <= 32 && 32 % kLanes == 0, "a row's threads sit in one warp");
  static_assert(kVecs * kLanes * 4 == kD, "whole float4 columns");
  __shared__ float s_lse[kRows][kReduceMaxSplits];
  const int r_local = threadIdx.x / kLanes;
  const int lane = threadIdx.x % kLanes;
  const int64_t n_rows = static_cast<int64_t>(p.batch) * p.heads * p.seq;
  // A row past the end still takes part in the shuffles (full-warp masks), with no splits.
  const int64_t row_raw = static_cast<int64_t>(blockIdx.x) * kRows + r_local;
  const bool active = row_raw < n_rows;
  const int64_t row = active ? row_raw : 0;
  const int splits = active ? p.splits : 0;
  const int64_t bh = row / p.seq;
  const int n = static_cast<int>(row % p.seq);
  const float* lse_row = p.g_partial_lse + bh * p.splits * p.seq + n;     // stride N
  const float* o_row = p.g_partial_O + (bh * p.splits * p.seq + n) * kD;  // stride N * kD

  float m = -INFINITY;
  for (int s = lane; s < splits; s += kLanes) {
    const float v = lse_row[static_cast<int64_t>(s) * p.seq];
    s_lse[r_local][s] = v;
    m = fmaxf(m, v);
  }
#pragma unroll
  for (int o = kLanes / 2; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const float m_use = m == -INFINITY ? 0.f : m;
  float sum = 0.f;
  for (int s = lane; s < splits; s += kLanes) sum += __expf(s_lse[r_local][s] - m_use);
#pragma unroll
  for (int o = kLanes / 2; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  __syncwarp();
  const float inv_sum = sum > 0.f ? 1.f / sum : 0.f;
  float4 acc[kVecs];
#pragma unroll
  for (int v = 0; v < kVecs; ++v) acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int s = 0; s < splits; ++s) {
    const float w = __expf(s_lse[r_local][s] - m_use) * inv_sum;
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      const float4 x = *reinterpret_cast<const float4*>(
          o_row + static_cast<int64_t>(s) * p.seq * kD + (v * kLanes + lane) * 4);
      acc[v].x += w * x.x;
      acc[v].y += w * x.y;
      acc[v].z += w * x.z;
      acc[v].w += w * x.w;
    }
  }
  if (!active) return;
#pragma unroll
  for (int v = 0; v < kVecs; ++v) {
    uint2 packed;
    packed.x = pack_half2(acc[v].x, acc[v].y);
    packed.y = pack_half2(acc[v].z, acc[v].w);
    *reinterpret_cast<uint2*>(p.gO + row * kD + (v * kLanes + lane) * 4) = packed;
  }
  if (lane == 0) p.gL[row] = sum > 0.f ? m + logf(sum) : -INFINITY;
}

}  // namespace iosim_cuda
