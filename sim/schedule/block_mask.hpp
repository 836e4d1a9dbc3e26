#pragma once
// Block sparsity (block-sparse FlashAttention, Dao et al. 2022, section 3.3): which
// block_q x block_kv blocks of the N x N_kv score matrix are computed at all. A zero block is
// skipped entirely: no loads, no FLOPs. Inside a computed block the elementwise --causal and
// --mask rules still apply.
//
// Patterns, in blocks. c(i) is the diagonal key block of query block i: the block holding the
// key its last row sees under bottom-right alignment (key q + N_kv - N for query q).
//   local:W              |j - c(i)| < W: a band around the diagonal; with --causal, the W blocks
//                        ending at the diagonal (a sliding window of W blocks)
//   strided:S            (j - c(i)) mod S == 0: every S-th block, in phase with the diagonal
//   random:DENSITY:SEED  each block kept with probability DENSITY, drawn from SEED
//   causal               j <= c(i): block-causal (with --causal, exactly the blocks that hold a
//                        visible score)
//   file:PATH            a 0/1 grid of Tr x Tc blocks, one row of blocks per line
// With --causal, blocks that hold no visible score are zero whatever the pattern says.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/schedule/problem.hpp"

namespace iosim {

/// A parsed --pattern. For file patterns the grid is read at parse time.
struct BlockPattern {
  enum class Kind { local, strided, random, causal, file };
  Kind kind = Kind::causal;
  std::string spec;                             // as given, for reports
  std::int64_t width = 0;                       // local: W; strided: S
  double density = 1.0;                         // random
  std::uint64_t seed = 0;                       // random
  std::string path;                             // file
  std::vector<std::vector<std::uint8_t>> grid;  // file: rows of blocks, 0 or 1
};

/// Parses `local:W`, `strided:S`, `random:DENSITY:SEED`, `causal` or `file:PATH` (reading the
/// file). Throws ConfigError naming --pattern, or the file and line that cannot be read or parsed.
BlockPattern parse_block_pattern(const std::string& spec);

/// The rows of blocks of a pattern file's text (0/1, separated by spaces, tabs or commas; '#'
/// starts a comment); `path` names it in messages. Throws ConfigError naming the line.
std::vector<std::vector<std::uint8_t>> parse_block_grid(const std::string& text,
                                                        const std::string& path);

/// The most blocks (Tr x Tc) a block mask holds: 2^28, 268 MB of flags and up to 2 GB of
/// indices, walked block by block by the closed forms.
inline constexpr double kMaxMaskBlocks = 268435456.0;

/// The block mask of a problem for one tiling: pattern AND (with --causal) "holds a visible score".
class BlockMask {
 public:
  /// All blocks that hold a visible score when `p.pattern` is null. Throws ConfigError when a
  /// file grid's size differs from the problem's Tr x Tc blocks.
  BlockMask(const AttentionProblem& p, std::int64_t block_q, std::int64_t block_kv);

  bool at(std::int64_t qb, std::int64_t kb) const {
    return bits_[static_cast<std::size_t>(qb * cols_ + kb)] != 0;
  }
  /// The computed key blocks of query block `qb`, in order (with --causal, none past the
  /// diagonal).
  std::span<const std::int64_t> row_blocks(std::int64_t qb) const {
    const auto i = static_cast<std::size_t>(qb);
    return {row_blocks_.data() + row_start_[i], row_start_[i + 1] - row_start_[i]};
  }
  std::int64_t rows() const { return rows_; }  // Tr, query blocks
  std::int64_t cols() const { return cols_; }  // Tc, key blocks
  std::int64_t block_q() const { return block_q_; }
  std::int64_t block_kv() const { return block_kv_; }
  std::int64_t nonzero_blocks() const { return nonzero_; }
  /// s of Proposition 4: the fraction of the Tr x Tc blocks that are computed.
  double density() const {
    return static_cast<double>(nonzero_) / static_cast<double>(rows_ * cols_);
  }
  /// Whether score (query i, key j) lies in a computed block.
  bool covers(std::int64_t i, std::int64_t j) const { return at(i / block_q_, j / block_kv_); }

 private:
  std::int64_t rows_, cols_, block_q_, block_kv_, nonzero_ = 0;
  std::vector<std::uint8_t> bits_;
  // Row qb's computed key blocks are row_blocks_[row_start_[qb], row_start_[qb + 1]).
  std::vector<std::int64_t> row_blocks_;
  std::vector<std::size_t> row_start_;
};

}  // namespace iosim
