#pragma once
// The schema of a profile's YAML (sim/hardware/profile.hpp's structs): the keys of each section
// and the struct member each fills. Shared by the profile's reader (profile_reader.hpp), its
// loader (profile_loader.cpp: --set keys, profile_keys(), profile_template()).
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

template <typename Spec>
struct Field {
  const char* key;
  Member<Spec> member;
  Bounds bounds = {};
};

inline constexpr Bounds::Sign kPositive = Bounds::Sign::positive;
inline constexpr Bounds::Sign kNonNegative = Bounds::Sign::non_negative;

inline const std::array<Field<SmSpec>, 17> kSmFields{{
    {"count",
     &SmSpec::count,
     {.sign = kPositive,
      .max_why = "iosim's limit; GPUs have up to a few hundred SMs",
      .max = 4096}},
    {"boost_clock_mhz",
     &SmSpec::boost_clock_mhz,
     {.sign = kPositive, .max_why = "100 GHz", .max = 1e5}},
    {"base_clock_mhz", &SmSpec::base_clock_mhz, {.sign = kPositive}},
    {"smem_per_sm_bytes",
     &SmSpec::smem_per_sm_bytes,
     {.sign = kPositive, .max_why = "1 GiB", .max = 1 << 30}},
    {"smem_per_cta_max_bytes", &SmSpec::smem_per_cta_max_bytes, {.sign = kPositive}},
    {"smem_reserved_per_cta_bytes", &SmSpec::smem_reserved_per_cta_bytes, {.sign = kNonNegative}},
    {"registers_per_sm", &SmSpec::registers_per_sm, {.sign = kPositive}},
    {"max_registers_per_thread", &SmSpec::max_registers_per_thread, {.sign = kPositive}},
    {"max_threads_per_sm",
     &SmSpec::max_threads_per_sm,
     {.sign = kPositive, .max_why = "iosim's limit", .max = 1 << 16}},
    {"max_ctas_per_sm", &SmSpec::max_ctas_per_sm, {.sign = kPositive}},
    {"smem_bandwidth_bytes_per_clk",
     &SmSpec::smem_bandwidth_bytes_per_clk,
     {.sign = kPositive, .unit = "B/clk", .lo = 1, .hi = 1e6}},
    {"l2_to_sm_bytes_per_clk",
     &SmSpec::l2_to_sm_bytes_per_clk,
     {.sign = kPositive, .unit = "B/clk", .lo = 1, .hi = 1e6}},
    {"smem_latency_cycles",
     &SmSpec::smem_latency_cycles,
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
    {"setmaxnreg_min_registers", &SmSpec::setmaxnreg_min_registers, {.sign = kNonNegative}},
    {"setmaxnreg_max_registers", &SmSpec::setmaxnreg_max_registers, {.sign = kNonNegative}},
    {"setmaxnreg_step_registers", &SmSpec::setmaxnreg_step_registers, {.sign = kNonNegative}},
    {"setmaxnreg_cycles",
     &SmSpec::setmaxnreg_cycles,
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
}};

inline const std::array<Field<ComputeSpec>, 10> kComputeFields{{
    {"tensor_fp16_tflops",
     &ComputeSpec::tensor_fp16_tflops,
     {.sign = kPositive, .unit = "TFLOP/s", .lo = 1e-3, .hi = 1e6}},
    {"tensor_bf16_tflops",
     &ComputeSpec::tensor_bf16_tflops,
     {.sign = kPositive, .unit = "TFLOP/s", .lo = 1e-3, .hi = 1e6}},
    {"tensor_tf32_tflops",
     &ComputeSpec::tensor_tf32_tflops,
     {.sign = kPositive, .unit = "TFLOP/s", .lo = 1e-3, .hi = 1e6}},
    {"tensor_fp8_tflops",
     &ComputeSpec::tensor_fp8_tflops,
     {.sign = kNonNegative, .unit = "TFLOP/s", .lo = 1e-3, .hi = 1e6}},
    {"fp32_tflops",
     &ComputeSpec::fp32_tflops,
     {.sign = kPositive, .unit = "TFLOP/s", .lo = 1e-3, .hi = 1e6}},
    {"sfu_ops_per_clk_per_sm",
     &ComputeSpec::sfu_ops_per_clk_per_sm,
     {.sign = kPositive, .unit = "ops/clk", .lo = 1e-3, .hi = 1e6}},
    {"mma_sync_flops_per_clk_per_sm",
     &ComputeSpec::mma_sync_flops_per_clk_per_sm,
     {.sign = kPositive, .unit = "FLOP/clk", .lo = 1e-3, .hi = 1e7}},
    {"int32_ops_per_clk_per_sm",
     &ComputeSpec::int32_ops_per_clk_per_sm,
     {.sign = kPositive, .unit = "ops/clk", .lo = 1e-3, .hi = 1e6}},
    {"fp32_latency_cycles",
     &ComputeSpec::fp32_latency_cycles,
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
    {"wgmma_latency_cycles",
     &ComputeSpec::wgmma_latency_cycles,
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
}};

inline const std::array<Field<L2Spec>, 7> kL2Fields{{
    {"size_bytes",
     &L2Spec::size_bytes,
     {.sign = kPositive,
      .max_why = "4 GiB, iosim's limit; GPUs have up to a few hundred MiB",
      .max = 4294967296.0}},
    {"line_bytes", &L2Spec::line_bytes, {.sign = kPositive}},
    {"sector_bytes",
     &L2Spec::sector_bytes,
     {.sign = kPositive, .max_why = "iosim's limit", .max = 4096}},
    {"bandwidth_gbps",
     &L2Spec::bandwidth_gbps,
     {.sign = kPositive, .unit = "GB/s", .lo = 1, .hi = 1e7}},
    {"hit_latency_cycles",
     &L2Spec::hit_latency_cycles,
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
    {"partitions", &L2Spec::partitions, {.sign = kPositive, .max_why = "iosim's limit", .max = 64}},
    {"max_dirty_fraction",
     &L2Spec::max_dirty_fraction,
     {.fraction = Bounds::Interval::open_zero_one}},
}};

inline const std::array<Field<HbmSpec>, 4> kHbmFields{{
    {"capacity_bytes", &HbmSpec::capacity_bytes, {.sign = kPositive}},
    {"bandwidth_gbps",
     &HbmSpec::bandwidth_gbps,
     {.sign = kPositive, .unit = "GB/s", .lo = 1, .hi = 1e7}},
    {"achievable_fraction",
     &HbmSpec::achievable_fraction,
     {.fraction = Bounds::Interval::open_zero_one}},
    {"latency_ns",
     &HbmSpec::latency_ns,
     {.sign = kNonNegative, .max_why = "a millisecond", .max = 1e6}},
}};

inline const std::array<Field<LaunchSpec>, 1> kLaunchFields{{
    {"kernel_overhead_us",
     &LaunchSpec::kernel_overhead_us,
     {.sign = kNonNegative, .max_why = "a second", .max = 1e6}},
}};

inline const std::array<Field<CudaGraphSpec>, 2> kCudaGraphFields{{
    {"kernel_gap_us",
     &CudaGraphSpec::kernel_gap_us,
     {.sign = kNonNegative, .max_why = "a second", .max = 1e6}},
    {"stream_kernel_gap_us",
     &CudaGraphSpec::stream_kernel_gap_us,
     {.sign = kNonNegative, .max_why = "a second", .max = 1e6}},
}};

inline const std::array<Field<ClockDomainSpec>, 1> kClockDomainFields{{
    {"l2_mhz", &ClockDomainSpec::l2_mhz, {.sign = kPositive, .max_why = "100 GHz", .max = 1e5}},
}};

inline const std::array<Field<CtaDispatchSpec>, 1> kCtaDispatchFields{{
    {"slot_refill_cycles",
     &CtaDispatchSpec::slot_refill_cycles,
     {.sign = kNonNegative, .max_why = "a million cycles", .max = 1e6}},
}};

inline const std::array<Field<ClusterSpec>, 3> kClusterFields{{
    {"sms_cluster_2",
     &ClusterSpec::sms_cluster_2,
     {.sign = kPositive, .max_why = "iosim's limit on sm.count", .max = 4096}},
    {"sms_cluster_4",
     &ClusterSpec::sms_cluster_4,
     {.sign = kPositive, .max_why = "iosim's limit on sm.count", .max = 4096}},
    {"sms_cluster_8",
     &ClusterSpec::sms_cluster_8,
     {.sign = kPositive, .max_why = "iosim's limit on sm.count", .max = 4096}},
}};

inline const std::array<Field<PowerSpec>, 11> kPowerFields{{
    {"limit_w", &PowerSpec::limit_w, {.sign = kPositive}},
    {"static_w", &PowerSpec::static_w, {.sign = kNonNegative}},
    {"clock_w", &PowerSpec::clock_w, {.sign = kNonNegative}},
    {"voltage_clock_slope",
     &PowerSpec::voltage_clock_slope,
     {.fraction = Bounds::Interval::zero_one}},
    {"tensor_fp16_pj_per_flop", &PowerSpec::tensor_fp16_pj_per_flop, {.sign = kNonNegative}},
    {"tensor_fp8_pj_per_flop", &PowerSpec::tensor_fp8_pj_per_flop, {.sign = kNonNegative}},
    {"tensor_mma_sync_pj_per_flop",
     &PowerSpec::tensor_mma_sync_pj_per_flop,
     {.sign = kNonNegative}},
    {"fp32_pj_per_flop", &PowerSpec::fp32_pj_per_flop, {.sign = kNonNegative}},
    {"sfu_pj_per_op", &PowerSpec::sfu_pj_per_op, {.sign = kNonNegative}},
    {"l2_pj_per_byte", &PowerSpec::l2_pj_per_byte, {.sign = kNonNegative}},
    {"hbm_pj_per_byte", &PowerSpec::hbm_pj_per_byte, {.sign = kNonNegative}},
}};

inline const std::vector<std::string> kTopKeys{
    "name",   "description", "sm",         "compute",       "l2",           "hbm",
    "launch", "power",       "cuda_graph", "clock_domains", "cta_dispatch", "clusters"};
// Top-level sections a profile may leave out (all their keys then, or none).
inline const std::vector<std::string> kOptionalTopKeys{"power", "cuda_graph", "clock_domains",
                                                       "cta_dispatch", "clusters"};
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
  f("power", kPowerFields, p.power);
  f("cuda_graph", kCudaGraphFields, p.cuda_graph);
  f("clock_domains", kClockDomainFields, p.clock_domains);
  f("cta_dispatch", kCtaDispatchFields, p.cta_dispatch);
  f("clusters", kClusterFields, p.clusters);
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
