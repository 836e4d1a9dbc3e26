#include "sim/base/text_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <vector>

#include "sim/base/errors.hpp"

namespace iosim {

namespace fs = std::filesystem;

namespace {

// The files read so far, by device and inode (so that any name of one finds it).
struct ReadFile {
  dev_t device;
  ino_t inode;
  InputRead read;
};
struct ReadFiles {
  std::mutex mutex;
  std::vector<ReadFile> files;
};
ReadFiles& read_files() {
  static ReadFiles r;
  return r;
}

// What a path that is not a regular file is, for the message.
const char* kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::fifo:
      return "a FIFO (named pipe)";
    case fs::file_type::socket:
      return "a socket";
    case fs::file_type::character:
    case fs::file_type::block:
      return "a device";
    default:
      return "not a regular file";
  }
}

}  // namespace

std::string read_text_file(const fs::path& path, const std::string& what, std::size_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    // A symlink loop, a path through a file, a folder not searchable: say which, not "no such".
    throw ConfigError(fmt::format("cannot read {} '{}': {}", what, path.string(), ec.message()));
  }
  if (ec || !fs::exists(status)) {
    throw ConfigError(fmt::format("cannot read {} '{}': no such file", what, path.string()));
  }
  if (fs::is_directory(status)) {
    throw ConfigError(fmt::format("cannot read {} '{}': it is a directory", what, path.string()));
  }
  // Inputs are regular files only: opening a FIFO blocks until something writes to it (forever,
  // when nothing does), and a device such as /dev/zero never ends.
  if (!fs::is_regular_file(status)) {
    throw ConfigError(
        fmt::format("cannot read {} '{}': it is {}; iosim reads inputs from regular "
                    "files",
                    what, path.string(), kind_of(status.type())));
  }
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file) {
    throw ConfigError(
        fmt::format("cannot read {} '{}': {}", what, path.string(), std::strerror(errno)));
  }
  struct stat opened {};
  if (::fstat(::fileno(file.get()), &opened) == 0) {
    ReadFiles& r = read_files();
    const std::lock_guard<std::mutex> lock(r.mutex);
    r.files.push_back({opened.st_dev, opened.st_ino, {what, path.string()}});
  }
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    if (n > 0) {
      if (text.size() + n > max_bytes) {
        throw ConfigError(fmt::format("{} '{}' is larger than {} bytes; is it the right file?",
                                      what, path.string(), max_bytes));
      }
      text.append(buffer, n);
    }
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) {
    throw ConfigError(fmt::format("cannot read {} '{}'", what, path.string()));
  }
  // No input iosim reads holds a NUL byte. Refused here, once for every reader: the readers quote
  // a bad value in their messages, and a NUL inside it cut the message off before its cause
  // (issue #50's fourth probe: "iosim: n.csv:3: '67108"), or sat in a column nobody reads and
  // passed on into a report's Markdown.
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    const std::size_t line_start = text.rfind('\n', nul);
    const std::size_t line =
        1 + static_cast<std::size_t>(
                std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
    const std::size_t column = line_start == std::string::npos ? nul + 1 : nul - line_start;
    throw ConfigError(fmt::format(
        "{} '{}' holds a NUL byte (line {}, column {}): not a text file; is it the right file?",
        what, path.string(), line, column));
  }
  return text;
}

std::optional<InputRead> read_as_input(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;  // absent: nothing to replace
  ReadFiles& r = read_files();
  const std::lock_guard<std::mutex> lock(r.mutex);
  for (const ReadFile& f : r.files) {
    if (f.device == st.st_dev && f.inode == st.st_ino) return f.read;
  }
  return std::nullopt;
}

std::vector<std::string> yaml_stems_in(const std::filesystem::path& dir, const std::string& what,
                                       const std::string& env) {
  std::error_code ec;
  const bool is_dir = std::filesystem::is_directory(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw ConfigError(fmt::format("cannot read built-in {} directory '{}' ({} names it): {}", what,
                                  dir.string(), env, ec.message()));
  }
  if (!is_dir) {
    throw ConfigError(fmt::format("built-in {} directory '{}' does not exist ({} overrides it)",
                                  what, dir.string(), env));
  }
  // With error codes: the exception's text was the library's ("filesystem error: directory
  // iterator cannot open directory: Permission denied [DIR]"; issue #50's fifth probe).
  std::vector<std::string> names;
  const auto refuse = [&] {
    throw ConfigError(
        fmt::format("cannot list built-in {}s in '{}': {}", what, dir.string(), ec.message()));
  };
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) refuse();
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && it->path().extension() == ".yaml") {
      names.push_back(it->path().stem().string());
    }
  }
  if (ec) refuse();
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace iosim
