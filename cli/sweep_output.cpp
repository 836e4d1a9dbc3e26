#include "cli/sweep_output.hpp"

#include <fmt/format.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>
#include <utility>

#include "cli/output_file.hpp"
#include "sim/base/errors.hpp"

namespace iosim::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMagic = "iosim-sweep-journal 1 ";

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

[[noreturn]] void write_failed(const std::string& path) {
  throw ConfigError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
}

// Reads the record header "<point> <bytes>\n" at `pos` of `text`; false at the end of the text
// or on a malformed line.
bool read_record_header(const std::string& text, std::size_t& pos, std::size_t& point,
                        std::size_t& bytes) {
  const std::size_t eol = text.find('\n', pos);
  if (eol == std::string::npos) return false;
  const char* end = text.data() + eol;
  const auto r1 = std::from_chars(text.data() + pos, end, point);
  if (r1.ec != std::errc() || r1.ptr == end || *r1.ptr != ' ') return false;
  const auto r2 = std::from_chars(r1.ptr + 1, end, bytes);
  if (r2.ec != std::errc() || r2.ptr != end) return false;
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
  const std::string magic = kMagic;
  std::string head(magic.size(), '\0');
  return std::fread(head.data(), 1, head.size(), f.get()) == head.size() && head == magic;
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
    std::size_t pos = magic.size(), keep_bytes = pos, point = 0, bytes = 0;
    while (read_record_header(text, pos, point, bytes) && pos + bytes < text.size() &&
           text[pos + bytes] == '\n') {
      const bool in_shard = point >= points_.first && (point - points_.first) % points_.step == 0 &&
                            (point - points_.first) / points_.step < points_.count;
      if (!in_shard || done_[(point - points_.first) / points_.step]) break;  // not this sweep's
      done_[(point - points_.first) / points_.step] = true;
      ++resumed_;
      pos += bytes + 1;
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
  const std::string header = fmt::format("{} {}\n", points_.first + k * points_.step, row.size());
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
  // Where each row sits in the journal (16 bytes a point), then the rows in point order.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> where(points_.count);
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
      std::size_t pos = 0, point = 0, bytes = 0;
      ensure(read_record_header(line, pos, point, bytes), "sweep journal: bad record");
      offset += line.size();
      where[(point - points_.first) / points_.step] = {offset, bytes};
      offset += bytes + 1;
      ensure(fseeko(journal_.get(), static_cast<off_t>(offset), SEEK_SET) == 0,
             "sweep journal: cannot seek");
    }
  }
  const auto write_all = [&](std::FILE* to, const std::string& name) {
    const auto put = [&](const char* s, std::size_t n) {
      if (std::fwrite(s, 1, n, to) != n) write_failed(name);
    };
    if (points_.count == 0) {
      put(empty.data(), empty.size());
      return;
    }
    put(head.data(), head.size());
    std::string row;
    for (std::size_t k = 0; k < where.size(); ++k) {
      if (k > 0) put(separator.data(), separator.size());
      row.resize(where[k].second);
      ensure(fseeko(journal_.get(), static_cast<off_t>(where[k].first), SEEK_SET) == 0 &&
                 std::fread(row.data(), 1, row.size(), journal_.get()) == row.size(),
             "sweep journal: cannot read row {}", k);
      put(row.data(), row.size());
    }
    put(tail.data(), tail.size());
  };
  if (out_.empty()) {
    std::cout.flush();
    write_all(stdout, "stdout");
    if (std::fflush(stdout) != 0) write_failed("stdout");
    return;
  }
  check_regular_or_absent("--out", out_);  // (again: made while the sweep ran)
  const std::string target = write_target(out_);
  const std::string tmp = fmt::format("{}.tmp-{}", target, static_cast<long>(::getpid()));
  try {
    File to(std::fopen(tmp.c_str(), "wb"), &std::fclose);
    if (!to) write_failed(out_);
    write_all(to.get(), out_);
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
