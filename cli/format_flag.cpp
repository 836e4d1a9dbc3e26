#include "cli/format_flag.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

#include "sim/base/errors.hpp"

namespace iosim::cli {

FormatFlag::FormatFlag(std::vector<std::string> choices)
    : choices_(std::move(choices)), value_(choices_.front()) {}

void FormatFlag::add_to(CLI::App& cmd, const std::string& help_suffix) {
  cmd.add_option("--format", value_, fmt::format("{}{}", fmt::join(choices_, " | "), help_suffix))
      ->capture_default_str();
}

const std::string& FormatFlag::checked() const {
  if (std::find(choices_.begin(), choices_.end(), value_) != choices_.end()) return value_;
  std::string valid = choices_.front();
  for (std::size_t i = 1; i < choices_.size(); ++i) {
    valid += (i + 1 == choices_.size() ? " or " : ", ") + choices_[i];
  }
  throw ConfigError(fmt::format("--format must be {}, not '{}'", valid, value_));
}

}  // namespace iosim::cli
