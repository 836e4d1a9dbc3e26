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

template <typename Spec>
struct Field {
  const char* key;
  Member<Spec> member;
};

inline const std::array<Field<SmSpec>, 17> kSmFields{{
    {"count", &SmSpec::count},
    {"boost_clock_mhz", &SmSpec::boost_clock_mhz},
    {"base_clock_mhz", &SmSpec::base_clock_mhz},
    {"smem_per_sm_bytes", &SmSpec::smem_per_sm_bytes},
    {"smem_per_cta_max_bytes", &SmSpec::smem_per_cta_max_bytes},
    {"smem_reserved_per_cta_bytes", &SmSpec::smem_reserved_per_cta_bytes},
    {"registers_per_sm", &SmSpec::registers_per_sm},
    {"max_registers_per_thread", &SmSpec::max_registers_per_thread},
    {"max_threads_per_sm", &SmSpec::max_threads_per_sm},
    {"max_ctas_per_sm", &SmSpec::max_ctas_per_sm},
    {"smem_bandwidth_bytes_per_clk", &SmSpec::smem_bandwidth_bytes_per_clk},
    {"l2_to_sm_bytes_per_clk", &SmSpec::l2_to_sm_bytes_per_clk},
    {"smem_latency_cycles", &SmSpec::smem_latency_cycles},
    {"setmaxnreg_min_registers", &SmSpec::setmaxnreg_min_registers},
    {"setmaxnreg_max_registers", &SmSpec::setmaxnreg_max_registers},
    {"setmaxnreg_step_registers", &SmSpec::setmaxnreg_step_registers},
    {"setmaxnreg_cycles", &SmSpec::setmaxnreg_cycles},
}};

inline const std::array<Field<ComputeSpec>, 10> kComputeFields{{
    {"tensor_fp16_tflops", &ComputeSpec::tensor_fp16_tflops},
    {"tensor_bf16_tflops", &ComputeSpec::tensor_bf16_tflops},
    {"tensor_tf32_tflops", &ComputeSpec::tensor_tf32_tflops},
    {"tensor_fp8_tflops", &ComputeSpec::tensor_fp8_tflops},
    {"fp32_tflops", &ComputeSpec::fp32_tflops},
    {"sfu_ops_per_clk_per_sm", &ComputeSpec::sfu_ops_per_clk_per_sm},
    {"mma_sync_flops_per_clk_per_sm", &ComputeSpec::mma_sync_flops_per_clk_per_sm},
    {"int32_ops_per_clk_per_sm", &ComputeSpec::int32_ops_per_clk_per_sm},
    {"fp32_latency_cycles", &ComputeSpec::fp32_latency_cycles},
    {"wgmma_latency_cycles", &ComputeSpec::wgmma_latency_cycles},
}};

inline const std::array<Field<L2Spec>, 7> kL2Fields{{
    {"size_bytes", &L2Spec::size_bytes},
    {"line_bytes", &L2Spec::line_bytes},
    {"sector_bytes", &L2Spec::sector_bytes},
    {"bandwidth_gbps", &L2Spec::bandwidth_gbps},
    {"hit_latency_cycles", &L2Spec::hit_latency_cycles},
    {"partitions", &L2Spec::partitions},
    {"max_dirty_fraction", &L2Spec::max_dirty_fraction},
}};

inline const std::array<Field<HbmSpec>, 4> kHbmFields{{
    {"capacity_bytes", &HbmSpec::capacity_bytes},
    {"bandwidth_gbps", &HbmSpec::bandwidth_gbps},
    {"achievable_fraction", &HbmSpec::achievable_fraction},
    {"latency_ns", &HbmSpec::latency_ns},
}};

inline const std::array<Field<LaunchSpec>, 1> kLaunchFields{{
    {"kernel_overhead_us", &LaunchSpec::kernel_overhead_us},
}};

inline const std::array<Field<CudaGraphSpec>, 2> kCudaGraphFields{{
    {"kernel_gap_us", &CudaGraphSpec::kernel_gap_us},
    {"stream_kernel_gap_us", &CudaGraphSpec::stream_kernel_gap_us},
}};

inline const std::array<Field<ClockDomainSpec>, 1> kClockDomainFields{{
    {"l2_mhz", &ClockDomainSpec::l2_mhz},
}};

inline const std::array<Field<CtaDispatchSpec>, 1> kCtaDispatchFields{{
    {"slot_refill_cycles", &CtaDispatchSpec::slot_refill_cycles},
}};

inline const std::array<Field<ClusterSpec>, 3> kClusterFields{{
    {"sms_cluster_2", &ClusterSpec::sms_cluster_2},
    {"sms_cluster_4", &ClusterSpec::sms_cluster_4},
    {"sms_cluster_8", &ClusterSpec::sms_cluster_8},
}};

inline const std::array<Field<PowerSpec>, 11> kPowerFields{{
    {"limit_w", &PowerSpec::limit_w},
    {"static_w", &PowerSpec::static_w},
    {"clock_w", &PowerSpec::clock_w},
    {"voltage_clock_slope", &PowerSpec::voltage_clock_slope},
    {"tensor_fp16_pj_per_flop", &PowerSpec::tensor_fp16_pj_per_flop},
    {"tensor_fp8_pj_per_flop", &PowerSpec::tensor_fp8_pj_per_flop},
    {"tensor_mma_sync_pj_per_flop", &PowerSpec::tensor_mma_sync_pj_per_flop},
    {"fp32_pj_per_flop", &PowerSpec::fp32_pj_per_flop},
    {"sfu_pj_per_op", &PowerSpec::sfu_pj_per_op},
    {"l2_pj_per_byte", &PowerSpec::l2_pj_per_byte},
    {"hbm_pj_per_byte", &PowerSpec::hbm_pj_per_byte},
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

// Calls f(section, fields) for each section's table, in file order.
template <typename F>
void for_each_section(F&& f) {
  f("sm", kSmFields);
  f("compute", kComputeFields);
  f("l2", kL2Fields);
  f("hbm", kHbmFields);
  f("launch", kLaunchFields);
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
