#pragma once
// "Did you mean" suggestions for misspelled names: profile keys, profile names, dtypes,
// algorithm names. One rule everywhere, so a typo is answered the same way in every message.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace iosim {

/// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions), ignoring
/// ASCII case: "hmb" -> "hbm" is 1.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word`, or "" when none is close enough. Close means an edit
/// distance of at most 1 for words up to 5 characters, 2 up to 8, 3 beyond; failing that, a
/// candidate that `word` (2+ characters) is a prefix of ("h10" -> "h100-sxm5-80gb"). Ties go to
/// the earlier candidate.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" for closest_match(word, candidates), or "" when there is none.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace iosim
