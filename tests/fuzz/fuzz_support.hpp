#pragma once
// Shared by the libFuzzer targets (tests/fuzz/*.cpp, built with -DIOSIM_BUILD_FUZZERS=ON under
// clang): a reader may refuse its input with ConfigError (or stop on its time budget); any other
// exception, a crash or a sanitizer report is a bug the fuzzer found.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include "sim/base/errors.hpp"
#include "sim/base/run_control.hpp"

namespace iosim::fuzz {

/// Runs `read` on the input; ConfigError and Stopped are the refusals a reader may give.
template <typename F>
int guarded(F&& read) {
  try {
    read();
  } catch (const ConfigError&) {
  } catch (const Stopped&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}

/// The input as a file (for readers that take a path), rewritten on every call.
inline std::string as_file(const std::uint8_t* data, std::size_t size, const char* suffix) {
  static const std::string path = (std::filesystem::temp_directory_path() /
                                   ("iosim-fuzz-" + std::to_string(::getpid()) + suffix))
                                      .string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace iosim::fuzz
