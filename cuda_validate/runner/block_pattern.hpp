// The block mask of a block-sparse case, computed on the host exactly as iosim's
// sim/schedule/block_mask.cpp computes it for `--algo block-sparse --pattern ...`, so a measured
// case runs the blocks iosim predicts (tests/block_pattern_match_test.cpp holds the two
// together over many shapes). Host-only and header-only: the runner (C++17 under nvcc)
// and iosim's test suite (C++20, iosim's warning set) both include it.
//
// Patterns, in blocks; c(i) is the key block holding the last row of query block i's
// diagonal key (query q sees key q + Nkv - N under bottom-right alignment):
//   local:W              |j - c(i)| < W
//   strided:S            (j - c(i)) mod S == 0
//   random:DENSITY:SEED  block kept with probability DENSITY (splitmix64 of SEED, i, j)
//   causal               j <= c(i)
// With causal, blocks whose first key lies beyond the last row's diagonal are zero.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace iosim_cuda {

// A block mask as the kernel reads it: for query block i, the nonzero key blocks are
// cols[row_ptr[i] .. row_ptr[i + 1]), ascending (CSR).
struct BlockList {
  int rows = 0;  // Tr, query blocks
  int cols = 0;  // Tc, key blocks
  std::vector<int> row_ptr;
  std::vector<int> col_idx;
  std::vector<std::uint8_t> dense;  // (Tr, Tc) 0/1, for the reference
  long long nonzero() const { return static_cast<long long>(col_idx.size()); }
};

inline std::uint64_t block_pattern_splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Builds the block list of `spec` (local:W | strided:S | random:DENSITY:SEED | causal) for
// a (seq x seq_kv) score matrix in block_q x block_kv blocks. Throws std::invalid_argument
// naming the spec when it cannot be parsed (iosim's file:PATH is not supported here).
inline BlockList make_block_list(const std::string& spec, long long seq, long long seq_kv,
                                 long long block_q, long long block_kv, bool causal) {
  enum class Kind { local, strided, random, block_causal };
  Kind kind = Kind::block_causal;
  long long width = 0;
  double density = 1.0;
  std::uint64_t seed = 0;
  const std::size_t colon = spec.find(':');
  const std::string head = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("pattern '" + spec + "': " + why +
                                 " (valid: local:W, strided:S, random:DENSITY:SEED, causal)");
  };
  char* end = nullptr;
  if (head == "causal" && colon == std::string::npos) {
    kind = Kind::block_causal;
  } else if ((head == "local" || head == "strided") && !rest.empty()) {
    kind = head == "local" ? Kind::local : Kind::strided;
    width = std::strtoll(rest.c_str(), &end, 10);
    if (*end != '\0' || width < 1 || width > (1 << 24)) throw bad("W/S must be in [1, 2^24]");
  } else if (head == "random" && rest.find(':') != std::string::npos) {
    kind = Kind::random;
    const std::string d = rest.substr(0, rest.find(':'));
    const std::string s = rest.substr(rest.find(':') + 1);
    density = std::strtod(d.c_str(), &end);
    if (d.empty() || *end != '\0' || !(density > 0.0 && density <= 1.0))
      throw bad("DENSITY must be in (0, 1]");
    seed = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || s[0] == '-') throw bad("SEED must be a non-negative integer");
  } else {
    throw bad("unknown pattern");
  }

  BlockList out;
  out.rows = static_cast<int>((seq + block_q - 1) / block_q);
  out.cols = static_cast<int>((seq_kv + block_kv - 1) / block_kv);
  out.dense.assign(static_cast<std::size_t>(out.rows) * static_cast<std::size_t>(out.cols), 0);
  out.row_ptr.push_back(0);
  const long long offset = seq_kv - seq;  // bottom-right alignment
  for (long long i = 0; i < out.rows; ++i) {
    const long long last_row = std::min(seq, (i + 1) * block_q) - 1;
    const long long diag = std::clamp<long long>((last_row + offset) / block_kv, 0, out.cols - 1);
    for (long long j = 0; j < out.cols; ++j) {
      if (causal && j * block_kv > last_row + offset) continue;
      bool keep = true;
      switch (kind) {
        case Kind::local:
          keep = std::llabs(j - diag) < width;
          break;
        case Kind::strided:
          keep = ((j - diag) % width + width) % width == 0;
          break;
        case Kind::random: {
          const std::uint64_t h = block_pattern_splitmix64(block_pattern_splitmix64(seed) ^
                                                           (static_cast<std::uint64_t>(i) << 32) ^
                                                           static_cast<std::uint64_t>(j));
          keep = static_cast<double>(h >> 11) * 0x1.0p-53 < density;
          break;
        }
        case Kind::block_causal:
          keep = j <= diag;
          break;
      }
      if (keep) {
        out.col_idx.push_back(static_cast<int>(j));
        out.dense[static_cast<std::size_t>(i * out.cols + j)] = 1;
      }
    }
    out.row_ptr.push_back(static_cast<int>(out.col_idx.size()));
  }
  return out;
}

}  // namespace iosim_cuda
