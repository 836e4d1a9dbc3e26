#pragma once
// The machine's rates as the engine (sim/engine/stage_timer.hpp) times stages and classify_bound()
// weighs counters: a HardwareProfile's numbers at one SM clock.
#include <algorithm>

#include "sim/hardware/profile.hpp"
#include "sim/schedule/dtype.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim {
struct KernelResult;  // sim/engine/engine.hpp
}  // namespace iosim

namespace iosim::detail {

/// A kernel's time-dependent results (its bound and achieved rates) from its time, its time's
/// attribution and its counters: after an engine run (sim/engine/engine.cpp) and a replay
/// (replay.cpp) alike.
void set_rates(KernelResult& kr);

// Rates of one machine at one SM clock, in bytes or operations per second.
struct Rates {
  double hbm_bps, l2_bps, sm_port_bps, smem_bps_per_sm;
  double tensor_per_sm, fp32_per_sm, sfu_per_sm, int32_per_sm;
  double l2_latency_s, hbm_latency_s, launch_s;
  // Between a slot's CTAs (HardwareProfile::cta_dispatch; 0 without that section).
  double cta_refill_s;
  double smem_latency_s, fp32_latency_s, wgmma_latency_s;
  // What a serialized wgmma (TileOp::serialized_wgmmas) waits beyond its tensor time: the
  // profile's wgmma latency (one m64n64k16, issued and waited for) less that instruction's time at
  // the tensor rate. On the H100, 91.5 - 32 = 59.5 cycles; m64n128k16 measured 123.5 = 64 + 59.5.
  double wgmma_serial_gap_s;
  int sm_count;

  Rates(const HardwareProfile& p, double clock_mhz, Dtype mma_dtype,
        TensorInstruction instruction = TensorInstruction::wgmma) {
    const double clock_hz = clock_mhz * 1e6;
    const double ratio = clock_mhz / p.sm.boost_clock_mhz.value;
    sm_count = p.sm.count.value;
    hbm_bps = p.hbm.bandwidth_gbps.value * 1e9 * p.hbm.achievable_fraction.value;
    l2_bps = p.l2_bytes_per_s(clock_mhz);  // its own clock, or the SM's (ClockDomainSpec)
    sm_port_bps = p.sm.l2_to_sm_bytes_per_clk.value * clock_hz;
    smem_bps_per_sm = p.sm.smem_bandwidth_bytes_per_clk.value * clock_hz;
    if (instruction == TensorInstruction::mma_sync) {
      // Measured per clock for fp16; other operand types keep the peak's ratio to fp16.
      tensor_per_sm = p.compute.mma_sync_flops_per_clk_per_sm.value * clock_hz *
                      p.tensor_flops_per_s(mma_dtype) / p.tensor_flops_per_s(Dtype::fp16);
    } else {
      tensor_per_sm = p.tensor_flops_per_s(mma_dtype) * ratio / sm_count;
    }
    fp32_per_sm = p.fp32_flops_per_s() * ratio / sm_count;
    sfu_per_sm = p.compute.sfu_ops_per_clk_per_sm.value * clock_hz;
    int32_per_sm = p.compute.int32_ops_per_clk_per_sm.value * clock_hz;
    smem_latency_s = p.sm.smem_latency_cycles.value / clock_hz;
    fp32_latency_s = p.compute.fp32_latency_cycles.value / clock_hz;
    wgmma_latency_s = p.compute.wgmma_latency_cycles.value / clock_hz;
    l2_latency_s = p.l2.hit_latency_cycles.value / clock_hz;
    hbm_latency_s = p.hbm.latency_ns.value * 1e-9;
    launch_s = p.launch.kernel_overhead_us.value * 1e-6;
    cta_refill_s =
        p.cta_dispatch.present ? p.cta_dispatch.slot_refill_cycles.value / clock_hz : 0.0;
    constexpr double kM64N64K16Flops = 2.0 * 64 * 64 * 16;
    wgmma_serial_gap_s =
        std::max(0.0, wgmma_latency_s -
                          kM64N64K16Flops / (p.tensor_flops_per_s(Dtype::fp16) * ratio / sm_count));
    per = {1.0 / hbm_bps,       1.0 / l2_bps,      1.0 / sm_port_bps, 1.0 / smem_bps_per_sm,
           1.0 / tensor_per_sm, 1.0 / fp32_per_sm, 1.0 / sfu_per_sm,  1.0 / int32_per_sm};
  }

  // Seconds per byte or operation: the engine multiplies by these a few dozen times per stage,
  // where dividing by the rates costs about 5% of flash1's simulation time. A product may differ
  // from the quotient in the last bit, which can reorder two tied events and so the L2's
  // accesses: going back to quotients changes results.
  struct SecondsPer {
    double hbm_byte, l2_byte, port_byte, smem_byte;
    double tensor_flop, fp32_flop, sfu_op, int32_op;
  } per{};
};

}  // namespace iosim::detail
