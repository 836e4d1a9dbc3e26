#include "cli/output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

#include "sim/base/errors.hpp"
#include "sim/base/run_control.hpp"
#include "sim/base/text_file.hpp"

namespace iosim::cli {

namespace fs = std::filesystem;

namespace {

// Writes `text` to a new temporary file beside `path` and returns its name; removes it and
// throws ConfigError on failure.
std::string write_temp(const std::string& path, const std::string& text) {
  TempFile tmp = create_temp_beside(path);
  const bool written = std::fwrite(text.data(), 1, text.size(), tmp.file.get()) == text.size();
  const int why = errno;
  const bool closed = std::fclose(tmp.file.release()) == 0;
  if (!written || !closed) {
    std::error_code ignored;
    fs::remove(tmp.name, ignored);
    throw ConfigError(
        fmt::format("cannot write '{}': {}", path, std::strerror(written ? errno : why)));
  }
  return tmp.name;
}

}  // namespace

CLI::Validator output_file_name() {
  return CLI::Validator(
      [](std::string& name) {
        return name.empty() ? std::string("an empty file name; give a path") : std::string();
      },
      "");  // (no name: --help keeps showing TEXT)
}

namespace {

// True when the process started with stdout closed (`iosim sweep ... >&-`).
bool g_stdout_closed = false;

}  // namespace

// A standard descriptor that is closed at start is opened on a device, so that the next file
// iosim opens cannot take its number: with stdout closed, the sweep's journal became descriptor 1
// and the table printed at the end went into it ("the sweep journal was changed while the sweep
// ran"). Stdout goes to /dev/full, so that output meant for it fails and is reported.
void occupy_closed_standard_descriptors() {
  for (const int fd : {0, 1, 2}) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int opened = ::open(fd == 1 ? "/dev/full" : "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened != fd && opened >= 0) {
      ::dup2(opened, fd);
      ::close(opened);
    }
    if (fd == 1) g_stdout_closed = true;
  }
}

bool stdout_was_closed() {
  return g_stdout_closed;
}

void write_stdout(std::string_view text) {
  const auto failed = [](int why) {
    return ConfigError(fmt::format("cannot write the output to stdout: {}",
                                   g_stdout_closed ? "stdout is closed" : std::strerror(why)));
  };
  std::cout.flush();
  if (std::fflush(stdout) != 0) throw failed(errno);
  // A pipe or a socket may have no room for as long as its reader does not read: its bytes go
  // PIPE_BUF at a time, each once poll() says there is room. A file or a terminal takes larger
  // writes, which do not wait on a reader.
  struct stat st {};
  const bool waits_on_reader =
      ::fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
  const std::size_t chunk = waits_on_reader ? PIPE_BUF : std::size_t{1} << 20;
  while (!text.empty()) {
    run_control::check();
    if (waits_on_reader) {
      pollfd fd{STDOUT_FILENO, POLLOUT, 0};
      const int ready = ::poll(&fd, 1, 100);  // (a signal ends the wait early: EINTR)
      if (ready < 0 && errno != EINTR) throw failed(errno);
      if (ready <= 0) continue;  // no room yet, or a signal: check again
    }
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), std::min(text.size(), chunk));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw failed(errno);
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

TempFile create_temp_beside(const std::string& path) {
  // O_EXCL: a name that is taken is never opened, so a link or a file already there (a guessed
  // PATH.tmp-PID: `ln -s ~/notes o.html.tmp-$$; exec iosim run ... --html o.html` had the page
  // written into ~/notes, and a file of that name was renamed over o.html) is left as it is.
  const long pid = static_cast<long>(::getpid());
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = attempt == 0 ? fmt::format("{}.tmp-{}", path, pid)
                                    : fmt::format("{}.tmp-{}-{}", path, pid, attempt);
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) {
      // The cause: a folder not writable said only "cannot write 'ro/o.html'".
      throw ConfigError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    }
    std::FILE* file = ::fdopen(fd, "wb");
    if (file == nullptr) {
      const int why = errno;
      ::close(fd);
      ::unlink(name.c_str());
      throw ConfigError(fmt::format("cannot write '{}': {}", path, std::strerror(why)));
    }
    return TempFile{std::move(name), {file, &std::fclose}};
  }
  throw ConfigError(fmt::format("cannot write '{}': 100 files named '{}.tmp-{}*' are already there",
                                path, path, pid));
}

void write_file_atomically(const std::string& path, const std::string& text) {
  write_files_atomically({{path, text}});
}

void check_regular_or_absent(const std::string& flag, const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows links
  const char* kind = nullptr;
  switch (st.type()) {
    case fs::file_type::not_found:
      return;
    case fs::file_type::regular:
      // A file this command read (checked again before the rename: inputs are read after the
      // flags are parsed).
      if (const auto input = read_as_input(path)) {
        throw ConfigError(fmt::format(
            "{} '{}' is the {} '{}' this command read; iosim does not overwrite its inputs: "
            "give another output name",
            flag, path, input->what, input->path));
      }
      // A file its owner made read-only is not replaced, as the shell's `>` does not replace it:
      // the rename into place needs only the folder's permission, and replaced it without a
      // word (issue #50's fifth probe). (Root may write any file, as with `>`.)
      if (::access(path.c_str(), W_OK) != 0 && errno == EACCES) {
        throw ConfigError(fmt::format(
            "{} '{}' is read-only (its permissions forbid writing it); iosim does not replace "
            "it: make it writable, remove it, or give another name",
            flag, path));
      }
      return;
    case fs::file_type::directory:
      throw ConfigError(fmt::format("{} '{}' is a folder; give a file name", flag, path));
    case fs::file_type::fifo:
      kind = "a FIFO";
      break;
    case fs::file_type::character:
    case fs::file_type::block:
      kind = "a device";
      break;
    case fs::file_type::socket:
      kind = "a socket";
      break;
    default:
      kind = ec ? "a path that cannot be inspected" : "not a regular file";
  }
  throw ConfigError(fmt::format(
      "{} '{}' is {}: iosim writes only regular files (it writes a temporary file and renames it "
      "into place); give a file name, or write to stdout and redirect",
      flag, path, kind));
}

std::string write_target(const std::string& path) {
  // Link by link (the last target need not exist yet; a loop ends after 40, as the kernel's does).
  fs::path p = path;
  std::error_code ec;
  for (int links = 0; links < 40 && fs::is_symlink(p, ec); ++links) {
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) break;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return p.string();
}

void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& outputs) {
  // Each is checked again now (a FIFO made while the run went on), and written where its link
  // points, if it is one.
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [path, text] : outputs) {
    check_regular_or_absent("output", path);
    files.emplace_back(write_target(path), text);
  }
  std::vector<std::string> temps;  // (only the files this call made are removed)
  const auto remove_temps = [&] {
    std::error_code ignored;
    for (const std::string& t : temps) fs::remove(t, ignored);
  };
  try {
    for (const auto& [path, text] : files) temps.push_back(write_temp(path, text));
    // A stop asked for while the text was built or written (explain's page of thousands of
    // steps takes a second to serialize, with no check inside) means nothing is written.
    run_control::check();
  } catch (...) {
    remove_temps();
    throw;
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i].first;
    std::error_code ec;
    fs::rename(temps[i], path, ec);
    if (ec) {
      remove_temps();
      throw ConfigError(fmt::format("cannot write '{}': {}", path, ec.message()));
    }
  }
}

void check_not_an_input(const std::string& flag, const std::string& path,
                        const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    std::error_code ec;
    const bool same = fs::equivalent(path, input, ec);
    if (!ec && same) {
      throw ConfigError(fmt::format(
          "{} '{}' is the input file '{}'; writing it would destroy the input", flag, path, input));
    }
  }
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  // Each output's file: where a write to it lands (write_target: through its links, to a target
  // not there yet too), then one canonical path (weakly_canonical resolves the links of the part
  // that exists and the `.` and `..` of the rest).
  std::vector<fs::path> files;
  for (const auto& [flag, path] : outputs) {
    if (path.empty()) {
      files.emplace_back();
      continue;
    }
    // (Absolute first: a relative path whose first part is not there, "o.html", stays relative.)
    std::error_code ec;
    const fs::path target = fs::absolute(write_target(path), ec);
    fs::path file = fs::weakly_canonical(target, ec);
    if (ec) file = target.lexically_normal();
    files.push_back(file);
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [flag_i, path_i] = outputs[i];
      const auto& [flag_j, path_j] = outputs[j];
      if (path_i.empty() || path_j.empty()) continue;
      std::error_code ec;
      const bool same_inode = fs::equivalent(path_i, path_j, ec);  // both exist: hard links too
      if (files[i] == files[j] || (!ec && same_inode)) {
        throw ConfigError(fmt::format(
            "{} '{}' and {} '{}' are the same file ('{}'); give each output its own file", flag_i,
            path_i, flag_j, path_j, files[i].string()));
      }
    }
  }
}

void check_output_folder(const std::string& flag, const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw ConfigError(
        fmt::format("{} '{}': folder '{}' does not exist", flag, path, parent.string()));
  }
  check_regular_or_absent(flag, path);
}

std::string extension_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace iosim::cli
