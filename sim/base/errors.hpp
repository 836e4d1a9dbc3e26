#pragma once
// Error families. ConfigError: the user's input (a profile, a flag, a problem size) is wrong; the
// message names the offending item. InternalError: a bug in iosim (a broken invariant). Library
// code throws these and never prints or exits; only main() turns them into exit codes.
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace iosim {

/// `text` with each byte that is not part of well-formed UTF-8 written as `\xNN`. Messages quote
/// what they refuse, and a file's bytes need not be text: a block table holding 0xff made a
/// message that Python could not decode (UnicodeDecodeError, or a ConfigError with no text, in
/// place of the message; issue #50's third probe) and that the CLI wrote raw to the terminal.
inline std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned c = byte(i);
    // The length of the sequence `c` starts and the range its second byte must be in (RFC 3629:
    // no overlong forms, no surrogates, nothing past U+10FFFF).
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool ok = len > 0 && i + len <= text.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const unsigned b = byte(i + k);
      ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    }
    if (ok) {
      out.append(text, i, len);
      i += len;
    } else {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    }
  }
  return out;
}

/// A mistake in user input: profile file, CLI flag, problem shape. Exit code 2 at the CLI. The
/// message is kept as well-formed UTF-8 (valid_utf8).
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(valid_utf8(what)) {}
  explicit ConfigError(const char* what) : ConfigError(std::string(what)) {}
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
