#pragma once
// What the files of `iosim validate` share (validation.cpp reads measured files,
// validation_prediction.cpp predicts a case, validation_summary.cpp summarizes the cases,
// validation_writers.cpp writes them); not part of the API, which is api/validation.hpp.
#include <nlohmann/json_fwd.hpp>
#include <string>

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

/// Fills `v.summaries` from its compared cases.
void summarize_cases(ValidationResult& v);

}  // namespace validation_detail
}  // namespace iosim
