#include "api/ncu_import.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "sim/base/errors.hpp"

namespace iosim {

using nlohmann::json;

namespace {

// One CSV line's fields: quoted fields may hold commas and doubled quotes.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// The factor from ncu's `unit` to its base unit (byte, sector, nsecond, hz); 0 when unknown.
double unit_factor(const std::string& unit) {
  static const std::map<std::string, double> factors = {{"", 1},
                                                        {"byte", 1},
                                                        {"Kbyte", 1e3},
                                                        {"Mbyte", 1e6},
                                                        {"Gbyte", 1e9},
                                                        {"Tbyte", 1e12},
                                                        {"sector", 1},
                                                        {"Ksector", 1e3},
                                                        {"Msector", 1e6},
                                                        {"Gsector", 1e9},
                                                        {"nsecond", 1},
                                                        {"usecond", 1e3},
                                                        {"msecond", 1e6},
                                                        {"second", 1e9},
                                                        {"hz", 1},
                                                        {"Khz", 1e3},
                                                        {"Mhz", 1e6},
                                                        {"Ghz", 1e9},
                                                        {"cycle/second", 1},
                                                        {"cycle/usecond", 1e6},
                                                        {"cycle/nsecond", 1e9},
                                                        {"cycle/msecond", 1e3},
                                                        {"inst", 1},
                                                        {"cycle", 1}};
  const auto it = factors.find(unit);
  return it == factors.end() ? 0.0 : it->second;
}

// A value as ncu prints it ("1,234.5"), in base units.
double value_of(const std::string& text, const std::string& unit, const std::string& where) {
  std::string digits;
  for (char c : text) {
    if (c != ',') digits += c;
  }
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (digits.empty() || end != digits.c_str() + digits.size() || !std::isfinite(v) || v < 0) {
    throw ConfigError(fmt::format("{}: '{}' is not a measured value", where, text));
  }
  const double factor = unit_factor(unit);
  if (factor == 0.0) {
    throw ConfigError(
        fmt::format("{}: unit '{}' is not one iosim knows (export with "
                    "--print-units base to avoid scaled units)",
                    where, unit));
  }
  return v * factor;
}

std::size_t column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? header.size() : static_cast<std::size_t>(it - header.begin());
}

}  // namespace

const std::vector<std::string>& ncu_required_metrics() {
  static const std::vector<std::string> m = {"dram__bytes_read.sum",
                                             "dram__bytes_write.sum",
                                             "l1tex__m_xbar2l1tex_read_sectors.sum",
                                             "lts__t_sectors_srcunit_tex_op_write.sum",
                                             "gpu__time_duration.sum",
                                             "sm__cycles_elapsed.avg.per_second"};
  return m;
}

std::vector<NcuKernel> read_ncu_csv(const std::string& text, const std::string& origin) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> line_of;
  std::size_t line = 0, start = 0;
  bool in_table = false;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string l = text.substr(start, end - start);
    ++line;
    start = end + 1;
    // ncu prints "==PROF==" and the application's own output before the table.
    if (!in_table && l.rfind("\"ID\"", 0) != 0) continue;
    in_table = true;
    if (l.empty() || l == "\r") continue;
    rows.push_back(csv_fields(l));
    line_of.push_back(line);
  }
  if (rows.empty()) {
    throw ConfigError(fmt::format(
        "{}: not an Nsight Compute CSV export (no header line starting with \"ID\"); export "
        "with ncu --csv --metrics {}",
        origin, fmt::join(ncu_required_metrics(), ",")));
  }
  const std::vector<std::string>& header = rows[0];
  // Every row has the header's fields: a row with more or fewer (a cut line, a stray comma outside
  // quotes) would shift its values under other columns, or take a stray field as a value.
  for (std::size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != header.size()) {
      throw ConfigError(fmt::format("{}:{}: {} fields, the header has {}", origin, line_of[r],
                                    rows[r].size(), header.size()));
    }
  }
  const std::size_t name_col = column(header, "Kernel Name"), id_col = column(header, "ID");
  const std::size_t device_col = column(header, "Device");
  std::vector<NcuKernel> kernels;
  std::map<std::string, std::size_t> by_id;
  const auto kernel_for = [&](const std::vector<std::string>& row) -> NcuKernel& {
    const std::string id = id_col < row.size() ? row[id_col] : std::to_string(kernels.size());
    const auto [it, added] = by_id.emplace(id, kernels.size());
    if (added) {
      kernels.emplace_back();
      kernels.back().name = name_col < row.size() ? row[name_col] : "?";
      kernels.back().device = device_col < row.size() ? row[device_col] : "";
    }
    return kernels[it->second];
  };
  const std::size_t metric_name = column(header, "Metric Name");
  if (metric_name < header.size()) {
    // The details page: one row per kernel and metric.
    const std::size_t unit_col = column(header, "Metric Unit");
    const std::size_t value_col = column(header, "Metric Value");
    // (Without it, each row's value was read past the end of the row: a crash.)
    if (value_col == header.size()) {
      throw ConfigError(fmt::format(
          "{}:{}: the header has a 'Metric Name' column but no 'Metric Value' column; export "
          "with ncu --csv --metrics {}",
          origin, line_of[0], fmt::join(ncu_required_metrics(), ",")));
    }
    for (std::size_t r = 1; r < rows.size(); ++r) {
      const auto& row = rows[r];
      const std::string where = fmt::format("{}:{}", origin, line_of[r]);
      kernel_for(row).metrics[row[metric_name]] =
          value_of(row[value_col], unit_col < row.size() ? row[unit_col] : "", where);
    }
  } else {
    // The raw page: a column per metric, a units row under the header.
    if (rows.size() < 2)
      throw ConfigError(fmt::format("{}: no units row under the header", origin));
    const std::vector<std::string>& units = rows[1];
    for (std::size_t r = 2; r < rows.size(); ++r) {
      const auto& row = rows[r];
      const std::string where = fmt::format("{}:{}", origin, line_of[r]);
      NcuKernel& k = kernel_for(row);
      for (const std::string& m : ncu_required_metrics()) {
        const std::size_t c = column(header, m);
        if (c < row.size())
          k.metrics[m] = value_of(row[c], c < units.size() ? units[c] : "", where);
      }
    }
  }
  if (kernels.empty()) throw ConfigError(fmt::format("{}: the export holds no kernel", origin));
  for (const NcuKernel& k : kernels) {
    std::vector<std::string> missing;
    for (const std::string& m : ncu_required_metrics()) {
      if (k.metrics.count(m) == 0) missing.push_back(m);
    }
    if (!missing.empty()) {
      throw ConfigError(fmt::format("{}: kernel '{}' lacks {}; export with ncu --csv --metrics {}",
                                    origin, k.name, fmt::join(missing, ", "),
                                    fmt::join(ncu_required_metrics(), ",")));
    }
  }
  return kernels;
}

json ncu_case_document(const std::vector<NcuKernel>& kernels, const KernelDescription& kernel,
                       const AttentionProblem& given, double time_s, const std::string& origin) {
  const AttentionProblem p = with_defaults(given);  // the document states N_kv
  if (!(time_s > 0 && std::isfinite(time_s))) {
    throw ConfigError(fmt::format("{}: the kernel's measured time must be positive", origin));
  }
  json ks = json::array();
  for (const NcuKernel& k : kernels) {
    json metrics = json::object();
    for (const std::string& m : ncu_required_metrics()) metrics[m] = k.metrics.at(m);
    ks.push_back({{"name", k.name}, {"role", ""}, {"metrics", metrics}});
  }
  json problem = {{"batch", p.batch},   {"heads", p.heads},       {"seq", p.seq},
                  {"seq_kv", p.seq_kv}, {"head_dim", p.head_dim}, {"dtype", dtype_name(p.dtype)},
                  {"causal", p.causal}, {"mask", p.mask}};
  if (p.kv_heads > 0) problem["kv_heads"] = p.kv_heads;
  json c = {{"id", fmt::format("{} b{} h{} n{} nkv{} d{}{}", kernel.name, p.batch, p.heads, p.seq,
                               p.seq_kv, p.head_dim, p.causal ? " causal" : "")},
            {"schedule", kernel.name},
            {"pass", pass_name(p.pass)},
            {"problem", problem},
            {"kernel", kernel_description_json(kernel)},
            {"check", {{"passed", true}}},
            {"time_free_running_s", time_s},
            {"kernels", ks}};
  return {{"format", "iosim-measurements"},
          {"version", 1},
          {"device", {{"name", kernels.front().device}}},
          {"source", origin},
          {"cases", json::array({c})}};
}

}  // namespace iosim
