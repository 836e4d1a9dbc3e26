#pragma once
// What the files of `iosim validate` share (validation.cpp reads measured files,
// validation_prediction.cpp predicts a case, validation_summary.cpp summarizes the cases,
// validation_writers.cpp writes them); not part of the API, which is api/validation.hpp.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/validation.hpp"

namespace iosim {

/// The position of `m` in kMetrics (the order of every table).
inline int index_of(Metric m) {
  for (int i = 0; i < kMetricCount; ++i)
    if (kMetrics[i] == m) return i;
  return 0;
}

namespace validation_detail {

/// One measured case (an object of a measurements file's "cases") predicted blind and as-run with
/// profile `profile_name` (a built-in name or a file), each compared with what was measured; `file`
/// names it in messages. Blind reads nothing measured: no clock the GPU was seen at.
CaseResult compare_case(const nlohmann::json& c, const std::string& profile_name,
                        const std::string& file);

/// Fills `v.summaries` and `v.ranking` from its compared cases.
void summarize_cases(ValidationResult& v);

// The median of `v` (the mean of the two middle values for an even count); nullopt when empty.
std::optional<double> median(std::vector<double> v);

/// `v.ranking` from its compared cases that name a rank group (validation_ranking.cpp).
RankSummary rank_cases(const std::vector<CaseResult>& cases);

// A number of `obj` that must be there (api/validation_keys.cpp): a ConfigError naming `where`
// and the key when it is absent or not a number.
double number_at(const nlohmann::json& obj, const char* key, const std::string& where);
// A whole number of `obj` in [lo, hi]; the message names the file's key, not a CLI flag the user
// never typed.
std::int64_t int_at(const nlohmann::json& obj, const char* key, const std::string& where,
                    std::int64_t lo, std::int64_t hi);

// The optional keys of a measured file, read by type. Absent or null: `fallback` (an empty
// object); present with another type: a ConfigError "WHERE: 'KEY' = VALUE is not a string" that
// names the file, the case and the key's path in `where`, where nlohmann::json's value() threw
// "[json.exception.type_error.302] type must be string, but is number", naming no key.
std::string string_or(const nlohmann::json& obj, const char* key, const std::string& fallback,
                      const std::string& where);
bool bool_or(const nlohmann::json& obj, const char* key, bool fallback, const std::string& where);
double number_or(const nlohmann::json& obj, const char* key, double fallback,
                 const std::string& where);
/// A whole number in [0, 2^31) (tile sizes, threads, stages, heads, pages).
std::int64_t count_or(const nlohmann::json& obj, const char* key, std::int64_t fallback,
                      const std::string& where);
const nlohmann::json& object_or_empty(const nlohmann::json& obj, const char* key,
                                      const std::string& where);

}  // namespace validation_detail
}  // namespace iosim
