#pragma once
// The reader of a sweep's CSV (sweep --format csv), for load_sweeps() (sweep_file.cpp): its
// records, each as the JSON row parse_row() reads, and the profile each names; not part of the
// API, which is reports/sweep_file.hpp.
#include <cstddef>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "sim/hardware/profile.hpp"

namespace iosim::sweep_csv_reader {

// A sweep's CSV (sweep --format csv): its header starts "point,".
bool is_sweep_csv(const std::string& text);

// The records of RFC 4180 CSV text (quoted fields may hold commas, quotes and line breaks).
std::vector<std::vector<std::string>> csv_records(const std::string& text, const std::string& name);

// The columns a report reads that the CSV's header (`col`: column name to index) lacks.
std::vector<std::string> missing_csv_columns(const std::map<std::string, std::size_t>& col);

// One CSV record as the JSON row parse_row() reads (the JSON sweep file's layout), so that both
// formats are checked alike. Empty fields are absent keys.
nlohmann::json csv_row_json(const std::map<std::string, std::size_t>& col,
                            const std::vector<std::string>& rec, const std::string& where);

// The profile a CSV names: loaded by name, with the --set overrides the name records
// ("h100-sxm5-80gb[sm.count=98;l2.size_bytes=2e7]").
HardwareProfile csv_profile(const std::string& name, const std::string& file);

}  // namespace iosim::sweep_csv_reader
