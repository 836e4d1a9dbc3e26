#pragma once
// The schema of a profile's YAML (sim/hardware/profile.hpp's structs): the keys of each section,
// declared once, each in one row: the struct member it fills (its type), its unit, its doc line
// and its bounds. Everything else reads the rows: the profile's reader (profile_reader.hpp), its
// checks (profile_checks.cpp: validate()), its loader (profile_loader.cpp: --set keys,
// profile_keys(), profile_template(), profile_key_table()) and hwprofiles/README.md's key tables
// (`iosim profiles --keys SECTION --format md`, checked by scripts/readme_tables.sh).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "sim/hardware/profile.hpp"

namespace iosim::profile_yaml {

// The schema: one table per section, key name -> struct member. The key lists used for
// "unknown key" and "missing key" come from these tables, so they cannot drift from the struct.
template <typename Spec>
using Member =
    std::variant<Sourced<int> Spec::*, Sourced<std::int64_t> Spec::*, Sourced<double> Spec::*>;

// What a key's value must be by itself: profile_yaml::validate() (profile_checks.cpp) checks it,
// in a message that names the key ("sm.count = 0 must be > 0"); checks across keys are written
// there. A rate within a million times of today's GPUs either way, a latency or a size below an
// upper limit: beyond them a profile describes no GPU (sm.count = 2e9 ended in std::bad_alloc,
// --set hbm.bandwidth_gbps=1e-300 made times of 1e295 s that `report` refused).
struct Bounds {
  enum class Sign { any, positive, non_negative };
  enum class Interval { none, open_zero_one, zero_one };  // (0, 1], [0, 1]
  Sign sign = Sign::any;
  const char* max_why = nullptr;  // set: at most `max` ("exceeds MAX (WHY)")
  double max = 0;
  const char* unit = nullptr;  // set: a value above 0 lies in [lo, hi] UNIT
  double lo = 0, hi = 0;
  Interval fraction = Interval::none;
};

// One row: a key, its member (whose type says integer or number), its unit and one line of doc
// (`iosim profiles --keys SECTION`: hwprofiles/README.md's tables), its bounds, and the checks
// across keys that validate() writes out, in words for the docs' table ("<= smem_per_sm_bytes").
template <typename Spec>
struct Field {
  const char* key;
  Member<Spec> member;
  const char* unit;
  const char* doc;
  Bounds bounds = {};
  const char* across = nullptr;
};

inline constexpr Bounds::Sign kPositive = Bounds::Sign::positive;
inline constexpr Bounds::Sign kNonNegative = Bounds::Sign::non_negative;

inline const std::array<Field<SmSpec>, 17> kSmFields{{
    {"count",
     &SmSpec::count,
     "SMs",
     "SMs on the chip",
     {.sign = kPositive,
      .max_why = "iosim's limit; GPUs have up to a few hundred SMs",
      .max = 4096}},
    {"boost_clock_mhz",
     &SmSpec::boost_clock_mhz,
     "MHz",
     "maximum SM clock; cycles in this file are counted at it",
     {.sign = kPositive, .max_why = "100 GHz", .max = 1e5},
     "at least 1"},
    {"base_clock_mhz",
     &SmSpec::base_clock_mhz,
     "MHz",
     "the clock Nsight Compute locks the SMs to by default (`--clock-control base`)",
     {.sign = kPositive},
     "at least 1, <= boost"},
    {"smem_per_sm_bytes",
     &SmSpec::smem_per_sm_bytes,
     "bytes",
     "shared memory per SM at the largest carve-out",
     {.sign = kPositive, .max_why = "1 GiB", .max = 1 << 30}},
    {"smem_per_cta_max_bytes",
     &SmSpec::smem_per_cta_max_bytes,
     "bytes",
     "largest dynamic shared memory one CTA may opt in to",
     {.sign = kPositive},
     "<= smem_per_sm_bytes"},
    {"smem_reserved_per_cta_bytes",
     &SmSpec::smem_reserved_per_cta_bytes,
     "bytes",
     "shared memory the system reserves for each resident CTA",
     {.sign = kNonNegative},
     "per_cta_max + reserved <= per_sm"},
    {"registers_per_sm",
     &SmSpec::registers_per_sm,
     "32-bit registers",
     "register file per SM",
     {.sign = kPositive}},
    {"max_registers_per_thread",
     &SmSpec::max_registers_per_thread,
     "32-bit registers",
     "most registers one thread may use",
     {.sign = kPositive},
     "<= registers_per_sm"},
    {"max_threads_per_sm",
     &SmSpec::max_threads_per_sm,
     "threads",
     "resident threads per SM",
     {.sign = kPositive, .max_why = "iosim's limit", .max = 1 << 16}},
    {"max_ctas_per_sm",
     &SmSpec::max_ctas_per_sm,
     "CTAs",
     "resident CTAs per SM",
     {.sign = kPositive},
     "<= max_threads_per_sm"},
    {"smem_bandwidth_bytes_per_clk",
     &SmSpec::smem_bandwidth_bytes_per_clk,
     "bytes/clock",
     "shared-memory bandwidth of one SM",
     {.sign = kPositive, .unit = "B/clk", .lo = 1, .hi = 1e6}},
    {"l2_to_sm_bytes_per_clk",
     &SmSpec::l2_to_sm_bytes_per_clk,
     "bytes/clock",
     "most L2 -> SM read bandwidth one SM can draw",
     {.sign = kPositive, .unit = "B/clk", .lo = 1, .hi = 1e6}},
    {"smem_latency_cycles",
     &SmSpec::smem_latency_cycles,
     "SM cycles",
     "load-to-use latency of a shared-memory load (a warp's dependent round trips through shared "
     "memory wait for it)",
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
    {"setmaxnreg_min_registers",
     &SmSpec::setmaxnreg_min_registers,
     "registers per thread",
     "the fewest registers a warpgroup may keep with `setmaxnreg.dec` (sm_90a); 0: no register "
     "reallocation (before Hopper)",
     {.sign = kNonNegative},
     "<= `setmaxnreg_max_registers`"},
    {"setmaxnreg_max_registers",
     &SmSpec::setmaxnreg_max_registers,
     "registers per thread",
     "the most a warpgroup may take with `setmaxnreg.inc`; what all warpgroups of a CTA hold "
     "together never exceeds what the CTA launched with (measured: the pool is the CTA's)",
     {.sign = kNonNegative}},
    {"setmaxnreg_step_registers",
     &SmSpec::setmaxnreg_step_registers,
     "registers per thread",
     "counts must be multiples of it",
     {.sign = kNonNegative}},
    {"setmaxnreg_cycles",
     &SmSpec::setmaxnreg_cycles,
     "SM cycles",
     "one `setmaxnreg` when the registers are free (an `.inc` waits for another warpgroup's "
     "`.dec`)",
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
}};

inline const std::array<Field<ComputeSpec>, 10> kComputeFields{{
    {"tensor_fp16_tflops",
     &ComputeSpec::tensor_fp16_tflops,
     "1e12 FLOP/s",
     "tensor cores, fp16 inputs, fp32 accumulate",
     {.sign = kPositive, .unit = "TFLOP/s", .lo = 1e-3, .hi = 1e6}},
    {"tensor_bf16_tflops",
     &ComputeSpec::tensor_bf16_tflops,
     "1e12 FLOP/s",
     "tensor cores, bf16 inputs, fp32 accumulate",
     {.sign = kPositive, .unit = "TFLOP/s", .lo = 1e-3, .hi = 1e6}},
    {"tensor_tf32_tflops",
     &ComputeSpec::tensor_tf32_tflops,
     "1e12 FLOP/s",
     "tensor cores, fp32 inputs run as tf32",
     {.sign = kPositive, .unit = "TFLOP/s", .lo = 1e-3, .hi = 1e6}},
    {"tensor_fp8_tflops",
     &ComputeSpec::tensor_fp8_tflops,
     "1e12 FLOP/s",
     "tensor cores, fp8 (e4m3) inputs, fp32 accumulate; 0 on a GPU without FP8 tensor cores "
     "(A100), where `--dtype fp8` is refused",
     {.sign = kNonNegative, .unit = "TFLOP/s", .lo = 1e-3, .hi = 1e6}},
    {"fp32_tflops",
     &ComputeSpec::fp32_tflops,
     "1e12 FLOP/s",
     "CUDA cores, FP32 (an FMA is 2 FLOPs)",
     {.sign = kPositive, .unit = "TFLOP/s", .lo = 1e-3, .hi = 1e6}},
    {"sfu_ops_per_clk_per_sm",
     &ComputeSpec::sfu_ops_per_clk_per_sm,
     "results/clock/SM",
     "special-function units: exp2, log2, rcp, rsqrt, sin, cos",
     {.sign = kPositive, .unit = "ops/clk", .lo = 1e-3, .hi = 1e6}},
    {"mma_sync_flops_per_clk_per_sm",
     &ComputeSpec::mma_sync_flops_per_clk_per_sm,
     "FLOP/clock/SM",
     "fp16 `mma.sync.m16n8k16` (fp32 accumulate) with the SM saturated: the rate of warp-level "
     "MMA kernels (FlashAttention-2, our CUDA kernels); on Hopper below the wgmma peak",
     {.sign = kPositive, .unit = "FLOP/clk", .lo = 1e-3, .hi = 1e7}},
    {"int32_ops_per_clk_per_sm",
     &ComputeSpec::int32_ops_per_clk_per_sm,
     "results/clock/SM",
     "32-bit integer add, compare, logic and select (the INT32 pipe: masks' index arithmetic)",
     {.sign = kPositive, .unit = "ops/clk", .lo = 1e-3, .hi = 1e6}},
    {"fp32_latency_cycles",
     &ComputeSpec::fp32_latency_cycles,
     "SM cycles",
     "issue-to-use latency of a dependent FP32 FMA or add",
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
    {"wgmma_latency_cycles",
     &ComputeSpec::wgmma_latency_cycles,
     "SM cycles",
     "issue of one wgmma m64n64k16 to its accumulators readable (`wgmma.wait_group 0`); 0 on a "
     "GPU without wgmma (Ampere)",
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
}};

inline const std::array<Field<L2Spec>, 7> kL2Fields{{
    {"size_bytes",
     &L2Spec::size_bytes,
     "bytes",
     "capacity",
     {.sign = kPositive,
      .max_why = "4 GiB, iosim's limit; GPUs have up to a few hundred MiB",
      .max = 4294967296.0},
     "each partition holds at least one region of 128 sectors"},
    {"line_bytes",
     &L2Spec::line_bytes,
     "bytes",
     "cache line (tag granularity)",
     {.sign = kPositive},
     "divides size_bytes"},
    {"sector_bytes",
     &L2Spec::sector_bytes,
     "bytes",
     "sector (transfer granularity)",
     {.sign = kPositive, .max_why = "iosim's limit", .max = 4096},
     "at least 16, divides line_bytes (the L2 model keeps state per sector)"},
    {"bandwidth_gbps",
     &L2Spec::bandwidth_gbps,
     "GB/s",
     "aggregate L2 read bandwidth, all SMs reading",
     {.sign = kPositive, .unit = "GB/s", .lo = 1, .hi = 1e7}},
    {"hit_latency_cycles",
     &L2Spec::hit_latency_cycles,
     "SM cycles",
     "load-to-use latency of an L2 hit",
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
    {"partitions",
     &L2Spec::partitions,
     "count",
     "L2 partitions, each caching data for the SMs attached to it (sim/memory/l2_system.hpp)",
     {.sign = kPositive, .max_why = "iosim's limit", .max = 64}},
    {"max_dirty_fraction",
     &L2Spec::max_dirty_fraction,
     "fraction",
     "share of the L2 that holds dirty data before write-back",
     {.fraction = Bounds::Interval::open_zero_one}},
}};

inline const std::array<Field<HbmSpec>, 4> kHbmFields{{
    {"capacity_bytes", &HbmSpec::capacity_bytes, "bytes", "device memory", {.sign = kPositive}},
    {"bandwidth_gbps",
     &HbmSpec::bandwidth_gbps,
     "GB/s",
     "peak bandwidth (datasheet)",
     {.sign = kPositive, .unit = "GB/s", .lo = 1, .hi = 1e7}},
    {"achievable_fraction",
     &HbmSpec::achievable_fraction,
     "fraction",
     "share of the peak a streaming copy reaches",
     {.fraction = Bounds::Interval::open_zero_one},
     "at least 1e-6"},
    {"latency_ns",
     &HbmSpec::latency_ns,
     "ns",
     "load-to-use latency of one load that misses L2",
     {.sign = kNonNegative, .max_why = "a millisecond", .max = 1e6}},
}};

inline const std::array<Field<LaunchSpec>, 1> kLaunchFields{{
    {"kernel_overhead_us",
     &LaunchSpec::kernel_overhead_us,
     "µs",
     "fixed cost of one kernel in a stream of kernels (launch to first CTA, plus drain)",
     {.sign = kNonNegative, .max_why = "a second", .max = 1e6}},
}};

inline const std::array<Field<CudaGraphSpec>, 2> kCudaGraphFields{{
    {"kernel_gap_us",
     &CudaGraphSpec::kernel_gap_us,
     "µs",
     "the gap a kernel with work adds after its predecessor's end, replayed from a CUDA graph",
     {.sign = kNonNegative, .max_why = "a second", .max = 1e6}},
    {"stream_kernel_gap_us",
     &CudaGraphSpec::stream_kernel_gap_us,
     "µs",
     "the same gap with the same kernels launched from a stream",
     {.sign = kNonNegative, .max_why = "a second", .max = 1e6}},
}};

inline const std::array<Field<ClockDomainSpec>, 1> kClockDomainFields{{
    {"l2_mhz",
     &ClockDomainSpec::l2_mhz,
     "MHz",
     "the L2's own clock: with this section, `l2.bandwidth_gbps` holds at any SM clock (the "
     "power limit lowers the SMs, not the L2); without it, the L2's bandwidth scales with the SM "
     "clock from the boost clock",
     {.sign = kPositive, .max_why = "100 GHz", .max = 1e5}},
}};

inline const std::array<Field<CtaDispatchSpec>, 1> kCtaDispatchFields{{
    {"slot_refill_cycles",
     &CtaDispatchSpec::slot_refill_cycles,
     "SM cycles",
     "from a CTA's end to the start of the next CTA in its slot (resources freed, the next CTA "
     "dispatched and set up)",
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
}};

inline const std::array<Field<ClusterSpec>, 3> kClusterFields{{
    {"sms_cluster_2",
     &ClusterSpec::sms_cluster_2,
     "SMs",
     "SMs that hold a kernel launched in thread-block clusters of 2 CTAs (one CTA per SM); "
     "capped at `sm.count`",
     {.sign = kPositive, .max_why = "iosim's limit on sm.count", .max = 4096}},
    {"sms_cluster_4",
     &ClusterSpec::sms_cluster_4,
     "SMs",
     "the same for clusters of 3 or 4 CTAs",
     {.sign = kPositive, .max_why = "iosim's limit on sm.count", .max = 4096}},
    {"sms_cluster_8",
     &ClusterSpec::sms_cluster_8,
     "SMs",
     "the same for clusters of 5 to 8 CTAs",
     {.sign = kPositive, .max_why = "iosim's limit on sm.count", .max = 4096}},
}};

inline const std::array<Field<PowerSpec>, 11> kPowerFields{{
    {"limit_w",
     &PowerSpec::limit_w,
     "W",
     "the board's power limit (enforced by lowering the SM clock)",
     {.sign = kPositive}},
    {"static_w",
     &PowerSpec::static_w,
     "W",
     "power that does not switch with the SM clock, at the temperature of sustained load at the "
     "limit",
     {.sign = kNonNegative},
     "below limit_w"},
    {"clock_w",
     &PowerSpec::clock_w,
     "W",
     "switching power of the running SMs at the boost clock, no work",
     {.sign = kNonNegative}},
    {"voltage_clock_slope",
     &PowerSpec::voltage_clock_slope,
     "1",
     "voltage against clock: V(f) / V(boost) = 1 - slope (1 - f / boost); switching energy per "
     "operation scales with its square",
     {.fraction = Bounds::Interval::zero_one}},
    {"tensor_fp16_pj_per_flop",
     &PowerSpec::tensor_fp16_pj_per_flop,
     "pJ/FLOP",
     "fp16/bf16/tf32 wgmma FLOP",
     {.sign = kNonNegative}},
    {"tensor_fp8_pj_per_flop",
     &PowerSpec::tensor_fp8_pj_per_flop,
     "pJ/FLOP",
     "fp8 wgmma FLOP",
     {.sign = kNonNegative}},
    {"tensor_mma_sync_pj_per_flop",
     &PowerSpec::tensor_mma_sync_pj_per_flop,
     "pJ/FLOP",
     "mma.sync FLOP (any 16-bit input), its ldmatrix operand loads included",
     {.sign = kNonNegative}},
    {"fp32_pj_per_flop",
     &PowerSpec::fp32_pj_per_flop,
     "pJ/FLOP",
     "CUDA-core FP32 (an FMA is 2 FLOPs)",
     {.sign = kNonNegative}},
    {"sfu_pj_per_op", &PowerSpec::sfu_pj_per_op, "pJ/op", "exp2/log2/rcp", {.sign = kNonNegative}},
    {"l2_pj_per_byte",
     &PowerSpec::l2_pj_per_byte,
     "pJ/byte",
     "SM <-> L2 bytes, hits and misses",
     {.sign = kNonNegative}},
    {"hbm_pj_per_byte",
     &PowerSpec::hbm_pj_per_byte,
     "pJ/byte",
     "L2 <-> HBM bytes, beyond their L2 energy; not scaled with the SM voltage",
     {.sign = kNonNegative}},
}};

inline const std::vector<std::string> kTopKeys{
    "name",   "description", "sm",         "compute",       "l2",           "hbm",
    "launch", "power",       "cuda_graph", "clock_domains", "cta_dispatch", "clusters"};
// Top-level sections a profile may leave out (all their keys then, or none), and what iosim does
// on a profile without one (`--set power.limit_w=...` on it is refused with that reason).
struct OptionalSection {
  const char* name;
  const char* without;
};
inline const std::array<OptionalSection, 5> kOptionalSections{{
    {"power", "no power limit is modelled on it"},
    {"cuda_graph", "a kernel replayed from a CUDA graph costs launch.kernel_overhead_us"},
    {"clock_domains", "the L2's bandwidth scales with the SM clock"},
    {"cta_dispatch", "a CTA starts the moment its slot frees"},
    {"clusters", "a clustered kernel's CTAs run on every SM"},
}};
inline const std::vector<std::string> kOptionalTopKeys = [] {
  std::vector<std::string> keys;
  for (const OptionalSection& s : kOptionalSections) keys.emplace_back(s.name);
  return keys;
}();
// The keys every profile has (messages about the top level name these).
inline const std::vector<std::string> kRequiredTopKeys{"name", "description", "sm",    "compute",
                                                       "l2",   "hbm",         "launch"};
inline const std::vector<std::string> kLeafKeys{"value", "source"};

// Calls f(section, fields, spec) for each required section of `p` (a HardwareProfile, const or
// not), in file order: its table and its struct.
template <typename Profile, typename F>
void for_each_section(Profile& p, F&& f) {
  f("sm", kSmFields, p.sm);
  f("compute", kComputeFields, p.compute);
  f("l2", kL2Fields, p.l2);
  f("hbm", kHbmFields, p.hbm);
  f("launch", kLaunchFields, p.launch);
}

// Calls f(section, fields) for each required section's table, in file order.
template <typename F>
void for_each_section(F&& f) {
  static const HardwareProfile kNone;
  for_each_section(
      kNone, [&](const char* section, const auto& fields, const auto&) { f(section, fields); });
}

// Calls f(section, fields, spec) for each optional section of `p` (a HardwareProfile, const or
// not): its table and its struct, whose `present` says whether the profile has it. The one list
// of optional sections: reading a profile, its fingerprint and the key lookups below all use it.
template <typename Profile, typename F>
void for_each_optional_section(Profile& p, F&& f) {
  f(kOptionalSections[0].name, kPowerFields, p.power);
  f(kOptionalSections[1].name, kCudaGraphFields, p.cuda_graph);
  f(kOptionalSections[2].name, kClockDomainFields, p.clock_domains);
  f(kOptionalSections[3].name, kCtaDispatchFields, p.cta_dispatch);
  f(kOptionalSections[4].name, kClusterFields, p.clusters);
}

// The same tables as for_each_section, with the optional sections too (key lookups:
// `--set power.limit_w=...`).
template <typename F>
void for_each_known_section(F&& f) {
  for_each_section(f);
  static const HardwareProfile kNone;
  for_each_optional_section(
      kNone, [&](const char* section, const auto& fields, const auto&) { f(section, fields); });
}

template <typename Spec, typename T>
constexpr bool integral_member(Sourced<T> Spec::*) {
  return std::is_integral_v<T>;
}

// Whether "section.key" holds an integer; nullopt for a key no profile has.
inline std::optional<bool> key_is_integer(const std::string& path) {
  std::optional<bool> out;
  for_each_known_section([&](const char* section, const auto& fields) {
    for (const auto& f : fields) {
      if (path == std::string(section) + "." + f.key) {
        out = std::visit([](auto m) { return integral_member(m); }, f.member);
      }
    }
  });
  return out;
}

template <typename Spec, std::size_t N>
std::vector<std::string> keys_of(const std::array<Field<Spec>, N>& fields) {
  std::vector<std::string> keys;
  for (const auto& f : fields) keys.emplace_back(f.key);
  return keys;
}

}  // namespace iosim::profile_yaml
