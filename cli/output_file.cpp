#include "cli/output_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "sim/errors.hpp"

namespace iosim::cli {

namespace fs = std::filesystem;

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = fmt::format("{}.tmp-{}", path, static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw ConfigError(fmt::format("cannot write '{}'", path));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw ConfigError(fmt::format("cannot write '{}': {}", path, ec.message()));
  }
}

void check_output_folder(const std::string& flag, const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw ConfigError(
        fmt::format("{} '{}': folder '{}' does not exist", flag, path, parent.string()));
  }
  if (fs::is_directory(path, ec)) {
    throw ConfigError(fmt::format("{} '{}' is a folder; give a file name", flag, path));
  }
}

std::string extension_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace iosim::cli
