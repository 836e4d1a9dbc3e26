#include "tests/test_support.hpp"

#include <map>

namespace iosim::test {

const HardwareProfile& profile(const std::string& name) {
  static std::map<std::string, HardwareProfile> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_profile(name)).first;
  return it->second;
}

RunRequest request(const std::string& algo, std::int64_t b, std::int64_t h, std::int64_t n,
                   std::int64_t d, std::int64_t block_q, std::int64_t block_kv) {
  RunRequest r;
  r.algorithm = algo;
  r.problem.batch = b;
  r.problem.heads = h;
  r.problem.seq = n;
  r.problem.seq_kv = n;
  r.problem.head_dim = d;
  r.tiling.block_q = given(block_q);
  r.tiling.block_kv = given(block_kv);
  return r;
}

}  // namespace iosim::test
