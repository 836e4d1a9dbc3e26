// Predicting one measured case for `iosim validate`: the request a case asks for (blind, and
// as-run with what was measured of its kernels), the measured totals and their repeat spreads, and
// the comparison of the two.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <vector>

#include "api/validation.hpp"
#include "api/validation_detail.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_reader.hpp"
#include "sim/base/json_text.hpp"
#include "sim/schedule/block_mask.hpp"

namespace iosim {
namespace {

using nlohmann::json;
using validation_detail::bool_or;
using validation_detail::count_or;
using validation_detail::int_at;
using validation_detail::number_at;
using validation_detail::number_or;
using validation_detail::object_or_empty;
using validation_detail::string_or;

// number_or()'s fallback where an absent (or null) number is told apart: no JSON number is NaN.
constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();

// What a measured value may be: counters from 0 to more than any kernel moves, a duration and a
// clock above 0 (a zero clock or duration was taken as measured and divided by).
struct MeasuredRange {
  double lo, hi;
  bool lo_open;      // lo itself is refused
  const char* unit;  // for the message
};
constexpr MeasuredRange kBytes{0, 1e16, false, "bytes (10 PB)"};
constexpr MeasuredRange kSectors{0, 1e16 / 32, false, "32-byte sectors (10 PB)"};
constexpr MeasuredRange kDurationNs{0, 1e12, true, "ns (1000 s)"};
constexpr MeasuredRange kClockHz{1e6, 1e11, false, "Hz (1 MHz to 100 GHz)"};
constexpr MeasuredRange kSeconds{0, 1e3, true, "s"};

// A measured counter, duration or clock in its range.
double measured_at(const json& obj, const char* key, const std::string& where,
                   const MeasuredRange& range) {
  const double v = number_at(obj, key, where);
  const bool above_lo = range.lo_open ? v > range.lo : v >= range.lo;
  if (!(above_lo && v <= range.hi)) {
    throw ConfigError(fmt::format("{}: '{}' = {} must be in {}{}, {}] {}", where, key,
                                  json_text(obj.at(key)), range.lo_open ? "(" : "[", range.lo,
                                  range.hi, range.unit));
  }
  return v;
}

// A ragged (varlen) batch's lengths, `seq_lens` and `seq_kv_lens` (default: seq_lens), as
// `iosim run --format json` writes them: `batch` their count, `seq` and `seq_kv` the longest.
void read_ragged(const json& p, const std::string& where, AttentionProblem& pr) {
  if (!p.contains("seq_lens")) {
    if (p.contains("seq_kv_lens")) {
      throw ConfigError(fmt::format("{}: 'seq_kv_lens' needs 'seq_lens'", where));
    }
    return;
  }
  const auto lengths = [&](const char* key) {
    const json& list = p.at(key);
    if (!list.is_array() || list.empty()) {
      throw ConfigError(fmt::format("{}: '{}' must be a non-empty list of lengths", where, key));
    }
    auto out = std::make_shared<std::vector<std::int64_t>>();
    for (std::size_t i = 0; i < list.size(); ++i) {
      const json one = {{key, list[i]}};
      out->push_back(int_at(one, key, fmt::format("{} ({}[{}])", where, key, i), 1, kMaxSeq));
    }
    return out;
  };
  pr.seq_lens = lengths("seq_lens");
  pr.seq_kv_lens = p.contains("seq_kv_lens") ? lengths("seq_kv_lens") : pr.seq_lens;
  const std::int64_t longest = *std::max_element(pr.seq_lens->begin(), pr.seq_lens->end());
  const std::int64_t longest_kv = *std::max_element(pr.seq_kv_lens->begin(), pr.seq_kv_lens->end());
  const auto count = static_cast<std::int64_t>(pr.seq_lens->size());
  if (pr.batch != count || pr.seq != longest || pr.seq_kv != longest_kv) {
    throw ConfigError(fmt::format(
        "{}: a ragged batch ('seq_lens') needs 'batch' {} (its count), 'seq' {} and 'seq_kv' {} "
        "(the longest lengths, as iosim run's JSON writes them), not {}, {} and {}",
        where, count, longest, longest_kv, pr.batch, pr.seq, pr.seq_kv));
  }
}

// Registers per thread a measured kernel launched with: 1 to 255 on every NVIDIA GPU so far.
int registers_at(const json& launch, const std::string& where) {
  return static_cast<int>(int_at(launch, "launch__registers_per_thread", where, 1, 255));
}

// Registers per thread of each measured kernel, by role, for the roles iosim's schedules give
// their kernels (KernelSpec::role). cuBLAS's GEMMs are left out: the standard schedule models
// its own GEMM tiling, not the one cuBLAS chose, so cuBLAS's registers would size the wrong CTA.
// A role measured with two different counts (two different kernels) is left out too.
std::map<std::string, int> registers_by_role(const json& kernels, const std::string& where) {
  static const std::set<std::string> kRoles = {"attention", "split", "reduce", "mask", "softmax"};
  std::map<std::string, int> out;
  std::set<std::string> ambiguous;
  for (const json& k : kernels) {
    const std::string role = string_or(k, "role", "", where + ": kernels");
    const std::string kw = fmt::format("{} kernel '{}'", where, role);
    const json& launch = object_or_empty(k, "launch", kw);
    if (!kRoles.count(role) || !launch.contains("launch__registers_per_thread")) continue;
    const int regs = registers_at(launch, kw);
    const auto [it, inserted] = out.emplace(role, regs);
    if (!inserted && it->second != regs) ambiguous.insert(role);
  }
  for (const std::string& role : ambiguous) out.erase(role);
  return out;
}

// K/V buffer pairs of a measured kernel that streams K/V (flash2, block-sparse, split-KV), from
// the shared memory it asked for: Q (block_q x d) plus pairs x 2 x (block_kv x d). The files'
// `pipeline_stages` counts pipeline depth, which is 2 both for our decode kernel (two pairs) and
// for FlashAttention's kernels (one pair whose K and V copies alternate with the products).
// 0 when the tiling does not say.
int pairs_from_smem(const json& t, std::int64_t head_dim, std::int64_t elem_bytes,
                    const std::string& where) {
  const std::int64_t smem = count_or(t, "smem_bytes_per_cta", 0, where);
  const std::int64_t bq = count_or(t, "block_q", 0, where);
  const std::int64_t bkv = count_or(t, "block_kv", 0, where);
  const std::int64_t row_bytes = head_dim * elem_bytes;
  if (smem <= 0 || bq <= 0 || bkv <= 0 || row_bytes <= 0) return 0;
  const std::int64_t kv_bytes = smem - bq * row_bytes;
  const std::int64_t pair_bytes = 2 * bkv * row_bytes;
  // Our paged kernel adds its block-table slice (4 bytes a page) after the tiles.
  const std::int64_t pairs = kv_bytes / pair_bytes;
  return pairs >= 1 && kv_bytes - pairs * pair_bytes < pair_bytes / 8 ? static_cast<int>(pairs) : 0;
}

// A measured case's problem holds only the keys the reader takes: an unknown one was dropped in
// silence, so that `"latent_dim": 512` (`iosim run`'s JSON name; a measurement says `latent`)
// predicted a decode with K and V of their own (issue #50, probe8 F1). `pass` is the case's own
// key, which some problems repeat.
void check_problem_keys(const json& p, const std::string& where) {
  static constexpr std::array<std::string_view, 17> kKeys{
      "batch",    "heads",  "seq",     "seq_kv", "head_dim",   "dtype",
      "causal",   "mask",   "dropout", "window", "seq_lens",   "seq_kv_lens",
      "kv_heads", "latent", "pattern", "pass",   "page_tokens"};
  if (!p.is_object()) return;  // object_or_empty() names a problem that is not a map
  for (const auto& [key, value] : p.items()) {
    if (std::find(kKeys.begin(), kKeys.end(), key) != kKeys.end()) continue;
    throw ConfigError(
        fmt::format("{}: unknown key '{}'{}; a problem's keys are {}", where, key,
                    key == "latent_dim" ? " (a measurement names the latent's width 'latent')" : "",
                    fmt::join(kKeys, ", ")));
  }
}

// A tiling read off the measured kernel's name rather than stated by the kernel's author: the
// PyTorch and cuDNN sets record where their tiles came from in `"source"` ("parsed from the kernel
// name: ...", "derived from the kernel name's ..."). Blind does not read it.
bool tiling_read_from_measurement(const json& t, const std::string& where) {
  return string_or(t, "source", "", where).find("kernel name") != std::string::npos;
}

// The request for a case. Blind (`as_run` false): the problem and the tiling the case asked its
// kernel for, as `iosim run`'s flags say it (--block-q, --block-kv, --threads, --splits) or as its
// kernel description states it, nothing measured (docs/accuracy.md lists what blind reads). As-run:
// also what was seen in the measured launches: the K/V buffers (from the shared memory the kernel
// asked for) and the split count PyTorch's heuristic chose (num_splits).
RunRequest request_for(const json& c, const std::string& where, bool as_run) {
  RunRequest r;
  r.algorithm = string_or(c, "schedule", "", where);
  // A case that carries its kernel's description is predicted from it alone (blind and as-run):
  // the dataflow, tiles, mechanisms and launch facts its author stated.
  if (c.contains("kernel")) {
    r.kernel = std::make_shared<const KernelDescription>(
        parse_kernel_description(c["kernel"], where + ": kernel"));
    r.algorithm = r.kernel->name;
  }
  const json& p = object_or_empty(c, "problem", where);
  AttentionProblem& pr = r.problem;
  // validate_problem()'s limits, named by the file's keys rather than by CLI flags.
  const std::string in_problem = where + ": problem";
  check_problem_keys(p, in_problem);
  pr.batch = int_at(p, "batch", in_problem, 1, kMaxBatch);
  pr.heads = int_at(p, "heads", in_problem, 1, kMaxHeads);
  pr.seq = int_at(p, "seq", in_problem, 1, kMaxSeq);
  pr.seq_kv = int_at(p, "seq_kv", in_problem, 1, kMaxSeq);
  pr.head_dim = int_at(p, "head_dim", in_problem, 1, kMaxHeadDim);
  // A word the parser refuses names the file, the case and the key: parse_dtype()'s "unknown
  // dtype 'fp64'" alone read as a bad --dtype, a flag validate was not given (issue #50 M1).
  const auto word = [](const std::string& where_key, const char* key, const std::string& text,
                       const auto& parse) {
    try {
      return parse(text);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: '{}' = \"{}\": {}", where_key, key, text, e.what()));
    }
  };
  pr.dtype = word(in_problem, "dtype", string_or(p, "dtype", "fp16", in_problem),
                  [](const std::string& t) { return parse_dtype(t); });
  pr.causal = bool_or(p, "causal", false, in_problem);
  pr.mask = bool_or(p, "mask", false, in_problem);
  pr.dropout = number_or(p, "dropout", 0.0, in_problem);
  // A sliding window (--window W; absent or 0: none), cuda_validate's window=W cases.
  pr.window = count_or(p, "window", 0, in_problem);
  read_ragged(p, in_problem, pr);
  pr.pass = word(where, "pass", string_or(c, "pass", "fwd", where),
                 [](const std::string& t) { return parse_pass(t); });
  // Decoding: grouped-query attention and paged K/V when the case says so.
  pr.kv_heads = count_or(p, "kv_heads", 0, in_problem);
  pr.page_tokens = count_or(p, "page_tokens", 0, in_problem);
  // A latent K/V cache (multi-head latent attention, --latent-dim): cuda_validate's MLA decode
  // cases record V's columns, the first `latent` of head_dim, as problem.latent.
  pr.latent_dim = count_or(p, "latent", 0, in_problem);  // kv_heads 0: one latent (kv_head_count)
  const json& tiling = object_or_empty(c, "tiling", where);
  const std::string in_tiling = where + ": tiling";
  // cuda_validate's runner records the page size it asked for (`page=` of its suite, a flag a
  // user states: --page-tokens) in the tiling, not in the problem. Read only from the problem,
  // every paged case ran at the default 16-token pages whatever its pages were.
  if (pr.page_tokens == 0) pr.page_tokens = count_or(tiling, "page_tokens", 0, in_tiling);
  // Block-sparse: the kernel's block mask, as --pattern defines it (cuda_validate's block list
  // is held to sim/schedule/block_mask.cpp by tests/block_pattern_match_test.cpp).
  if (const std::string pattern = string_or(p, "pattern", "", in_problem); !pattern.empty()) {
    pr.pattern = word(in_problem, "pattern", pattern, [](const std::string& t) {
      return std::make_shared<const BlockPattern>(parse_block_pattern(t));
    });
  }
  // Tiling of the measured kernel, when it is one we wrote (cuBLAS picks its own for standard).
  // Blind reads it only where it is what a user of the kernel states: a tiling read off the
  // measured kernel's name (PyTorch's and cuDNN's kernels, `"source"` says so) was measured, and
  // blind takes the algorithm's own default tiles instead (issue #29).
  if (!r.kernel && !tiling.empty() &&
      (as_run || !tiling_read_from_measurement(tiling, in_tiling))) {
    const json& t = tiling;
    // 0 or absent: the measured kernel's tiling does not say (the algorithm's default).
    const auto given = [](auto v) { return v != 0 ? std::optional(v) : std::nullopt; };
    r.tiling.block_q = given(count_or(t, "block_q", 0, in_tiling));
    r.tiling.block_kv = given(count_or(t, "block_kv", 0, in_tiling));
    r.tiling.threads = given(static_cast<int>(count_or(t, "threads", 0, in_tiling)));
    // Split-KV decoding: the split count the case asked its kernel for (--splits).
    r.tiling.splits = given(count_or(t, "splits", 0, in_tiling));
    const Capabilities& caps = builtin_registry().get(r.algorithm).capabilities;
    // A run of both passes whose flags tile the forward: the backward's own blocks, as the
    // measured backward kernel's tiling says ("bwd"), passed like --backward-block-q/-kv.
    if (const json& bwd = object_or_empty(t, "bwd", in_tiling);
        pr.pass == Pass::fwdbwd && caps.flags_tile_forward) {
      r.tiling.backward_block_q = given(count_or(bwd, "block_q", 0, in_tiling + ".bwd"));
      r.tiling.backward_block_kv = given(count_or(bwd, "block_kv", 0, in_tiling + ".bwd"));
    }
    if (as_run) {
      // Grouped-query decoding: a kernel whose CTA held all of a K/V head's query rows
      // (query_rows_per_cta = group x N, seen in cuda_validate's decode launches) packed the
      // group at any N, as --pack-gqa on says. Blind keeps the default, FlashAttention-2's rule
      // (packing at N = 1 only): the count is read from the run.
      if (const std::int64_t rows = count_or(t, "query_rows_per_cta", 0, in_tiling);
          !pr.ragged() && pr.seq > 1 && pr.group() > 1 && rows == pr.group() * pr.seq) {
        pr.pack_gqa = GqaPacking::on;
      }
      r.tiling.pipeline_stages =
          given(static_cast<int>(count_or(t, "pipeline_stages", 0, in_tiling)));
      // Forward passes, and runs of both passes whose flags tile the forward: otherwise a run
      // with a backward uses the field for the backward's Q stages.
      const bool streams_kv = (pr.pass == Pass::fwd || caps.flags_tile_forward) &&
                              caps.forward_stages == StagesCount::kv_buffer_pairs;
      if (const int pairs = pairs_from_smem(t, pr.head_dim, pr.elem_bytes(), in_tiling);
          streams_kv && pairs > 0) {
        r.tiling.pipeline_stages = pairs;
      }
      // The split count PyTorch's heuristic chose at run time, seen in its launches.
      if (!r.tiling.splits) r.tiling.splits = given(count_or(t, "num_splits", 0, in_tiling));
    }
  }
  // The arrangement the measured kernel ran (our FA3-style kernel's variants): a case measured
  // with ping-pong is predicted with ping-pong. Of a variant's fields only this one has an iosim
  // flag (--warpgroups); the copy path, intra-warpgroup overlap and a non-persistent grid do not.
  if (const json& v = object_or_empty(c, "variant", where); !v.empty()) {
    if (v.contains("warpgroups")) {
      if (v["warpgroups"].is_string()) {
        r.tiling.warpgroups = warpgroup_arrangement(v["warpgroups"].get<std::string>());
      }
      if (!r.tiling.warpgroups) {
        throw ConfigError(
            fmt::format("{}: variant.warpgroups must be \"pingpong\" or \"cooperative\", not {}",
                        where, v["warpgroups"].dump()));
      }
    }
  }
  r.engine.l2_enabled = true;
  r.engine.flush_l2_between_kernels = true;  // ncu --cache-control all
  return r;
}

// Repeat spreads of a case's measured quantities (cuda_validate/scripts/combine_repeats.py): each
// kernel's spread of a counter, weighted by that kernel's share of the case's total (the spread of
// a sum is at most the weighted spreads of its parts when they move together). A quantity with a
// kernel that has no spread (measured once) has none.
double non_negative_spread(const json& obj, const char* key, const std::string& where) {
  const double v = obj.at(key).get<double>();
  if (!(v >= 0.0)) {
    throw ConfigError(fmt::format("{}: repeat spread '{}' = {} must be >= 0", where, key, v));
  }
  return v;
}

// The measured time blind time is held to. PyTorch's cases were first timed with the GPU idle
// before the launch, so the host's dispatch (150-750 us for cuDNN's attention) was inside the
// interval wherever it outlasted the kernels; where a case was timed again with the GPU kept busy
// while the host enqueued (cuda_validate/pytorch_sdpa/retime.py), that time is the kernels'.
const char* blind_time_key(const json& c, const std::string& where) {
  return std::isnan(number_or(c, "time_queued_s", kAbsent, where)) ? "time_free_running_s"
                                                                   : "time_queued_s";
}

struct KernelSpreads {
  double weighted[kMetricCount] = {};
  bool missing[kMetricCount] = {};
  bool any = false;
  void add(const json& kernel, const double (&values)[kMetricCount], bool l2_read_from_xbar,
           const std::string& where) {
    static const char* const kKeys[kMetricCount] = {nullptr,
                                                    "dram__bytes_read.sum",
                                                    "dram__bytes_write.sum",
                                                    "l1tex__m_xbar2l1tex_read_sectors.sum",
                                                    "lts__t_sectors_srcunit_tex_op_write.sum",
                                                    "gpu__time_duration.sum"};
    const json& sp = object_or_empty(kernel, "spread", where);
    for (int i = 1; i < kMetricCount; ++i) {
      // A spread may be null (not measured), else a number.
      const bool known = !std::isnan(number_or(sp, kKeys[i], kAbsent, where + ": spread")) &&
                         (kMetrics[i] != Metric::l2_read || l2_read_from_xbar);
      if (known) {
        weighted[i] += values[i] * non_negative_spread(sp, kKeys[i], where);
        any = true;
      } else {
        missing[i] = true;
      }
    }
  }
  // Spreads indexed like kMetrics, given the case's measured totals. The case's own spreads of
  // its DRAM read and write totals ("repeats"), where recorded, replace the kernels' weighted ones.
  void apply(const json& c, const double (&measured)[kMetricCount], Comparison (&out)[kMetricCount],
             Comparison (&blind)[kMetricCount], const std::string& where) const {
    const json& cs =
        object_or_empty(object_or_empty(c, "repeats", where), "spread", where + ": repeats");
    // Blind time is held to the case's own CUDA-event repeats, whether or not its kernels'
    // counters were repeated (PyTorch's sets: time sets only).
    const char* time_key = blind_time_key(c, where);
    if (!std::isnan(number_or(cs, time_key, kAbsent, where + ": repeats.spread"))) {
      blind[index_of(Metric::time)].spread = non_negative_spread(cs, time_key, where);
    }
    if (!any) return;
    std::optional<double> s[kMetricCount];
    for (int i = 1; i < kMetricCount; ++i) {
      if (!missing[i] && measured[i] > 0) s[i] = weighted[i] / measured[i];
    }
    for (const auto& [key, i] : {std::pair{"dram_read", 1}, std::pair{"dram_write", 2}}) {
      if (!std::isnan(number_or(cs, key, kAbsent, where + ": repeats.spread"))) {
        s[i] = non_negative_spread(cs, key, where);
      }
    }
    if (s[1] && s[2] && measured[0] > 0) {
      s[0] = (*s[1] * measured[1] + *s[2] * measured[2]) / measured[0];
    }
    for (int i = 0; i < kMetricCount; ++i) {
      out[i].spread = s[i];
      // Blind bytes are held to the same counters; blind time to the CUDA-event repeats below.
      if (kMetrics[i] != Metric::time) blind[i].spread = s[i];
    }
  }
};

}  // namespace

CaseResult validation_detail::compare_case(const json& c, const std::string& profile_name,
                                           const std::string& file) {
  CaseResult out;
  out.id = string_or(c, "id", "?", file + ": case");
  const std::string where = fmt::format("{}: case '{}'", file, out.id);
  out.schedule = c.contains("kernel") && c["kernel"].is_object() && c["kernel"].contains("name") &&
                         c["kernel"]["name"].is_string()
                     ? c["kernel"]["name"].get<std::string>()
                     : string_or(c, "schedule", "?", where);
  out.pass = string_or(c, "pass", "fwd", where);
  out.dtype = string_or(object_or_empty(c, "problem", where), "dtype", "fp16", where + ": problem");
  out.profile = profile_name;
  out.source_file = file;
  if (!bool_or(object_or_empty(c, "check", where), "passed", false, where + ": check")) {
    out.skipped_reason = "output check failed or missing";
    return out;
  }
  if (c.contains("kernels") && !c["kernels"].is_array()) {
    throw ConfigError(fmt::format("{}: 'kernels' must be a list of kernels, got {}", where,
                                  c["kernels"].type_name()));
  }
  // A case timed only (a tile sweep's configurations: CUDA events, no Nsight Compute counters) is
  // compared blind, on time alone: its bytes and everything as-run stay unmeasured (no relative
  // error), rather than the case being skipped.
  const bool has_kernels = c.contains("kernels") && !c["kernels"].empty();
  const bool time_only =
      !has_kernels && !std::isnan(number_or(c, blind_time_key(c, where), kAbsent, where));
  if (!has_kernels && !time_only) {
    out.skipped_reason = "no kernels measured";
    return out;
  }
  // Measured totals over the case's kernels, and the SM clock ncu ran them at (time-weighted).
  double measured[kMetricCount] = {};  // indexed like kMetrics
  double clock_weighted = 0.0, time_total = 0.0;
  KernelSpreads spreads;
  static const json kNoKernels = json::array();
  for (const json& k : has_kernels ? c["kernels"] : kNoKernels) {
    if (!k.is_object() || !k.contains("metrics") || !k["metrics"].is_object()) {
      throw ConfigError(
          fmt::format("{}: every kernel must be an object with a 'metrics' object", where));
    }
    const json& m = k["metrics"];
    const std::string kw =
        fmt::format("{} kernel '{}'", where, string_or(k, "role", "?", where + ": kernels"));
    const double values[kMetricCount] = {
        0.0, measured_at(m, "dram__bytes_read.sum", kw, kBytes),
        measured_at(m, "dram__bytes_write.sum", kw, kBytes),
        // Bytes the SMs received from L2. The L2 slices' own request count
        // (lts__t_sectors_srcunit_tex_op_read) is lower when co-resident CTAs read the same sectors
        // at the same moment: the crossbar merges those requests (cuda_validate/README.md). Older
        // files without the crossbar metric fall back to the slice count.
        32.0 * (m.contains("l1tex__m_xbar2l1tex_read_sectors.sum")
                    ? measured_at(m, "l1tex__m_xbar2l1tex_read_sectors.sum", kw, kSectors)
                    : measured_at(m, "lts__t_sectors_srcunit_tex_op_read.sum", kw, kSectors)),
        32.0 * measured_at(m, "lts__t_sectors_srcunit_tex_op_write.sum", kw, kSectors),
        measured_at(m, "gpu__time_duration.sum", kw, kDurationNs) * 1e-9};
    for (int i = 1; i < kMetricCount; ++i) measured[i] += values[i];
    spreads.add(k, values, m.contains("l1tex__m_xbar2l1tex_read_sectors.sum"), kw);
    const double t = values[5];
    clock_weighted += t * measured_at(m, "sm__cycles_elapsed.avg.per_second", kw, kClockHz) / 1e6;
    time_total += t;
  }
  measured[0] = measured[1] + measured[2];
  out.sm_clock_mhz = time_total > 0 ? clock_weighted / time_total : 0.0;

  RunRequest r, blind;
  try {
    r = request_for(c, where, true);
    blind = request_for(c, where, false);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("{}: {}", where, json_error_text(e)));
  }
  const HardwareProfile profile = load_profile(profile_name);
  const auto predicted = [](const Report& x, int i) {
    const Counters& t = x.engine.total;
    const double values[kMetricCount] = {
        static_cast<double>(t.hbm.read_total() + t.hbm.write_total()),
        static_cast<double>(t.hbm.read_total()),
        static_cast<double>(t.hbm.write_total()),
        static_cast<double>(t.l2.read_total()),
        static_cast<double>(t.l2.write_total()),
        x.engine.time_s};
    return values[i];
  };
  if (has_kernels) {  // as-run needs the measured kernels' clock and registers
    r.engine.sm_clock_mhz = out.sm_clock_mhz;
    // The register counts the compiler gave the measured kernels set their occupancy.
    r.engine.registers_by_role = registers_by_role(c["kernels"], where);
    if (!r.kernel && !builtin_registry().get(r.algorithm).capabilities.materializes_scores &&
        c["kernels"].size() == 1) {
      // A file whose roles are not iosim's (PyTorch's "sdpa_fwd") still names its one kernel.
      const json& launch = object_or_empty(c["kernels"][0], "launch", where);
      if (launch.contains("launch__registers_per_thread")) {
        r.tiling.registers_per_thread = registers_at(launch, where);
      }
    }
    const Report rep = simulate(profile, r);
    if (!rep.feasible()) {
      out.skipped_reason = "infeasible in iosim: " + rep.infeasible_reason;
      return out;
    }
    for (int i = 0; i < kMetricCount; ++i)
      out.metrics[i] = {predicted(rep, i), measured[i], std::nullopt};
  }

  // Blind: bytes with a cold L2 per kernel (what the counters saw), time as `iosim run` gives it
  // (L2 carried over between kernels, as back-to-back launches have it) against CUDA events, at the
  // profile's own clock policy: on a profile with a power limit the power model picks the clock
  // from the flags alone (sim/engine/power_model.hpp), otherwise the boost clock. No clock the
  // GPU was seen running at (nvidia-smi's samples) enters it (issue #29).
  out.blind_sm_clock_mhz = profile.power.present ? 0.0 : profile.sm.boost_clock_mhz.value;
  blind.engine.sm_clock_mhz = out.blind_sm_clock_mhz;
  const Report cold = simulate(profile, blind);
  if (profile.power.present) out.blind_sm_clock_mhz = cold.sm_clock_mhz;
  if (!cold.feasible() && time_only) {  // nothing else to compare
    out.skipped_reason = "infeasible in iosim: " + cold.infeasible_reason;
    return out;
  }
  if (!cold.feasible()) {  // blind stays unmeasured: no relative error
    Comparison unused[kMetricCount];
    spreads.apply(c, measured, out.metrics, unused, where);
    return out;
  }
  blind.engine.flush_l2_between_kernels = false;
  double blind_time_s = cold.engine.time_s;
  if (cold.engine.kernels.size() > 1) {
    const Report warm = simulate(profile, blind);
    blind_time_s = warm.engine.time_s;
    if (profile.power.present) out.blind_sm_clock_mhz = warm.sm_clock_mhz;
  }
  // The time blind time is held to; absent or null: not timed (0).
  const char* time_key = blind_time_key(c, where);
  const double free_s = c.contains(time_key) && !c[time_key].is_null()
                            ? measured_at(c, time_key, where, kSeconds)
                            : 0.0;
  for (int i = 0; i < kMetricCount; ++i) {
    out.blind[i] = kMetrics[i] == Metric::time
                       ? Comparison{blind_time_s, free_s, std::nullopt}
                       : Comparison{predicted(cold, i), measured[i], std::nullopt};
  }
  spreads.apply(c, measured, out.metrics, out.blind, where);
  return out;
}

std::map<std::string, int> measured_registers_by_role(const json& kernels) {
  return registers_by_role(kernels, "measured");
}

int kv_buffer_pairs(const json& tiling, std::int64_t head_dim, std::int64_t elem_bytes) {
  return pairs_from_smem(tiling, head_dim, elem_bytes, "tiling");
}

}  // namespace iosim
