#include "sim/base/suggest.hpp"

#include <algorithm>
#include <limits>

namespace iosim {
namespace {

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool same(char a, char b) {
  return lower(a) == lower(b);
}

// The largest distance still read as a typo of a word this long.
std::size_t max_typo_distance(std::size_t length) {
  if (length <= 5) return 1;
  if (length <= 8) return 2;
  return 3;
}

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (!same(text[i], prefix[i])) return false;
  }
  return true;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rolling rows of the optimal-string-alignment table: d[i][j] for prefixes a[0,i), b[0,j).
  const std::size_t n = b.size();
  std::vector<std::size_t> before(n + 1), prev(n + 1), cur(n + 1);
  for (std::size_t j = 0; j <= n; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= n; ++j) {
      const std::size_t cost = same(a[i - 1], b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1])) {
        cur[j] = std::min(cur[j], before[j - 2] + 1);
      }
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[n];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.empty()) return "";
  const std::size_t limit = max_typo_distance(word.size());
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  const std::string* best = nullptr;
  for (const auto& candidate : candidates) {
    const std::size_t d = edit_distance(word, candidate);
    if (d <= limit && d < best_distance) {
      best_distance = d;
      best = &candidate;
    }
  }
  if (best != nullptr) return *best;
  if (word.size() < 2) return "";
  for (const auto& candidate : candidates) {
    if (starts_with_ignoring_case(candidate, word)) return candidate;
  }
  return "";
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string match = closest_match(word, candidates);
  if (match.empty()) return "";
  return " (did you mean '" + match + "'?)";
}

}  // namespace iosim
