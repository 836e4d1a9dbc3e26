#include "api/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "api/schema_version.hpp"
#include "sim/base/human_units.hpp"
#include "sim/schedule/block_mask.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/text_file.hpp"

namespace iosim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json read_json(const fs::path& file) {
  const std::string text = read_text_file(file, "measurement file", kMaxDataFileBytes);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError(fmt::format("{}: not valid JSON: {}", file.string(), e.what()));
  }
}

// The built-in profile a measurement belongs to: the folder it sits in
// (cuda_validate/measurements/<profile>/), else the device name it recorded.
std::string profile_for(const fs::path& file, const json& doc) {
  const std::vector<std::string> names = builtin_profile_names();
  const std::string folder = file.parent_path().filename().string();
  if (std::find(names.begin(), names.end(), folder) != names.end()) return folder;
  const std::string device = doc.value("/device/name"_json_pointer, std::string{});
  if (device.find("H200") != std::string::npos) return "h200-sxm-141gb";
  if (device.find("H100") != std::string::npos) return "h100-sxm5-80gb";
  if (device.find("A100") != std::string::npos) {
    return device.find("80GB") != std::string::npos ? "a100-sxm4-80gb" : "a100-sxm4-40gb";
  }
  throw ConfigError(fmt::format("{}: no built-in profile for device '{}'; pass --profile",
                                file.string(), device));
}

double number_at(const json& obj, const char* key, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) {
    throw ConfigError(fmt::format("{}: missing number '{}'", where, key));
  }
  return it->get<double>();
}

// A measured counter or duration: a finite number >= 0.
double measured_at(const json& obj, const char* key, const std::string& where) {
  const double v = number_at(obj, key, where);
  if (!(v >= 0.0 && std::isfinite(v))) {
    throw ConfigError(
        fmt::format("{}: '{}' = {} must be a finite number >= 0", where, key, obj.at(key).dump()));
  }
  return v;
}

// A whole number of `obj` in [lo, hi]; the message names the file's key, not a CLI flag the user
// never typed.
std::int64_t int_at(const json& obj, const char* key, const std::string& where, std::int64_t lo,
                    std::int64_t hi) {
  const double v = number_at(obj, key, where);
  if (!(v >= static_cast<double>(lo) && v <= static_cast<double>(hi)) || v != std::floor(v)) {
    throw ConfigError(fmt::format("{}: '{}' = {} must be a whole number in [{}, {}]", where, key,
                                  obj.at(key).dump(), lo, hi));
  }
  return static_cast<std::int64_t>(v);
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
    const std::string role = k.value("role", std::string{});
    const json launch = k.value("launch", json::object());
    if (!kRoles.count(role) || !launch.contains("launch__registers_per_thread")) continue;
    const int regs = registers_at(launch, fmt::format("{} kernel '{}'", where, role));
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
int pairs_from_smem(const json& t, std::int64_t head_dim, std::int64_t elem_bytes) {
  const std::int64_t smem = t.value("smem_bytes_per_cta", std::int64_t{0});
  const std::int64_t bq = t.value("block_q", std::int64_t{0});
  const std::int64_t bkv = t.value("block_kv", std::int64_t{0});
  const std::int64_t row_bytes = head_dim * elem_bytes;
  if (smem <= 0 || bq <= 0 || bkv <= 0 || row_bytes <= 0) return 0;
  const std::int64_t kv_bytes = smem - bq * row_bytes;
  const std::int64_t pair_bytes = 2 * bkv * row_bytes;
  // Our paged kernel adds its block-table slice (4 bytes a page) after the tiles.
  const std::int64_t pairs = kv_bytes / pair_bytes;
  return pairs >= 1 && kv_bytes - pairs * pair_bytes < pair_bytes / 8 ? static_cast<int>(pairs) : 0;
}

// The request for a case. Blind (`as_run` false): the problem and the tiling the case asked its
// kernel for, as `iosim run`'s flags say it (--block-q, --block-kv, --threads, --splits), nothing
// measured. As-run: also what was seen in the measured launches: the K/V buffers (from the shared
// memory the kernel asked for) and the split count PyTorch's heuristic chose (num_splits).
RunRequest request_for(const json& c, const std::string& where, bool as_run) {
  RunRequest r;
  r.algorithm = c.at("schedule").get<std::string>();
  // A case that carries its kernel's description is predicted from it alone (blind and as-run):
  // the dataflow, tiles, mechanisms and launch facts its author stated.
  if (c.contains("kernel")) {
    r.kernel = std::make_shared<const KernelDescription>(
        parse_kernel_description(c["kernel"], where + ": kernel"));
    r.algorithm = r.kernel->name;
  }
  const json& p = c.at("problem");
  AttentionProblem& pr = r.problem;
  // validate_problem()'s limits, named by the file's keys rather than by CLI flags.
  const std::string in_problem = where + ": problem";
  pr.batch = int_at(p, "batch", in_problem, 1, kMaxBatch);
  pr.heads = int_at(p, "heads", in_problem, 1, kMaxHeads);
  pr.seq = int_at(p, "seq", in_problem, 1, kMaxSeq);
  pr.seq_kv = int_at(p, "seq_kv", in_problem, 1, kMaxSeq);
  pr.head_dim = int_at(p, "head_dim", in_problem, 1, kMaxHeadDim);
  pr.dtype = parse_dtype(p.value("dtype", std::string("fp16")));
  pr.causal = p.value("causal", false);
  pr.mask = p.value("mask", false);
  pr.dropout = p.value("dropout", 0.0);
  pr.pass = parse_pass(c.value("pass", std::string("fwd")));
  // Decoding: grouped-query attention and paged K/V when the case says so.
  pr.kv_heads = p.value("kv_heads", std::int64_t{0});
  pr.page_tokens = p.value("page_tokens", std::int64_t{0});
  // Block-sparse: the kernel's block mask, as --pattern defines it (cuda_validate's block list
  // is held to sim/schedule/block_mask.cpp by tests/block_pattern_match_test.cpp).
  if (p.contains("pattern") && p["pattern"].is_string()) {
    pr.pattern =
        std::make_shared<const BlockPattern>(parse_block_pattern(p["pattern"].get<std::string>()));
  }
  // Tiling of the measured kernel, when it is one we wrote (cuBLAS picks its own for standard).
  if (!r.kernel && c.contains("tiling") && c["tiling"].is_object()) {
    const json& t = c["tiling"];
    // 0 or absent: the measured kernel's tiling does not say (the algorithm's default).
    const auto given = [](auto v) { return v != 0 ? std::optional(v) : std::nullopt; };
    r.tiling.block_q = given(t.value("block_q", std::int64_t{0}));
    r.tiling.block_kv = given(t.value("block_kv", std::int64_t{0}));
    r.tiling.threads = given(t.value("threads", 0));
    // Split-KV decoding: the split count the case asked its kernel for (--splits).
    r.tiling.splits = given(t.value("splits", std::int64_t{0}));
    const Capabilities& caps = builtin_registry().get(r.algorithm).capabilities;
    // A run of both passes whose flags tile the forward: the backward's own blocks, as the
    // measured backward kernel's tiling says ("bwd"), passed like --backward-block-q/-kv.
    if (pr.pass == Pass::fwdbwd && caps.flags_tile_forward && t.contains("bwd") &&
        t["bwd"].is_object()) {
      r.tiling.backward_block_q = given(t["bwd"].value("block_q", std::int64_t{0}));
      r.tiling.backward_block_kv = given(t["bwd"].value("block_kv", std::int64_t{0}));
    }
    // Grouped-query decoding: a kernel whose CTA holds all of a K/V head's query rows
    // (query_rows_per_cta = group x N, cuda_validate's decode kernel) packs the group at any N,
    // as --pack-gqa on says; FlashAttention-2's rule, the default, packs at N = 1 only.
    if (const std::int64_t rows = t.value("query_rows_per_cta", std::int64_t{0});
        pr.seq > 1 && pr.group() > 1 && rows == pr.group() * pr.seq) {
      pr.pack_gqa = GqaPacking::on;
    }
    if (as_run) {
      r.tiling.pipeline_stages = given(t.value("pipeline_stages", 0));
      // Forward passes, and runs of both passes whose flags tile the forward: otherwise a run
      // with a backward uses the field for the backward's Q stages.
      const bool streams_kv = (pr.pass == Pass::fwd || caps.flags_tile_forward) &&
                              caps.forward_stages == StagesCount::kv_buffer_pairs;
      if (const int pairs = pairs_from_smem(t, pr.head_dim, pr.elem_bytes());
          streams_kv && pairs > 0) {
        r.tiling.pipeline_stages = pairs;
      }
      // The split count PyTorch's heuristic chose at run time, seen in its launches.
      if (!r.tiling.splits) r.tiling.splits = given(t.value("num_splits", std::int64_t{0}));
    }
  }
  // The arrangement the measured kernel ran (our FA3-style kernel's variants): a case measured
  // with ping-pong is predicted with ping-pong. Of a variant's fields only this one has an iosim
  // flag (--warpgroups); the copy path, intra-warpgroup overlap and a non-persistent grid do not.
  if (c.contains("variant") && c["variant"].is_object()) {
    const json& v = c["variant"];
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

// The SM clock a file's GPU ran at free (no Nsight Compute): the median of nvidia-smi's samples
// while it drew more than 150 W (idle samples would say the idle clock); 0 when not recorded.
double free_running_clock_mhz(const json& doc) {
  const json::json_pointer p("/clocks/free_running_pass/sm_clock_mhz_when_power_above_150w/median");
  return doc.contains(p) && doc.at(p).is_number() ? doc.at(p).get<double>() : 0.0;
}

// The clock a file's GPU was held at while it ran free, 0 when it was not held: the samples while
// it drew more than 150 W sat at one value (their minimum is their median) below the boost clock.
// The PyTorch sets of 2026-11-22 ran so, at the base clock Nsight Compute locks to (H100 1590
// MHz, H200 1500 MHz, at most 684 W): no clock above it was possible there, whatever the power.
double held_running_clock_mhz(const json& doc) {
  const json::json_pointer p("/clocks/free_running_pass/sm_clock_mhz_when_power_above_150w");
  if (!doc.contains(p) || !doc.at(p).is_object()) return 0.0;
  const json& c = doc.at(p);
  if (!c.contains("min") || !c.contains("median") || !c["min"].is_number() ||
      !c["median"].is_number()) {
    return 0.0;
  }
  const double lo = c["min"].get<double>(), mid = c["median"].get<double>();
  return lo > 0 && lo == mid ? lo : 0.0;
}

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int index_of(Metric m) {
  for (int i = 0; i < kMetricCount; ++i)
    if (kMetrics[i] == m) return i;
  return 0;
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
const char* blind_time_key(const json& c) {
  const auto it = c.find("time_queued_s");
  return it != c.end() && it->is_number() ? "time_queued_s" : "time_free_running_s";
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
    const json sp = kernel.value("spread", json::object());
    for (int i = 1; i < kMetricCount; ++i) {
      const bool known = sp.contains(kKeys[i]) && sp[kKeys[i]].is_number() &&
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
    const json cs = c.value("/repeats/spread"_json_pointer, json::object());
    // Blind time is held to the case's own CUDA-event repeats, whether or not its kernels'
    // counters were repeated (PyTorch's sets: time sets only).
    const char* time_key = blind_time_key(c);
    if (cs.contains(time_key) && cs[time_key].is_number()) {
      blind[index_of(Metric::time)].spread = non_negative_spread(cs, time_key, where);
    }
    if (!any) return;
    std::optional<double> s[kMetricCount];
    for (int i = 1; i < kMetricCount; ++i) {
      if (!missing[i] && measured[i] > 0) s[i] = weighted[i] / measured[i];
    }
    for (const auto& [key, i] : {std::pair{"dram_read", 1}, std::pair{"dram_write", 2}}) {
      if (cs.contains(key) && cs[key].is_number()) s[i] = non_negative_spread(cs, key, where);
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

CaseResult compare_case(const json& c, const std::string& profile_name, const std::string& file,
                        double free_clock_mhz, double held_clock_mhz) {
  CaseResult out;
  out.id = c.value("id", std::string("?"));
  out.schedule = c.contains("kernel") && c["kernel"].is_object() && c["kernel"].contains("name") &&
                         c["kernel"]["name"].is_string()
                     ? c["kernel"]["name"].get<std::string>()
                     : c.value("schedule", std::string("?"));
  out.pass = c.value("pass", std::string("fwd"));
  out.dtype = c.contains("problem") && c["problem"].is_object()
                  ? c["problem"].value("dtype", std::string("fp16"))
                  : std::string("fp16");
  out.profile = profile_name;
  out.source_file = file;
  const std::string where = fmt::format("{}: case '{}'", file, out.id);
  if (!c.value("/check/passed"_json_pointer, false)) {
    out.skipped_reason = "output check failed or missing";
    return out;
  }
  if (c.contains("kernels") && !c["kernels"].is_array()) {
    throw ConfigError(fmt::format("{}: 'kernels' must be a list of kernels, got {}", where,
                                  c["kernels"].type_name()));
  }
  if (!c.contains("kernels") || c["kernels"].empty()) {
    out.skipped_reason = "no kernels measured";
    return out;
  }
  // Measured totals over the case's kernels, and the SM clock ncu ran them at (time-weighted).
  double measured[kMetricCount] = {};  // indexed like kMetrics
  double clock_weighted = 0.0, time_total = 0.0;
  KernelSpreads spreads;
  for (const json& k : c["kernels"]) {
    if (!k.is_object() || !k.contains("metrics") || !k["metrics"].is_object()) {
      throw ConfigError(
          fmt::format("{}: every kernel must be an object with a 'metrics' object", where));
    }
    const json& m = k["metrics"];
    const std::string kw = fmt::format("{} kernel '{}'", where, k.value("role", std::string("?")));
    const double values[kMetricCount] = {
        0.0, measured_at(m, "dram__bytes_read.sum", kw),
        measured_at(m, "dram__bytes_write.sum", kw),
        // Bytes the SMs received from L2. The L2 slices' own request count
        // (lts__t_sectors_srcunit_tex_op_read) is lower when co-resident CTAs read the same sectors
        // at the same moment: the crossbar merges those requests (cuda_validate/README.md). Older
        // files without the crossbar metric fall back to the slice count.
        32.0 * (m.contains("l1tex__m_xbar2l1tex_read_sectors.sum")
                    ? measured_at(m, "l1tex__m_xbar2l1tex_read_sectors.sum", kw)
                    : measured_at(m, "lts__t_sectors_srcunit_tex_op_read.sum", kw)),
        32.0 * measured_at(m, "lts__t_sectors_srcunit_tex_op_write.sum", kw),
        measured_at(m, "gpu__time_duration.sum", kw) * 1e-9};
    for (int i = 1; i < kMetricCount; ++i) measured[i] += values[i];
    spreads.add(k, values, m.contains("l1tex__m_xbar2l1tex_read_sectors.sum"), kw);
    const double t = values[5];
    clock_weighted += t * measured_at(m, "sm__cycles_elapsed.avg.per_second", kw) / 1e6;
    time_total += t;
  }
  measured[0] = measured[1] + measured[2];
  out.sm_clock_mhz = time_total > 0 ? clock_weighted / time_total : 0.0;

  RunRequest r, blind;
  try {
    r = request_for(c, where, true);
    blind = request_for(c, where, false);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("{}: {}", where, e.what()));
  }
  r.engine.sm_clock_mhz = out.sm_clock_mhz;
  // The register counts the compiler gave the measured kernels set their occupancy.
  r.engine.registers_by_role = registers_by_role(c["kernels"], where);
  if (!r.kernel && !builtin_registry().get(r.algorithm).capabilities.materializes_scores &&
      c["kernels"].size() == 1) {
    // A file whose roles are not iosim's (PyTorch's "sdpa_fwd") still names its one kernel.
    const json& launch = c["kernels"][0].value("launch", json::object());
    if (launch.contains("launch__registers_per_thread")) {
      r.tiling.registers_per_thread = registers_at(launch, where);
    }
  }
  const HardwareProfile profile = load_profile(profile_name);
  const Report rep = simulate(profile, r);
  if (!rep.feasible()) {
    out.skipped_reason = "infeasible in iosim: " + rep.infeasible_reason;
    return out;
  }
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
  for (int i = 0; i < kMetricCount; ++i)
    out.metrics[i] = {predicted(rep, i), measured[i], std::nullopt};

  // Blind: bytes with a cold L2 per kernel (what the counters saw), time as `iosim run` gives it
  // (L2 carried over between kernels, as back-to-back launches have it) against CUDA events.
  // On a profile with a power limit the power model picks the clock from the flags alone
  // (sim/hardware/power_model.hpp); otherwise the file's free-running clock, else the boost clock.
  // A clock the file's GPU was held at (held_running_clock_mhz) caps the model's.
  const auto blind_run = [&](RunRequest& q) {
    Report run = simulate(profile, q);
    if (profile.power.present && held_clock_mhz > 0 && q.engine.sm_clock_mhz <= 0 &&
        run.sm_clock_mhz > held_clock_mhz) {
      q.engine.sm_clock_mhz = held_clock_mhz;
      run = simulate(profile, q);
      q.engine.sm_clock_mhz = 0.0;
    }
    return run;
  };
  out.blind_sm_clock_mhz = profile.power.present ? 0.0
                           : free_clock_mhz > 0  ? free_clock_mhz
                                                 : profile.sm.boost_clock_mhz.value;
  blind.engine.sm_clock_mhz = out.blind_sm_clock_mhz;
  const Report cold = blind_run(blind);
  if (profile.power.present) out.blind_sm_clock_mhz = cold.sm_clock_mhz;
  if (!cold.feasible()) {  // blind stays unmeasured: no relative error
    Comparison unused[kMetricCount];
    spreads.apply(c, measured, out.metrics, unused, where);
    return out;
  }
  blind.engine.flush_l2_between_kernels = false;
  double blind_time_s = cold.engine.time_s;
  if (cold.engine.kernels.size() > 1) {
    const Report warm = blind_run(blind);
    blind_time_s = warm.engine.time_s;
    if (profile.power.present) out.blind_sm_clock_mhz = warm.sm_clock_mhz;
  }
  const auto free_it = c.find(blind_time_key(c));
  const double free_s =
      free_it != c.end() && free_it->is_number() ? free_it->get<double>() : 0.0;  // 0: not timed
  for (int i = 0; i < kMetricCount; ++i) {
    out.blind[i] = kMetrics[i] == Metric::time
                       ? Comparison{blind_time_s, free_s, std::nullopt}
                       : Comparison{predicted(cold, i), measured[i], std::nullopt};
  }
  spreads.apply(c, measured, out.metrics, out.blind, where);
  return out;
}

std::vector<fs::path> measurement_files(const fs::path& path) {
  if (!fs::exists(path))
    throw ConfigError(fmt::format("no such file or folder '{}'", path.string()));
  if (!fs::is_directory(path)) return {path};
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(path)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.rfind("measurements", 0) == 0 &&
        e.path().extension() == ".json") {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    throw ConfigError(fmt::format("no measurements*.json under '{}'", path.string()));
  }
  return files;
}

Summary summarize(const std::string& name, const std::vector<const CaseResult*>& cases) {
  Summary s;
  s.schedule = name;
  for (int i = 0; i < kMetricCount; ++i) {
    std::vector<double> errs;
    for (const CaseResult* c : cases) {
      if (const auto e = c->metrics[i].relative_error()) errs.push_back(std::abs(*e));
    }
    s.median_abs_error[i] = median(errs);
    if (!errs.empty()) s.worst_abs_error[i] = *std::max_element(errs.begin(), errs.end());
    std::vector<double> blind;
    for (const CaseResult* c : cases) {
      if (const auto e = c->blind[i].relative_error()) blind.push_back(std::abs(*e));
    }
    s.blind_median_abs_error[i] = median(blind);
    if (!blind.empty()) s.blind_worst_abs_error[i] = *std::max_element(blind.begin(), blind.end());
    // Spreads of the compared cases measured more than once.
    std::vector<double> spread, blind_spread;
    for (const CaseResult* c : cases) {
      if (c->metrics[i].relative_error() && c->metrics[i].spread)
        spread.push_back(*c->metrics[i].spread);
      if (c->blind[i].relative_error() && c->blind[i].spread)
        blind_spread.push_back(*c->blind[i].spread);
    }
    s.median_spread[i] = median(spread);
    if (!spread.empty()) s.worst_spread[i] = *std::max_element(spread.begin(), spread.end());
    s.blind_median_spread[i] = median(blind_spread);
    if (!blind_spread.empty())
      s.blind_worst_spread[i] = *std::max_element(blind_spread.begin(), blind_spread.end());
  }
  s.cases = static_cast<int>(cases.size());
  return s;
}

std::string pct(const std::optional<double>& e, bool sign = false) {
  if (!e) return "-";
  return sign ? fmt::format("{:+.1f}%", *e * 100) : fmt::format("{:.1f}%", *e * 100);
}

// A summary statistic: "within noise" where the repeats' spread is at least the error.
std::string stat_text(const std::optional<double>& error, const std::optional<double>& spread) {
  return within_noise(error, spread) ? "within noise" : pct(error);
}

std::string blind_pair(const Summary& x, int i) {
  return stat_text(x.blind_median_abs_error[i], x.blind_median_spread[i]) + " / " +
         stat_text(x.blind_worst_abs_error[i], x.blind_worst_spread[i]);
}

std::string as_run_pair(const Summary& x, int i) {
  return stat_text(x.median_abs_error[i], x.median_spread[i]) + " / " +
         stat_text(x.worst_abs_error[i], x.worst_spread[i]);
}

bool has_spreads(const ValidationResult& v) {
  for (const Summary& x : v.summaries)
    for (int i = 0; i < kMetricCount; ++i)
      if (x.median_spread[i] || x.blind_median_spread[i]) return true;
  return false;
}

std::string value_text(Metric m, double v) {
  return m == Metric::time ? human_seconds(v) : human_bytes(v);
}

// Checks one measurements document (read from `file`) and appends its cases to `v`.
void read_measurement_document(const json& doc, const fs::path& file,
                               const std::string& profile_override, ValidationResult& v) {
  if (!doc.is_object() || doc.value("format", json()) != "iosim-measurements") {
    throw ConfigError(
        fmt::format("{}: not an iosim-measurements file (\"format\" key)", file.string()));
  }
  if (doc.value("version", json()) != 1) {
    throw ConfigError(fmt::format("{}: measurement format version {} is not supported (1 is)",
                                  file.string(), doc.value("version", json()).dump()));
  }
  if (!doc.contains("cases") || !doc["cases"].is_array()) {
    throw ConfigError(fmt::format("{}: 'cases' must be a list of measured cases", file.string()));
  }
  const std::string profile = profile_override.empty() ? profile_for(file, doc) : profile_override;
  const double free_clock_mhz = free_running_clock_mhz(doc);
  const double held_clock_mhz = held_running_clock_mhz(doc);
  for (const json& c : doc["cases"]) {
    if (!c.is_object()) {
      throw ConfigError(
          fmt::format("{}: every case must be an object, got {}", file.string(), c.type_name()));
    }
    const std::string schedule = c.value("schedule", std::string{});
    const std::vector<std::string> known = builtin_registry().names();
    std::string skip;
    if (c.contains("kernel")) {
      // Described by the case itself: its description says what it runs.
    } else if (std::find(known.begin(), known.end(), schedule) == known.end()) {
      skip = "no iosim schedule '" + schedule + "' yet";
    } else if (c.value("pass", std::string("fwd")) != "fwd" &&
               !builtin_registry().get(schedule).capabilities.backward) {
      skip = "no backward of iosim's '" + schedule + "' yet";
    }
    if (!skip.empty()) {
      CaseResult skipped;
      skipped.id = c.value("id", std::string("?"));
      skipped.schedule = schedule;
      skipped.pass = c.value("pass", std::string("fwd"));
      skipped.profile = profile;
      skipped.source_file = file.string();
      skipped.skipped_reason = skip;
      v.cases.push_back(skipped);
      continue;
    }
    v.cases.push_back(compare_case(c, profile, file.string(), free_clock_mhz, held_clock_mhz));
  }
}

}  // namespace

std::map<std::string, int> measured_registers_by_role(const json& kernels) {
  return registers_by_role(kernels, "measured");
}

int kv_buffer_pairs(const json& tiling, std::int64_t head_dim, std::int64_t elem_bytes) {
  return pairs_from_smem(tiling, head_dim, elem_bytes);
}

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::dram:
      return "dram";
    case Metric::dram_read:
      return "dram_read";
    case Metric::dram_write:
      return "dram_write";
    case Metric::l2_read:
      return "l2_read";
    case Metric::l2_write:
      return "l2_write";
    case Metric::time:
      return "time";
  }
  return "?";
}

std::string summary_name(const CaseResult& c) {
  // A schedule's runs with a backward are another workload than its forwards: summarized apart,
  // so that adding them leaves the forward's accuracy as it was. FP8 runs likewise (other pipe
  // rates, another kernel).
  std::string name = c.pass == "fwd" ? c.schedule : c.schedule + " " + c.pass;
  if (c.dtype == "fp8") name += " fp8";
  return name;
}

std::optional<double> Comparison::relative_error() const {
  if (!(measured > 0.0)) return std::nullopt;
  return (predicted - measured) / measured;
}

bool Comparison::within_noise() const {
  const auto e = relative_error();
  return e && spread && *spread > 0 && std::abs(*e) <= *spread;
}

bool within_noise(const std::optional<double>& error, const std::optional<double>& spread) {
  return error && spread && *spread > 0 && *error <= *spread;
}

namespace {

// The summaries of `v`'s compared cases: per schedule (or kernel description), then "all".
void summarize_cases(ValidationResult& v) {
  std::map<std::string, std::vector<const CaseResult*>> by_schedule;
  std::vector<const CaseResult*> all;
  for (const CaseResult& c : v.cases) {
    if (!c.skipped_reason.empty()) continue;
    by_schedule[summary_name(c)].push_back(&c);
    all.push_back(&c);
  }
  for (const auto& [name, cases] : by_schedule) v.summaries.push_back(summarize(name, cases));
  v.summaries.push_back(summarize("all", all));
}

}  // namespace

ValidationResult validate_document(const json& doc, const std::string& origin,
                                   const std::string& profile) {
  ValidationResult v;
  try {
    read_measurement_document(doc, origin, profile, v);
  } catch (const json::exception& e) {
    throw ConfigError(fmt::format("{}: unexpected content: {}", origin, e.what()));
  }
  summarize_cases(v);
  return v;
}

ValidationResult validate_measurements(const fs::path& path, const std::string& profile_override) {
  return validate_measurements(std::vector<fs::path>{path}, profile_override);
}

ValidationResult validate_measurements(const std::vector<fs::path>& paths,
                                       const std::string& profile_override) {
  std::vector<fs::path> files;
  for (const fs::path& path : paths) {
    const std::vector<fs::path> found = measurement_files(path);
    files.insert(files.end(), found.begin(), found.end());
  }
  ValidationResult v;
  for (const fs::path& file : files) {
    try {
      read_measurement_document(read_json(file), file, profile_override, v);
    } catch (const json::exception& e) {
      // A key of the wrong type deep in a case: name the file rather than fail as a bug.
      throw ConfigError(fmt::format("{}: unexpected content: {}", file.string(), e.what()));
    }
  }
  summarize_cases(v);
  return v;
}

std::string validation_table(const ValidationResult& v) {
  const auto cell = [](Metric m, const Comparison& x) {
    return fmt::format("{}/{} ({})", value_text(m, x.predicted), value_text(m, x.measured),
                       x.within_noise() ? "noise" : pct(x.relative_error(), true));
  };
  std::string s = fmt::format("{:<52} {:>6} {:>28} {:>28} {:>6}", "case", "blind", "blind time",
                              "blind dram", "as-run");
  for (Metric m : kMetrics)
    s += fmt::format(" {:>28}", std::string(metric_name(m)) + " pred/meas (err)");
  s += "\n" + fmt::format("{:<52} {:>6} {:>28} {:>28} {:>6}\n", "", "MHz", "pred/meas (err)",
                          "pred/meas (err)", "MHz");
  for (const CaseResult& c : v.cases) {
    if (!c.skipped_reason.empty()) {
      s += fmt::format("{:<52}  skipped: {}\n", c.id, c.skipped_reason);
      continue;
    }
    s += fmt::format("{:<52} {:>6.0f} {:>28} {:>28} {:>6.0f}", c.id, c.blind_sm_clock_mhz,
                     cell(Metric::time, c.blind[index_of(Metric::time)]),
                     cell(Metric::dram, c.blind[index_of(Metric::dram)]), c.sm_clock_mhz);
    for (int i = 0; i < kMetricCount; ++i)
      s += fmt::format(" {:>28}", cell(kMetrics[i], c.metrics[i]));
    s += "\n";
  }
  s += fmt::format("\n{:<12} {:>6} {:>22} {:>22}", "schedule", "cases", "blind time med/worst",
                   "blind dram med/worst");
  for (Metric m : kMetrics)
    s += fmt::format(" {:>22}", std::string(metric_name(m)) + " median/worst");
  s += "\n";
  for (const Summary& x : v.summaries) {
    const int t = index_of(Metric::time), d = index_of(Metric::dram);
    s += fmt::format("{:<12} {:>6} {:>22} {:>22}", x.schedule, x.cases, blind_pair(x, t),
                     blind_pair(x, d));
    for (int i = 0; i < kMetricCount; ++i) s += fmt::format(" {:>22}", as_run_pair(x, i));
    s += "\n";
  }
  s +=
      "\nblind: `iosim run` from the problem and tiling flags alone at the clock the GPU ran free, "
      "time against CUDA events; as-run: with the kernel's measured registers, buffers, splits "
      "and Nsight Compute's clock, against its counters and durations\n";
  if (has_spreads(v)) {
    s += "noise / within noise: the error is no larger than the measurement's own spread over "
         "its repeats (max - min over median; for a median or worst, the same statistic of the "
         "spreads)\n";
  }
  return s;
}

std::string validation_markdown(const ValidationResult& v) {
  // Files measured several times add the spread of the free-running time over the repeats (the
  // blind time's measurement) and of the DRAM bytes, beside the errors they bound.
  const bool spreads = has_spreads(v);
  std::string s = "| schedule | cases | **blind time** median / worst | ";
  if (spreads) s += "time spread over repeats median / worst | ";
  s += "**blind DRAM** median / worst | "
       "as-run DRAM (read + write) median / worst | DRAM read median / worst | "
       "DRAM write median / worst | L2 read median / worst | L2 write median / worst | "
       "as-run time median / worst |";
  if (spreads) s += " DRAM spread over repeats median / worst |";
  s += "\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |";
  if (spreads) s += " ---: | ---: |";
  s += "\n";
  for (const Summary& x : v.summaries) {
    const int t = index_of(Metric::time), d = index_of(Metric::dram);
    s += fmt::format("| {} | {} | {} |", x.schedule, x.cases, blind_pair(x, t));
    if (spreads) {
      s += fmt::format(" {} / {} |", pct(x.blind_median_spread[t]), pct(x.blind_worst_spread[t]));
    }
    s += fmt::format(" {} |", blind_pair(x, d));
    for (int i = 0; i < kMetricCount; ++i) s += fmt::format(" {} |", as_run_pair(x, i));
    if (spreads) s += fmt::format(" {} / {} |", pct(x.median_spread[d]), pct(x.worst_spread[d]));
    s += "\n";
  }
  if (spreads) {
    s += "\n*within noise*: the error is no larger than the measurement's own spread over its "
         "repeats (max − min over median; for a median or worst, the same statistic of the cases' "
         "spreads).\n";
  }
  return s;
}

// The Markdown table's cells (its lines that start with '|', less the alignment row): the HTML
// report shows the same columns without keeping a second copy of them.
std::vector<std::vector<std::string>> validation_summary_table(const ValidationResult& v) {
  std::vector<std::vector<std::string>> t;
  std::istringstream in(validation_markdown(v));
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 2 || line[0] != '|' || line.rfind("| ---", 0) == 0) continue;
    std::vector<std::string> row;
    std::size_t start = 2;
    for (std::size_t bar = line.find(" |", start); bar != std::string::npos;
         bar = line.find(" |", start)) {
      row.push_back(line.substr(start, bar - start));
      start = bar + 3;
    }
    t.push_back(std::move(row));
  }
  return t;
}

std::string validation_csv(const ValidationResult& v) {
  std::string s = "case,schedule,profile,sm_clock_mhz,skipped";
  for (Metric m : kMetrics) {
    s += fmt::format(",{0}_predicted,{0}_measured,{0}_rel_error", metric_name(m));
  }
  s += ",blind_sm_clock_mhz";
  for (Metric m : kMetrics) {
    s += fmt::format(",blind_{0}_predicted,blind_{0}_measured,blind_{0}_rel_error", metric_name(m));
  }
  s += "\n";
  for (const CaseResult& c : v.cases) {
    s += fmt::format("{},{},{},{:.1f},\"{}\"", c.id, c.schedule, c.profile, c.sm_clock_mhz,
                     c.skipped_reason);
    for (int i = 0; i < kMetricCount; ++i) {
      const Comparison& x = c.metrics[i];
      const auto e = x.relative_error();
      s += fmt::format(",{:.6g},{:.6g},{}", x.predicted, x.measured,
                       e ? fmt::format("{:.6g}", *e) : "");
    }
    s += fmt::format(",{:.1f}", c.blind_sm_clock_mhz);
    for (int i = 0; i < kMetricCount; ++i) {
      const Comparison& x = c.blind[i];
      const auto e = x.relative_error();
      s += fmt::format(",{:.6g},{:.6g},{}", x.predicted, x.measured,
                       e ? fmt::format("{:.6g}", *e) : "");
    }
    s += "\n";
  }
  return s;
}

namespace {

// The repeat spread of a case's quantity and whether its error is within it; nothing for a
// quantity measured once (files without repeats keep their JSON as it was).
void add_spread(json& j, const Comparison& x) {
  if (!x.spread) return;
  j["spread"] = *x.spread;
  j["within_noise"] = x.within_noise();
}

void add_spreads(json& j, const std::optional<double>& median_error,
                 const std::optional<double>& worst_error, const std::optional<double>& median,
                 const std::optional<double>& worst) {
  if (median) {
    j["median_spread"] = *median;
    j["median_within_noise"] = within_noise(median_error, median);
  }
  if (worst) {
    j["worst_spread"] = *worst;
    j["worst_within_noise"] = within_noise(worst_error, worst);
  }
}

}  // namespace

std::string validation_json(const ValidationResult& v) {
  json cases = json::array();
  for (const CaseResult& c : v.cases) {
    json j = {{"id", c.id},
              {"schedule", c.schedule},
              {"profile", c.profile},
              {"source_file", c.source_file},
              {"sm_clock_mhz", c.sm_clock_mhz}};
    if (!c.skipped_reason.empty()) {
      j["skipped"] = c.skipped_reason;
    } else {
      j["summary"] = summary_name(c);
      json blind = {{"sm_clock_mhz", c.blind_sm_clock_mhz}};
      for (int i = 0; i < kMetricCount; ++i) {
        const auto e = c.metrics[i].relative_error();
        j[metric_name(kMetrics[i])] = {{"predicted", c.metrics[i].predicted},
                                       {"measured", c.metrics[i].measured},
                                       {"relative_error", e ? json(*e) : json(nullptr)}};
        add_spread(j[metric_name(kMetrics[i])], c.metrics[i]);
        const auto b = c.blind[i].relative_error();
        blind[metric_name(kMetrics[i])] = {{"predicted", c.blind[i].predicted},
                                           {"measured", c.blind[i].measured},
                                           {"relative_error", b ? json(*b) : json(nullptr)}};
        add_spread(blind[metric_name(kMetrics[i])], c.blind[i]);
      }
      j["blind"] = blind;
    }
    cases.push_back(j);
  }
  json summaries = json::array();
  for (const Summary& x : v.summaries) {
    json j = {{"schedule", x.schedule}, {"cases", x.cases}};
    for (int i = 0; i < kMetricCount; ++i) {
      j[metric_name(kMetrics[i])] = {
          {"median_abs_error",
           x.median_abs_error[i] ? json(*x.median_abs_error[i]) : json(nullptr)},
          {"worst_abs_error", x.worst_abs_error[i] ? json(*x.worst_abs_error[i]) : json(nullptr)}};
      add_spreads(j[metric_name(kMetrics[i])], x.median_abs_error[i], x.worst_abs_error[i],
                  x.median_spread[i], x.worst_spread[i]);
      j["blind"][metric_name(kMetrics[i])] = {
          {"median_abs_error",
           x.blind_median_abs_error[i] ? json(*x.blind_median_abs_error[i]) : json(nullptr)},
          {"worst_abs_error",
           x.blind_worst_abs_error[i] ? json(*x.blind_worst_abs_error[i]) : json(nullptr)}};
      add_spreads(j["blind"][metric_name(kMetrics[i])], x.blind_median_abs_error[i],
                  x.blind_worst_abs_error[i], x.blind_median_spread[i], x.blind_worst_spread[i]);
    }
    summaries.push_back(j);
  }
  return json({{"schema_version", kSchemaVersion}, {"cases", cases}, {"summaries", summaries}})
             .dump(2) +
         "\n";
}

}  // namespace iosim
