// Set-up and checks of the block-sparse, flash-decoding and paged cases (extra_ops.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <set>
#include <stdexcept>

#include "../kernels/harness_kernels.cuh"
#include "../kernels/reference_bwd.cuh"
#include "../kernels/reference_ext.cuh"
#include "block_pattern.hpp"
#include "check_common.hpp"
#include "extra_ops.hpp"
#include "json.hpp"

namespace iosim_cuda {

namespace {

// Device allocations of one case, freed together.
class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena() {
    for (void* p : ptrs_) cudaFree(p);
  }
  template <typename T>
  T* alloc(std::size_t count) {
    if (count == 0) return nullptr;
    void* p = nullptr;
    IOSIM_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
    ptrs_.push_back(p);
    return static_cast<T*>(p);
  }

 private:
  std::vector<void*> ptrs_;
};

// Q and O of q_elems halves, K and V of kv_elems, allocated in that order (Q, K, V, O).
void alloc_qkvo(Arena* a, std::size_t q_elems, std::size_t kv_elems, half** gQ, half** gK,
                half** gV, half** gO) {
  *gQ = a->alloc<half>(q_elems);
  *gK = a->alloc<half>(kv_elems);
  *gV = a->alloc<half>(kv_elems);
  *gO = a->alloc<half>(q_elems);
}

void fill_uniform(half* p, std::size_t n, uint32_t seed, cudaStream_t stream) {
  init_uniform_kernel<<<1024, 256, 0, stream>>>(p, static_cast<int64_t>(n), seed);
  IOSIM_CUDA_CHECK(cudaGetLastError());
}

// What the check needs to know about a case's tensors.
struct CheckInputs {
  const half* gQ;
  const half* gK;  // logical, contiguous (B, Hkv, Nkv, d)
  const half* gV;  // (B, Hkv, Nkv, d), or gK for a latent cache (its first dv columns)
  half* gO;
  float* gL;
  int batch, heads, kv_heads, seq, seq_kv, d;
  float scale;
  bool causal;
  const unsigned char* g_block_mask;  // null: no block mask
  int block_q, block_kv, mask_cols;
  std::string reference;
  int dv = 0;  // O and V columns of a latent (MLA) case; 0: d, V its own tensor
};

// A device counter (in `a`) of the non-finite values in the given fp16 tensors, filled on
// `stream`.
unsigned long long* count_nonfinite_async(
    Arena* a, std::initializer_list<std::pair<const half*, std::size_t>> tensors,
    cudaStream_t stream) {
  unsigned long long* count = a->alloc<unsigned long long>(1);
  IOSIM_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(unsigned long long), stream));
  for (const auto& [g, n] : tensors) {
    count_nonfinite_kernel<<<1024, 256, 0, stream>>>(g, static_cast<int64_t>(n), count);
    IOSIM_CUDA_CHECK(cudaGetLastError());
  }
  return count;
}

struct ErrorStats {
  double max_abs_error = 0, max_abs_reference = 0, rel_l2_error = 0;
};

// Output vs reference on the sampled elements: max |got - ref| (inf on NaN), max |ref|,
// ||got - ref|| / ||ref||.
ErrorStats compare_outputs(const std::vector<float>& got, const std::vector<float>& ref) {
  ErrorStats st;
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - ref[i]);
    st.max_abs_error = std::isnan(e) ? INFINITY : std::max(st.max_abs_error, e);
    st.max_abs_reference = std::max(st.max_abs_reference, std::fabs(static_cast<double>(ref[i])));
    err2 += e * e;
    ref2 += static_cast<double>(ref[i]) * ref[i];
  }
  st.rel_l2_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  return st;
}

std::string run_check(const CheckInputs& in, const std::vector<RoleOp>& ops, cudaStream_t stream,
                      bool* passed) {
  const std::size_t bh = static_cast<std::size_t>(in.batch) * in.heads;
  const int dv = in.dv > 0 ? in.dv : in.d;  // O's columns
  const std::size_t o_elems = bh * in.seq * dv;
  IOSIM_CUDA_CHECK(cudaMemsetAsync(in.gO, 0xff, o_elems * sizeof(half), stream));
  IOSIM_CUDA_CHECK(cudaMemsetAsync(in.gL, 0xff, bh * in.seq * sizeof(float), stream));
  for (const auto& op : ops) op.launch(stream);

  Arena a;
  unsigned long long* nonfinite = count_nonfinite_async(&a, {{in.gO, o_elems}}, stream);

  const std::vector<int> rows = sample_rows(in.seq);
  const int n_rows = static_cast<int>(rows.size());
  int* g_rows = a.alloc<int>(rows.size());
  IOSIM_CUDA_CHECK(cudaMemcpyAsync(g_rows, rows.data(), rows.size() * sizeof(int),
                                   cudaMemcpyHostToDevice, stream));
  const std::size_t sample = bh * n_rows * dv;
  float* ref_O = a.alloc<float>(sample);
  float* ref_L = a.alloc<float>(bh * n_rows);
  float* got_O = a.alloc<float>(sample);
  float* got_L = a.alloc<float>(bh * n_rows);
  RefExtParams rp{};
  rp.gQ = in.gQ;
  rp.gK = in.gK;
  rp.gV = in.gV;
  rp.g_rows = g_rows;
  rp.n_rows = n_rows;
  rp.heads = in.heads;
  rp.kv_heads = in.kv_heads;
  rp.seq = in.seq;
  rp.seq_kv = in.seq_kv;
  rp.d = in.d;
  rp.dv = dv;
  rp.v_pitch = in.dv > 0 ? in.d : dv;  // a latent cache's V rows are K's rows
  rp.scale = in.scale;
  rp.causal = in.causal;
  rp.g_block_mask = in.g_block_mask;
  rp.block_q = in.block_q;
  rp.block_kv = in.block_kv;
  rp.mask_cols = in.mask_cols;
  rp.g_ref_O = ref_O;
  rp.g_ref_L = ref_L;
  const int ref_smem = reference_ext_smem_bytes(in.d, dv);
  IOSIM_CUDA_CHECK(cudaFuncSetAttribute(&reference_rows_ext_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, ref_smem));
  reference_rows_ext_kernel<<<dim3(n_rows, static_cast<unsigned>(bh)), kRefExtThreads, ref_smem,
                              stream>>>(rp);
  IOSIM_CUDA_CHECK(cudaGetLastError());
  gather_rows_kernel<<<256, 256, 0, stream>>>(in.gO, in.gL, g_rows, n_rows, in.seq, dv,
                                              static_cast<int64_t>(bh), got_O, got_L);
  IOSIM_CUDA_CHECK(cudaGetLastError());

  std::vector<float> h_ref(sample), h_got(sample), h_ref_L(bh * n_rows), h_got_L(bh * n_rows);
  unsigned long long h_nonfinite = 0;
  IOSIM_CUDA_CHECK(
      cudaMemcpyAsync(h_ref.data(), ref_O, sample * 4, cudaMemcpyDeviceToHost, stream));
  IOSIM_CUDA_CHECK(
      cudaMemcpyAsync(h_got.data(), got_O, sample * 4, cudaMemcpyDeviceToHost, stream));
  IOSIM_CUDA_CHECK(
      cudaMemcpyAsync(h_ref_L.data(), ref_L, bh * n_rows * 4, cudaMemcpyDeviceToHost, stream));
  IOSIM_CUDA_CHECK(
      cudaMemcpyAsync(h_got_L.data(), got_L, bh * n_rows * 4, cudaMemcpyDeviceToHost, stream));
  IOSIM_CUDA_CHECK(
      cudaMemcpyAsync(&h_nonfinite, nonfinite, sizeof h_nonfinite, cudaMemcpyDeviceToHost, stream));
  IOSIM_CUDA_CHECK(cudaStreamSynchronize(stream));

  const ErrorStats st = compare_outputs(h_got, h_ref);
  const double max_err = st.max_abs_error, max_ref = st.max_abs_reference, rel_l2 = st.rel_l2_error;
  // L: a row that sees no key has L = -inf in both; any other non-finite value is an error.
  double max_err_L = 0;
  long long empty_rows = 0;
  for (std::size_t i = 0; i < h_ref_L.size(); ++i) {
    const double r = h_ref_L[i], g = h_got_L[i];
    if (std::isinf(r) && r < 0) {
      ++empty_rows;
      if (!(std::isinf(g) && g < 0)) max_err_L = INFINITY;
      continue;
    }
    const double e = std::fabs(g - r);
    max_err_L = std::isnan(e) ? INFINITY : std::max(max_err_L, e);
  }
  const double tol_abs = 1e-3 + 2e-2 * max_ref;
  *passed = h_nonfinite == 0 && rel_l2 <= 1e-2 && max_err <= tol_abs && max_err_L <= 1e-2;
  JsonObject o;
  add_check_errors(o, max_err, max_ref, rel_l2, tol_abs, 1e-2, json_num(max_err_L), h_nonfinite,
                   n_rows)
      .add("rows_without_visible_key", json_int(empty_rows))
      .add("reference", json_str(in.reference))
      .add("passed", json_bool(*passed));
  std::fprintf(stderr,
               "  check: max_abs_error %.3g (tol %.3g) rel_l2 %.3g lse %.3g nonfinite %llu -> %s\n",
               max_err, tol_abs, rel_l2, max_err_L, h_nonfinite, *passed ? "pass" : "FAIL");
  return o.str();
}

std::string tiling_common(const Case& c, const FlashTiling& t, JsonObject* o) {
  o->add("block_q", json_int(c.block_q))
      .add("block_kv", json_int(c.block_kv))
      .add("threads", json_int(t.threads))
      .add("smem_bytes_per_cta", json_int(t.smem_bytes_per_cta))
      .add("pipeline_stages", json_int(t.pipeline_stages))
      .add("copy", json_str(t.copy))
      .add("mma", json_str("mma.sync.m16n8k16 (ldmatrix)"));
  return o->str();
}

ExtraCase make_block_sparse_case(const Case& c, uint32_t seed, cudaStream_t stream) {
  const int d = c.head_dim;
  BlockList blocks;
  try {
    blocks = make_block_list(c.pattern, c.seq, c.seq_kv, c.block_q, c.block_kv, c.causal);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
  const std::size_t bh = static_cast<std::size_t>(c.batch) * c.heads;
  const std::size_t q_elems = bh * c.seq * d, kv_elems = bh * c.seq_kv * d;
  require_device_memory((2 * q_elems + 2 * kv_elems) * 2 + bh * c.seq * 4 + blocks.dense.size() +
                        4 * (blocks.row_ptr.size() + blocks.col_idx.size()));
  auto arena = std::make_shared<Arena>();
  half *gQ, *gK, *gV, *gO;
  alloc_qkvo(arena.get(), q_elems, kv_elems, &gQ, &gK, &gV, &gO);
  float* gL = arena->alloc<float>(bh * c.seq);
  int* g_row_ptr = arena->alloc<int>(blocks.row_ptr.size());
  // At least one entry, so the kernel's column pointer is valid even with no nonzero block.
  int* g_cols = arena->alloc<int>(std::max<std::size_t>(1, blocks.col_idx.size()));
  unsigned char* g_mask = arena->alloc<unsigned char>(blocks.dense.size());
  fill_uniform(gQ, q_elems, seed + 1, stream);
  fill_uniform(gK, kv_elems, seed + 2, stream);
  fill_uniform(gV, kv_elems, seed + 3, stream);
  IOSIM_CUDA_CHECK(cudaMemcpyAsync(g_row_ptr, blocks.row_ptr.data(), blocks.row_ptr.size() * 4,
                                   cudaMemcpyHostToDevice, stream));
  if (!blocks.col_idx.empty())
    IOSIM_CUDA_CHECK(cudaMemcpyAsync(g_cols, blocks.col_idx.data(), blocks.col_idx.size() * 4,
                                     cudaMemcpyHostToDevice, stream));
  IOSIM_CUDA_CHECK(cudaMemcpyAsync(g_mask, blocks.dense.data(), blocks.dense.size(),
                                   cudaMemcpyHostToDevice, stream));
  IOSIM_CUDA_CHECK(cudaStreamSynchronize(stream));  // the host vectors go out of scope

  BlockSparseParams bp{};
  bp.attn.gQ = gQ;
  bp.attn.gK = gK;
  bp.attn.gV = gV;
  bp.attn.gO = gO;
  bp.attn.gL = gL;
  bp.attn.batch = c.batch;
  bp.attn.heads = c.heads;
  bp.attn.seq = c.seq;
  bp.attn.seq_kv = c.seq_kv;
  bp.attn.scale = 1.f / std::sqrt(static_cast<float>(d));
  bp.attn.causal = c.causal;
  bp.g_row_ptr = g_row_ptr;
  bp.g_cols = g_cols;

  ExtraCase x;
  RoleOp op;
  FlashTiling t;
  std::string why;
  if (!make_block_sparse_op(d, c.block_q, c.block_kv, bp, &op, &t, &why))
    throw std::runtime_error(why);
  x.ops.push_back(op);
  JsonObject tj;
  tiling_common(c, t, &tj);
  const long long all_blocks = static_cast<long long>(blocks.rows) * blocks.cols;
  tj.add("nonzero_blocks", json_int(blocks.nonzero()))
      .add("blocks", json_int(all_blocks))
      .add("density",
           json_num(static_cast<double>(blocks.nonzero()) / static_cast<double>(all_blocks)))
      .add("block_list", json_str("CSR int32 row_ptr (Tr + 1) and column indices, read by the "
                                  "kernel (4 bytes per nonzero block)"));
  x.tiling_json = tj.str();
  CheckInputs in{
      gQ,          gK,
      gV,          gO,
      gL,          c.batch,
      c.heads,     c.heads,
      c.seq,       c.seq_kv,
      d,           bp.attn.scale,
      c.causal,    g_mask,
      c.block_q,   c.block_kv,
      blocks.cols, "fp32 naive CUDA kernel over the same block mask, sampled rows, all (b, h)"};
  const std::vector<RoleOp> ops = x.ops;
  x.check = [in, ops](cudaStream_t s, bool* passed) { return run_check(in, ops, s, passed); };
  x.storage = arena;
  return x;
}

// Keys per split of a decode case: whole BLOCK_KV tiles; a split count that leaves a split empty
// (or more splits than the reduce takes) is refused.
// The split-KV kernels' tiling facts beyond tiling_common's (decode and MLA decode alike): the
// reduce kernel's launch and the partials' layout for splits > 1, the page pool when paged. `dv`
// is O's width, named `width` in the layouts ("d", or "latent"); `kv_heads` the pool's heads.
void add_split_kv_tiling(int splits, int dv, const char* width, bool paged, int page_tokens,
                         int pages_per_seq, long long pool_pages, const char* kv_heads,
                         JsonObject* tj) {
  if (splits > 1) {
    tj->add("reduce", JsonObject()
                          .add("threads", json_int(kReduceThreads))
                          .add("rows_per_cta", json_int(decode_reduce_rows_per_cta(dv)))
                          .str())
        .add("partial_layout",
             json_str(std::string("partial_O (B, H, splits, N, ") + width +
                      ") fp32, normalized; partial_lse (B, H, splits, N) fp32, natural log"));
  }
  if (paged) {
    tj->add("page_tokens", json_int(page_tokens))
        .add("pages_per_seq", json_int(pages_per_seq))
        .add("pool_pages", json_int(pool_pages))
        .add("pool_layout", json_str(std::string("(pages, ") + kv_heads + ", page_tokens, d) fp16"))
        .add("block_table", json_str("(B, pages_per_seq) int32, a random permutation of the "
                                     "pool; each split CTA reads its slice once"));
  }
}

int decode_split_tokens(const Case& c) {
  if (c.splits > kReduceMaxSplits)
    throw std::runtime_error("splits " + std::to_string(c.splits) + " > " +
                             std::to_string(kReduceMaxSplits));
  const int tiles = (c.seq_kv + c.block_kv - 1) / c.block_kv;
  const int split_tokens = (tiles + c.splits - 1) / c.splits * c.block_kv;
  const int splits_used = (c.seq_kv + split_tokens - 1) / split_tokens;
  if (splits_used != c.splits)
    throw std::runtime_error("splits=" + std::to_string(c.splits) + " of " + std::to_string(tiles) +
                             " tiles of " + std::to_string(c.block_kv) + " keys leaves only " +
                             std::to_string(splits_used) + " non-empty splits");
  return split_tokens;
}

// A random permutation of the pool's pages as the block table (B, pages_per_seq), copied to the
// device (in `arena`), and the contiguous cache src (B, Hkv, Nkv, d) scattered into a new pool
// (pages, Hkv, page_tokens, d) whose slots past each sequence's end hold NaN (a kernel reading
// them fails its check). Returns the pool; *g_table gets the table.
half* make_page_pool(Arena* arena, const half* src, int batch, int kv_heads, int seq_kv, int d,
                     int page_tokens, uint32_t seed, int** g_table, cudaStream_t stream) {
  const int pages_per_seq = (seq_kv + page_tokens - 1) / page_tokens;
  const std::size_t pool_pages = static_cast<std::size_t>(batch) * pages_per_seq;
  const std::size_t pool_elems = pool_pages * kv_heads * page_tokens * d;
  std::vector<int> table(pool_pages);
  for (std::size_t i = 0; i < pool_pages; ++i) table[i] = static_cast<int>(i);
  std::mt19937_64 rng(seed);
  std::shuffle(table.begin(), table.end(), rng);
  *g_table = arena->alloc<int>(pool_pages);
  half* pool = arena->alloc<half>(pool_elems);
  IOSIM_CUDA_CHECK(
      cudaMemcpyAsync(*g_table, table.data(), pool_pages * 4, cudaMemcpyHostToDevice, stream));
  IOSIM_CUDA_CHECK(cudaMemsetAsync(pool, 0xff, pool_elems * 2, stream));
  scatter_to_pages_kernel<<<1024, 256, 0, stream>>>(src, pool, *g_table, batch, kv_heads, seq_kv, d,
                                                    page_tokens, pages_per_seq);
  IOSIM_CUDA_CHECK(cudaGetLastError());
  IOSIM_CUDA_CHECK(cudaStreamSynchronize(stream));  // `table` goes out of scope
  return pool;
}

// Latent-KV (MLA) decoding (c.latent > 0, Hkv = 1): Q (B, H, N, d), one cache (B, Nkv, d) or its
// page pool, no V tensor; O (B, H, N, latent). The H * N query rows of a sequence are packed 16
// to a CTA (mla_decode_fwd.cuh).
ExtraCase make_mla_decode_case(const Case& c, uint32_t seed, cudaStream_t stream) {
  const int d = c.head_dim, dv = c.latent;
  const bool paged = c.schedule == "paged";
  const int split_tokens = decode_split_tokens(c);
  const std::size_t bh = static_cast<std::size_t>(c.batch) * c.heads;
  const std::size_t q_elems = bh * c.seq * d, o_elems = bh * c.seq * dv;
  const std::size_t kv_elems = static_cast<std::size_t>(c.batch) * c.seq_kv * d;
  const int page_tokens = paged ? c.page_tokens : 0;
  const int pages_per_seq = paged ? (c.seq_kv + page_tokens - 1) / page_tokens : 0;
  const std::size_t pool_pages = static_cast<std::size_t>(c.batch) * pages_per_seq;
  const std::size_t pool_elems = pool_pages * page_tokens * d;
  const std::size_t partial_rows = c.splits > 1 ? bh * c.splits * c.seq : 0;
  require_device_memory((q_elems + o_elems + kv_elems + pool_elems) * 2 + bh * c.seq * 4 +
                        partial_rows * (dv + 1) * 4 + pool_pages * 4);

  auto arena = std::make_shared<Arena>();
  half* gQ = arena->alloc<half>(q_elems);
  half* gK = arena->alloc<half>(kv_elems);
  half* gO = arena->alloc<half>(o_elems);
  float* gL = arena->alloc<float>(bh * c.seq);
  float* g_pO = arena->alloc<float>(partial_rows * dv);
  float* g_plse = arena->alloc<float>(partial_rows);
  fill_uniform(gQ, q_elems, seed + 1, stream);
  fill_uniform(gK, kv_elems, seed + 2, stream);
  int* g_table = nullptr;
  half* gK_pool = paged ? make_page_pool(arena.get(), gK, c.batch, 1, c.seq_kv, d, page_tokens,
                                         seed, &g_table, stream)
                        : nullptr;

  DecodeParams p{};
  p.gQ = gQ;
  p.gK = paged ? gK_pool : gK;
  p.gV = nullptr;  // V is the first dv columns of the cache's rows
  p.g_block_table = g_table;
  p.gO = gO;
  p.gL = gL;
  p.g_partial_O = g_pO;
  p.g_partial_lse = g_plse;
  p.batch = c.batch;
  p.heads = c.heads;
  p.kv_heads = 1;
  p.seq = c.seq;
  p.seq_kv = c.seq_kv;
  p.splits = c.splits;
  p.split_tokens = split_tokens;
  p.page_tokens = paged ? page_tokens : 1;
  p.pages_per_seq = pages_per_seq;
  p.scale = 1.f / std::sqrt(static_cast<float>(d));

  ExtraCase x;
  FlashTiling t;
  std::string why;
  if (!make_mla_decode_ops(d, dv, c.block_kv, paged, p, &x.ops, &t, &why))
    throw std::runtime_error(why);
  JsonObject tj;
  // A CTA's query tile is 16 packed rows (iosim's block_q; the suite line states none).
  Case tiled = c;
  tiled.block_q = 16;
  tiling_common(tiled, t, &tj);
  const int rows = c.heads * c.seq;
  tj.add("splits", json_int(c.splits))
      .add("split_tokens", json_int(split_tokens))
      .add("query_rows_per_cta", json_int(std::min(rows, 16)))
      .add("query_row_blocks", json_int((rows + 15) / 16))
      .add("latent", json_int(dv))
      .add("layout", json_str("Q (B, H, N, d), cache (B, Nkv, d): K = all d columns, V = the "
                              "first latent columns of the same rows; O (B, H, N, latent)"));
  add_split_kv_tiling(c.splits, dv, "latent", paged, page_tokens, pages_per_seq,
                      static_cast<long long>(pool_pages), "1", &tj);
  x.tiling_json = tj.str();
  CheckInputs in{gQ,
                 gK,
                 gK,
                 gO,
                 gL,
                 c.batch,
                 c.heads,
                 1,
                 c.seq,
                 c.seq_kv,
                 d,
                 p.scale,
                 false,
                 nullptr,
                 1,
                 1,
                 0,
                 paged ? "fp32 naive CUDA kernel, O = softmax(scale Q K^T) K[:, :latent], over "
                         "the contiguous cache the pool was scattered from, sampled rows, all "
                         "(b, h)"
                       : "fp32 naive CUDA kernel, O = softmax(scale Q K^T) K[:, :latent], "
                         "sampled rows, all (b, h)",
                 dv};
  const std::vector<RoleOp> ops = x.ops;
  x.check = [in, ops](cudaStream_t s, bool* passed) { return run_check(in, ops, s, passed); };
  x.storage = arena;
  return x;
}

ExtraCase make_decode_case(const Case& c, uint32_t seed, cudaStream_t stream) {
  if (c.latent > 0) return make_mla_decode_case(c, seed, stream);
  const int d = c.head_dim;
  const bool paged = c.schedule == "paged";
  const int group = c.heads / c.kv_heads;
  if (group * c.seq > 16)
    throw std::runtime_error("(H / Hkv) * N = " + std::to_string(group * c.seq) +
                             " query rows per CTA; the decode kernel takes at most 16");
  const int split_tokens = decode_split_tokens(c);

  const std::size_t bh = static_cast<std::size_t>(c.batch) * c.heads;
  const std::size_t kv_bh = static_cast<std::size_t>(c.batch) * c.kv_heads;
  const std::size_t q_elems = bh * c.seq * d, kv_elems = kv_bh * c.seq_kv * d;
  const int page_tokens = paged ? c.page_tokens : 0;
  const int pages_per_seq = paged ? (c.seq_kv + page_tokens - 1) / page_tokens : 0;
  const std::size_t pool_pages = static_cast<std::size_t>(c.batch) * pages_per_seq;
  const std::size_t pool_elems = pool_pages * c.kv_heads * page_tokens * d;
  const std::size_t partial_rows = c.splits > 1 ? bh * c.splits * c.seq : 0;
  require_device_memory((2 * q_elems + 2 * kv_elems + 2 * pool_elems) * 2 + bh * c.seq * 4 +
                        partial_rows * (d + 1) * 4 + pool_pages * 4);

  auto arena = std::make_shared<Arena>();
  half *gQ, *gK, *gV, *gO;
  alloc_qkvo(arena.get(), q_elems, kv_elems, &gQ, &gK, &gV, &gO);
  float* gL = arena->alloc<float>(bh * c.seq);
  float* g_pO = arena->alloc<float>(partial_rows * d);
  float* g_plse = arena->alloc<float>(partial_rows);
  fill_uniform(gQ, q_elems, seed + 1, stream);
  fill_uniform(gK, kv_elems, seed + 2, stream);
  fill_uniform(gV, kv_elems, seed + 3, stream);

  half *gK_pool = nullptr, *gV_pool = nullptr;
  int* g_table = nullptr;
  if (paged) {
    // Every sequence's pages at random places in one pool: a random permutation.
    std::vector<int> table(pool_pages);
    for (std::size_t i = 0; i < pool_pages; ++i) table[i] = static_cast<int>(i);
    std::mt19937_64 rng(seed);
    std::shuffle(table.begin(), table.end(), rng);
    g_table = arena->alloc<int>(pool_pages);
    gK_pool = arena->alloc<half>(pool_elems);
    gV_pool = arena->alloc<half>(pool_elems);
    IOSIM_CUDA_CHECK(
        cudaMemcpyAsync(g_table, table.data(), pool_pages * 4, cudaMemcpyHostToDevice, stream));
    // NaN in the slots past each sequence's end: a kernel reading them would fail its check.
    IOSIM_CUDA_CHECK(cudaMemsetAsync(gK_pool, 0xff, pool_elems * 2, stream));
    IOSIM_CUDA_CHECK(cudaMemsetAsync(gV_pool, 0xff, pool_elems * 2, stream));
    for (auto [src, dst] : {std::pair<const half*, half*>{gK, gK_pool}, {gV, gV_pool}}) {
      scatter_to_pages_kernel<<<1024, 256, 0, stream>>>(src, dst, g_table, c.batch, c.kv_heads,
                                                        c.seq_kv, d, page_tokens, pages_per_seq);
      IOSIM_CUDA_CHECK(cudaGetLastError());
    }
    IOSIM_CUDA_CHECK(cudaStreamSynchronize(stream));  // `table` goes out of scope
  }

  DecodeParams p{};
  p.gQ = gQ;
  p.gK = paged ? gK_pool : gK;
  p.gV = paged ? gV_pool : gV;
  p.g_block_table = g_table;
  p.gO = gO;
  p.gL = gL;
  p.g_partial_O = g_pO;
  p.g_partial_lse = g_plse;
  p.batch = c.batch;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.seq = c.seq;
  p.seq_kv = c.seq_kv;
  p.splits = c.splits;
  p.split_tokens = split_tokens;
  p.page_tokens = paged ? page_tokens : 1;
  p.pages_per_seq = pages_per_seq;
  p.scale = 1.f / std::sqrt(static_cast<float>(d));

  ExtraCase x;
  FlashTiling t;
  std::string why;
  if (!make_decode_ops(d, c.block_kv, paged, p, &x.ops, &t, &why)) throw std::runtime_error(why);
  JsonObject tj;
  tiling_common(c, t, &tj);
  tj.add("splits", json_int(c.splits))
      .add("split_tokens", json_int(split_tokens))
      .add("query_rows_per_cta", json_int(group * c.seq));
  add_split_kv_tiling(c.splits, d, "d", paged, page_tokens, pages_per_seq,
                      static_cast<long long>(pool_pages), "Hkv", &tj);
  x.tiling_json = tj.str();
  CheckInputs in{gQ,
                 gK,
                 gV,
                 gO,
                 gL,
                 c.batch,
                 c.heads,
                 c.kv_heads,
                 c.seq,
                 c.seq_kv,
                 d,
                 p.scale,
                 c.causal,
                 nullptr,
                 1,
                 1,
                 0,
                 paged ? "fp32 naive CUDA kernel over the contiguous cache the pool was "
                         "scattered from, sampled rows, all (b, h)"
                       : "fp32 naive CUDA kernel, sampled rows, all (b, h)"};
  const std::vector<RoleOp> ops = x.ops;
  x.check = [in, ops](cudaStream_t s, bool* passed) { return run_check(in, ops, s, passed); };
  x.storage = arena;
  return x;
}

// The two-pass backward's check: poisons dQ, dK, dV and D with NaN, runs the roles once more,
// scans the gradients for non-finite values and compares dQ on sampled query rows and dK, dV
// on sampled key rows, all (b, h), with the fp32 reference (kernels/reference_bwd.cuh).
std::string run_bwd_check(const BwdParams& p, int d, const std::vector<RoleOp>& ops,
                          cudaStream_t stream, bool* passed) {
  const std::size_t bh = static_cast<std::size_t>(p.batch) * p.heads;
  const std::size_t q_elems = bh * p.seq * d, kv_elems = bh * p.seq_kv * d;
  IOSIM_CUDA_CHECK(cudaMemsetAsync(p.gdQ, 0xff, q_elems * sizeof(half), stream));
  IOSIM_CUDA_CHECK(cudaMemsetAsync(p.gdK, 0xff, kv_elems * sizeof(half), stream));
  IOSIM_CUDA_CHECK(cudaMemsetAsync(p.gdV, 0xff, kv_elems * sizeof(half), stream));
  IOSIM_CUDA_CHECK(cudaMemsetAsync(p.gD, 0xff, bh * p.seq * sizeof(float), stream));
  for (const auto& op : ops) op.launch(stream);

  Arena a;
  unsigned long long* nonfinite =
      count_nonfinite_async(&a, {{p.gdQ, q_elems}, {p.gdK, kv_elems}, {p.gdV, kv_elems}}, stream);

  const std::vector<int> q_rows = sample_rows(p.seq), k_rows = sample_rows(p.seq_kv);
  const int nq = static_cast<int>(q_rows.size()), nk = static_cast<int>(k_rows.size());
  int* g_q_rows = a.alloc<int>(q_rows.size());
  int* g_k_rows = a.alloc<int>(k_rows.size());
  IOSIM_CUDA_CHECK(cudaMemcpyAsync(g_q_rows, q_rows.data(), q_rows.size() * sizeof(int),
                                   cudaMemcpyHostToDevice, stream));
  IOSIM_CUDA_CHECK(cudaMemcpyAsync(g_k_rows, k_rows.data(), k_rows.size() * sizeof(int),
                                   cudaMemcpyHostToDevice, stream));
  // Buffers: ref dQ, got dQ, ref dK, ref dV, got dK, got dV, ref L, got L.
  const std::size_t sq = bh * nq * d, sk = bh * nk * d;
  std::vector<std::vector<float>> h(8);
  const std::size_t sizes[8] = {sq, sq, sk, sk, sk, sk, bh * nq, bh * nq};
  float* g[8];
  for (int i = 0; i < 8; ++i) {
    g[i] = a.alloc<float>(sizes[i]);
    h[i].resize(sizes[i]);
  }
  RefBwdParams rq{p, g_q_rows, nq, d, g[0], nullptr, g[1], nullptr, g[6]};
  const int smem_q = (2 * p.seq_kv + 3 * d) * static_cast<int>(sizeof(float));
  IOSIM_CUDA_CHECK(cudaFuncSetAttribute(&reference_bwd_q_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem_q));
  reference_bwd_q_kernel<<<dim3(nq, static_cast<unsigned>(bh)), kRefBwdThreads, smem_q, stream>>>(
      rq);
  IOSIM_CUDA_CHECK(cudaGetLastError());
  RefBwdParams rk{p, g_k_rows, nk, d, g[2], g[3], g[4], g[5], nullptr};
  const int smem_k = (2 * p.seq + 2 * d) * static_cast<int>(sizeof(float));
  IOSIM_CUDA_CHECK(cudaFuncSetAttribute(&reference_bwd_kv_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem_k));
  reference_bwd_kv_kernel<<<dim3(nk, static_cast<unsigned>(bh)), kRefBwdThreads, smem_k, stream>>>(
      rk);
  IOSIM_CUDA_CHECK(cudaGetLastError());
  gather_rows_kernel<<<256, 256, 0, stream>>>(p.gdQ, p.gL, g_q_rows, nq, p.seq, d,
                                              static_cast<int64_t>(bh), g[1], g[7]);
  IOSIM_CUDA_CHECK(cudaGetLastError());
  for (int i = 0; i < 8; ++i)
    IOSIM_CUDA_CHECK(
        cudaMemcpyAsync(h[i].data(), g[i], sizes[i] * 4, cudaMemcpyDeviceToHost, stream));
  unsigned long long h_nonfinite = 0;
  IOSIM_CUDA_CHECK(
      cudaMemcpyAsync(&h_nonfinite, nonfinite, sizeof h_nonfinite, cudaMemcpyDeviceToHost, stream));
  IOSIM_CUDA_CHECK(cudaStreamSynchronize(stream));

  // Two fp16 roundings (P and dS) feed each gradient's products, against one (P) in the
  // forward: twice the forward's relative tolerances.
  const double tol_rel = 2e-2;
  const ErrorStats st[3] = {compare_outputs(h[1], h[0]), compare_outputs(h[4], h[2]),
                            compare_outputs(h[5], h[3])};
  const char* names[3] = {"dq", "dk", "dv"};
  JsonObject grads;
  ErrorStats worst;
  bool all_ok = h_nonfinite == 0;
  for (int t = 0; t < 3; ++t) {
    const double tol_abs = 1e-3 + 4e-2 * st[t].max_abs_reference;
    const bool ok = st[t].rel_l2_error <= tol_rel && st[t].max_abs_error <= tol_abs;
    all_ok = all_ok && ok;
    grads.add(names[t], JsonObject()
                            .add("max_abs_error", json_num(st[t].max_abs_error))
                            .add("max_abs_reference", json_num(st[t].max_abs_reference))
                            .add("rel_l2_error", json_num(st[t].rel_l2_error))
                            .add("tolerance_max_abs", json_num(tol_abs))
                            .add("tolerance_rel_l2", json_num(tol_rel))
                            .add("passed", json_bool(ok))
                            .str());
    std::fprintf(stderr,
                 "  check %s: max_abs_error %.3g (tol %.3g, |ref| %.3g) rel_l2 %.3g -> %s\n",
                 names[t], st[t].max_abs_error, tol_abs, st[t].max_abs_reference,
                 st[t].rel_l2_error, ok ? "pass" : "FAIL");
    if (t == 0 || st[t].rel_l2_error > worst.rel_l2_error) worst = st[t];
  }
  double max_err_L = 0;  // the forward's L against the reference's own softmax
  for (std::size_t i = 0; i < h[6].size(); ++i) {
    const double e = std::fabs(static_cast<double>(h[7][i]) - h[6][i]);
    max_err_L = std::isnan(e) ? INFINITY : std::max(max_err_L, e);
  }
  all_ok = all_ok && max_err_L <= 1e-2;
  *passed = all_ok;
  JsonObject o;
  add_check_errors(o, worst.max_abs_error, worst.max_abs_reference, worst.rel_l2_error,
                   1e-3 + 4e-2 * worst.max_abs_reference, tol_rel, json_num(max_err_L), h_nonfinite,
                   nq)
      .add("key_rows_checked_per_head", json_int(nk))
      .add("gradients", grads.str())
      .add("reference",
           json_str("fp32 naive CUDA kernels: dQ of sampled query rows (own softmax), dK and dV "
                    "of sampled key rows (the forward's L), D from the forward's O, all (b, h); "
                    "the top-level errors are the gradient with the largest rel_l2_error"))
      .add("passed", json_bool(all_ok));
  std::fprintf(stderr, "  check: lse %.3g nonfinite %llu -> %s\n", max_err_L, h_nonfinite,
               all_ok ? "pass" : "FAIL");
  return o.str();
}

// Backward (pass=bwd): random Q, K, V, dO; our flash2 forward (128 x 64 tiles) makes O and
// L once, outside the measured roles; then bwd_pre and bwd_main.
ExtraCase make_two_pass_bwd_case(const Case& c, uint32_t seed, cudaStream_t stream) {
  const int d = c.head_dim;
  if (c.seq % 8 != 0) throw std::runtime_error("the two-pass backward needs N % 8 == 0");
  const std::size_t bh = static_cast<std::size_t>(c.batch) * c.heads;
  const std::size_t q_elems = bh * c.seq * d, kv_elems = bh * c.seq_kv * d;
  require_device_memory((4 * q_elems + 4 * kv_elems) * 2 + 2 * bh * c.seq * 4);
  auto arena = std::make_shared<Arena>();
  half *gQ, *gK, *gV, *gO;
  alloc_qkvo(arena.get(), q_elems, kv_elems, &gQ, &gK, &gV, &gO);
  half* gdO = arena->alloc<half>(q_elems);
  half* gdQ = arena->alloc<half>(q_elems);
  half* gdK = arena->alloc<half>(kv_elems);
  half* gdV = arena->alloc<half>(kv_elems);
  float* gL = arena->alloc<float>(bh * c.seq);
  float* gD = arena->alloc<float>(bh * c.seq);
  fill_uniform(gQ, q_elems, seed + 1, stream);
  fill_uniform(gK, kv_elems, seed + 2, stream);
  fill_uniform(gV, kv_elems, seed + 3, stream);
  fill_uniform(gdO, q_elems, seed + 4, stream);

  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  const AttnParams fp{gQ,      gK,      gV,    gO,       gL,    nullptr,  nullptr,
                      c.batch, c.heads, c.seq, c.seq_kv, scale, c.causal, 0};
  RoleOp fwd;
  FlashTiling ft;
  std::string why;
  if (!make_flash2_op(d, 128, 64, fp, &fwd, &ft, &why)) throw std::runtime_error(why);
  fwd.launch(stream);
  IOSIM_CUDA_CHECK(cudaStreamSynchronize(stream));

  BwdParams p{gQ,  gK,  gV,      gO,      gdO,   gL,       gD,    gdQ,
              gdK, gdV, c.batch, c.heads, c.seq, c.seq_kv, scale, c.causal};
  ExtraCase x;
  BwdTiling t;
  if (!make_two_pass_bwd_ops(d, c.block_q, c.block_kv, p, &x.ops, &t, &why))
    throw std::runtime_error(why);
  JsonObject tj;
  tiling_common(c, FlashTiling{t.threads, t.smem_bytes_per_cta, t.pipeline_stages, "cp.async"},
                &tj);
  tj.add("registers_per_thread", json_int(t.registers_per_thread))
      .add("score_chunk", json_int(t.score_chunk))
      .add("forward", json_str(fwd.kernel + ", run once before the case (not timed, not "
                                            "profiled) to make O and L"));
  x.tiling_json = tj.str();
  JsonObject kj;
  kj.add("name", json_str("two_pass_bwd"))
      .add("dataflow", JsonObject().add("backward", json_str("two_pass")).str())
      .add("tiles", JsonObject()
                        .add("block_q", json_int(c.block_q))
                        .add("block_kv", json_int(c.block_kv))
                        .add("stages", json_int(t.pipeline_stages))
                        .add("score_chunk", json_int(t.score_chunk))
                        .str())
      .add("mechanisms", JsonObject()
                             .add("mma", json_str("mma_sync"))
                             .add("load", json_str("cp_async"))
                             .add("warp_roles", json_str("uniform"))
                             .add("persistent", json_bool(false))
                             .str())
      .add("launch", JsonObject()
                         .add("threads", json_int(t.threads))
                         .add("registers_per_thread", json_int(t.registers_per_thread))
                         .add("smem_bytes_per_cta", json_int(t.smem_bytes_per_cta))
                         .str());
  x.kernel_json = kj.str();
  const std::vector<RoleOp> ops = x.ops;
  x.check = [p, d, ops](cudaStream_t s, bool* passed) {
    return run_bwd_check(p, d, ops, s, passed);
  };
  x.storage = arena;
  return x;
}

}  // namespace

bool is_extra_case(const Case& c) {
  return c.pass == "bwd" || c.schedule == "block-sparse" || c.schedule == "flash-decoding" ||
         c.schedule == "paged";
}

ExtraCase make_extra_case(const Case& c, uint32_t seed, cudaStream_t stream) {
  // A latent cache's d (576) is past the other kernels' 256; its kernel names what it compiles.
  if (c.head_dim % 8 != 0 || (c.head_dim > 256 && c.latent == 0))
    throw std::runtime_error("head_dim must be a multiple of 8, <= 256");
  if (c.pass == "bwd") return make_two_pass_bwd_case(c, seed, stream);
  if (c.schedule == "block-sparse") return make_block_sparse_case(c, seed, stream);
  if (c.causal && c.seq > 1)
    throw std::runtime_error("the decode kernels take no causal mask (seq 1 sees every key)");
  return make_decode_case(c, seed, stream);
}

void launch_reference_rows_ext(const half* gQ, const half* gK, const half* gV, const int* g_rows,
                               int n_rows, int batch_heads, int heads, int seq, int seq_kv, int d,
                               float scale, bool causal, float* ref_O, float* ref_L,
                               cudaStream_t stream) {
  RefExtParams rp{};
  rp.gQ = gQ;
  rp.gK = gK;
  rp.gV = gV;
  rp.g_rows = g_rows;
  rp.n_rows = n_rows;
  rp.heads = heads;
  rp.kv_heads = heads;
  rp.seq = seq;
  rp.seq_kv = seq_kv;
  rp.d = d;
  rp.scale = scale;
  rp.causal = causal;
  rp.g_ref_O = ref_O;
  rp.g_ref_L = ref_L;
  const int ref_smem = (kRefExtChunk + d + kRefExtThreads) * static_cast<int>(sizeof(float));
  IOSIM_CUDA_CHECK(cudaFuncSetAttribute(&reference_rows_ext_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, ref_smem));
  reference_rows_ext_kernel<<<dim3(n_rows, static_cast<unsigned>(batch_heads)), kRefExtThreads,
                              ref_smem, stream>>>(rp);
  IOSIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace iosim_cuda
