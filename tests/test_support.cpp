#include "tests/test_support.hpp"

#include <doctest/doctest.h>

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

void require_closed_form(const RunRequest& r, const Report& rep) {
  CAPTURE(r.algorithm);
  CAPTURE(pass_name(r.problem.pass));
  CAPTURE(dtype_name(r.problem.dtype));
  CAPTURE(r.problem.seq);
  CAPTURE(r.problem.seq_kv);
  CAPTURE(r.problem.head_dim);
  CAPTURE(r.problem.latent_dim);
  CAPTURE(r.problem.kv_heads);
  CAPTURE(rep.tiling.block_q);
  CAPTURE(rep.tiling.block_kv);
  CAPTURE(rep.tiling.splits);
  CAPTURE(r.problem.page_tokens);
  CAPTURE(r.problem.causal);
  CAPTURE(r.problem.mask);
  CAPTURE(r.problem.dropout);
  REQUIRE(rep.engine.total.hbm.read_total() == rep.bounds.closed_form_read_bytes);
  REQUIRE(rep.engine.total.hbm.write_total() == rep.bounds.closed_form_write_bytes);
}

}  // namespace iosim::test
