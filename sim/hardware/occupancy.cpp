#include "sim/hardware/occupancy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>

namespace iosim {

Occupancy occupancy(const HardwareProfile& p, const KernelSpec& k) {
  const SmSpec& sm = p.sm;
  if (k.smem_bytes_per_cta > sm.smem_per_cta_max_bytes.value) {
    return {0, fmt::format("shared memory: {} bytes per CTA needed, {} available per CTA",
                           k.smem_bytes_per_cta, sm.smem_per_cta_max_bytes.value)};
  }
  if (k.threads_per_cta > 1024 || k.threads_per_cta > sm.max_threads_per_sm.value) {
    return {0, fmt::format("threads: {} per CTA exceed the limit", k.threads_per_cta)};
  }
  if (k.threads_per_cta < 1 || k.registers_per_thread < 1) {
    // A measured file or a schedule with no threads or registers: no CTA can run (and the
    // divisions below would be by zero).
    return {0, fmt::format("{} threads and {} registers per thread: not a CTA that can run",
                           k.threads_per_cta, k.registers_per_thread)};
  }
  struct Limit {
    std::int64_t ctas;
    const char* name;
  };
  const std::int64_t smem_need = k.smem_bytes_per_cta + sm.smem_reserved_per_cta_bytes.value;
  const int regs = std::min(k.registers_per_thread, sm.max_registers_per_thread.value);
  // Registers are allocated per warp in units of 256.
  const std::int64_t regs_per_warp = (static_cast<std::int64_t>(regs) * 32 + 255) / 256 * 256;
  const std::int64_t warps = (k.threads_per_cta + 31) / 32;
  // A CTA with no shared memory on a profile that reserves none (compute capability 7.x) is not
  // limited by shared memory at all: the division would be by zero (issue #50, C1).
  constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();
  const Limit limits[] = {
      {smem_need > 0 ? sm.smem_per_sm_bytes.value / smem_need : kUnlimited, "shared memory"},
      {sm.registers_per_sm.value / (regs_per_warp * warps), "registers"},
      {sm.max_threads_per_sm.value / k.threads_per_cta, "threads"},
      {sm.max_ctas_per_sm.value, "CTA slots"},
  };
  const Limit* best =
      std::min_element(std::begin(limits), std::end(limits),
                       [](const Limit& a, const Limit& b) { return a.ctas < b.ctas; });
  if (best->ctas <= 0) return {0, fmt::format("{}: not even one CTA fits on an SM", best->name)};
  return {static_cast<int>(best->ctas), best->name,
          p.clusters.sms_for(k.cluster_ctas, static_cast<int>(sm.count.value))};
}

}  // namespace iosim
