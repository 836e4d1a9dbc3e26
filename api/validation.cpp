// `iosim validate`'s entry points and the reading of measured files: which files a path holds,
// each document's checks, the profile and the clocks a file's GPU ran at. Predicting a case is in
// validation_prediction.cpp, the summaries in validation_summary.cpp, the writers in
// validation_writers.cpp.
#include "api/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "api/json_schema.hpp"
#include "api/validation_detail.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_reader.hpp"
#include "sim/base/json_text.hpp"
#include "sim/base/text_file.hpp"

namespace iosim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json read_json(const fs::path& file) {
  const std::string text = read_text_file(file, "measurement file", kMaxDataFileBytes);
  return parse_json_strictly(text, file.string(),
                             "measured files are iosim-measurements JSON; an Nsight Compute CSV "
                             "export goes with --ncu FILE.csv --kernel K.yaml and the problem's "
                             "flags (iosim validate --help)");
}

// The built-in profile a measurement belongs to: the folder it sits in
// (cuda_validate/measurements/<profile>/), else the device name it recorded.
std::string profile_for(const fs::path& file, const json& doc) {
  const std::vector<std::string> names = builtin_profile_names();
  const std::string folder = file.parent_path().filename().string();
  if (std::find(names.begin(), names.end(), folder) != names.end()) return folder;
  const std::string device =
      validation_detail::string_or(validation_detail::object_or_empty(doc, "device", file.string()),
                                   "name", "", file.string() + ": device");
  if (device.find("H200") != std::string::npos) return "h200-sxm-141gb";
  if (device.find("H100") != std::string::npos) return "h100-sxm5-80gb";
  if (device.find("A100") != std::string::npos) {
    return device.find("80GB") != std::string::npos ? "a100-sxm4-80gb" : "a100-sxm4-40gb";
  }
  throw ConfigError(fmt::format("{}: no built-in profile for device '{}'; pass --profile",
                                file.string(), device));
}

// Every filesystem call here takes an error_code: the throwing forms made a symbolic link loop
// (or a folder that cannot be searched) an internal error instead of a message naming the path.
std::vector<fs::path> measurement_files(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    // A symlink loop, a path through a file, a folder not searchable: say which, not "no such".
    throw ConfigError(
        fmt::format("cannot read measurement file '{}': {}", path.string(), ec.message()));
  }
  if (ec || !fs::exists(status)) {
    throw ConfigError(fmt::format("no such file or folder '{}'", path.string()));
  }
  if (!fs::is_directory(status)) return {path};  // read_text_file says what else it may be
  std::vector<fs::path> files;
  fs::recursive_directory_iterator it(path, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    std::error_code entry_ec;  // a link loop in the folder is no measurement file: skipped
    if (name.rfind("measurements", 0) == 0 && p.extension() == ".json" &&
        it->is_regular_file(entry_ec)) {
      files.push_back(p);
    }
  }
  if (ec) {
    throw ConfigError(
        fmt::format("cannot list measurements folder '{}': {}", path.string(), ec.message()));
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    throw ConfigError(fmt::format("no measurements*.json under '{}'", path.string()));
  }
  return files;
}

// A case's "rank_group" (FORMAT.md), "" when absent: "<family> <problem>", the family being its
// text before the first space, which the ranking summarizes by. A text that names no family
// would be summarized under an empty name, so it is refused.
std::string checked_rank_group(const json& c, const std::string& where) {
  const std::string group = validation_detail::string_or(c, "rank_group", "", where);
  if (c.contains("rank_group") && !c["rank_group"].is_null() &&
      (group.empty() || std::isspace(static_cast<unsigned char>(group.front())))) {
    throw ConfigError(fmt::format(
        "{}: 'rank_group' = {} must start with the kernel family's name (e.g. \"wg1_tma "
        "d64_n1k_full\")",
        where, json_text(c["rank_group"])));
  }
  return group;
}

// Checks one measurements document (read from `file`) and appends its cases to `v`.
void read_measurement_document(const json& doc, const fs::path& file,
                               const std::string& profile_override, ValidationResult& v) {
  if (!doc.is_object() || doc.value("format", json()) != "iosim-measurements") {
    throw ConfigError(
        fmt::format("{}: not an iosim-measurements file (\"format\" key)", file.string()));
  }
  if (doc.value("version", json()) != 1) {
    throw ConfigError(fmt::format("{}: measurement format version {} is not supported (1 is)",
                                  file.string(), doc.value("version", json()).dump()));
  }
  if (!doc.contains("cases") || !doc["cases"].is_array()) {
    throw ConfigError(fmt::format("{}: 'cases' must be a list of measured cases", file.string()));
  }
  if (doc["cases"].empty()) {
    // Nothing compared is no agreement: an empty list would summarize as a success.
    throw ConfigError(fmt::format("{}: has no cases: 'cases' is an empty list", file.string()));
  }
  const std::string profile = profile_override.empty() ? profile_for(file, doc) : profile_override;
  std::size_t index = 0;
  for (const json& c : doc["cases"]) {
    ++index;
    if (!c.is_object()) {
      throw ConfigError(
          fmt::format("{}: every case must be an object, got {}", file.string(), c.type_name()));
    }
    // Each key by its type, named with the file, the case and the key (nlohmann::json's value()
    // said only "type must be string, but is number").
    using validation_detail::string_or;
    const std::string id =
        string_or(c, "id", "?", fmt::format("{}: case {} of 'cases'", file.string(), index));
    const std::string where = fmt::format("{}: case '{}'", file.string(), id);
    const std::string schedule = string_or(c, "schedule", "", where);
    const std::string pass = string_or(c, "pass", "fwd", where);
    const std::string rank_group = checked_rank_group(c, where);
    const std::vector<std::string> known = builtin_registry().names();
    std::string skip;
    if (c.contains("kernel")) {
      // Described by the case itself: its description says what it runs.
    } else if (std::find(known.begin(), known.end(), schedule) == known.end()) {
      skip = "no iosim schedule '" + schedule + "' yet";
    } else if (pass != "fwd" && !builtin_registry().get(schedule).capabilities.backward) {
      skip = "no backward of iosim's '" + schedule + "' yet";
    }
    if (!skip.empty()) {
      CaseResult skipped;
      skipped.id = id;
      skipped.schedule = schedule;
      skipped.pass = pass;
      skipped.profile = profile;
      skipped.source_file = file.string();
      skipped.skipped_reason = skip;
      skipped.rank_group = rank_group;
      v.cases.push_back(skipped);
      continue;
    }
    try {
      v.cases.push_back(validation_detail::compare_case(c, profile, file.string()));
    } catch (const ConfigError& e) {
      // The case's own checks name the file and the case; the prediction's (a latent wider than
      // head_dim, a K/V head count that does not divide the heads) speak of run's flags, which
      // the user of validate never typed: say which case they are about (issue #50, probe8 F3).
      const std::string what = e.what();
      if (what.rfind(file.string(), 0) == 0) throw;
      throw ConfigError(fmt::format("{}: predicting it as `iosim run` would: {}", where, what));
    }
    v.cases.back().rank_group = rank_group;
  }
}

// The whole file against schemas/measurements.schema.json, after the reader's own checks (whose
// messages say more: a range, a unit, the case's id): a key of the wrong type that the reader
// does not use, or uses only in some cases, was accepted (issue #50, S1).
void check_measurement_schema(const json& doc, const fs::path& file) {
  const std::string e = JsonSchemas::embedded().first_error(doc, "measurements.schema.json");
  if (!e.empty()) {
    throw ConfigError(fmt::format(
        "{}: {} (schemas/measurements.schema.json; cuda_validate/FORMAT.md describes the format)",
        file.string(), e));
  }
}

}  // namespace

ValidationResult validate_document(const json& doc, const std::string& origin,
                                   const std::string& profile) {
  ValidationResult v;
  try {
    read_measurement_document(doc, origin, profile, v);
  } catch (const json::exception& e) {
    throw ConfigError(fmt::format("{}: unexpected content: {}", origin, json_error_text(e)));
  }
  validation_detail::summarize_cases(v);
  return v;
}

ValidationResult validate_measurements(const fs::path& path, const std::string& profile_override) {
  return validate_measurements(std::vector<fs::path>{path}, profile_override);
}

ValidationResult validate_measurements(const std::vector<fs::path>& paths,
                                       const std::string& profile_override) {
  std::vector<fs::path> files;
  for (const fs::path& path : paths) {
    const std::vector<fs::path> found = measurement_files(path);
    files.insert(files.end(), found.begin(), found.end());
  }
  ValidationResult v;
  for (const fs::path& file : files) {
    const json doc = read_json(file);
    try {
      read_measurement_document(doc, file, profile_override, v);
    } catch (const json::exception& e) {
      // A key of the wrong type deep in a case: the schema names its path where it can,
      // nlohmann::json's message names no key; either names the file rather than fail as a bug.
      check_measurement_schema(doc, file);
      throw ConfigError(
          fmt::format("{}: unexpected content: {}", file.string(), json_error_text(e)));
    }
    check_measurement_schema(doc, file);
  }
  validation_detail::summarize_cases(v);
  return v;
}

}  // namespace iosim
