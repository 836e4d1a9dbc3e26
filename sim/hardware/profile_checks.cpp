// The checks of a profile's values, once every key reads: each number in the range a real GPU
// can have, and the numbers consistent with each other.
#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "sim/hardware/profile.hpp"
#include "sim/hardware/profile_reader.hpp"
#include "sim/memory/l2_cache.hpp"

namespace iosim {

void profile_yaml::validate(const HardwareProfile& p, Reader& reader) {
  const auto positive = [&](const std::string& path, auto v) {
    if (!(v > 0)) reader.note_at(path, fmt::format("{} = {} must be > 0", path, v));
  };
  const auto non_negative = [&](const std::string& path, auto v) {
    if (v < 0) reader.note_at(path, fmt::format("{} = {} must be >= 0", path, v));
  };
  const SmSpec& sm = p.sm;
  positive("sm.count", sm.count.value);
  positive("sm.boost_clock_mhz", sm.boost_clock_mhz.value);
  positive("sm.base_clock_mhz", sm.base_clock_mhz.value);
  positive("sm.smem_per_sm_bytes", sm.smem_per_sm_bytes.value);
  positive("sm.smem_per_cta_max_bytes", sm.smem_per_cta_max_bytes.value);
  non_negative("sm.smem_reserved_per_cta_bytes", sm.smem_reserved_per_cta_bytes.value);
  positive("sm.registers_per_sm", sm.registers_per_sm.value);
  positive("sm.max_registers_per_thread", sm.max_registers_per_thread.value);
  positive("sm.max_threads_per_sm", sm.max_threads_per_sm.value);
  positive("sm.max_ctas_per_sm", sm.max_ctas_per_sm.value);
  positive("sm.smem_bandwidth_bytes_per_clk", sm.smem_bandwidth_bytes_per_clk.value);
  positive("sm.l2_to_sm_bytes_per_clk", sm.l2_to_sm_bytes_per_clk.value);
  non_negative("sm.smem_latency_cycles", sm.smem_latency_cycles.value);
  // 0: no register reallocation (before Hopper).
  non_negative("sm.setmaxnreg_min_registers", sm.setmaxnreg_min_registers.value);
  non_negative("sm.setmaxnreg_max_registers", sm.setmaxnreg_max_registers.value);
  non_negative("sm.setmaxnreg_step_registers", sm.setmaxnreg_step_registers.value);
  non_negative("sm.setmaxnreg_cycles", sm.setmaxnreg_cycles.value);

  const ComputeSpec& c = p.compute;
  positive("compute.tensor_fp16_tflops", c.tensor_fp16_tflops.value);
  positive("compute.tensor_bf16_tflops", c.tensor_bf16_tflops.value);
  positive("compute.tensor_tf32_tflops", c.tensor_tf32_tflops.value);
  positive("compute.fp32_tflops", c.fp32_tflops.value);
  positive("compute.sfu_ops_per_clk_per_sm", c.sfu_ops_per_clk_per_sm.value);
  positive("compute.mma_sync_flops_per_clk_per_sm", c.mma_sync_flops_per_clk_per_sm.value);
  positive("compute.int32_ops_per_clk_per_sm", c.int32_ops_per_clk_per_sm.value);
  non_negative("compute.fp32_latency_cycles", c.fp32_latency_cycles.value);
  non_negative("compute.wgmma_latency_cycles", c.wgmma_latency_cycles.value);
  non_negative("compute.tensor_fp8_tflops", c.tensor_fp8_tflops.value);  // 0: no FP8 tensor cores

  const L2Spec& l2 = p.l2;
  positive("l2.size_bytes", l2.size_bytes.value);
  positive("l2.line_bytes", l2.line_bytes.value);
  positive("l2.sector_bytes", l2.sector_bytes.value);
  positive("l2.bandwidth_gbps", l2.bandwidth_gbps.value);
  non_negative("l2.hit_latency_cycles", l2.hit_latency_cycles.value);
  positive("l2.partitions", l2.partitions.value);

  const HbmSpec& hbm = p.hbm;
  positive("hbm.capacity_bytes", hbm.capacity_bytes.value);
  positive("hbm.bandwidth_gbps", hbm.bandwidth_gbps.value);
  non_negative("hbm.latency_ns", hbm.latency_ns.value);
  non_negative("launch.kernel_overhead_us", p.launch.kernel_overhead_us.value);

  // Upper limits: beyond them a profile describes no GPU, and the model's per-SM and per-set
  // arrays would not fit in memory (sm.count = 2e9 ended in std::bad_alloc).
  const auto at_most = [&](const std::string& path, auto v, auto limit, const char* why) {
    if (v > limit) {
      reader.note_at(path, fmt::format("{} = {} exceeds {} ({})", path, v, limit, why));
    }
  };
  at_most("sm.count", sm.count.value, 4096, "iosim's limit; GPUs have up to a few hundred SMs");
  at_most("sm.boost_clock_mhz", sm.boost_clock_mhz.value, 1e5, "100 GHz");
  at_most("sm.max_threads_per_sm", sm.max_threads_per_sm.value, 1 << 16, "iosim's limit");
  at_most("sm.smem_per_sm_bytes", sm.smem_per_sm_bytes.value, std::int64_t{1} << 30, "1 GiB");
  at_most("l2.size_bytes", l2.size_bytes.value, std::int64_t{1} << 32,
          "4 GiB, iosim's limit; GPUs have up to a few hundred MiB");
  at_most("l2.partitions", l2.partitions.value, 64, "iosim's limit");
  at_most("l2.sector_bytes", l2.sector_bytes.value, 4096, "iosim's limit");
  // Rates and latencies within a million times of today's GPUs either way: a rate of 1e-300
  // (--set hbm.bandwidth_gbps=1e-300) made times of 1e295 s that the sweep wrote and `report`
  // then refused in iosim's own file (it takes times below 1e30 s), and a latency of 1e300 cycles
  // made them infinite.
  const auto within = [&](const std::string& path, double v, double lo, double hi,
                          const char* unit) {
    if (v > 0 && (v < lo || v > hi)) {
      reader.note_at(path, fmt::format("{} = {} is outside [{}, {}] {} (no GPU is that far from "
                                       "today's)",
                                       path, v, lo, hi, unit));
    }
  };
  within("sm.smem_bandwidth_bytes_per_clk", sm.smem_bandwidth_bytes_per_clk.value, 1, 1e6, "B/clk");
  within("sm.l2_to_sm_bytes_per_clk", sm.l2_to_sm_bytes_per_clk.value, 1, 1e6, "B/clk");
  within("compute.tensor_fp16_tflops", c.tensor_fp16_tflops.value, 1e-3, 1e6, "TFLOP/s");
  within("compute.tensor_bf16_tflops", c.tensor_bf16_tflops.value, 1e-3, 1e6, "TFLOP/s");
  within("compute.tensor_tf32_tflops", c.tensor_tf32_tflops.value, 1e-3, 1e6, "TFLOP/s");
  within("compute.tensor_fp8_tflops", c.tensor_fp8_tflops.value, 1e-3, 1e6, "TFLOP/s");
  within("compute.fp32_tflops", c.fp32_tflops.value, 1e-3, 1e6, "TFLOP/s");
  within("compute.sfu_ops_per_clk_per_sm", c.sfu_ops_per_clk_per_sm.value, 1e-3, 1e6, "ops/clk");
  within("compute.mma_sync_flops_per_clk_per_sm", c.mma_sync_flops_per_clk_per_sm.value, 1e-3, 1e7,
         "FLOP/clk");
  within("compute.int32_ops_per_clk_per_sm", c.int32_ops_per_clk_per_sm.value, 1e-3, 1e6,
         "ops/clk");
  within("l2.bandwidth_gbps", l2.bandwidth_gbps.value, 1, 1e7, "GB/s");
  within("hbm.bandwidth_gbps", hbm.bandwidth_gbps.value, 1, 1e7, "GB/s");
  at_most("sm.smem_latency_cycles", sm.smem_latency_cycles.value, 1e6, "a million cycles");
  at_most("sm.setmaxnreg_cycles", sm.setmaxnreg_cycles.value, 1e6, "a million cycles");
  at_most("compute.fp32_latency_cycles", c.fp32_latency_cycles.value, 1e6, "a million cycles");
  at_most("compute.wgmma_latency_cycles", c.wgmma_latency_cycles.value, 1e6, "a million cycles");
  at_most("l2.hit_latency_cycles", l2.hit_latency_cycles.value, 1e6, "a million cycles");
  at_most("hbm.latency_ns", hbm.latency_ns.value, 1e6, "a millisecond");
  at_most("launch.kernel_overhead_us", p.launch.kernel_overhead_us.value, 1e6, "a second");
  if (p.cuda_graph.present) {
    non_negative("cuda_graph.kernel_gap_us", p.cuda_graph.kernel_gap_us.value);
    at_most("cuda_graph.kernel_gap_us", p.cuda_graph.kernel_gap_us.value, 1e6, "a second");
    non_negative("cuda_graph.stream_kernel_gap_us", p.cuda_graph.stream_kernel_gap_us.value);
    at_most("cuda_graph.stream_kernel_gap_us", p.cuda_graph.stream_kernel_gap_us.value, 1e6,
            "a second");
  }
  if (p.clock_domains.present) {
    positive("clock_domains.l2_mhz", p.clock_domains.l2_mhz.value);
    at_most("clock_domains.l2_mhz", p.clock_domains.l2_mhz.value, 1e5, "100 GHz");
  }
  if (p.cta_dispatch.present) {
    non_negative("cta_dispatch.slot_refill_cycles", p.cta_dispatch.slot_refill_cycles.value);
    at_most("cta_dispatch.slot_refill_cycles", p.cta_dispatch.slot_refill_cycles.value, 1e6,
            "a million cycles");
  }
  if (p.clusters.present) {
    // Not checked against sm.count: a what-if `--set sm.count=64` keeps the profile's figures,
    // and ClusterSpec::sms_for caps them at the SMs there are.
    for (const auto& [key, v] :
         {std::pair{"clusters.sms_cluster_2", p.clusters.sms_cluster_2.value},
          std::pair{"clusters.sms_cluster_4", p.clusters.sms_cluster_4.value},
          std::pair{"clusters.sms_cluster_8", p.clusters.sms_cluster_8.value}}) {
      positive(key, v);
      at_most(key, v, 4096, "iosim's limit on sm.count");
    }
  }
  // The L2 model keeps a few bytes per sector: 1-byte sectors made 1.6 GB a point. GPUs use
  // 32-byte sectors; a line is a few of them.
  if (l2.sector_bytes.value > 0 && l2.sector_bytes.value < 16) {
    reader.note_at("l2.sector_bytes",
                   fmt::format("l2.sector_bytes = {} is below 16 (iosim's limit: the L2 model "
                               "keeps state per sector; GPUs use 32-byte sectors)",
                               l2.sector_bytes.value));
  }
  // Both clocks alike: sm.base_clock_mhz = 1e-300 (--set) was accepted where the boost clock's
  // 1e-300 was refused, though no GPU runs at either.
  if (sm.boost_clock_mhz.value < 1) {
    reader.note_at("sm.boost_clock_mhz",
                   fmt::format("sm.boost_clock_mhz = {} is below 1 MHz", sm.boost_clock_mhz.value));
  }
  if (sm.base_clock_mhz.value < 1) {
    reader.note_at("sm.base_clock_mhz",
                   fmt::format("sm.base_clock_mhz = {} is below 1 MHz", sm.base_clock_mhz.value));
  }
  // The L2 model tracks regions of 128 sectors; every partition must hold at least one.
  const std::int64_t region_bytes =
      static_cast<std::int64_t>(l2.sector_bytes.value) * L2Cache::kSectorsPerRegion;
  if (l2.partitions.value > 0 && l2.size_bytes.value / l2.partitions.value < region_bytes) {
    reader.note_at(
        "l2.size_bytes",
        fmt::format("l2.size_bytes = {} over l2.partitions = {} leaves less than one region of "
                    "{} sectors x {} bytes = {} bytes per partition",
                    l2.size_bytes.value, l2.partitions.value, L2Cache::kSectorsPerRegion,
                    l2.sector_bytes.value, region_bytes));
  }

  // Cross-field consistency.
  if (sm.base_clock_mhz.value > sm.boost_clock_mhz.value) {
    reader.note_at("sm.base_clock_mhz",
                   fmt::format("sm.base_clock_mhz = {} exceeds sm.boost_clock_mhz = {}",
                               sm.base_clock_mhz.value, sm.boost_clock_mhz.value));
  }
  if (sm.smem_per_cta_max_bytes.value > sm.smem_per_sm_bytes.value) {
    reader.note_at("sm.smem_per_cta_max_bytes",
                   fmt::format("sm.smem_per_cta_max_bytes = {} exceeds sm.smem_per_sm_bytes = {}",
                               sm.smem_per_cta_max_bytes.value, sm.smem_per_sm_bytes.value));
  }
  if (sm.smem_per_cta_max_bytes.value + sm.smem_reserved_per_cta_bytes.value >
      sm.smem_per_sm_bytes.value) {
    reader.note_at(
        "sm.smem_reserved_per_cta_bytes",
        fmt::format("sm.smem_per_cta_max_bytes + sm.smem_reserved_per_cta_bytes = {} + {} = {} "
                    "exceeds sm.smem_per_sm_bytes = {}",
                    sm.smem_per_cta_max_bytes.value, sm.smem_reserved_per_cta_bytes.value,
                    sm.smem_per_cta_max_bytes.value + sm.smem_reserved_per_cta_bytes.value,
                    sm.smem_per_sm_bytes.value));
  }
  if (sm.max_registers_per_thread.value > sm.registers_per_sm.value) {
    reader.note_at("sm.max_registers_per_thread",
                   fmt::format("sm.max_registers_per_thread = {} exceeds sm.registers_per_sm = {}",
                               sm.max_registers_per_thread.value, sm.registers_per_sm.value));
  }
  // A maximum of 0 says the GPU has no register reallocation; the other keys are then unused.
  if (sm.setmaxnreg_max_registers.value > 0 &&
      sm.setmaxnreg_min_registers.value > sm.setmaxnreg_max_registers.value) {
    reader.note_at(
        "sm.setmaxnreg_min_registers",
        fmt::format("sm.setmaxnreg_min_registers = {} exceeds "
                    "sm.setmaxnreg_max_registers = {}",
                    sm.setmaxnreg_min_registers.value, sm.setmaxnreg_max_registers.value));
  }
  if (sm.max_ctas_per_sm.value > sm.max_threads_per_sm.value) {
    reader.note_at("sm.max_ctas_per_sm",
                   fmt::format("sm.max_ctas_per_sm = {} exceeds sm.max_threads_per_sm = {} (a CTA "
                               "has at least one thread)",
                               sm.max_ctas_per_sm.value, sm.max_threads_per_sm.value));
  }
  // (A size that is not positive was noted above; it divides nothing.)
  if (l2.sector_bytes.value > 0 && l2.line_bytes.value % l2.sector_bytes.value != 0) {
    reader.note_at("l2.sector_bytes",
                   fmt::format("l2.sector_bytes = {} does not divide l2.line_bytes = {}",
                               l2.sector_bytes.value, l2.line_bytes.value));
  }
  if (l2.line_bytes.value > 0 && l2.size_bytes.value % l2.line_bytes.value != 0) {
    reader.note_at("l2.line_bytes",
                   fmt::format("l2.line_bytes = {} does not divide l2.size_bytes = {}",
                               l2.line_bytes.value, l2.size_bytes.value));
  }
  const auto fraction = [&](const std::string& path, double v) {
    if (!(v > 0.0 && v <= 1.0))
      reader.note_at(path, fmt::format("{} = {} is not in (0, 1]", path, v));
  };
  fraction("hbm.achievable_fraction", hbm.achievable_fraction.value);
  // It scales hbm.bandwidth_gbps, so it gets a floor as the rates do (a million times below
  // today's GPUs' 0.9): 1e-300 made times of 1e295 s, as hbm.bandwidth_gbps = 1e-300 did before
  // its range check.
  if (hbm.achievable_fraction.value > 0 && hbm.achievable_fraction.value < 1e-6) {
    reader.note_at("hbm.achievable_fraction",
                   fmt::format("hbm.achievable_fraction = {} is below 1e-06 (no GPU is that far "
                               "from today's)",
                               hbm.achievable_fraction.value));
  }
  fraction("l2.max_dirty_fraction", l2.max_dirty_fraction.value);

  if (const PowerSpec& w = p.power; w.present) {
    positive("power.limit_w", w.limit_w.value);
    non_negative("power.static_w", w.static_w.value);
    non_negative("power.clock_w", w.clock_w.value);
    if (!(w.voltage_clock_slope.value >= 0.0 && w.voltage_clock_slope.value <= 1.0)) {
      reader.note_at("power.voltage_clock_slope",
                     fmt::format("power.voltage_clock_slope = {} is not in [0, 1]",
                                 w.voltage_clock_slope.value));
    }
    non_negative("power.tensor_fp16_pj_per_flop", w.tensor_fp16_pj_per_flop.value);
    non_negative("power.tensor_fp8_pj_per_flop", w.tensor_fp8_pj_per_flop.value);
    non_negative("power.tensor_mma_sync_pj_per_flop", w.tensor_mma_sync_pj_per_flop.value);
    non_negative("power.fp32_pj_per_flop", w.fp32_pj_per_flop.value);
    non_negative("power.sfu_pj_per_op", w.sfu_pj_per_op.value);
    non_negative("power.l2_pj_per_byte", w.l2_pj_per_byte.value);
    non_negative("power.hbm_pj_per_byte", w.hbm_pj_per_byte.value);
    if (w.static_w.value >= w.limit_w.value) {
      reader.note_at("power.static_w",
                     fmt::format("power.static_w = {} must be below power.limit_w = {}",
                                 w.static_w.value, w.limit_w.value));
    }
  }
}

}  // namespace iosim
