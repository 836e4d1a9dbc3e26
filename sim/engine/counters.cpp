#include "sim/engine/counters.hpp"

#include <numeric>

namespace iosim {

std::uint64_t LevelTraffic::read_total() const {
  return std::accumulate(read_bytes.begin(), read_bytes.end(), std::uint64_t{0});
}

std::uint64_t LevelTraffic::write_total() const {
  return std::accumulate(write_bytes.begin(), write_bytes.end(), std::uint64_t{0});
}

LevelTraffic& LevelTraffic::operator+=(const LevelTraffic& o) {
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    read_bytes[i] += o.read_bytes[i];
    write_bytes[i] += o.write_bytes[i];
  }
  return *this;
}

Counters& Counters::operator+=(const Counters& o) {
  hbm += o.hbm;
  l2 += o.l2;
  smem_read_bytes += o.smem_read_bytes;
  smem_write_bytes += o.smem_write_bytes;
  tensor_flops += o.tensor_flops;
  fp32_flops += o.fp32_flops;
  sfu_ops += o.sfu_ops;
  int32_ops += o.int32_ops;
  // Dirty-at-end is a state, not a flow: the later kernel's value is the one that holds.
  l2_dirty_at_end_bytes = o.l2_dirty_at_end_bytes;
  l2_dirty_at_end = o.l2_dirty_at_end;
  return *this;
}

}  // namespace iosim
