#pragma once
// The attention problem a user asks about, independent of any schedule or GPU.
#include <cstdint>
#include <memory>
#include <string>

#include "sim/dtype.hpp"

namespace iosim {

enum class Pass { fwd, bwd, fwdbwd };

struct BlockPattern;  // sim/block_mask.hpp

/// "fwd" | "bwd" | "fwdbwd".
std::string pass_name(Pass p);
/// Parses a pass name; throws ConfigError listing the valid names.
Pass parse_pass(const std::string& s);

/// One attention call: O = softmax(scale * Q K^T [+ mask]) [dropout] V, per batch and head.
struct AttentionProblem {
  std::int64_t batch = 1;     // B
  std::int64_t heads = 1;     // H
  std::int64_t seq = 1;       // N, query length
  std::int64_t seq_kv = 1;    // N_kv, key/value length (= N unless set)
  std::int64_t head_dim = 64; // d
  Dtype dtype = Dtype::fp16;
  bool causal = false;        // bottom-right aligned: query i sees key j iff j <= i + (N_kv - N)
  bool mask = false;          // an elementwise mask computed from indices (see README)
  double dropout = 0.0;       // drop probability
  Pass pass = Pass::fwd;
  // Block sparsity (--pattern, block-sparse only): which blocks are computed; null: all.
  std::shared_ptr<const BlockPattern> pattern;

  std::int64_t bh() const { return batch * heads; }
  std::int64_t elem_bytes() const { return dtype_bytes(dtype); }
  /// Softmax scale 1/sqrt(d).
  double scale() const;
};

/// Checks sizes and flag combinations; throws ConfigError naming the offending flag and value.
void validate_problem(const AttentionProblem& p);

/// True when query row `i` may attend to key `j` under the problem's causal and index mask.
bool score_visible(const AttentionProblem& p, std::int64_t i, std::int64_t j);

/// Whether dropout keeps score (bh, i, j); deterministic in `seed` so references can replay it.
bool dropout_keeps(const AttentionProblem& p, std::uint64_t seed, std::int64_t bh, std::int64_t i,
                   std::int64_t j);

}  // namespace iosim
