#pragma once
// Where a sweep's rows go while it runs, and how its output is finished.
//
// Each finished point's row is appended at once (in completion order) to a journal: with
// --out FILE, "FILE.partial"; on stdout, an unnamed temporary file. Only when every point is done
// is the output assembled (the file's head, the rows in point order, its tail) into a temporary
// file renamed onto FILE, or copied to stdout, so an interrupted sweep never leaves a partial
// FILE. A sweep stopped by a signal or its budget keeps FILE.partial; the same command with
// --resume reads it back and runs only the points it lacks.
//
// Journal layout: the line "iosim-sweep-journal 2 <fingerprint>", then per row the line
// "<point> <bytes> <checksum>" (FNV-1a of the row, hex) followed by the row's bytes and a
// newline. On resume, a record cut short (the process was killed while writing it) or whose
// checksum differs (changed since) is dropped with the records after it, and those points run
// again.
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace iosim::cli {

/// The points of a shard: the k-th (k < count) is first + k * step.
struct ShardPoints {
  std::size_t first = 0, step = 1, count = 0;
};

class SweepOutput {
 public:
  /// `out` empty: stdout. `fingerprint` identifies the sweep (format, axes, shard): a journal
  /// of another sweep is refused on resume.
  SweepOutput(std::string out, std::string fingerprint, bool resume, ShardPoints points);
  ~SweepOutput();
  SweepOutput(const SweepOutput&) = delete;
  SweepOutput& operator=(const SweepOutput&) = delete;

  /// Rows read back from the journal by --resume.
  std::size_t resumed_rows() const { return resumed_; }
  /// Whether the k-th point of the shard has its row (read back by --resume).
  bool has(std::size_t k) const { return done_[k]; }
  /// Appends the row of the k-th point and flushes it to the journal.
  void append(std::size_t k, const std::string& row);
  /// Writes the output: `empty` when the shard has no points, else head, rows in point order
  /// joined by `separator`, tail. Removes the journal.
  void finish(const std::string& head, const std::string& separator, const std::string& tail,
              const std::string& empty);
  /// Keeps the journal for --resume (when it holds rows) instead of removing it on destruction.
  /// Returns its path, or "" when nothing was kept.
  std::string keep_for_resume();

 private:
  std::string out_, journal_path_;
  ShardPoints points_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> journal_;
  std::vector<bool> done_;
  std::size_t rows_ = 0, resumed_ = 0;
  bool keep_ = false;
};

}  // namespace iosim::cli
