#pragma once
// Output files of the CLI. A run that fails never leaves a partial file behind.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace iosim::cli {

/// For the options that name an output file: an empty name (`--out ""`) is refused at parsing,
/// not taken as no file (which printed to stdout, or wrote nothing, without a word).
CLI::Validator output_file_name();

/// Opens any of descriptors 0, 1, 2 that is closed at start on a device (stdout on /dev/full), so
/// that no file iosim opens takes a standard number: with stdout closed (`iosim sweep ... >&-`)
/// the sweep's journal became descriptor 1 and the table printed at the end went into it. Output
/// meant for a closed stdout then fails and is reported. Call first thing in main().
void occupy_closed_standard_descriptors();

/// True when stdout was closed at start (the messages say so).
bool stdout_was_closed();

/// Writes `text` to stdout (after what std::cout and stdio hold), so that a stop (a signal,
/// run_control's time budget) ends the write within about 100 ms even while nobody reads a pipe
/// or FIFO on stdout: std::cout's write(2) that a signal interrupted after part of its bytes was
/// called again by stdio and blocked for ever (`iosim explain ... | sleep 600` ignored SIGTERM).
/// Waits with poll() and writes a pipe's bytes PIPE_BUF at a time (such a write does not block
/// once poll() said the pipe has room), checking the stop between writes. Throws Stopped on a
/// stop, ConfigError when stdout takes no more (a full disk, /dev/full, a closed stdout).
void write_stdout(std::string_view text);

/// A new file beside `path` that its text is written to before the rename into place.
struct TempFile {
  std::string name;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file{nullptr, &std::fclose};
};

/// Creates `path`'s temporary file, PATH.tmp-PID (PATH.tmp-PID-K where that name is taken), with
/// O_EXCL: a file or a symbolic link already at the name is neither written through nor
/// replaced. Throws ConfigError naming `path` and the cause (a folder not writable).
TempFile create_temp_beside(const std::string& path);

/// Writes `text` to `path` through a temporary file in the same folder and a rename, so that
/// readers see either the old file or the whole new one. Throws ConfigError naming the path.
void write_file_atomically(const std::string& path, const std::string& text);

/// Writes several files so that either all of them are written or none is: every text goes to
/// a temporary file first, and only when all are complete are they renamed into place.
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

/// Throws ConfigError naming `flag` when the output `path` is one of the `inputs` (a report that
/// would overwrite the file it reads).
void check_not_an_input(const std::string& flag, const std::string& path,
                        const std::vector<std::string>& inputs);

/// Throws ConfigError naming both flags when two of `outputs` (flag, path; empty paths are not
/// given) are one file: the same path once links, `.` and `..` are resolved, or, where both exist,
/// one file under two names (a hard link). Each subcommand with several outputs calls it before
/// any work: `--html o.html --svg ./o.html` wrote the page and then the SVG over it.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

/// Throws ConfigError naming `flag` when the folder `path` would be written to does not exist,
/// or `path` is there but is not a regular file (check_regular_or_absent), so that a long run
/// fails before it starts rather than at the end.
void check_output_folder(const std::string& flag, const std::string& path);

/// Throws ConfigError naming `flag` when `path` exists (after symbolic links) and is not a regular
/// file: a FIFO, a device, a socket or a folder. iosim writes only regular files; a temporary file
/// renamed over a device node or a FIFO would replace it.
void check_regular_or_absent(const std::string& flag, const std::string& path);

/// The file a write to `path` replaces: `path` itself, or the file its symbolic link points to
/// (so that the user's link stays a link).
std::string write_target(const std::string& path);

/// The extension of `path` in lower case, without the dot ("" when none).
std::string extension_of(const std::string& path);

}  // namespace iosim::cli
