#pragma once
// Occupancy: how many CTAs of a kernel one SM holds at once, from its shared memory, registers,
// threads and CTA slots.
#include <string>

#include "sim/hardware/profile.hpp"
#include "sim/schedule/schedule.hpp"

namespace iosim {

/// How many CTAs of a kernel fit on one SM and which resource decides it.
struct Occupancy {
  int ctas_per_sm = 0;
  std::string limiter;  // "shared memory", "registers", "threads", "CTA slots"
  // SMs that hold the kernel's CTAs: every SM, or, for a kernel launched in clusters, those the
  // placement of whole clusters in GPCs leaves (HardwareProfile::clusters).
  int sms = 0;
};

/// CTAs per SM for `k` on `profile`; 0 when one CTA does not fit (limiter says why).
Occupancy occupancy(const HardwareProfile& profile, const KernelSpec& k);

}  // namespace iosim
