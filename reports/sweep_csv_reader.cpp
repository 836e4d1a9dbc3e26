// The reader of a sweep's CSV (reports/sweep_csv_reader.hpp).
#include "reports/sweep_csv_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/hardware/profile_overrides.hpp"

namespace iosim::sweep_csv_reader {
namespace {

using nlohmann::json;

// The columns a report reads from a sweep's CSV, all written by `iosim sweep --format csv`.
constexpr const char* kCsvColumns[] = {"point",
                                       "profile",
                                       "algorithm",
                                       "batch",
                                       "heads",
                                       "seq",
                                       "seq_kv",
                                       "head_dim",
                                       "dtype",
                                       "causal",
                                       "mask",
                                       "dropout",
                                       "block_q",
                                       "block_kv",
                                       "l2",
                                       "feasible",
                                       "hbm_read_bytes",
                                       "hbm_write_bytes",
                                       "l2_read_bytes",
                                       "l2_write_bytes",
                                       "flops",
                                       "tensor_flops",
                                       "time_s",
                                       "bound",
                                       "compulsory_bytes",
                                       "closed_form_bytes",
                                       "lower_bound_bytes",
                                       "infeasible_reason",
                                       "pass",
                                       "kv_heads",
                                       "pattern",
                                       "page_tokens",
                                       "splits",
                                       "hbm_write_dirty_at_end_bytes",
                                       "sm_clock_mhz",
                                       "threads",
                                       "pipeline_stages",
                                       "cold_l2",
                                       "clock_given"};

// Drops the null values (the CSV's empty fields) of `j` and its objects: absent keys, which
// parse_row() names when they are required.
void drop_nulls(json& j) {
  for (auto it = j.begin(); it != j.end();) {
    if (it->is_null()) {
      it = j.erase(it);
    } else {
      if (it->is_object()) drop_nulls(*it);
      ++it;
    }
  }
}

// What a field of each column the sweep's CSV writes may hold (empty: no value), for the
// columns report does not read as well as those it does: `.nan`, `null` or `true` in
// hbm_total_bytes, and `true` in warpgroups, were taken without a word (issue #50's third
// probe). Every column of csv_header() not named here holds a finite number.
constexpr const char* kBooleanColumns[] = {"causal",  "mask",     "feasible",
                                           "cold_l2", "executed", "clock_given"};
constexpr const char* kTextColumns[] = {"profile", "algorithm",   "infeasible_reason",
                                        "pattern", "block_table", "bound"};
struct Choice {
  const char* column;
  std::vector<std::string> values;
};
const std::vector<Choice>& choice_columns() {
  // (dtype, l2 and pass are read, and checked, by parse_row())
  static const std::vector<Choice> choices = {{"warpgroups", {"pingpong", "cooperative"}},
                                              {"pack_gqa", {"on", "off"}}};
  return choices;
}

bool is_finite_number(const std::string& t) {
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc() && end == t.data() + t.size() && std::isfinite(v);
}

// Throws ConfigError naming the column and value of the first field of `rec` that its column
// cannot hold. Columns the writer does not write (a spreadsheet's own) are left alone.
void check_fields(const std::map<std::string, std::size_t>& col,
                  const std::vector<std::string>& rec, const std::string& where) {
  static const std::vector<std::string> written = [] {
    std::vector<std::string> names = {"point"};
    const std::string header = csv_header();
    for (std::size_t at = 0; at <= header.size();) {
      const std::size_t end = std::min(header.find(',', at), header.size());
      names.push_back(header.substr(at, end - at));
      at = end + 1;
    }
    return names;
  }();
  const auto named = [](const auto& list, const std::string& c) {
    return std::any_of(std::begin(list), std::end(list), [&](const char* n) { return c == n; });
  };
  for (const std::string& c : written) {
    const auto at = col.find(c);
    if (at == col.end() || rec[at->second].empty()) continue;
    const std::string& t = rec[at->second];
    if (named(kTextColumns, c) || c == "dtype" || c == "kv_dtype" || c == "l2" || c == "pass") {
      continue;  // (the types are read, and checked, by parse_row())
    }
    if (named(kBooleanColumns, c)) {
      if (t != "true" && t != "false") {
        throw ConfigError(fmt::format("{}: '{}' = '{}' is not true or false", where, c, t));
      }
      continue;
    }
    const auto choice = std::find_if(choice_columns().begin(), choice_columns().end(),
                                     [&](const Choice& ch) { return c == ch.column; });
    if (choice != choice_columns().end()) {
      if (std::find(choice->values.begin(), choice->values.end(), t) == choice->values.end()) {
        throw ConfigError(fmt::format("{}: '{}' = '{}' is not one of {}", where, c, t,
                                      fmt::join(choice->values, ", ")));
      }
      continue;
    }
    if (!is_finite_number(t)) {
      throw ConfigError(fmt::format("{}: '{}' = '{}' is not a number", where, c, t));
    }
  }
}

}  // namespace

// A sweep's CSV (sweep --format csv): its header starts "point,".
bool is_sweep_csv(const std::string& text) {
  return text.rfind("point,", 0) == 0;
}

// The records of RFC 4180 CSV text (quoted fields may hold commas, quotes and line breaks).
std::vector<std::vector<std::string>> csv_records(const std::string& text,
                                                  const std::string& name) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
      continue;
    }
    if (c == '"' && field.empty()) {
      quoted = any = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        record.push_back(std::move(field));
        out.push_back(std::move(record));
      }
      record.clear();
      field.clear();
      any = false;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) throw ConfigError(fmt::format("{}: a quoted CSV field is not closed", name));
  if (any || !field.empty()) {
    record.push_back(std::move(field));
    out.push_back(std::move(record));
  }
  return out;
}

std::vector<std::string> missing_csv_columns(const std::map<std::string, std::size_t>& col) {
  std::vector<std::string> missing;
  for (const char* c : kCsvColumns) {
    if (!col.count(c)) missing.push_back(c);
  }
  return missing;
}

// One CSV record as the JSON row parse_row() reads (the JSON sweep file's layout), so that both
// formats are checked alike. Empty fields are absent keys.
json csv_row_json(const std::map<std::string, std::size_t>& col,
                  const std::vector<std::string>& rec, const std::string& where) {
  check_fields(col, rec, where);
  const auto text = [&](const char* key) -> const std::string& { return rec[col.at(key)]; };
  const auto number = [&](const char* key) -> json {
    const std::string& t = text(key);
    if (t.empty()) return nullptr;
    double v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v)) {
      throw ConfigError(fmt::format("{}: '{}' = '{}' is not a number", where, key, t));
    }
    if (v == std::floor(v) && std::abs(v) < 9e15) return static_cast<std::int64_t>(v);
    return v;
  };
  const auto boolean = [&](const char* key) -> json {
    const std::string& t = text(key);
    if (t == "true" || t == "false") return t == "true";
    if (t.empty()) return nullptr;
    throw ConfigError(fmt::format("{}: '{}' = '{}' is not true or false", where, key, t));
  };
  json j = {{"point", number("point")},
            {"profile", text("profile")},
            {"algorithm", text("algorithm")},
            {"l2", text("l2")},
            {"feasible", boolean("feasible")},
            {"cold_l2", boolean("cold_l2")},
            {"sm_clock_mhz", number("sm_clock_mhz")}};
  j["problem"] = {{"batch", number("batch")},       {"heads", number("heads")},
                  {"seq", number("seq")},           {"seq_kv", number("seq_kv")},
                  {"head_dim", number("head_dim")}, {"dtype", text("dtype")},
                  {"pass", text("pass")},           {"causal", boolean("causal")},
                  {"mask", boolean("mask")},        {"dropout", number("dropout")},
                  {"kv_heads", number("kv_heads")}, {"page_tokens", number("page_tokens")}};
  if (!text("pattern").empty()) j["problem"]["pattern"] = text("pattern");
  j["tiling"] = {{"block_q", number("block_q")},
                 {"block_kv", number("block_kv")},
                 {"threads", number("threads")},
                 {"pipeline_stages", number("pipeline_stages")},
                 {"splits", number("splits")}};
  // Tiling axes that CSVs of before their columns lack (absent: not swept).
  for (const char* key : {"warpgroups", "pack_gqa"}) {
    if (col.count(key) && !text(key).empty()) j["tiling"][key] = text(key);
  }
  for (const char* key : {"backward_block_q", "backward_block_kv"}) {
    if (col.count(key)) j["tiling"][key] = number(key);
  }
  // A problem axis that CSVs of before its column lack (absent or empty: no window).
  if (col.count("window") && !text("window").empty()) j["problem"]["window"] = number("window");
  if (col.count("kv_dtype") && !text("kv_dtype").empty()) {
    j["problem"]["kv_dtype"] = text("kv_dtype");
  }
  if (col.count("latent_dim") && !text("latent_dim").empty()) {
    j["problem"]["latent_dim"] = number("latent_dim");
  }
  const json given = boolean("clock_given");
  if (!given.is_null()) j["power"] = {{"clock_given", given}};
  if (j["feasible"] != true) {
    j["infeasible_reason"] = text("infeasible_reason");
    drop_nulls(j);
    return j;
  }
  j["counters"] = json::object();
  for (const char* k : {"hbm_read_bytes", "hbm_write_bytes", "hbm_write_dirty_at_end_bytes",
                        "l2_read_bytes", "l2_write_bytes", "flops", "tensor_flops"}) {
    j["counters"][k] = number(k);
  }
  j["bounds"] = json::object();
  for (const char* k : {"compulsory_bytes", "closed_form_bytes", "lower_bound_bytes"}) {
    j["bounds"][k] = number(k);
  }
  j["time_s"] = number("time_s");
  j["bound"] = text("bound");
  drop_nulls(j);
  return j;
}

// The profile a CSV names: loaded by name, with the --set overrides the name records
// ("h100-sxm5-80gb[sm.count=98;l2.size_bytes=2e7]").
HardwareProfile csv_profile(const std::string& name, const std::string& file) {
  std::string base = name;
  std::vector<std::string> sets;
  if (const std::size_t open = name.find('['); open != std::string::npos && name.back() == ']') {
    base = name.substr(0, open);
    const std::string inner = name.substr(open + 1, name.size() - open - 2);
    for (std::size_t at = 0; at <= inner.size();) {
      const std::size_t end = std::min(inner.find(';', at), inner.size());
      sets.push_back(inner.substr(at, end - at));
      at = end + 1;
    }
  }
  HardwareProfile p;
  try {
    // Built-in names only: a name with a '/' would be read as a path (a profile of one's own
    // YAML file is named by its "name", not its path, and is not found this way).
    const std::vector<std::string> builtins = builtin_profile_names();
    if (std::find(builtins.begin(), builtins.end(), base) == builtins.end()) {
      throw ConfigError(fmt::format("not a built-in profile: {}", fmt::join(builtins, ", ")));
    }
    p = load_profile(base, parse_profile_overrides(sets));
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format(
        "{}: a sweep's CSV records no profile peaks, so report loads each profile by the name in "
        "its 'profile' column, and '{}' did not load ({}); report the sweep's JSON instead (sweep "
        "--out FILE.json), which keeps the profiles",
        file, name, e.what()));
  }
  return p;
}

}  // namespace iosim::sweep_csv_reader
