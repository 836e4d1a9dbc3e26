#pragma once
// `iosim validate`'s writers: the table, Markdown (and its cells for the HTML report), CSV and
// JSON of a ValidationResult (api/validation.hpp).
#include <string>
#include <vector>

#include "api/validation.hpp"

namespace iosim {

/// Writers for the four --format values.
std::string validation_table(const ValidationResult& v);
std::string validation_markdown(const ValidationResult& v);
/// The summary as validation_markdown() prints it, as cells (header first): schedule, cases, blind
/// time and DRAM, then every metric as run, each "median / worst".
std::vector<std::vector<std::string>> validation_summary_table(const ValidationResult& v);
std::string validation_csv(const ValidationResult& v);
std::string validation_json(const ValidationResult& v);

}  // namespace iosim
