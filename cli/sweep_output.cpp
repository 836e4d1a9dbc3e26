#include "cli/sweep_output.hpp"

#include <fmt/format.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <utility>

#include "cli/output_file.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/fnv1a.hpp"
#include "sim/base/run_control.hpp"

namespace iosim::cli {
namespace {

namespace fs = std::filesystem;

// Version 2 records carry a checksum of their row. Any version's journal is iosim's (a new sweep
// may replace it); only this version's is resumed.
constexpr const char* kJournalPrefix = "iosim-sweep-journal ";
constexpr const char* kMagic = "iosim-sweep-journal 2 ";

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

[[noreturn]] void write_failed(const std::string& path) {
  // A write cut short by SIGINT or SIGTERM is the stop, not a failed write: exit 3 with the
  // signal's name, as docs/limits.md promises (it said "Interrupted system call" and exit 2,
  // issue #50 M3). run_control::check() throws Stopped naming the signal.
  if (errno == EINTR) run_control::check();
  if (path == "stdout" && stdout_was_closed()) {
    throw ConfigError("cannot write the output to stdout: stdout is closed");
  }
  throw ConfigError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
}

// The checksum of a row: a record whose bytes were changed after they were written (a disk or an
// editor) is not resumed; the old journal, without it, copied a damaged row into the final file
// and exited 0.
std::uint64_t row_checksum(const char* data, std::size_t n) {
  return fnv1a64(std::string_view(data, n));
}

struct RecordHeader {
  std::size_t point = 0, bytes = 0;
  std::uint64_t checksum = 0;
};

// Reads the record header "<point> <bytes> <checksum in hex>\n" at `pos` of `text`; false at the
// end of the text or on a malformed line.
bool read_record_header(const std::string& text, std::size_t& pos, RecordHeader& h) {
  const std::size_t eol = text.find('\n', pos);
  if (eol == std::string::npos) return false;
  const char* end = text.data() + eol;
  const auto r1 = std::from_chars(text.data() + pos, end, h.point);
  if (r1.ec != std::errc() || r1.ptr == end || *r1.ptr != ' ') return false;
  const auto r2 = std::from_chars(r1.ptr + 1, end, h.bytes);
  if (r2.ec != std::errc() || r2.ptr == end || *r2.ptr != ' ') return false;
  const auto r3 = std::from_chars(r2.ptr + 1, end, h.checksum, 16);
  if (r3.ec != std::errc() || r3.ptr != end) return false;
  pos = eol + 1;
  return true;
}

std::string read_all(std::FILE* f, const std::string& name) {
  std::rewind(f);
  std::string text;
  char buffer[1 << 16];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
  if (std::ferror(f)) throw ConfigError(fmt::format("cannot read '{}'", name));
  return text;
}

// Whether the file at `path` is a sweep journal (of any sweep): iosim wrote it, so a new sweep
// may replace it. Anything else there is the user's.
bool is_journal(const std::string& path) {
  const File f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return false;
  const std::string prefix = kJournalPrefix;
  std::string head(prefix.size(), '\0');
  return std::fread(head.data(), 1, head.size(), f.get()) == head.size() && head == prefix;
}

}  // namespace

SweepOutput::SweepOutput(std::string out, std::string fingerprint, bool resume, ShardPoints points)
    : out_(std::move(out)),
      points_(points),
      journal_(nullptr, &std::fclose),
      done_(points.count, false) {
  const std::string magic = kMagic + fingerprint + "\n";
  if (out_.empty()) {
    journal_.reset(std::tmpfile());
    if (!journal_ || std::fputs(magic.c_str(), journal_.get()) < 0) {
      write_failed("a temporary file");
    }
    return;
  }
  journal_path_ = out_ + ".partial";
  check_regular_or_absent("--out's journal", journal_path_);
  std::error_code ec;
  if (resume && fs::exists(journal_path_, ec)) {
    journal_.reset(std::fopen(journal_path_.c_str(), "rb+"));
    if (!journal_) {
      throw ConfigError(
          fmt::format("--resume: cannot open '{}': {}", journal_path_, std::strerror(errno)));
    }
    const std::string text = read_all(journal_.get(), journal_path_);
    if (text.compare(0, magic.size(), magic) != 0) {
      journal_.reset();
      throw ConfigError(fmt::format(
          "--resume: '{}' belongs to another sweep (other flags, values, shard or format); run "
          "without --resume to start over",
          journal_path_));
    }
    std::size_t pos = magic.size(), keep_bytes = pos;
    RecordHeader h;
    while (read_record_header(text, pos, h) && pos + h.bytes < text.size() &&
           text[pos + h.bytes] == '\n') {
      const std::size_t point = h.point;
      const bool in_shard = point >= points_.first && (point - points_.first) % points_.step == 0 &&
                            (point - points_.first) / points_.step < points_.count;
      if (!in_shard || done_[(point - points_.first) / points_.step]) break;  // not this sweep's
      if (row_checksum(text.data() + pos, h.bytes) != h.checksum) {
        std::cerr << fmt::format(
            "iosim sweep: --resume: the row of point {} in '{}' was changed after it was written "
            "(its checksum differs); it and the rows after it are run again\n",
            point, journal_path_);
        break;
      }
      done_[(point - points_.first) / points_.step] = true;
      ++resumed_;
      pos += h.bytes + 1;
      keep_bytes = pos;
    }
    journal_.reset();
    fs::resize_file(journal_path_, keep_bytes, ec);  // drops a record cut short
    if (ec) {
      throw ConfigError(
          fmt::format("--resume: cannot truncate '{}': {}", journal_path_, ec.message()));
    }
    rows_ = resumed_;
    journal_.reset(std::fopen(journal_path_.c_str(), "ab+"));
  } else {
    if (fs::exists(journal_path_, ec) && !is_journal(journal_path_)) {
      throw ConfigError(fmt::format(
          "'{}' is there and is not a sweep journal of iosim's (the file --out's interrupted "
          "sweep would be kept in); move it away or give another --out",
          journal_path_));
    }
    journal_.reset(std::fopen(journal_path_.c_str(), "wb+"));
    if (journal_ && std::fputs(magic.c_str(), journal_.get()) < 0) write_failed(journal_path_);
  }
  if (!journal_ || std::fflush(journal_.get()) != 0) write_failed(journal_path_);
}

SweepOutput::~SweepOutput() {
  if (!journal_path_.empty() && !keep_) {
    journal_.reset();
    std::error_code ignored;
    fs::remove(journal_path_, ignored);
  }
}

void SweepOutput::append(std::size_t k, const std::string& row) {
  const std::string& name = journal_path_.empty() ? std::string("a temporary file") : journal_path_;
  const std::string header = fmt::format("{} {} {:x}\n", points_.first + k * points_.step,
                                         row.size(), row_checksum(row.data(), row.size()));
  if (std::fputs(header.c_str(), journal_.get()) < 0 ||
      std::fwrite(row.data(), 1, row.size(), journal_.get()) != row.size() ||
      std::fputc('\n', journal_.get()) == EOF || std::fflush(journal_.get()) != 0) {
    write_failed(name);
  }
  done_[k] = true;
  ++rows_;
}

void SweepOutput::finish(const std::string& head, const std::string& separator,
                         const std::string& tail, const std::string& empty) {
  ensure(rows_ == points_.count, "sweep output: {} rows of {} points", rows_, points_.count);
  // Where each row sits in the journal (24 bytes a point), then the rows in point order.
  struct Where {
    std::uint64_t offset, bytes, checksum;
  };
  std::vector<Where> where(points_.count);
  {
    std::rewind(journal_.get());
    std::string line;
    std::uint64_t offset = 0;
    int c;
    while ((c = std::fgetc(journal_.get())) != EOF && c != '\n') ++offset;  // the magic line
    ++offset;
    while (true) {
      line.clear();
      while ((c = std::fgetc(journal_.get())) != EOF && c != '\n') line += static_cast<char>(c);
      if (c == EOF) break;
      line += '\n';
      std::size_t pos = 0;
      RecordHeader h;
      ensure(read_record_header(line, pos, h), "sweep journal: bad record");
      offset += line.size();
      where[(h.point - points_.first) / points_.step] = {offset, h.bytes, h.checksum};
      offset += h.bytes + 1;
      ensure(fseeko(journal_.get(), static_cast<off_t>(offset), SEEK_SET) == 0,
             "sweep journal: cannot seek");
    }
  }
  // `put` takes the output piece by piece: fwrite to a file, write_stdout for stdout.
  const auto write_all = [&](const auto& put) {
    if (points_.count == 0) {
      put(empty.data(), empty.size());
      return;
    }
    put(head.data(), head.size());
    std::string row;
    for (std::size_t k = 0; k < where.size(); ++k) {
      if (k > 0) put(separator.data(), separator.size());
      row.resize(where[k].bytes);
      ensure(fseeko(journal_.get(), static_cast<off_t>(where[k].offset), SEEK_SET) == 0 &&
                 std::fread(row.data(), 1, row.size(), journal_.get()) == row.size(),
             "sweep journal: cannot read row {}", k);
      if (row_checksum(row.data(), row.size()) != where[k].checksum) {
        throw ConfigError(
            fmt::format("the sweep journal '{}' was changed while the sweep ran (the "
                        "row of point {} differs from what was written)",
                        journal_path_, points_.first + k * points_.step));
      }
      put(row.data(), row.size());
    }
    put(tail.data(), tail.size());
  };
  if (out_.empty()) {
    // Through write_stdout, a batch at a time: stdio's fwrite blocked for ever on a pipe nobody
    // read once a stop had come while it copied (a SIGTERM before the pipe filled, or a spent
    // --max-seconds: no signal came again to interrupt the write; issue #50's third probe).
    // write_stdout checks the stop before each write and while it waits for room.
    std::string batch;
    constexpr std::size_t kBatch = std::size_t{64} << 10;
    write_all([&](const char* s, std::size_t n) {
      batch.append(s, n);
      if (batch.size() >= kBatch) {
        write_stdout(batch);
        batch.clear();
      }
    });
    write_stdout(batch);
    return;
  }
  check_regular_or_absent("--out", out_);  // (again: made while the sweep ran)
  const std::string target = write_target(out_);
  TempFile temp = create_temp_beside(target);
  const std::string tmp = temp.name;
  try {
    File to = std::move(temp.file);
    write_all([&](const char* s, std::size_t n) {
      if (std::fwrite(s, 1, n, to.get()) != n) write_failed(out_);
    });
    if (std::fclose(to.release()) != 0) write_failed(out_);
    std::error_code ec;
    fs::rename(tmp, target, ec);
    if (ec) throw ConfigError(fmt::format("cannot write '{}': {}", out_, ec.message()));
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

std::string SweepOutput::keep_for_resume() {
  if (journal_path_.empty() || rows_ == 0) return "";
  keep_ = true;
  return journal_path_;
}

}  // namespace iosim::cli
