#pragma once
// Traffic and work counters: bytes per level (hbm, l2, smem), per direction, per tensor; FLOPs.
#include <cstdint>

#include "sim/schedule/tensor.hpp"

namespace iosim {

/// Bytes moved at one level in one direction, split by tensor.
struct LevelTraffic {
  PerTensor read_bytes{};
  PerTensor write_bytes{};

  std::uint64_t read_total() const;
  std::uint64_t write_total() const;
  LevelTraffic& operator+=(const LevelTraffic& o);
};

struct Counters {
  LevelTraffic hbm;  // DRAM <-> L2 (or DRAM <-> SM when L2 is off)
  LevelTraffic l2;   // SM <-> L2 requests, in sectors
  std::uint64_t smem_read_bytes = 0;
  std::uint64_t smem_write_bytes = 0;
  std::uint64_t tensor_flops = 0;
  std::uint64_t fp32_flops = 0;
  std::uint64_t sfu_ops = 0;
  std::uint64_t int32_ops = 0;  // INT32-pipe operations (masks' index arithmetic); not FLOPs
  std::uint64_t l2_dirty_at_end_bytes =
      0;  // dirty in L2 when the kernel ended (not yet DRAM writes)
  // The same by tensor (they sum to l2_dirty_at_end_bytes): "where do the bytes go" gave the
  // output no HBM write when its lines were still dirty at the end.
  PerTensor l2_dirty_at_end{};

  /// HBM bytes with the lines still dirty in L2 at the end counted as written: what the run
  /// costs HBM once L2 writes them back (hbm_total_bytes in the JSON and CSV).
  std::uint64_t hbm_total_bytes() const {
    return hbm.read_total() + hbm.write_total() + l2_dirty_at_end_bytes;
  }
  /// All FLOPs: tensor-core, FP32 and special-function operations.
  std::uint64_t flops() const { return tensor_flops + fp32_flops + sfu_ops; }
  Counters& operator+=(const Counters& o);
};

}  // namespace iosim
