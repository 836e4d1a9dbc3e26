#pragma once
// Error families. ConfigError: the user's input (a profile, a flag, a problem size) is wrong; the
// message names the offending item. InternalError: a bug in iosim (a broken invariant). Library
// code throws these and never prints or exits; only main() turns them into exit codes.
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace iosim {

/// A mistake in user input: profile file, CLI flag, problem shape. Exit code 2 at the CLI.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A broken internal invariant: a bug, never the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Throws InternalError with the formatted message when `cond` is false. The message is only
/// formatted on failure, so checks on hot paths cost a branch.
template <typename... Args>
void ensure(bool cond, fmt::format_string<Args...> message, Args&&... args) {
  if (!cond) throw InternalError(fmt::format(message, std::forward<Args>(args)...));
}

}  // namespace iosim
