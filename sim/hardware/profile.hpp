#pragma once
// A GPU hardware profile: the typed form of one YAML file in hwprofiles/. The loader
// (profile_loader.cpp) is the only code that sees YAML; everything else reads these structs.
//
// Every number in a profile file carries its source, so each field below is a `Sourced<T>`:
// the value and the citation (whitepaper table, datasheet, cudaGetDeviceProperties reading,
// or a measurement on the lent GPU).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/schedule/dtype.hpp"

namespace iosim {

/// A profile value together with where it comes from.
template <typename T>
struct Sourced {
  T value{};
  std::string source;
};

/// Streaming multiprocessor resources (per SM unless the name says otherwise).
struct SmSpec {
  Sourced<int> count;                       // SMs on the chip
  Sourced<double> boost_clock_mhz;          // max SM clock; peak rates below are quoted at it
  Sourced<double> base_clock_mhz;           // clock Nsight Compute locks to by default
  Sourced<std::int64_t> smem_per_sm_bytes;  // shared memory per SM (configurable carve-out max)
  Sourced<std::int64_t> smem_per_cta_max_bytes;  // opt-in maximum dynamic shared memory per CTA
  Sourced<std::int64_t> smem_reserved_per_cta_bytes;  // system-reserved shared memory per CTA
  Sourced<int> registers_per_sm;                      // 32-bit registers
  Sourced<int> max_registers_per_thread;
  Sourced<int> max_threads_per_sm;
  Sourced<int> max_ctas_per_sm;
  Sourced<double> smem_bandwidth_bytes_per_clk;  // shared-memory bandwidth per SM
  Sourced<double> l2_to_sm_bytes_per_clk;        // most L2->SM bandwidth one SM can draw
  Sourced<double> smem_latency_cycles;           // load-to-use latency of a shared-memory load
  // Register reallocation between a CTA's warpgroups (setmaxnreg, sm_90a): the per-thread counts
  // a warpgroup may set (a multiple of the step, from min to max), drawn from and returned to the
  // registers the CTA launched with (no more); 0 where there is none (before Hopper).
  Sourced<int> setmaxnreg_min_registers;
  Sourced<int> setmaxnreg_max_registers;
  Sourced<int> setmaxnreg_step_registers;
  Sourced<double> setmaxnreg_cycles;  // one setmaxnreg when the registers are free
};

/// Arithmetic throughput at the boost clock, dense (no sparsity).
struct ComputeSpec {
  Sourced<double> tensor_fp16_tflops;  // fp16 inputs, fp32 accumulate
  Sourced<double> tensor_bf16_tflops;  // bf16 inputs, fp32 accumulate
  Sourced<double> tensor_tf32_tflops;  // fp32 inputs run as tf32 on tensor cores
  // fp8 (e4m3) inputs, fp32 accumulate; 0 on a GPU without FP8 tensor cores (Ampere), where
  // --dtype fp8 is refused.
  Sourced<double> tensor_fp8_tflops;
  Sourced<double> fp32_tflops;             // CUDA-core FP32 (FMA = 2 FLOPs)
  Sourced<double> sfu_ops_per_clk_per_sm;  // exp2/log2/rcp on the special-function units
  // fp16 mma.sync (m16n8k16, fp32 accumulate) FLOPs per SM clock with the SM saturated. On
  // Hopper this warp-level instruction reaches only part of the wgmma peak above; on Ampere it
  // is the tensor-core instruction the peak is quoted for.
  Sourced<double> mma_sync_flops_per_clk_per_sm;
  Sourced<double> int32_ops_per_clk_per_sm;  // 32-bit integer add, compare, logic, select
  Sourced<double> fp32_latency_cycles;       // issue-to-use latency of a dependent FP32 FMA/add
  // Issue of one wgmma m64n64k16 to its accumulators readable (wgmma.wait_group 0); 0 on a GPU
  // without wgmma (Ampere).
  Sourced<double> wgmma_latency_cycles;
};

/// The last-level cache shared by all SMs.
struct L2Spec {
  Sourced<std::int64_t> size_bytes;
  Sourced<int> line_bytes;
  Sourced<int> sector_bytes;
  Sourced<double> bandwidth_gbps;  // aggregate L2 read bandwidth (GB/s = 1e9 B/s)
  Sourced<double> hit_latency_cycles;
  Sourced<int> partitions;             // L2 partitions, each caching for the SMs attached to it
  Sourced<double> max_dirty_fraction;  // share of the L2 that holds dirty data before write-back
};

/// Device memory.
struct HbmSpec {
  Sourced<std::int64_t> capacity_bytes;
  Sourced<double> bandwidth_gbps;       // peak (datasheet)
  Sourced<double> achievable_fraction;  // share of peak a streaming kernel reaches (measured)
  Sourced<double> latency_ns;           // load-to-use latency of a DRAM miss
};

/// Fixed per-launch costs.
struct LaunchSpec {
  Sourced<double> kernel_overhead_us;  // launch-to-first-CTA plus drain, per kernel
};

/// Kernels replayed from a CUDA graph (serving engines replay theirs; `iosim layer` times its ops
/// so): the gap a kernel with work adds between its predecessor's end and its own, replayed from
/// a graph and launched from a stream, measured with the same kernels. A graph changes only that
/// gap (the GPU front end has the next node before the previous ends): a replayed kernel costs
/// launch.kernel_overhead_us less the difference. Optional: without it, graph replays cost
/// launch.kernel_overhead_us per kernel.
struct CudaGraphSpec {
  bool present = false;
  Sourced<double> kernel_gap_us;
  Sourced<double> stream_kernel_gap_us;
};

/// Clocks of units outside the SMs. Optional: without a `clock_domains:` section the L2 is taken
/// to run in the SM clock domain (its bandwidth scales with the SM clock), as on a GPU where no one
/// measured it apart. Nsight Compute's lts__cycles_elapsed.avg.per_second on the H100 and H200
/// reads 1.68-1.71 GHz whatever the SM clock (1.50-1.98 GHz: cuda_validate/measurements/
/// h200-sxm-141gb/clock_domains_2026-11-28/): their L2 keeps its bandwidth when the power limit
/// lowers the SM clock.
struct ClockDomainSpec {
  bool present = false;
  Sourced<double> l2_mhz;  // the L2's own clock; l2.bandwidth_gbps holds at any SM clock
};

/// Board power as a function of the SM clock and the work per second
/// (sim/engine/power_model.hpp): the clock a run is timed at, when none is given, is the highest
/// up to the boost clock whose power stays within the limit. Optional: a profile without a `power:`
/// section has no cap.
struct PowerSpec {
  bool present = false;
  Sourced<double> limit_w;   // the board's power limit (enforced by lowering the SM clock)
  Sourced<double> static_w;  // power that does not switch with the SM clock, at the temperature
                             // of sustained load at the limit
  Sourced<double> clock_w;   // switching power of the running SMs at the boost clock, no work
  // Voltage against clock: V(f) / V(boost) = 1 - slope (1 - f / boost); switching energy per
  // operation scales with its square.
  Sourced<double> voltage_clock_slope;
  Sourced<double> tensor_fp16_pj_per_flop;  // fp16/bf16/tf32 wgmma FLOP
  Sourced<double> tensor_fp8_pj_per_flop;
  // mma.sync FLOP (any 16-bit input), its ldmatrix operand loads included
  Sourced<double> tensor_mma_sync_pj_per_flop;
  Sourced<double> fp32_pj_per_flop;  // CUDA-core FP32 (an FMA is 2 FLOPs)
  Sourced<double> sfu_pj_per_op;     // exp2/log2/rcp
  Sourced<double> l2_pj_per_byte;    // SM <-> L2 bytes, hits and misses
  Sourced<double> hbm_pj_per_byte;   // L2 <-> HBM bytes, beyond their L2 energy; not scaled with
                                     // the SM voltage
};

/// What a slot spends between one CTA and the next of a kernel that launches a CTA per tile
/// (KernelSpec::persistent: not charged between a persistent kernel's tiles). Measured on the H200
/// with empty and one-row kernels (cuda_validate/microbench/cta_dispatch.cu,
/// cuda_validate/measurements/h200-sxm-141gb/cta_dispatch_2026-11-28/). Optional: without a
/// `cta_dispatch:` section a slot's next CTA starts the moment the last one ends.
/// The same measurement found an SM starting at most one CTA every ~160 cycles; that is not
/// modelled: it staggers the first wave's CTAs on an SM, and the engine's time for a
/// bandwidth-bound grid moves by up to 11% with that stagger (CALIBRATION.md, "CTA refill").
struct CtaDispatchSpec {
  bool present = false;
  Sourced<double> slot_refill_cycles;  // a slot's last CTA's end to its next CTA's start
};

/// Where a kernel launched in thread-block clusters can run. A cluster's CTAs must all be resident
/// at once within one GPC, so a GPC whose SM count is not a multiple of the cluster size leaves
/// SMs empty: on the H200, at one CTA per SM, 66 clusters of 2 (132 SMs), 30 of 4 and 15 of 8
/// (120 SMs) are active at once (Nsight Compute's launch__cluster_max_active for cuBLAS's nvjet
/// GEMMs, cuda_validate/measurements/h200-sxm-141gb/layer_*/gemm_ncu.csv.gz). Optional: without a
/// `clusters:` section every SM holds a clustered kernel's CTAs.
struct ClusterSpec {
  bool present = false;
  Sourced<double> sms_cluster_2;  // SMs holding CTAs of a kernel in clusters of 2 CTAs
  Sourced<double> sms_cluster_4;  // ... of 3 or 4 CTAs
  Sourced<double> sms_cluster_8;  // ... of 5 to 8 CTAs

  /// SMs that hold a kernel's CTAs when it runs in clusters of `ctas` (1: not clustered), of
  /// `sm_count`.
  int sms_for(int ctas, int sm_count) const {
    if (!present || ctas <= 1) return sm_count;
    const double sms = ctas <= 2   ? sms_cluster_2.value
                       : ctas <= 4 ? sms_cluster_4.value
                                   : sms_cluster_8.value;
    return std::clamp(static_cast<int>(sms), 1, sm_count);
  }
};

/// One GPU as iosim models it.
struct HardwareProfile {
  std::string name;         // file stem, e.g. "h100-sxm5-80gb"
  std::string description;  // human name, e.g. "NVIDIA H100 SXM5 80GB"
  std::filesystem::path source_file;
  SmSpec sm;
  ComputeSpec compute;
  L2Spec l2;
  HbmSpec hbm;
  LaunchSpec launch;
  PowerSpec power;                // power.present false: no power limit is modelled
  CudaGraphSpec cuda_graph;       // cuda_graph.present false: no graph replay figure
  ClockDomainSpec clock_domains;  // clock_domains.present false: the L2 in the SM clock domain
  CtaDispatchSpec cta_dispatch;   // cta_dispatch.present false: CTAs start without a gap
  ClusterSpec clusters;           // clusters.present false: clusters place on every SM

  /// The L2's bandwidth (bytes/s) while the SMs run at `sm_clock_mhz`: l2.bandwidth_gbps in its
  /// own clock domain, else scaled from the boost clock with the SM clock.
  double l2_bytes_per_s(double sm_clock_mhz) const {
    const double bps = l2.bandwidth_gbps.value * 1e9;
    return clock_domains.present ? bps : bps * sm_clock_mhz / sm.boost_clock_mhz.value;
  }

  /// Peak tensor-core FLOP/s for operands of `dtype` at the boost clock.
  double tensor_flops_per_s(Dtype dtype) const;
  /// Peak CUDA-core FP32 FLOP/s at the boost clock.
  double fp32_flops_per_s() const { return compute.fp32_tflops.value * 1e12; }
};

/// Names of the built-in profiles (file stems), sorted: those of hwprofiles/ embedded at build
/// time, or the YAML files of $IOSIM_PROFILE_DIR when it is set.
std::vector<std::string> builtin_profile_names();

/// $IOSIM_PROFILE_DIR, the directory that replaces the embedded profiles; empty when unset.
std::filesystem::path builtin_profile_dir();

/// The YAML text of a built-in profile. Throws ConfigError for an unknown name.
std::string builtin_profile_text(const std::string& name);

/// Loads a built-in profile by name, or a YAML file by path. Throws ConfigError naming the
/// file, the key path and the problem (unknown key with a "did you mean", missing key, bad value).
HardwareProfile load_profile(const std::string& name_or_path);

/// Parses and validates YAML text; `origin` names it in messages. Throws ConfigError.
HardwareProfile parse_profile(const std::string& yaml_text, const std::string& origin);

/// Every value of the profile (every section's, and which optional sections it has), as text:
/// two profiles with equal fingerprints time every schedule alike, whatever their names or
/// sources. A key for memos of answers that depend on the machine.
std::string profile_fingerprint(const HardwareProfile& p);

}  // namespace iosim
