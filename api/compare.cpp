#include "api/compare.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "sim/base/errors.hpp"

namespace iosim {

std::vector<ComparedKernel> split_kernel_list(const std::string& value, bool description) {
  const char* flag = description ? "--kernel" : "--algo";
  std::error_code ec;
  // A description inline or in a file is read whole: its text (or a file's name) may hold commas.
  // A value without a comma is one kernel, whatever it holds: a single run's --algo "" is
  // refused by its run as before this list was read.
  if (value.find(',') == std::string::npos ||
      (description && (value.front() == '{' || std::filesystem::exists(value, ec)))) {
    return {{description, value}};
  }
  std::vector<ComparedKernel> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = value.find(',', start);
    const std::string name =
        value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty()) {
      throw ConfigError(
          fmt::format("{} '{}': an empty name in the list; give names separated by single commas "
                      "(--algo flash2,flash3)",
                      flag, value));
    }
    out.push_back({description, name});
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::vector<RunRequest> compare_requests(const HardwareProfile& profile, const RunFlags& shared,
                                         const std::vector<ComparedKernel>& kernels) {
  std::vector<RunRequest> requests;
  std::set<std::string> names;
  for (const ComparedKernel& k : kernels) {
    RunFlags f = shared;
    f.algorithm = k.description ? shared.algorithm : k.text;
    f.kernel = k.description ? k.text : std::string();
    // The kernel's name leads each message: "--pattern applies to block-sparse" alone would not
    // say which column of `--algo flash2,block-sparse --pattern ...` it stopped at.
    const std::string typed = fmt::format("{} {}", k.description ? "--kernel" : "--algo", k.text);
    try {
      // An empty --kernel would run --algo's algorithm in its column without a word.
      if (k.text.empty()) throw ConfigError("an empty name: give an algorithm or a description");
      RunRequest r = to_request(f);
      if (!names.insert(r.algorithm).second) {
        throw ConfigError(fmt::format(
            "'{}' is compared twice: each kernel of a comparison is one column, known by its name "
            "(a description's `name:`); give it once, or rename one description",
            r.algorithm));
      }
      requests.push_back(std::move(r));
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: {}", typed, e.what()));
    }
    try {
      check_request(profile, requests.back());
    } catch (const ConfigError& e) {
      // Said to be shared, so that "--pattern applies to block-sparse" in a comparison of
      // block-sparse and flash2 reads as a choice to make, not a flag dropped for one column.
      throw ConfigError(fmt::format(
          "{}: {} (in a comparison every flag but the kernel is shared: each kernel runs with all "
          "of them)",
          typed, e.what()));
    }
  }
  return requests;
}

std::vector<Report> compare(const HardwareProfile& profile,
                            const std::vector<RunRequest>& requests) {
  std::vector<Report> reports;
  reports.reserve(requests.size());
  for (const RunRequest& r : requests) reports.push_back(simulate(profile, r));
  return reports;
}

}  // namespace iosim
