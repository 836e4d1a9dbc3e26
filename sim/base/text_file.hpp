#pragma once
// Reading a whole input file (profile, pattern, block table, trace, measured data, sweep file)
// with a size limit, so that a wrong path such as /dev/zero or a multi-gigabyte file is refused
// with a message instead of filling memory.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iosim {

/// The first control character of `s` that no text iosim reads holds (U+0000 to U+001F but tab,
/// line feed and carriage return, and U+007F), or -1. Raw, such a byte is refused with its file
/// (read_text_file, the YAML reader); this finds the ones a parser made of an escape (YAML's
/// "\0" or "\x00", JSON's "\u0000"), which passed on into names and reports.
inline int first_control_character(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return c;
  }
  return -1;
}

/// The first control character of a one-line text (a name a table or page prints): any of
/// U+0000 to U+001F, tab and line breaks too, or U+007F; -1 if none.
inline int first_control_character_in_line(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) return c;
  }
  return -1;
}

/// Largest profile file (YAML) iosim reads; the built-in ones are about 10 KiB.
inline constexpr std::size_t kMaxProfileBytes = std::size_t{1} << 20;
/// Largest data file (pattern, block table, trace, measured data, sweep file) iosim reads:
/// 256 MiB, far above any real one (a 16384 x 16384 block pattern is 256 MiB of 0/1 digits).
inline constexpr std::size_t kMaxDataFileBytes = std::size_t{1} << 28;

/// The bytes of `path`. Throws ConfigError naming `what` ("profile file") and the path when it
/// does not exist, is a folder, a FIFO, a socket or a device (never opened, so a FIFO with no
/// writer cannot block), cannot be read, holds more than `max_bytes` bytes (read at most
/// max_bytes + 1: a file that grows while read is refused too), or holds a NUL byte (no input
/// iosim reads is binary; the message names its line and column).
std::string read_text_file(const std::filesystem::path& path, const std::string& what,
                           std::size_t max_bytes);

/// When `path` (after symbolic links) is a file this process has read through read_text_file,
/// what it was read as ("profile file") and the name it was read by; nullopt otherwise. Outputs
/// ask before they replace a file: `sweep --out p.yaml --profile p.yaml` replaced the profile.
struct InputRead {
  std::string what;
  std::string path;
};
std::optional<InputRead> read_as_input(const std::filesystem::path& path);

/// The stems of the `.yaml` files in `dir`, sorted: the names of the built-in profiles or models
/// when IOSIM_PROFILE_DIR or IOSIM_MODEL_DIR (`env`) replaces the embedded ones. Throws
/// ConfigError naming `what` ("profile", "model") and `env` when `dir` is no folder or cannot be
/// listed.
std::vector<std::string> yaml_stems_in(const std::filesystem::path& dir, const std::string& what,
                                       const std::string& env);

}  // namespace iosim
