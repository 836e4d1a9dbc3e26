#include "sim/base/text_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>

#include "sim/base/errors.hpp"

namespace iosim {

namespace fs = std::filesystem;

std::string read_text_file(const fs::path& path, const std::string& what, std::size_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    throw ConfigError(fmt::format("cannot read {} '{}': no such file", what, path.string()));
  }
  if (fs::is_directory(status)) {
    throw ConfigError(fmt::format("cannot read {} '{}': it is a directory", what, path.string()));
  }
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file) {
    throw ConfigError(
        fmt::format("cannot read {} '{}': {}", what, path.string(), std::strerror(errno)));
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
  return text;
}

}  // namespace iosim
