#include "sim/schedule/block_mask.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <sstream>

#include "sim/base/errors.hpp"
#include "sim/base/memory_budget.hpp"
#include "sim/base/run_control.hpp"
#include "sim/base/text_file.hpp"

namespace iosim {
namespace {

constexpr const char* kPatternForms =
    "local:W, strided:S, random:DENSITY:SEED, causal or file:PATH";

std::uint64_t mask_splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

[[noreturn]] void bad_pattern(const std::string& spec, const std::string& why) {
  throw ConfigError(fmt::format("--pattern '{}': {}; valid forms: {}", spec, why, kPatternForms));
}

std::int64_t parse_int(const std::string& spec, const std::string& text, const char* what) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1 || v > (1 << 24)) {
    bad_pattern(spec, fmt::format("{} '{}' must be an integer in [1, 16777216]", what, text));
  }
  return v;
}

}  // namespace

std::vector<std::vector<std::uint8_t>> parse_block_grid(const std::string& text,
                                                        const std::string& path) {
  std::istringstream in(text);
  std::vector<std::vector<std::uint8_t>> grid;
  std::string line;
  std::size_t first_line = 0;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    std::vector<std::uint8_t> row;
    for (const char ch : line) {
      if (ch == '#') break;  // a comment runs to the end of the line
      if (ch == '0' || ch == '1') {
        row.push_back(ch == '1' ? 1 : 0);
      } else if (ch != ' ' && ch != '\t' && ch != ',' && ch != '\r') {
        throw ConfigError(fmt::format("pattern file '{}' line {}: expected 0 or 1, found '{}'",
                                      path, line_no, ch));
      }
    }
    if (row.empty()) continue;
    if (grid.empty()) first_line = line_no;
    if (!grid.empty() && row.size() != grid.front().size()) {
      throw ConfigError(fmt::format("pattern file '{}' line {}: {} blocks, line {} has {}", path,
                                    line_no, row.size(), first_line, grid.front().size()));
    }
    grid.push_back(std::move(row));
  }
  if (grid.empty()) {
    throw ConfigError(fmt::format("pattern file '{}' line 1: no rows of 0/1 blocks", path));
  }
  return grid;
}

BlockPattern parse_block_pattern(const std::string& spec) {
  BlockPattern p;
  p.spec = spec;
  const std::size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "causal" && colon == std::string::npos) {
    p.kind = BlockPattern::Kind::causal;
  } else if ((kind == "local" || kind == "strided") && colon != std::string::npos) {
    p.kind = kind == "local" ? BlockPattern::Kind::local : BlockPattern::Kind::strided;
    p.width = parse_int(spec, rest, kind == "local" ? "W" : "S");
  } else if (kind == "random" && colon != std::string::npos) {
    const std::size_t second = rest.find(':');
    if (second == std::string::npos) bad_pattern(spec, "random needs DENSITY:SEED");
    const std::string density = rest.substr(0, second), seed = rest.substr(second + 1);
    try {
      std::size_t used = 0;
      p.density = std::stod(density, &used);
      if (used != density.size()) throw std::invalid_argument(density);
    } catch (const std::exception&) {
      bad_pattern(spec, fmt::format("DENSITY '{}' is not a number", density));
    }
    if (!(p.density > 0.0 && p.density <= 1.0)) {
      bad_pattern(spec, fmt::format("DENSITY {} must be in (0, 1]", density));
    }
    const auto [end, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), p.seed);
    if (ec != std::errc() || end != seed.data() + seed.size() || seed.empty()) {
      bad_pattern(spec, fmt::format("SEED '{}' must be a non-negative integer", seed));
    }
    p.kind = BlockPattern::Kind::random;
  } else if (kind == "file" && !rest.empty()) {
    p.kind = BlockPattern::Kind::file;
    p.path = rest;
    p.grid = parse_block_grid(read_text_file(rest, "pattern file", kMaxDataFileBytes), rest);
  } else {
    bad_pattern(spec, "unknown pattern");
  }
  return p;
}

BlockMask::BlockMask(const AttentionProblem& p, std::int64_t block_q, std::int64_t block_kv)
    : rows_((p.seq + block_q - 1) / block_q),
      cols_((p.seq_kv + block_kv - 1) / block_kv),
      block_q_(block_q),
      block_kv_(block_kv),
      bits_() {
  // The mask holds a byte per block and, per computed block, its index: Tr x Tc bytes and up to
  // 8 Tr x Tc more. Block-sparse at N = 16M in blocks of 128 (1.7e10 blocks) tried to allocate
  // 17 GB and more, and the closed forms walk every block: refused before anything is taken.
  const double blocks = static_cast<double>(rows_) * static_cast<double>(cols_);
  if (blocks > kMaxMaskBlocks) {
    throw ConfigError(fmt::format(
        "a block mask of {} x {} = {:.3g} blocks (--seq {} in blocks of {}, --seq-kv {} in blocks "
        "of {}) is more than the {:.3g} iosim holds; use larger --block-q / --block-kv or a "
        "shorter sequence",
        rows_, cols_, blocks, p.seq, block_q, p.seq_kv, block_kv, kMaxMaskBlocks));
  }
  memory_budget::check(blocks * (1 + sizeof(std::int64_t)),
                       fmt::format("a block mask of {} x {} blocks", rows_, cols_),
                       "use larger --block-q / --block-kv, or raise --max-memory");
  bits_.assign(static_cast<std::size_t>(rows_ * cols_), 0);
  const BlockPattern* pat = p.pattern.get();
  if (pat != nullptr && pat->kind == BlockPattern::Kind::file) {
    const auto grid_rows = static_cast<std::int64_t>(pat->grid.size());
    const auto grid_cols = static_cast<std::int64_t>(pat->grid.front().size());
    if (grid_rows != rows_ || grid_cols != cols_) {
      throw ConfigError(fmt::format(
          "pattern file '{}' line 1: the grid is {} x {} blocks, the problem has {} x {} "
          "(--seq {} in blocks of {}, --seq-kv {} in blocks of {})",
          pat->path, grid_rows, grid_cols, rows_, cols_, p.seq, block_q, p.seq_kv, block_kv));
    }
  }
  const std::int64_t offset = p.seq_kv - p.seq;  // bottom-right alignment
  row_start_.reserve(static_cast<std::size_t>(rows_ + 1));
  for (std::int64_t i = 0; i < rows_; ++i) {
    if (i % 64 == 0) run_control::check();  // up to 2.7e8 blocks: a stop is honoured
    row_start_.push_back(row_blocks_.size());
    const std::int64_t last_row = std::min(p.seq, (i + 1) * block_q) - 1;
    const std::int64_t diag =
        std::clamp<std::int64_t>((last_row + offset) / block_kv, 0, cols_ - 1);
    for (std::int64_t j = 0; j < cols_; ++j) {
      // --causal: a block whose first key lies beyond the last row's diagonal shows nothing.
      if (p.causal && j * block_kv > last_row + offset) continue;
      bool keep = true;
      if (pat != nullptr) {
        switch (pat->kind) {
          case BlockPattern::Kind::local:
            keep = std::abs(j - diag) < pat->width;
            break;
          case BlockPattern::Kind::strided:
            keep = ((j - diag) % pat->width + pat->width) % pat->width == 0;
            break;
          case BlockPattern::Kind::random: {
            const std::uint64_t h =
                mask_splitmix64(mask_splitmix64(pat->seed) ^ (static_cast<std::uint64_t>(i) << 32) ^
                                static_cast<std::uint64_t>(j));
            keep = static_cast<double>(h >> 11) * 0x1.0p-53 < pat->density;
            break;
          }
          case BlockPattern::Kind::causal:
            keep = j <= diag;
            break;
          case BlockPattern::Kind::file:
            keep = pat->grid[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] != 0;
            break;
        }
      }
      if (keep) {
        bits_[static_cast<std::size_t>(i * cols_ + j)] = 1;
        row_blocks_.push_back(j);
        ++nonzero_;
      }
    }
  }
  row_start_.push_back(row_blocks_.size());
}

}  // namespace iosim
