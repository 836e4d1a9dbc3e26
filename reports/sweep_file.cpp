#include "reports/sweep_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "api/json_schema.hpp"
#include "api/schema_version.hpp"
#include "reports/sweep_csv_reader.hpp"
#include "reports/writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/fnv1a.hpp"
#include "sim/base/json_reader.hpp"
#include "sim/base/json_text.hpp"
#include "sim/base/text_file.hpp"
#include "sim/hardware/profile_overrides.hpp"
#include "sim/schedule/problem.hpp"

namespace iosim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using sweep_csv_reader::csv_profile;
using sweep_csv_reader::csv_records;
using sweep_csv_reader::csv_row_json;
using sweep_csv_reader::is_sweep_csv;
using sweep_csv_reader::missing_csv_columns;

constexpr const char* kFormat = "iosim-sweep";
constexpr int kVersion = 1;

json axes_json(const SweepDescription& d) {
  json axes = json::object();
  for (const SweepAxis& a : d.axes) axes[a.flag] = a.values;
  return axes;
}

// FNV-1a of the axes: shards of one sweep share it, so a report can tell them apart from
// other sweeps and count the points it holds.
std::string sweep_id(const json& axes) {
  return fmt::format("{:016x}", fnv1a64(json_text(axes)));
}

json profile_json(const HardwareProfile& p) {
  return {{"description", p.description},
          {"sm_count", p.sm.count.value},
          {"sram_bytes_per_cta", sram_bytes(p)},
          {"hbm_peak_gbps", p.hbm.bandwidth_gbps.value},
          {"hbm_gbps", p.hbm.bandwidth_gbps.value * p.hbm.achievable_fraction.value},
          {"l2_gbps", p.l2.bandwidth_gbps.value},
          {"l2_size_bytes", p.l2.size_bytes.value},
          {"fp32_tflops", p.compute.fp32_tflops.value},
          {"tensor_tflops",
           {{"fp16", p.tensor_flops_per_s(Dtype::fp16) / 1e12},
            {"bf16", p.tensor_flops_per_s(Dtype::bf16) / 1e12},
            {"fp32", p.tensor_flops_per_s(Dtype::fp32) / 1e12}}}};
}

// Reads `key` of `obj` as T; a missing key or wrong type names the file and row.
template <typename T>
T field(const json& obj, const char* key, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end()) throw ConfigError(fmt::format("{}: missing '{}'", where, key));
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw ConfigError(fmt::format("{}: '{}' has the wrong type", where, key));
  }
}

// A byte or FLOP count or a time: finite, >= 0 and below 1e30 (no run of iosim comes near; a
// larger value is a corrupted or hand-edited file).
double count_field(const json& obj, const char* key, const std::string& where) {
  const double v = field<double>(obj, key, where);
  if (!(v >= 0.0 && v < 1e30)) {
    throw ConfigError(fmt::format("{}: '{}' = {} must be a count >= 0 and < 1e30", where, key,
                                  obj.at(key).dump()));
  }
  return v;
}

double number_or_zero(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<double>() : 0.0;
}

// A problem iosim could have run, as the count columns are checked: an edited row with seq -64,
// dtype "fp64" or l2 "nan" was drawn as given (issue #50 S7). The limits are
// validate_problem()'s, named by the file's keys. (The algorithm is free text: a kernel
// description's name.)
void check_problem_fields(const SweepRow& r, const std::string& where) {
  const std::string in_problem = where + ": problem";
  for (const auto& [key, v, hi] :
       {std::tuple{"batch", r.batch, kMaxBatch}, std::tuple{"heads", r.heads, kMaxHeads},
        std::tuple{"seq", r.seq, kMaxSeq}, std::tuple{"seq_kv", r.seq_kv, kMaxSeq},
        std::tuple{"head_dim", r.head_dim, kMaxHeadDim}}) {
    if (v < 1 || v > hi) {
      throw ConfigError(fmt::format("{}: '{}' = {} is out of range: it must be in [1, {}]",
                                    in_problem, key, v, hi));
    }
  }
  if (!(r.dropout >= 0.0 && r.dropout < 1.0)) {
    throw ConfigError(fmt::format("{}: 'dropout' = {} is out of range: it must be in [0, 1)",
                                  in_problem, r.dropout));
  }
  const auto word = [&](const char* key, const std::string& text, const auto& parse) {
    try {
      parse(text);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: '{}' = \"{}\": {}", in_problem, key, text, e.what()));
    }
  };
  word("dtype", r.dtype, [](const std::string& t) { parse_dtype(t); });
  word("pass", r.pass, [](const std::string& t) { parse_pass(t); });
  if (r.l2 != "on" && r.l2 != "off") {
    throw ConfigError(fmt::format("{}: 'l2' = \"{}\" must be \"on\" or \"off\"", where, r.l2));
  }
  if (r.algorithm.empty()) throw ConfigError(fmt::format("{}: 'algorithm' is empty", where));
}

SweepRow parse_row(const json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(fmt::format("{}: a row is not an object", where));
  SweepRow r;
  r.point = field<std::size_t>(j, "point", where);
  r.profile = field<std::string>(j, "profile", where);
  r.algorithm = field<std::string>(j, "algorithm", where);
  r.l2 = field<std::string>(j, "l2", where);
  r.feasible = field<bool>(j, "feasible", where);
  r.cold_l2 = j.value("cold_l2", false);
  r.sm_clock_mhz = number_or_zero(j, "sm_clock_mhz");
  // power.clock_given: whether --sm-clock-mhz set it; files without a power object (profiles
  // without a power limit, older files) ran at the clock they asked for.
  const auto power = j.find("power");
  r.has_power = power != j.end() && power->is_object() && power->contains("clock_given") &&
                (*power)["clock_given"].is_boolean();
  const bool chosen_by_power = r.has_power && !(*power)["clock_given"].get<bool>();
  r.requested_clock_mhz = chosen_by_power ? 0.0 : r.sm_clock_mhz;
  const json p = field<json>(j, "problem", where);
  r.batch = field<std::int64_t>(p, "batch", where);
  r.heads = field<std::int64_t>(p, "heads", where);
  r.seq = field<std::int64_t>(p, "seq", where);
  r.seq_kv = field<std::int64_t>(p, "seq_kv", where);
  r.head_dim = field<std::int64_t>(p, "head_dim", where);
  r.dtype = field<std::string>(p, "dtype", where);
  r.pass = field<std::string>(p, "pass", where);
  r.causal = field<bool>(p, "causal", where);
  r.mask = field<bool>(p, "mask", where);
  r.dropout = field<double>(p, "dropout", where);
  check_problem_fields(r, where);
  r.kv_heads = p.contains("kv_heads") && p["kv_heads"].is_number_integer()
                   ? p["kv_heads"].get<std::int64_t>()
                   : r.heads;
  if (p.contains("page_tokens") && p["page_tokens"].is_number_integer())
    r.page_tokens = p["page_tokens"].get<std::int64_t>();
  if (p.contains("window") && p["window"].is_number_integer())
    r.window = p["window"].get<std::int64_t>();
  if (p.contains("latent_dim") && p["latent_dim"].is_number_integer())
    r.latent_dim = p["latent_dim"].get<std::int64_t>();
  if (p.contains("kv_dtype") && p["kv_dtype"].is_string()) {
    r.kv_dtype = p["kv_dtype"].get<std::string>();
    try {
      parse_dtype(r.kv_dtype);
    } catch (const ConfigError& e) {
      throw ConfigError(
          fmt::format("{}: problem: 'kv_dtype' = \"{}\": {}", where, r.kv_dtype, e.what()));
    }
  }
  if (p.contains("pattern") && p["pattern"].is_string())
    r.pattern = p["pattern"].get<std::string>();
  const json t = field<json>(j, "tiling", where);
  r.block_q = field<std::int64_t>(t, "block_q", where);
  r.block_kv = field<std::int64_t>(t, "block_kv", where);
  r.threads = t.value("threads", std::int64_t{0});
  r.stages = t.value("pipeline_stages", std::int64_t{0});
  r.warpgroups = t.value("warpgroups", std::string{});
  r.pack_gqa = t.value("pack_gqa", std::string{});
  r.backward_block_q = t.value("backward_block_q", std::int64_t{0});
  r.backward_block_kv = t.value("backward_block_kv", std::int64_t{0});
  if (t.contains("splits") && t["splits"].is_number_integer())
    r.splits = t["splits"].get<std::int64_t>();
  if (!r.feasible) {
    r.infeasible_reason = j.value("infeasible_reason", std::string{});
    return r;
  }
  const json c = field<json>(j, "counters", where);
  r.hbm_read_bytes = count_field(c, "hbm_read_bytes", where);
  r.hbm_write_bytes = count_field(c, "hbm_write_bytes", where);
  // Absent in files of before the column: 0.
  r.hbm_dirty_at_end_bytes = c.contains("hbm_write_dirty_at_end_bytes")
                                 ? count_field(c, "hbm_write_dirty_at_end_bytes", where)
                                 : 0;
  r.l2_read_bytes = count_field(c, "l2_read_bytes", where);
  r.l2_write_bytes = count_field(c, "l2_write_bytes", where);
  r.flops = count_field(c, "flops", where);
  r.tensor_flops = number_or_zero(c, "tensor_flops");
  r.time_s = count_field(j, "time_s", where);
  r.bound = j.value("bound", std::string{});
  // "" on an infeasible row; else one of the schema's three (a CSV's "nan" was drawn as given).
  if (!r.bound.empty() && r.bound != "memory" && r.bound != "compute" && r.bound != "latency") {
    throw ConfigError(fmt::format(
        "{}: 'bound' = \"{}\" must be \"memory\", \"compute\" or \"latency\"", where, r.bound));
  }
  const json b = field<json>(j, "bounds", where);
  r.compulsory_bytes = count_field(b, "compulsory_bytes", where);
  r.closed_form_bytes = count_field(b, "closed_form_bytes", where);
  r.lower_bound_bytes = count_field(b, "lower_bound_bytes", where);
  if (c.contains("per_tensor") && c["per_tensor"].is_object()) {
    for (const auto& [name, v] : c["per_tensor"].items()) {
      r.per_tensor[name] = {number_or_zero(v, "hbm_read_bytes"),
                            number_or_zero(v, "hbm_write_bytes"),
                            number_or_zero(v, "l2_read_bytes"), number_or_zero(v, "l2_write_bytes"),
                            number_or_zero(v, "hbm_write_dirty_at_end_bytes")};
    }
  }
  return r;
}

ProfilePeaks parse_peaks(const json& j) {
  ProfilePeaks p;
  p.description = j.value("description", std::string{});
  p.hbm_gbps = number_or_zero(j, "hbm_gbps");
  p.hbm_peak_gbps = number_or_zero(j, "hbm_peak_gbps");
  p.l2_gbps = number_or_zero(j, "l2_gbps");
  p.l2_size_bytes = static_cast<std::int64_t>(number_or_zero(j, "l2_size_bytes"));
  p.sram_bytes_per_cta = static_cast<std::int64_t>(number_or_zero(j, "sram_bytes_per_cta"));
  p.fp32_tflops = number_or_zero(j, "fp32_tflops");
  if (j.contains("tensor_tflops") && j["tensor_tflops"].is_object()) {
    for (const auto& [name, v] : j["tensor_tflops"].items()) {
      if (v.is_number()) p.tensor_tflops[name] = v.get<double>();
    }
  }
  return p;
}

}  // namespace

SweepJsonFrame sweep_json_frame(const SweepDescription& description,
                                const std::map<std::string, HardwareProfile>& profiles) {
  const json axes = axes_json(description);
  json profile_peaks = json::object();
  for (const auto& [key, p] : profiles) profile_peaks[p.name] = profile_json(p);
  const json doc = {
      {"format", kFormat},
      {"version", kVersion},
      {"schema_version", kSchemaVersion},
      {"sweep",
       {{"id", sweep_id(axes)},
        {"axes", axes},
        {"points", description.total_points},
        {"shard", fmt::format("{}/{}", description.shard.index, description.shard.count)}}},
      {"profiles", profile_peaks},
      {"rows", json::array()}};
  // The keys are sorted, so "rows" sits between "profiles" and "sweep"; its empty array is the
  // one place an unescaped `"rows": []` can appear.
  SweepJsonFrame frame;
  frame.empty = json_text(doc, 1) + "\n";
  const std::string marker = "\"rows\": []";
  const std::size_t at = frame.empty.find(marker);
  ensure(at != std::string::npos, "sweep_json_frame: no rows key");
  frame.head = frame.empty.substr(0, at) + "\"rows\": [\n";
  frame.tail = "\n ]" + frame.empty.substr(at + marker.size());
  return frame;
}

std::string sweep_json_row(const SweepPoint& point, const Report& report) {
  json row = report_to_json(report);
  row.erase("simulation_wall_s");  // the only field that changes from run to run
  row.erase("schema_version");     // the file's, once
  row["point"] = point.index;
  // Indented as an element of the top-level "rows" array (two levels deep at one space each).
  // Strings hold no raw newline (JSON escapes it), so every newline is a line break.
  std::string text = "  ";
  for (const char c : json_text(row, 1)) {
    text += c;
    if (c == '\n') text += "  ";
  }
  return text;
}

std::string sweep_json(const SweepDescription& description, const std::vector<SweepPoint>& points,
                       const std::vector<Report>& reports,
                       const std::map<std::string, HardwareProfile>& profiles) {
  ensure(points.size() == reports.size(), "sweep_json: {} points but {} reports", points.size(),
         reports.size());
  const SweepJsonFrame frame = sweep_json_frame(description, profiles);
  if (points.empty()) return frame.empty;
  std::string text = frame.head;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i > 0) text += ",\n";
    text += sweep_json_row(points[i], reports[i]);
  }
  return text + frame.tail;
}

std::string sweep_csv_header() {
  return "point," + csv_header() + "\n";
}

std::string sweep_csv_row(const SweepPoint& point, const Report& report) {
  return fmt::format("{},{}\n", point.index, csv_row(report));
}

std::string sweep_csv(const std::vector<SweepPoint>& points, const std::vector<Report>& reports) {
  ensure(points.size() == reports.size(), "sweep_csv: {} points but {} reports", points.size(),
         reports.size());
  std::string s = sweep_csv_header();
  for (std::size_t i = 0; i < points.size(); ++i) s += sweep_csv_row(points[i], reports[i]);
  return s;
}

SweepData load_sweeps(const std::vector<fs::path>& files) {
  if (files.empty()) throw ConfigError("no sweep file given");
  SweepData data;
  std::set<std::string> seen_rows;
  // Per sweep id: points swept, points present, the files that held it.
  struct Coverage {
    std::size_t total = 0;
    std::set<std::size_t> points;
    std::vector<std::string> shards;
    bool csv = false;  // a CSV: the sweep's points are unknown
  };
  std::map<std::string, Coverage> coverage;
  // Adds a row of `name` unless an equal one (but for its point) was seen.
  const auto add_row = [&](const json& j, const std::string& name, std::size_t i, Coverage& cov) {
    SweepRow row = parse_row(j, fmt::format("{}: row {}", name, i));
    row.source = name;
    cov.points.insert(row.point);
    json key = j;
    key.erase("point");
    if (!seen_rows.insert(json_text(key)).second) {
      ++data.duplicate_rows;
      return;
    }
    data.rows.push_back(std::move(row));
  };
  for (const fs::path& file : files) {
    const std::string name = file.string();
    const std::string text = read_text_file(file, "sweep file", kMaxDataFileBytes);
    if (is_sweep_csv(text)) {
      try {
        data.sources.push_back(name);
        const std::vector<std::vector<std::string>> records = csv_records(text, name);
        std::map<std::string, std::size_t> col;
        for (std::size_t i = 0; i < records[0].size(); ++i) {
          // A column named twice: which one is the sweep's? The first was read silently, the
          // other ignored however it differed (the seventh probe: seq 256 and seq 999999).
          if (!col.emplace(records[0][i], i).second) {
            throw ConfigError(
                fmt::format("{}: the header names the column '{}' twice (columns {} "
                            "and {}); a sweep CSV names each once",
                            name, records[0][i], col.at(records[0][i]) + 1, i + 1));
          }
        }
        const std::vector<std::string> missing = missing_csv_columns(col);
        if (!missing.empty()) {
          throw ConfigError(fmt::format(
              "{}: a sweep's CSV without the column{} {} that report reads; write it again with "
              "this iosim (sweep --format csv), or report the sweep's JSON (sweep --out FILE.json)",
              name, missing.size() == 1 ? "" : "s", fmt::join(missing, ", ")));
        }
        Coverage& cov = coverage["csv " + name];
        cov.csv = true;
        cov.shards.push_back(name);
        for (std::size_t i = 1; i < records.size(); ++i) {
          const std::string where = fmt::format("{}: line {}", name, i + 1);
          if (records[i].size() != records[0].size()) {
            throw ConfigError(fmt::format("{}: {} fields, but the header has {}", where,
                                          records[i].size(), records[0].size()));
          }
          const json row = csv_row_json(col, records[i], where);
          const std::string profile = row.value("profile", std::string{});
          if (!data.profiles.count(profile)) {
            data.profiles.emplace(profile, parse_peaks(profile_json(csv_profile(profile, name))));
          }
          add_row(row, name, i - 1, cov);
        }
        continue;
      } catch (const json::exception& e) {
        throw ConfigError(fmt::format("{}: unexpected content: {}", name, json_error_text(e)));
      }
    }
    const json doc = parse_json_strictly(
        text, name, "a sweep's CSV starts with the header 'point,' (iosim sweep --out FILE.csv)");
    try {
      if (!doc.is_object() || doc.value("format", std::string{}) != kFormat) {
        throw ConfigError(fmt::format(
            "{}: not an iosim sweep file (no \"format\": \"{}\"); write one with iosim sweep --out "
            "FILE.json",
            name, kFormat));
      }
      if (doc.value("version", json()) != kVersion) {
        throw ConfigError(fmt::format("{}: sweep file version {} is not {}", name,
                                      doc.value("version", json()).dump(), kVersion));
      }
      data.sources.push_back(name);
      const json sweep = field<json>(doc, "sweep", name);
      Coverage& cov = coverage[field<std::string>(sweep, "id", name)];
      cov.total = field<std::size_t>(sweep, "points", name);
      cov.shards.push_back(sweep.value("shard", std::string("1/1")));
      if (doc.contains("profiles") && doc["profiles"].is_object()) {
        for (const auto& [pname, peaks] : doc["profiles"].items()) {
          data.profiles.emplace(pname, parse_peaks(peaks));
        }
      }
      const json rows = field<json>(doc, "rows", name);
      if (!rows.is_array()) throw ConfigError(fmt::format("{}: 'rows' is not an array", name));
      for (std::size_t i = 0; i < rows.size(); ++i) add_row(rows[i], name, i, cov);
      // Then every key against the schema the file was written by, the ones this report does not
      // read too (after the rows' own checks, whose messages say more of the keys they know): a
      // value of the wrong type anywhere means the file is not what iosim wrote.
      if (const std::string e = JsonSchemas::embedded().first_error(doc, "sweep.schema.json");
          !e.empty()) {
        throw ConfigError(fmt::format(
            "{}: {} (schemas/sweep.schema.json): not a sweep file as iosim writes it; write it "
            "again with iosim sweep --out FILE.json",
            name, e));
      }
    } catch (const json::exception& e) {
      // A key of the wrong type: name the file rather than fail as a bug.
      throw ConfigError(fmt::format("{}: unexpected content: {}", name, json_error_text(e)));
    }
  }
  // No row at all would make an empty report that looks like a success. A shard with no points
  // (--shard 5/5 of a 3-point sweep) writes "rows": [] of its own, so only all files empty is.
  if (data.rows.empty()) {
    throw ConfigError(fmt::format("{}: {} no rows: nothing to report (did the sweep run?)",
                                  fmt::join(data.sources, ", "),
                                  data.sources.size() == 1 ? "has" : "have"));
  }
  for (const SweepRow& row : data.rows) {
    if (!data.profiles.count(row.profile)) {
      throw ConfigError(
          fmt::format("{}: row of point {} names profile '{}', which is not under "
                      "the file's \"profiles\"",
                      row.source, row.point, row.profile));
    }
  }
  // An infeasible row says nothing of its clock (it never ran): on a profile whose clock the
  // power limit chose for its other rows, it is one of them, not a configuration of its own.
  std::set<std::string> power_chosen;
  for (const SweepRow& r : data.rows) {
    if (r.has_power && r.requested_clock_mhz == 0.0) power_chosen.insert(r.profile);
  }
  for (SweepRow& r : data.rows) {
    if (!r.has_power && power_chosen.count(r.profile)) r.requested_clock_mhz = 0.0;
  }
  for (const auto& [id, cov] : coverage) {
    if (cov.csv) {
      data.coverage.push_back(fmt::format(
          "{}: {} points (a sweep's CSV records no sweep axes: whether it holds every point is "
          "not known)",
          cov.shards.front(), cov.points.size()));
      continue;
    }
    std::string shards;
    for (const std::string& s : cov.shards) shards += (shards.empty() ? "" : ", ") + s;
    data.coverage.push_back(fmt::format("sweep {}: {} of {} points (shards {}){}", id,
                                        cov.points.size(), cov.total, shards,
                                        cov.points.size() < cov.total ? ", incomplete" : ""));
  }
  return data;
}

}  // namespace iosim
