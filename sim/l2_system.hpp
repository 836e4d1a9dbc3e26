#pragma once
// The L2 as A100 and H100 build it: partitions (two on both), each caching data for the SMs
// attached to it. An address has a home partition (hashed); an SM reading a line homed in the
// other partition keeps a copy in its own (near) partition, fetched over the fabric from the
// home, which fetches from DRAM on a miss there. Lines read from both sides therefore occupy
// space twice, which is what makes the L2 behave smaller than its size for data every SM reads.
// Writes go to the home partition (the point of coherence, the only place dirty data lives)
// and refresh the writer's near copy.
//
// Assumptions: SM s is attached to partition s mod P (the GPC wiring is not published); homes
// are hashed per 4 KiB region; the fabric's bandwidth and latency are not modelled.
#include <cstdint>
#include <vector>

#include "sim/l2_cache.hpp"

namespace iosim {

class L2System {
 public:
  /// `partitions` caches sharing `capacity_bytes` equally. Throws ConfigError if one holds no
  /// region. `max_dirty_fraction`: share of each partition that may hold dirty data (see L2Cache).
  L2System(std::int64_t capacity_bytes, int sector_bytes, int partitions,
           double max_dirty_fraction = 1.0);

  /// An SM on `sm` reads [addr, addr + len): requested sector bytes and bytes fetched from DRAM.
  L2Cache::ReadOutcome read(std::uint64_t addr, std::uint64_t len, TensorId owner, int sm,
                            PerTensor& written_back);
  /// An SM on `sm` writes [addr, addr + len); returns the sector bytes written.
  std::uint64_t write(std::uint64_t addr, std::uint64_t len, TensorId owner, int sm,
                      PerTensor& written_back);

  std::uint64_t dirty_bytes() const;
  std::uint64_t written_back_bytes() const;
  /// Writes all dirty data back (into `written_back`) and invalidates every partition.
  void flush(PerTensor& written_back);

 private:
  int home_of(std::uint64_t region) const;

  std::vector<L2Cache> parts_;
  std::uint64_t sector_bytes_;
};

}  // namespace iosim
