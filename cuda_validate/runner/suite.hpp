// The suite file: which attention cases the runner builds, checks, times and
// labels for ncu. Host-only (no CUDA types), so it compiles with the host
// compiler's full warning set.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace iosim_cuda {

// One measured configuration. Field names follow iosim's vocabulary.
struct Case {
  std::string id;        // unique; derived from the fields unless given (id=...)
  std::string schedule;  // standard | flash1 | flash2 | block-sparse | flash-decoding | paged
  int batch = 0;
  int heads = 0;
  int kv_heads = 0;  // Hkv (decoding; defaults to H): query head h reads kv head h / (H / Hkv)
  int seq = 0;     // N
  int seq_kv = 0;  // Nkv (defaults to N)
  int head_dim = 0;
  int block_q = 0;   // flash only
  int block_kv = 0;  // flash only
  bool causal = false;
  int window = 0;       // flash2 forward with causal: a sliding window of W keys (iosim's --window)
  std::string pattern;  // block-sparse: local:W | strided:S | random:DENSITY:SEED | causal
  int splits = 0;       // flash-decoding (> 1), paged (1: no reduce kernel)
  int page_tokens = 0;  // paged: tokens per page (default 16)
  // flash-decoding and paged with Hkv = 1: a latent cache (MLA, absorbed form). Each cached row
  // has d columns and is both K (all d) and V (its first `latent` columns); O has `latent`
  // columns. 0: separate K and V of d columns.
  int latent = 0;
  std::string pass = "fwd";  // fwd | bwd (flash2 only: the two-pass backward)
  // flash2 only: another kernel of the FlashAttention-2 loop order (issue #27 item 5):
  // wg1_tma_fwd (one warpgroup, wgmma + TMA ring) or wg1_mma_fwd (4 warps, mma.sync +
  // cp.async ring); empty: flash2_fwd_kernel. stages: its K/V ring depth (2..6).
  std::string kernel;
  int stages = 0;
  std::string dtype = "fp16";  // fp16 | bf16 (bf16 only with kernel=...)
};

// A suite file that cannot be read or parsed; the message names file and line.
class SuiteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses a suite file. Format: one case per line, `schedule key=value ...`
// with keys B H N Nkv d bq bkv causal id, window (flash2's causal forward), and pattern (block-sparse), Hkv, splits,
// page, latent (decoding), pass (fwd | bwd), kernel, stages, dtype (flash2's wg1 kernels); '#' starts a
// comment. Unknown keys, missing keys and duplicate ids
// are errors.
std::vector<Case> load_suite(const std::string& path);

// The id used when a line gives none, e.g. "flash2_b4_h16_n1024_nkv1024_d64_bq128_bkv64_causal".
std::string default_case_id(const Case& c);

}  // namespace iosim_cuda
