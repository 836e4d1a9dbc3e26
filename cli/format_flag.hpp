#pragma once
// --format: the output formats a command offers, checked in one place.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace iosim::cli {

/// "--format a | b | c" (the first choice is the default).
class FormatFlag {
 public:
  explicit FormatFlag(std::vector<std::string> choices);
  /// Adds --format to `cmd`; its help lists the choices, then `help_suffix`.
  void add_to(CLI::App& cmd, const std::string& help_suffix = "");
  /// The chosen format; throws ConfigError naming the valid ones when it is not one of them.
  const std::string& checked() const;

 private:
  std::vector<std::string> choices_;
  std::string value_;
};

}  // namespace iosim::cli
