#pragma once
// Sweeps: many simulate() calls over the cartesian product of flag values, run on a pool of
// threads. Results come back in point order, so what a sweep writes does not depend on how many
// threads ran it or in which order the points finished.
//
// Value syntax of a sweep flag (parse_*_values):
//   "64"              one value
//   "32,64,128"       a list, kept in the order given (duplicates are an error)
//   "512:65536:x2"    geometric range: 512, 1024, ..., 65536 (the end is kept only when reached)
//   "64:256:+64"      arithmetic range: 64, 128, 192, 256 ("64:256:64" means the same)
//   "a:b,c"           lists may mix ranges and values
// Point numbering: the cartesian product in odometer order, the last axis varying fastest.
// Shard K/N holds the points whose index i satisfies i % N == K - 1, so every shard gets a
// share of small and large problems and the union of the N shards is the whole sweep.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "api/iosim.hpp"

namespace iosim {

/// Integer values of sweep flag `flag` (lists and ranges). Throws ConfigError naming the flag.
std::vector<std::int64_t> parse_int_values(const std::string& flag, const std::string& text);
/// Real values of `flag`: a single value or a comma list (no ranges). Throws ConfigError.
std::vector<double> parse_double_values(const std::string& flag, const std::string& text);
/// Words of `flag`: a comma list of non-empty, distinct words. Throws ConfigError.
std::vector<std::string> parse_string_values(const std::string& flag, const std::string& text);

/// Most points one sweep may have; more is almost certainly a typo in a range.
inline constexpr std::size_t kMaxSweepPoints = 10'000'000;
/// Most values one flag may list: a million points on one axis is past any sweep we know of, and
/// checking a list for repeats stays well under a second even under the sanitizers.
inline constexpr std::size_t kMaxAxisValues = 1'000'000;
/// Most profiles a sweep's --set axes may make (one per combination of --profile's and every
/// --set's values, each loaded and held before the first point: ~10 KB each).
inline constexpr std::size_t kMaxWhatIfProfiles = 10'000;

/// Number of combinations of axes with these sizes; throws ConfigError above kMaxSweepPoints.
std::size_t combination_count(const std::vector<std::size_t>& sizes);
/// Calls `visit` with every combination of axis indices, last axis fastest.
void for_each_combination(const std::vector<std::size_t>& sizes,
                          const std::function<void(const std::vector<std::size_t>&)>& visit);

/// The axis indices of combination `i` (as for_each_combination visits them, i-th).
std::vector<std::size_t> combination_at(const std::vector<std::size_t>& sizes, std::size_t i);

/// Part K of N (1-based) of a sweep split across machines.
struct Shard {
  int index = 1;
  int count = 1;
  bool holds(std::size_t point) const {
    return static_cast<int>(point % static_cast<std::size_t>(count)) == index - 1;
  }
};
/// Parses "K/N" with 1 <= K <= N; throws ConfigError naming --shard.
Shard parse_shard(const std::string& text);

/// One simulate() call of a sweep.
struct SweepPoint {
  std::size_t index = 0;  // position in the whole (unsharded) sweep
  std::string profile;    // key into the profiles given to run_sweep
  RunRequest request;
};

/// How far a running sweep is. `*_work` weighs points by their estimated cost so that an ETA
/// stays honest when a few large problems dominate.
struct SweepProgress {
  std::size_t done = 0;
  std::size_t total = 0;
  double done_work = 0.0;
  double total_work = 0.0;
};

struct SweepOptions {
  int jobs = 0;  // threads; 0: all cores
  /// Called after each point finishes, from the worker thread, one call at a time.
  std::function<void(const SweepProgress&)> on_progress;
};

/// Simulates every point and returns report i for points[i]. Points start largest first (by
/// estimated cost) so that the threads finish together. A point whose input simulate() rejects
/// (a ConfigError, e.g. --causal with N_kv < N) comes back as an infeasible Report whose reason
/// starts with "invalid input: "; when every point is rejected, the first error is thrown instead.
/// Any other exception stops the sweep and is rethrown, as is Stopped when run_control asks the
/// sweep to stop (checked before each point and by the engine). `profiles` must hold every
/// point's profile.
std::vector<Report> run_sweep(const std::vector<SweepPoint>& points,
                              const std::map<std::string, HardwareProfile>& profiles,
                              const SweepOptions& options);

/// Receives each finished point of run_sweep_streaming(): its number k, the point, its report
/// (which it may move from) and, for a point simulate() rejected, the ConfigError's message.
using SweepSink = std::function<void(std::size_t k, const SweepPoint& point, Report& report,
                                     const std::string& rejection)>;

/// run_sweep() for sweeps of any size: points k = 0 .. count-1 are made by `make(k)` when they
/// start (twice: once to estimate their cost) instead of being held, and each report goes to
/// `done` as soon as its point finishes (in completion order, one call at a time) instead of
/// being kept. Memory: 16 bytes a point (the cost estimates and the order). Never throws for
/// rejected points. Returns the threads that ran (fewer than asked when the system refuses to
/// create more).
int run_sweep_streaming(std::size_t count, const std::function<SweepPoint(std::size_t)>& make,
                        const std::map<std::string, HardwareProfile>& profiles,
                        const SweepOptions& options, const SweepSink& done);

/// Most threads a sweep runs on.
inline constexpr int kMaxSweepJobs = 1024;

/// The threads `jobs` asks for: itself when positive, else the number of cores (at least 1).
int resolve_jobs(int jobs);

}  // namespace iosim
