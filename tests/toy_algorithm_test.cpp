// Adding a schedule touches only its own file and the registry table: this test is such a file.
// It defines a toy algorithm (copy Q to O, a CTA per 64-row block) the way algorithms/*.cpp
// define theirs, registers it beside the built-in ones, and runs it through simulate() with no
// other change anywhere.
#include <doctest/doctest.h>

#include "tests/test_support.hpp"

using namespace iosim;

namespace {

class ToyCopySchedule final : public Schedule {
 public:
  ToyCopySchedule(const AttentionProblem& p, const Tiling& t) : p_(p), t_(t) {}

  std::vector<TensorDecl> tensors() const override {
    const std::int64_t eb = p_.elem_bytes();
    return {{TensorId::Q, p_.bh(), p_.seq, p_.head_dim, eb},
            {TensorId::O, p_.bh(), p_.seq, p_.head_dim, eb}};
  }

  std::vector<KernelSpec> kernels() const override {
    KernelSpec k;
    k.name = "toy_copy";
    k.grid = {ceil_div(p_.seq, t_.block_q), p_.bh(), 1};
    k.threads_per_cta = t_.threads;
    k.smem_bytes_per_cta = t_.block_q * p_.head_dim * p_.elem_bytes();
    return {k};
  }

  bool emit_cta_part(std::size_t, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    if (part > 0) return false;
    const std::int64_t tiles = ceil_div(p_.seq, t_.block_q);
    const std::int64_t bh = cta / tiles, row0 = (cta % tiles) * t_.block_q;
    const std::int64_t rows = std::min(t_.block_q, p_.seq - row0);
    out.push_back(TileOp::load({TensorId::Q, bh, row0, rows, 0, p_.head_dim}));  // gQ -> sQ
    out.push_back(TileOp::store({TensorId::O, bh, row0, rows, 0, p_.head_dim},
                                OnChip::smem));  // sQ -> gO
    return false;
  }

 private:
  AttentionProblem p_;
  Tiling t_;
};

// The registry entry, as a file of algorithms/ writes it.
Algorithm toy_copy_algorithm() {
  Algorithm a;
  a.name = "toy-copy";
  a.summary = "copies Q to O, a CTA per block of query rows";
  a.plan = [](const AttentionProblem& p, const HardwareProfile&, const TilingRequest& req) {
    Planned out;
    out.tiling.block_q = req.block_q.value_or(64);
    out.tiling.block_kv = req.block_kv.value_or(64);
    out.tiling.threads = req.threads.value_or(128);
    out.tiling.pipeline_stages = req.pipeline_stages.value_or(1);
    out.schedule = std::make_unique<ToyCopySchedule>(p, out.tiling);
    return out;
  };
  a.closed_form = [](const AttentionProblem& p, const Tiling&, const BlockMask*) {
    const auto bytes = static_cast<std::uint64_t>(p.bh() * p.seq * p.head_dim * p.elem_bytes());
    return ReadWriteBytes{bytes, bytes};
  };
  return a;
}

Registry registry_with_toy() {
  Registry r;
  register_builtin_algorithms(r);
  r.add(toy_copy_algorithm());
  return r;
}

}  // namespace

TEST_CASE("a toy algorithm added to a registry runs end to end, counted by the engine alone") {
  const Registry registry = registry_with_toy();
  for (std::int64_t seq : {1, 63, 64, 1000}) {
    for (std::int64_t block_q : {0, 16, 64}) {
      RunRequest r = test::request("toy-copy", 2, 3, seq, 32, block_q, 0);
      r.engine.l2_enabled = false;
      const Report rep = simulate(test::profile(), r, registry);
      REQUIRE(rep.feasible());
      CAPTURE(seq);
      CAPTURE(block_q);
      const std::uint64_t bytes = static_cast<std::uint64_t>(2 * 3 * seq * 32 * 2);
      CHECK(rep.engine.total.hbm.read_total() == bytes);
      CHECK(rep.engine.total.hbm.write_total() == bytes);
      CHECK(rep.bounds.closed_form_bytes == 2 * bytes);
      CHECK(rep.engine.total.flops() == 0);
      CHECK(rep.engine.kernels.at(0).spec.grid.x == ceil_div(seq, block_q > 0 ? block_q : 64));
    }
  }
}

TEST_CASE("the toy algorithm is known only to its registry, and flags it does not take are named") {
  RunRequest r = test::request("toy-copy", 1, 1, 128, 32, 0, 0);
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r), doctest::Contains("unknown algorithm"),
                       ConfigError);
  r.tiling.splits = 2;
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r, registry_with_toy()),
                       "--splits applies to --algo flash-decoding and paged, not 'toy-copy'",
                       ConfigError);
}
