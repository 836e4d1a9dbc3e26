#pragma once
// Error families. ConfigError: the user's input (a profile, a flag, a problem size) is wrong; the
// message names the offending item. InternalError: a bug in iosim (a broken invariant). Library code
// throws these and never prints or exits; only main() turns them into exit codes.
#include <stdexcept>
#include <string>

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

/// Throws InternalError with `what` when `cond` is false.
inline void ensure(bool cond, const std::string& what) {
  if (!cond) throw InternalError(what);
}

}  // namespace iosim
