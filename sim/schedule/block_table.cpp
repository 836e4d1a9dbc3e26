#include "sim/schedule/block_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <random>
#include <sstream>
#include <unordered_set>

#include "sim/base/errors.hpp"
#include "sim/base/text_file.hpp"

namespace iosim {

BlockTable random_block_table(std::int64_t sequences, std::int64_t pages_per_seq,
                              std::uint64_t seed) {
  BlockTable t;
  t.sequences = sequences;
  t.pages_per_seq = pages_per_seq;
  t.pool_pages = sequences * pages_per_seq;
  if (t.pool_pages > kMaxPageId + 1) {
    throw ConfigError(fmt::format(
        "paged K/V needs {} pages ({} sequences x {} pages), more than the {} a block table "
        "holds; use larger --page-tokens",
        t.pool_pages, sequences, pages_per_seq, kMaxPageId + 1));
  }
  t.pages.resize(static_cast<std::size_t>(t.pool_pages));
  std::iota(t.pages.begin(), t.pages.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(t.pages.begin(), t.pages.end(), rng);
  t.source = fmt::format("random:{}", seed);
  return t;
}

BlockTable load_block_table(const std::string& path) {
  return parse_block_table(read_text_file(path, "block-table file", kMaxDataFileBytes), path);
}

BlockTable parse_block_table(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  BlockTable t;
  t.source = path;
  std::unordered_set<std::int32_t> seen;
  std::string line;
  std::size_t first_line = 0;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    line = line.substr(0, line.find('#'));  // a comment runs to the end of the line
    std::replace(line.begin(), line.end(), ',', ' ');
    std::vector<std::int32_t> row;
    std::size_t i = 0;
    while (i < line.size()) {
      if (std::isspace(static_cast<unsigned char>(line[i]))) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
      const std::string word = line.substr(i, j - i);
      const bool digits = word.size() <= 9 && std::all_of(word.begin(), word.end(), [](char ch) {
                            return std::isdigit(static_cast<unsigned char>(ch)) != 0;
                          });
      const std::int64_t id = digits ? std::stoll(word) : -1;
      if (id < 0 || id > kMaxPageId) {
        throw ConfigError(
            fmt::format("block-table file '{}' line {}: '{}' is not a page id in [0, {}]", path,
                        line_no, word, kMaxPageId));
      }
      if (!seen.insert(static_cast<std::int32_t>(id)).second) {
        throw ConfigError(
            fmt::format("block-table file '{}' line {}: page {} is listed twice (a page holds one "
                        "sequence's tokens)",
                        path, line_no, id));
      }
      row.push_back(static_cast<std::int32_t>(id));
      t.pool_pages = std::max(t.pool_pages, id + 1);
      i = j;
    }
    if (row.empty()) continue;
    if (t.sequences == 0) {
      first_line = line_no;
      t.pages_per_seq = static_cast<std::int64_t>(row.size());
    } else if (static_cast<std::int64_t>(row.size()) != t.pages_per_seq) {
      throw ConfigError(fmt::format("block-table file '{}' line {}: {} pages, line {} has {}", path,
                                    line_no, row.size(), first_line, t.pages_per_seq));
    }
    t.pages.insert(t.pages.end(), row.begin(), row.end());
    ++t.sequences;
  }
  if (t.sequences == 0) {
    throw ConfigError(fmt::format("block-table file '{}': no rows of page ids", path));
  }
  return t;
}

void check_block_table(const BlockTable& t, std::int64_t batch, std::int64_t pages_per_seq) {
  if (t.sequences != batch || t.pages_per_seq != pages_per_seq) {
    throw ConfigError(fmt::format(
        "--block-table {}: {} sequences x {} pages, the problem needs {} x {} (--batch, and "
        "ceil(--seq-kv / --page-tokens))",
        t.source, t.sequences, t.pages_per_seq, batch, pages_per_seq));
  }
}

}  // namespace iosim
