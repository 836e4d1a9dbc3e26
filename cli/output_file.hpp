#pragma once
// Output files of the CLI. A run that fails never leaves a partial file behind.
#include <string>

namespace iosim::cli {

/// Writes `text` to `path` through a temporary file in the same folder and a rename, so that
/// readers see either the old file or the whole new one. Throws ConfigError naming the path.
void write_file_atomically(const std::string& path, const std::string& text);

/// Throws ConfigError naming `flag` when the folder `path` would be written to does not exist,
/// so that a long run fails before it starts rather than at the end.
void check_output_folder(const std::string& flag, const std::string& path);

/// The extension of `path` in lower case, without the dot ("" when none).
std::string extension_of(const std::string& path);

}  // namespace iosim::cli
