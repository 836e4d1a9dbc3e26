#pragma once
// `iosim validate`: re-predicts every measured case of an iosim-measurements file (see
// cuda_validate/FORMAT.md) and compares DRAM, L2 and time with what the GPU counted.
//
// Each case is simulated the way it was measured: Nsight Compute flushes the caches before every
// kernel (so the L2 starts cold per kernel), locks the SM clock (the clock it reported per kernel,
// sm__cycles_elapsed.avg.per_second, is the one the prediction uses), and counts only DRAM writes
// that happen during the kernel (dirty lines left in L2 at its end are not in dram__bytes_write).
#include <filesystem>
#include <iterator>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/iosim.hpp"

namespace iosim {

/// The compared quantities, in the order of every table. `dram` is all DRAM traffic (read +
/// write): what a kernel costs in HBM bytes, and the quantity the accuracy goal is stated for;
/// read and write follow on their own (a write error can be large on a kernel that writes back
/// almost nothing, since most of its output is still dirty in L2 when it ends).
enum class Metric { dram, dram_read, dram_write, l2_read, l2_write, time };
inline constexpr Metric kMetrics[] = {Metric::dram,    Metric::dram_read, Metric::dram_write,
                                      Metric::l2_read, Metric::l2_write,  Metric::time};
inline constexpr int kMetricCount = static_cast<int>(std::size(kMetrics));
/// "dram", "dram_read" ... "time".
const char* metric_name(Metric m);

struct Comparison {
  double predicted = 0.0;
  double measured = 0.0;
  /// How much the measurement itself moved between repeats (separate processes): (max - min) /
  /// median, as cuda_validate/scripts/combine_repeats.py records it; nullopt when measured once.
  std::optional<double> spread;
  /// (predicted - measured) / measured; nullopt when nothing was measured.
  std::optional<double> relative_error() const;
  /// The error is no larger than the measurement's own (non-zero) spread: it says nothing about
  /// the model.
  bool within_noise() const;
};

/// One measured case, predicted twice.
/// - as-run (`metrics`), the diagnosis: with what was measured of the kernel and a user of
///   `iosim run` would not know: its registers per thread, its K/V buffers (from the shared memory
///   it asked for), the split count PyTorch chose at run time, and the SM clock Nsight Compute ran
///   it at; against Nsight Compute's counters and durations (cold L2 per kernel).
/// - blind (`blind`), the headline: what `iosim run` predicts from the problem and the tiling the
///   case asked for (--block-q, --block-kv, --threads, --splits) alone, at the SM clock the GPU ran
///   free (the file's median nvidia-smi clock while the GPU drew more than 150 W, else the
///   profile's boost clock). Time against the free-running CUDA-event time of the case (all its
///   kernels back to back; `iosim run`'s L2 carries over between kernels as the GPU's does):
///   `time_queued_s` where the case has it (timed with the GPU kept busy while the host enqueued
///   the kernels, cuda_validate/pytorch_sdpa/retime.py), else `time_free_running_s`, which holds
///   the host's dispatch wherever that outlasts the kernels; bytes against the same counters as
///   as-run (cold L2 per kernel, as Nsight Compute measured).
struct CaseResult {
  std::string id;
  std::string schedule;
  std::string pass;   // fwd, bwd or fwdbwd
  std::string dtype;  // the problem's element type as --dtype spells it (fp16, bf16, fp8, fp32)
  std::string profile;
  std::string source_file;
  double sm_clock_mhz = 0.0;
  std::string skipped_reason;  // non-empty: not compared (failed check, unknown schedule, ...)
  /// The case's "rank_group" (cuda_validate/FORMAT.md): configurations of one kernel family on
  /// one problem, ranked against each other by time; empty when the case names none.
  std::string rank_group;
  Comparison metrics[kMetricCount];  // as-run, indexed like kMetrics
  double blind_sm_clock_mhz = 0.0;
  Comparison blind[kMetricCount];  // blind, indexed like kMetrics
};

/// The summary a compared case counts in: its schedule (its rank group's family where it names
/// one), with " <pass>" for a run with a backward ("flash3 fwdbwd": another workload than the
/// forwards) and " fp8" for an FP8 run ("flash3 fp8").
std::string summary_name(const CaseResult& c);

struct Summary {
  // "flash2", "flash2 fwdbwd" (a schedule's runs with a backward), "flash3 fp8" (its FP8 runs),
  // or "all"
  std::string schedule;
  int cases = 0;
  std::optional<double> median_abs_error[kMetricCount];  // as-run
  std::optional<double> worst_abs_error[kMetricCount];
  std::optional<double> blind_median_abs_error[kMetricCount];
  std::optional<double> blind_worst_abs_error[kMetricCount];
  /// Median and largest repeat spread of the compared cases that have one (measured more than
  /// once): how noisy the set's measurements are.
  std::optional<double> median_spread[kMetricCount];
  std::optional<double> worst_spread[kMetricCount];
  std::optional<double> blind_median_spread[kMetricCount];
  std::optional<double> blind_worst_spread[kMetricCount];
  /// The repeat spread of the case each error statistic is taken from: the worst case's own, the
  /// median case's (the mean of the two middle cases' for an even count); none where that case
  /// was measured once. A statistic is printed as its number with this spread beside it
  /// ("16.8% (spread 2.9%)"); the largest error was once hidden as "within noise" because the
  /// largest spread, another case's, exceeded it.
  std::optional<double> median_case_spread[kMetricCount];
  std::optional<double> worst_case_spread[kMetricCount];
  std::optional<double> blind_median_case_spread[kMetricCount];
  std::optional<double> blind_worst_case_spread[kMetricCount];
};

/// `error` (a summary's median or worst |relative error|) is no larger than `spread` (the repeat
/// spread of the case it is taken from), and that spread is not 0.
bool within_noise(const std::optional<double>& error, const std::optional<double>& spread);

/// One measured configuration of a rank group: blind predicted and measured time, and the
/// measured time's repeat spread ((max - min) / median; 0 when measured once).
struct RankPoint {
  double predicted = 0.0;
  double measured = 0.0;
  double spread = 0.0;
};

/// How well blind time orders the configurations of one rank group (a question a user asks of a
/// tile sweep: which one is fastest), over its compared cases.
struct RankGroup {
  std::string name;    // the cases' "rank_group"
  std::string family;  // its part before the first space: the kernel family
  int cases = 0;
  /// Spearman's rank correlation of predicted against measured time (tied values share their
  /// average rank); none where either side has a single rank (one case, all times equal).
  std::optional<double> rho;
  /// Measured time of the configuration predicted fastest (the first in file order among equal
  /// predictions) over the measured fastest, minus 1: what trusting iosim's pick costs.
  double regret = 0.0;
  /// Of the pairs whose measured times differ (relative to the smaller) by more than the larger
  /// of their two repeat spreads, the share that blind time orders the same way (equal predictions
  /// count as wrong); none where no pair differs by that much. Pairs inside the spread are noise.
  std::optional<double> pairs_right;
  int pairs_counted = 0;
};

/// The rank groups of one family (the text before the first space of their names).
struct RankFamily {
  std::string family;
  int groups = 0;
  std::optional<double> median_rho, min_rho;  // over the groups that have a rho
  double median_regret = 0.0, worst_regret = 0.0;
  std::optional<double> median_pairs_right;  // over the groups that counted a pair
};

/// Ranking accuracy of the cases that name a rank group: per group (by name) and per family.
/// Empty when no compared case names one.
struct RankSummary {
  std::vector<RankGroup> groups;
  std::vector<RankFamily> families;
  bool empty() const { return groups.empty(); }
};

/// The statistics of one group's points, in file order (`name` and its family are copied).
RankGroup rank_statistics(const std::string& name, const std::vector<RankPoint>& points);
/// A family's summary of its groups.
RankFamily rank_family(const std::string& family, const std::vector<RankGroup>& groups);

struct ValidationResult {
  std::vector<CaseResult> cases;
  std::vector<Summary> summaries;  // per schedule, then "all"
  RankSummary ranking;             // cases with a "rank_group"
};

/// Loads every measurement file at `path` (a file, or a directory searched recursively for
/// measurements*.json) and re-predicts each case. `profile_override` replaces the profile
/// chosen from the measured device name. Throws ConfigError for unreadable or malformed files.
ValidationResult validate_measurements(const std::filesystem::path& path,
                                       const std::string& profile_override = "");
/// The same over several files or folders, summarized together (a set measured in parts, such as
/// one kernel's FP16 and FP8 runs).
ValidationResult validate_measurements(const std::vector<std::filesystem::path>& paths,
                                       const std::string& profile_override = "");

/// The same for one measurements document already in memory (`iosim validate --ncu` builds one
/// from a user's Nsight Compute export); `origin` names it in messages; an empty `profile` is
/// chosen from the origin's folder or the document's device name, as for files.
ValidationResult validate_document(const nlohmann::json& doc, const std::string& origin,
                                   const std::string& profile);

/// Registers per thread of a case's measured kernels (its "kernels" array), by role, for the
/// roles iosim's kernels carry (KernelSpec::role: attention, split, reduce, mask, softmax). A
/// role measured with two different counts is left out, and so are cuBLAS's GEMMs (the standard
/// schedule models its own GEMM tiling, not cuBLAS's).
std::map<std::string, int> measured_registers_by_role(const nlohmann::json& kernels);

/// K/V buffer pairs of a measured kernel that streams K/V (flash2, block-sparse, split-KV), from
/// its "tiling": shared memory = Q (block_q x d) + pairs x 2 x (block_kv x d), plus at most an
/// eighth of a pair (our paged kernel's block-table slice). 0 when the tiling does not say.
int kv_buffer_pairs(const nlohmann::json& tiling, std::int64_t head_dim, std::int64_t elem_bytes);

/// Its writers (table, Markdown, CSV, JSON) are reports/validation_writers.hpp.

}  // namespace iosim
