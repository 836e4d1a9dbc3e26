// Latent-KV decoding (multi-head latent attention, MLA, in its absorbed form; DeepSeek-V2/V3):
// every query head attends one shared cache whose rows are both K and V.
//
// A cached token is one row of kD = 576 fp16 columns (512 latent + 64 rope). Q rows have kD
// columns; S = scale Q K^T over all kD; V is the first kDV = 512 columns of the same row (no V
// tensor exists); O has kDV columns. All H query heads read the one cache (Hkv = 1), so the
// H * N query rows of a sequence are one query matrix: a CTA packs 16 of them (rows h * N + n,
// contiguous in (B, H, N, ·)) into one m-tile and streams the cache once for them.
//
// Why not decode_fwd.cuh's kernel: its warps split the keys and each keeps an O of all d
// columns, 16 x 512 fp32 = 256 registers a thread at kDV = 512. Here the warps split the keys
// for S and the O columns for P V:
//   grid (splits, ceil(H * N / 16), B), 4 warps. Split s takes keys [s * split_tokens,
//   min(Nkv, (s + 1) * split_tokens)), split_tokens a multiple of kBKV.
//   Q (16 x kD) is loaded once; K tiles (kBKV x kD) stream through two cp.async stages (tile
//   j + 1 is issued right after the barrier that ends every warp's use of its stage in step
//   j - 1, and is in flight while tile j is used).
//   S: warp w computes the 16 x kBKV/4 scores of keys [w kBKV/4, (w + 1) kBKV/4) of the tile
//   over all kD columns (kD / 16 = 36 k-steps of mma.sync m16n8k16).
//   Softmax: each warp's row max goes to shared memory; after a barrier every warp reads all
//   four, so all warps hold the same running max m (flash2's online rescaling, with one m for
//   the CTA); each warp writes its P slice (fp16) into a shared 16 x kBKV tile and keeps its
//   own partial row sums (all under the same m, so they add up at the end).
//   P V: warp w owns O columns [w kDV/4, (w + 1) kDV/4): 16 x 128 fp32 = 64 registers a thread,
//   O += P (16 x kBKV, ldmatrix from the shared P tile) * V (the tile's first kDV columns,
//   ldmatrix.trans from the K stage, as flash2 reads V).
//   End: O / l with l the four warps' sums. splits == 1: O (fp16, (B, H, N, kDV)) through
//   shared memory to 16-byte stores, and L (fp32 lse). splits > 1: the normalized partial O
//   (fp32, (B, H, splits, N, kDV); each thread's two adjacent floats of 8 rows make whole
//   32-byte sectors) and the partial lse; decode_reduce_kernel<kDV> combines them.
// Three barriers a tile: K tile ready, row maxima written, P written.
//
// Shared memory: Q 16 x kD + 2 x kBKV x kD fp16 (K stages, swizzled as every tile here) + P
// 16 x (kBKV + 8) fp16 (rows padded 16 bytes: ldmatrix of 8 rows and the fragment stores hit
// distinct banks; P is written by the threads, not cp.async, so no sector splits) + row maxima
// and sums (fp32) [+ the paged block table slice]. kBKV = 64: 164.8 KB (one CTA per SM);
// kBKV = 32: 91.8 KB (two).
//
// Paged (kPaged): the cache is a page pool (pages, 1, page_tokens, kD) read through the block
// table (B, pages_per_seq) as decode_fwd.cuh's paged kernel does (FlashMLA uses 64-token pages).
#pragma once

#include "decode_fwd.cuh"

namespace iosim_cuda {

template <int kD, int kDV, int kBKV, bool kPaged>
struct MlaDecodeConfig {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kKeysPerWarp = kBKV / kWarps;  // S columns of a warp
  static constexpr int kColsPerWarp = kDV / kWarps;   // O columns of a warp
  static constexpr int kQRows = 16;                   // one m-tile; rows past H * N are zeros
  static constexpr int kStages = 2;
  static constexpr int kQTileElems = kQRows * kD;
  static constexpr int kKTileElems = kBKV * kD;
  static constexpr int kPPitch = kBKV + 8;  // halves per P row (padded by 16 bytes)
  static constexpr int kPElems = kQRows * kPPitch;
  static constexpr int kStatFloats = 2 * kWarps * kQRows;  // row maxima, row sums
  static constexpr int kSmemBytes =
      (kQTileElems + kStages * kKTileElems + kPElems) * 2 + kStatFloats * 4;
  static constexpr int kMaxSmemBytes = 227 * 1024;  // what a Hopper CTA may opt into
  static_assert(kKeysPerWarp == 8 || kKeysPerWarp == 16, "mla_warp_qk takes 8 or 16 keys");
  static_assert(kColsPerWarp % 16 == 0, "P V works on pairs of 8-column d-tiles");
  static_assert(kD % 64 == 0 && kDV % 64 == 0 && kDV <= kD, "V is the first kDV of kD columns");
  static_assert(kQRows * kDV * 2 <= kStages * kKTileElems * 2, "the O staging fits a K stage");
  static_assert(kSmemBytes <= kMaxSmemBytes, "shared memory");
  static_assert(kThreads == 128, "mla_load_k_tile's mapping");
  // Dynamic shared memory of a launch: the paged table holds one entry per page the split
  // touches.
  static int smem_bytes(int split_tokens, int page_tokens) {
    if (!kPaged) return kSmemBytes;
    return kSmemBytes + 4 * ((split_tokens + page_tokens - 1) / page_tokens + 1);
  }
};

// Rows [kv0, kv0 + kBKV) of sequence b's cache (contiguous (Nkv, kD) at g_seq, or the page
// pool through s_table) into a swizzled (kBKV, kD) shared tile; keys at or past kv_end are
// zero-filled (not read). 128 threads: thread t copies chunk 8g + t % 8 of rows 16i + t / 8,
// for every 64-column group g and 16-row pass i. The swizzled chunk is 8g + (t % 8 ^ (t / 8) %
// 8), so both addresses are a per-thread base plus compile-time offsets: load_tile_async's
// mapping (idx = it * 128 + t) made ptxas keep 2 x 36 per-chunk offsets live through the
// key loop (255 registers and spills at kBKV = 64). A warp copies 4 whole 128-byte row pieces
// per instruction.
template <int kBKV, int kD, bool kPaged>
__device__ __forceinline__ void mla_load_k_tile(half* s_tile, const half* g_seq, const int* s_table,
                                                int first_page, int kv0, int kv_end,
                                                int page_tokens) {
  static_assert(kBKV % 16 == 0 && kD % 64 == 0, "16-row passes of 64-column groups");
  const int sub = threadIdx.x % 8;
  const int r16 = threadIdx.x / 8;  // 0..15
  const uint32_t s_base = smem_addr(s_tile + r16 * kD + ((sub ^ (r16 % 8)) << 3));
#pragma unroll
  for (int i = 0; i < kBKV / 16; ++i) {
    const int t = kv0 + i * 16 + r16;
    const bool valid = t < kv_end;
    const int tv = valid ? t : kv0;  // a row that exists even when nothing is read
    const half* g_row;
    if constexpr (kPaged) {
      const int page = s_table[tv / page_tokens - first_page];
      g_row = g_seq + (static_cast<int64_t>(page) * page_tokens + tv % page_tokens) * kD;
    } else {
      g_row = g_seq + static_cast<int64_t>(tv) * kD;
    }
#pragma unroll
    for (int g = 0; g < kD / 64; ++g)
      cp_async_16(s_base + (i * 16 * kD + g * 64) * 2, g_row + g * 64 + sub * 8, valid);
  }
}

// rS (1, kKW/8, 4) = Q K_w^T, fp32, for the 16 rows of sQ (swizzled (16, kD)) and the kKW keys
// at sKw (swizzled rows of a (kBKV, kD) tile; the first is a multiple of 8).
template <int kD, int kKW>
__device__ __forceinline__ void mla_warp_qk(float (&rS)[1][kKW / 8][4], const half* sQ,
                                            const half* sKw, int lane) {
  if constexpr (kKW == 16) {
    warp_qk<kD, 16, 1>(rS, sQ, sKw, 0, lane);
  } else {
    static_assert(kKW == 8 && kD % 32 == 0, "8 keys, k-steps in pairs");
#pragma unroll
    for (int e = 0; e < 4; ++e) rS[0][0][e] = 0.f;
    constexpr uint32_t kRowBytes = kD * 2;
    // Q as in warp_qk: lane L addresses row L % 16, chunk 2kd + L / 16.
    const uint32_t sQ_lane = smem_addr(sQ) + (lane % 16) * kRowBytes;
    const uint32_t q_xor = ldsm_lane_xor(lane / 16, lane);
    // K, two k-steps per ldmatrix.x4: matrices (keys 0-7, chunk 4kp + c), c = 0..3 -> (b0, b1)
    // of k-step 2kp, (b0, b1) of k-step 2kp + 1. Lane L addresses key L % 8, chunk 4kp + L / 8;
    // (4kp + c) ^ (key % 8) = 4kp ^ (c ^ L % 8), so the byte offset is k_xor ^ 64kp.
    const uint32_t sK_lane = smem_addr(sKw) + (lane % 8) * kRowBytes;
    const uint32_t k_xor = ldsm_lane_xor(lane / 8, lane);
#pragma unroll
    for (int kp = 0; kp < kD / 32; ++kp) {
      uint32_t b[4];
      ldmatrix_x4(sK_lane + (k_xor ^ (kp * 64)), b[0], b[1], b[2], b[3]);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint32_t a[4];
        ldmatrix_x4(sQ_lane + (q_xor ^ ((2 * kp + h) * 32)), a[0], a[1], a[2], a[3]);
        mma_16816(rS[0][0], a, b[2 * h], b[2 * h + 1]);
      }
    }
  }
}

// rO (kCW/8, 4) += P V for O columns [col0, col0 + kCW): P is the (16, kBKV) fp16 tile at sP
// (row pitch kPPitch halves), V the first columns of the swizzled (kBKV, kD) K tile at sV.
template <int kD, int kBKV, int kPPitch, int kCW>
__device__ __forceinline__ void mla_warp_pv(float (&rO)[kCW / 8][4], const half* sP, const half* sV,
                                            int col0, int lane) {
  constexpr uint32_t kRowBytes = kD * 2;
  constexpr uint32_t kPRowBytes = kPPitch * 2;
  // P's A fragment of keys 16kk..16kk+15: matrices (rows 0-7, keys 0-7), (rows 8-15, keys 0-7),
  // (rows 0-7, keys 8-15), (rows 8-15, keys 8-15) -> a0..a3; lane L addresses row L % 16,
  // keys 16kk + 8 (L / 16).
  const uint32_t sP_lane = smem_addr(sP) + (lane % 16) * kPRowBytes + (lane / 16) * 16;
  // V as warp_pv reads it: lane L addresses key L % 16, chunk 2dp + L / 16 (.trans).
  const uint32_t sV_lane = smem_addr(sV) + (lane % 16) * kRowBytes;
  const uint32_t v_xor = ldsm_lane_xor(lane / 16, lane);
  const int dp0 = col0 / 16;
#pragma unroll 1
  for (int kk = 0; kk < kBKV / 16; ++kk) {
    uint32_t a[4];
    ldmatrix_x4(sP_lane + kk * 32, a[0], a[1], a[2], a[3]);
#pragma unroll
    for (int dp = 0; dp < kCW / 16; ++dp) {
      uint32_t b0, b1, b2, b3;
      ldmatrix_x4_trans(sV_lane + kk * 16 * kRowBytes + (v_xor ^ ((dp0 + dp) * 32)), b0, b1, b2,
                        b3);
      mma_16816(rO[2 * dp], a, b0, b1);
      mma_16816(rO[2 * dp + 1], a, b2, b3);
    }
  }
}

// p: decode_fwd.cuh's parameters with kv_heads = 1 and gV unused; gO (B, H, N, kDV), partial_O
// (B, H, splits, N, kDV).
template <int kD, int kDV, int kBKV, bool kPaged>
__global__ void __launch_bounds__(128) mla_decode_split_kernel(const DecodeParams p) {
  using Cfg = MlaDecodeConfig<kD, kDV, kBKV, kPaged>;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kWarps = Cfg::kWarps;
  constexpr int kKW = Cfg::kKeysPerWarp;
  constexpr int kCW = Cfg::kColsPerWarp;
  constexpr int kKT = Cfg::kKTileElems;
  constexpr int kPPitch = Cfg::kPPitch;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  half* sQ = reinterpret_cast<half*>(smem_raw);                // (16, kD) swizzled
  half* sK = sQ + Cfg::kQTileElems;                            // (2, kBKV, kD) swizzled
  half* sP = sK + Cfg::kStages * kKT;                          // (16, kPPitch)
  float* s_max = reinterpret_cast<float*>(sP + Cfg::kPElems);  // (kWarps, 16)
  float* s_sum = s_max + kWarps * 16;                          // (kWarps, 16)
  int* s_table = reinterpret_cast<int*>(s_sum + kWarps * 16);  // paged only

  const int split = blockIdx.x;
  const int b = blockIdx.z;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int packed_rows = p.heads * p.seq;  // H * N query rows of sequence b
  const int row0 = blockIdx.y * 16;
  const int m_rows = min(16, packed_rows - row0);
  // Packed row r is row row0 + r of sequence b in (B, H, N, ·): (b, h, n) with h N + n = row0 + r.
  const int64_t q_row0 = static_cast<int64_t>(b) * packed_rows + row0;
  const int kv_begin = split * p.split_tokens;
  const int kv_end = min(p.seq_kv, kv_begin + p.split_tokens);
  const int n_tiles = kv_end > kv_begin ? (kv_end - kv_begin + kBKV - 1) / kBKV : 0;
  const half* gK = kPaged ? p.gK : p.gK + static_cast<int64_t>(b) * p.seq_kv * kD;
  const int first_page = kPaged ? kv_begin / p.page_tokens : 0;

  for (int idx = threadIdx.x; idx < 16 * (kD / 8); idx += kThreads) {
    const int row = idx / (kD / 8);
    const int chunk = idx % (kD / 8);
    const bool valid = row < m_rows;
    cp_async_16(smem_addr(sQ + swz<kD>(row, chunk)),
                p.gQ + (q_row0 + (valid ? row : 0)) * kD + chunk * 8, valid);
  }
  if constexpr (kPaged) {
    const int n_pages = n_tiles > 0 ? (kv_end - 1) / p.page_tokens - first_page + 1 : 0;
    const int* g_table = p.g_block_table + static_cast<int64_t>(b) * p.pages_per_seq + first_page;
    for (int i = threadIdx.x; i < n_pages; i += kThreads) s_table[i] = g_table[i];
    __syncthreads();
  }
  auto load_k = [&](int tile, int stage) {
    mla_load_k_tile<kBKV, kD, kPaged>(sK + stage * kKT, gK, s_table, first_page,
                                      kv_begin + tile * kBKV, kv_end, p.page_tokens);
  };
  if (n_tiles > 0) load_k(0, 0);
  cp_async_commit();

  const float scale_log2 = p.scale * kLog2e;
  float rO[kCW / 8][4];  // O columns [warp kCW, (warp + 1) kCW) of the 16 rows, fp32
  float row_m[2];        // running max (log2 units) of rows lane / 4 and lane / 4 + 8: the CTA's
  float row_l[2];        // running sum over this warp's keys, this lane's part
#pragma unroll
  for (int dt = 0; dt < kCW / 8; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) rO[dt][e] = 0.f;
  row_m[0] = row_m[1] = -INFINITY;
  row_l[0] = row_l[1] = 0.f;

  for (int j = 0; j < n_tiles; ++j) {
    const int stage = j & 1;
    cp_async_wait<0>();
    // Tile j is visible, and every warp is past step j - 1: its stage (refilled next), the P
    // tile and the row maxima may be rewritten.
    __syncthreads();
    if (j + 1 < n_tiles) load_k(j + 1, stage ^ 1);
    cp_async_commit();
    const half* sKs = sK + stage * kKT;

    float rS[1][kKW / 8][4];
    mla_warp_qk<kD, kKW>(rS, sQ, sKs + warp * kKW * kD, lane);
    const int kv0w = kv_begin + j * kBKV + warp * kKW;
    warp_scale_mask<kKW, 1>(rS, scale_log2, kv0w + kKW > kv_end, kv0w, 0, kv_end, 0, false, lane);
    float w_max[1][2];
    warp_row_max<kKW, 1>(rS, w_max);
    if (lane % 4 == 0) {
      s_max[warp * 16 + lane / 4] = w_max[0][0];
      s_max[warp * 16 + lane / 4 + 8] = w_max[0][1];
    }
    __syncthreads();
    // The tile's row max over all kBKV keys. Every warp computes it from the same values in the
    // same order, so all hold the same m; a tile's first key is always valid (it belongs to
    // warp 0), so m is finite.
    float m_new[1][2];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float m = row_m[hh];
#pragma unroll
      for (int w = 0; w < kWarps; ++w) m = fmaxf(m, s_max[w * 16 + lane / 4 + hh * 8]);
      m_new[0][hh] = m;
    }
    float lane_sum[1][2];
    warp_exp<kKW, 1>(rS, m_new, lane_sum);
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float m_use = (m_new[0][hh] == -INFINITY) ? 0.f : m_new[0][hh];
      const float alpha = fast_exp2(row_m[hh] - m_use);
      row_l[hh] = row_l[hh] * alpha + lane_sum[0][hh];
      row_m[hh] = m_new[0][hh];
#pragma unroll
      for (int dt = 0; dt < kCW / 8; ++dt) {
        rO[dt][2 * hh] *= alpha;
        rO[dt][2 * hh + 1] *= alpha;
      }
    }
    // This warp's P columns, fp16 (C fragment: rows lane / 4 and lane / 4 + 8, two columns).
#pragma unroll
    for (int nt = 0; nt < kKW / 8; ++nt) {
      const int col = warp * kKW + nt * 8 + (lane % 4) * 2;
      *reinterpret_cast<uint32_t*>(sP + (lane / 4) * kPPitch + col) =
          pack_half2(rS[0][nt][0], rS[0][nt][1]);
      *reinterpret_cast<uint32_t*>(sP + (lane / 4 + 8) * kPPitch + col) =
          pack_half2(rS[0][nt][2], rS[0][nt][3]);
    }
    __syncthreads();
    mla_warp_pv<kD, kBKV, kPPitch, kCW>(rO, sP, sKs, warp * kCW, lane);
  }
  cp_async_wait<0>();  // no tile at all: the Q group may still be in flight

  // l of each row: the four warps' sums (all under the same m).
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float l = row_l[hh];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (lane % 4 == 0) s_sum[warp * 16 + lane / 4 + hh * 8] = l;
  }
  __syncthreads();  // also: every warp is done with the K stages, which the O staging reuses
  float inv_l[2], lse[2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float l = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) l += s_sum[w * 16 + lane / 4 + hh * 8];
    inv_l[hh] = l > 0.f ? 1.f / l : 0.f;
    lse[hh] = l > 0.f ? (row_m[hh] + log2f(l)) * kLn2 : -INFINITY;
  }

  if (p.splits == 1) {
    half* sO = sK;  // (16, kDV) fp16, swizzled
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int row = lane / 4 + hh * 8;
#pragma unroll
      for (int dt = 0; dt < kCW / 8; ++dt)
        *reinterpret_cast<uint32_t*>(sO + swz<kDV>(row, warp * (kCW / 8) + dt) + (lane % 4) * 2) =
            pack_half2(rO[dt][2 * hh] * inv_l[hh], rO[dt][2 * hh + 1] * inv_l[hh]);
      if (warp == 0 && lane % 4 == 0 && row < m_rows) p.gL[q_row0 + row] = lse[hh];
    }
    __syncthreads();
    store_tile<16, kDV, kThreads>(p.gO + q_row0 * kDV, sO, 0, m_rows);
  } else {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int row = lane / 4 + hh * 8;
      if (row >= m_rows) continue;
      // (B, H, splits, N, kDV): bh = q_row / N, n = q_row % N.
      const int64_t q_row = q_row0 + row;
      const int64_t prow = (q_row / p.seq * p.splits + split) * p.seq + q_row % p.seq;
      float* dst = p.g_partial_O + prow * kDV + warp * kCW + (lane % 4) * 2;
#pragma unroll
      for (int dt = 0; dt < kCW / 8; ++dt)
        *reinterpret_cast<float2*>(dst + dt * 8) =
            make_float2(rO[dt][2 * hh] * inv_l[hh], rO[dt][2 * hh + 1] * inv_l[hh]);
      if (warp == 0 && lane % 4 == 0) p.g_partial_lse[prow] = lse[hh];
    }
  }
}

}  // namespace iosim_cuda
