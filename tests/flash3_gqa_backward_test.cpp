// flash3's backward with grouped-query heads (--kv-heads < --heads): the g query heads of a K/V
// head add their fp32 dK and dV shares into dKaccum and dVaccum, converted after the main kernel
// (FlashAttention-3's GQA backward). Its two-level counts equal the closed form over many shapes,
// its op streams give dK and dV summed over the group exactly, and one shape is counted by hand.
#include <doctest/doctest.h>

#include "sim/base/errors.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

RunRequest gqa_backward(std::int64_t b, std::int64_t h, std::int64_t group, std::int64_t n,
                        std::int64_t d) {
  RunRequest r = test::request("flash3", b, h, n, d, 0, 0);
  r.problem.kv_heads = h / group;
  r.problem.pass = Pass::bwd;
  r.engine.l2_enabled = false;
  return r;
}

const KernelResult* kernel_named(const Report& rep, const std::string& name) {
  for (const KernelResult& k : rep.engine.kernels)
    if (k.spec.name == name) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("flash3 GQA backward: two-level bytes equal the closed form over many shapes") {
  test::ShapeGen gen(1313);
  int checked = 0;
  for (int i = 0; i < 160; ++i) {
    const std::int64_t group = gen.pick({1, 2, 4, 8});
    RunRequest r = gqa_backward(gen.pick(1, 2), group * gen.pick(1, 2), group, gen.pick(1, 700),
                                gen.pick({64, 128}));
    r.problem.pass = gen.coin() ? Pass::bwd : Pass::fwdbwd;
    r.problem.seq_kv = gen.coin() ? r.problem.seq : r.problem.seq + gen.pick(0, 300);
    r.problem.causal = gen.coin();
    CAPTURE(group);
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    CAPTURE(r.problem.head_dim);
    CAPTURE(r.problem.causal);
    const Report rep = simulate(test::profile(), r);
    if (!rep.feasible()) continue;
    test::require_closed_form(r, rep);
    // dKaccum and dVaccum exist exactly when query heads share a K/V head.
    CHECK((kernel_named(rep, "convert_dkv") != nullptr) == (group > 1));
    ++checked;
  }
  CHECK(checked > 140);
}

TEST_CASE("flash3 GQA backward computes dK and dV summed over the group exactly (--execute)" *
          doctest::test_suite("long")) {
  test::ShapeGen gen(1314);
  for (int i = 0; i < test::cases(20); ++i) {
    const std::int64_t group = gen.pick({2, 4, 8});
    RunRequest r = gqa_backward(gen.pick(1, 2), group * gen.pick(1, 2), group, gen.pick(1, 200),
                                gen.pick({64, 128}));
    r.problem.pass = gen.coin() ? Pass::bwd : Pass::fwdbwd;
    r.problem.seq_kv = gen.coin() ? r.problem.seq : r.problem.seq + gen.pick(0, 80);
    r.problem.causal = gen.coin();
    r.seed = static_cast<std::uint64_t>(i) + 31;
    r.execute = true;
    CAPTURE(group);
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    CAPTURE(r.problem.head_dim);
    CAPTURE(r.problem.causal);
    const Report rep = simulate(test::profile(), r);
    REQUIRE(rep.feasible());
    REQUIRE(rep.numerics.executed);
    CHECK(*rep.numerics.max_abs_error <= 1e-4);
  }
}

TEST_CASE("flash3 GQA backward: a shape counted by hand") {
  // B = 1, H = 8, Hkv = 2 (g = 4), N = 256, d = 64, fp16, not causal; FlashAttention-3's d = 64
  // backward tiles are 128 x 128, so each of the 8 query heads has 2 K/V tiles, each meeting both
  // query blocks. Per query head (bytes):
  //   dot_do_o: O, dO in 2 * 256 * 64 * 2 = 65536; D out 256 * 4 = 1024, dQaccum zeroed 65536
  //   main:     K, V in 2 * 256 * 64 * 2 = 65536; per (Q block, K/V block) meeting, 4 of them:
  //             Q, dO 2 * 128 * 64 * 2 + L, D 2 * 128 * 4 + dQaccum 128 * 64 * 4 read and written
  //             = 66560 read, 32768 written; dKaccum, dVaccum 2 * 256 * 64 * 4 = 131072 read and
  //             written
  //   convert_dq: dQaccum in 65536, dQ out 32768
  // Per K/V head: zero_dkv_accum writes 131072; convert_dkv reads 131072 and writes 65536.
  const std::uint64_t read_per_q = 65536 + 65536 + 4 * 66560 + 131072 + 65536;
  const std::uint64_t write_per_q = 1024 + 65536 + 4 * 32768 + 131072 + 32768;
  const std::uint64_t read = 8 * read_per_q + 2 * 131072;
  const std::uint64_t write = 8 * write_per_q + 2 * (131072 + 65536);
  CHECK(read == 5013504);
  CHECK(write == 3284992);
  const RunRequest r = gqa_backward(1, 8, 4, 256, 64);
  const Report rep = simulate(test::profile(), r);
  REQUIRE(rep.feasible());
  CHECK(rep.engine.total.hbm.read_total() == read);
  CHECK(rep.engine.total.hbm.write_total() == write);
  const KernelResult* zero = kernel_named(rep, "zero_dkv_accum");
  const KernelResult* convert = kernel_named(rep, "convert_dkv");
  REQUIRE(zero != nullptr);
  REQUIRE(convert != nullptr);
  CHECK(zero->spec.grid.count() == 4);  // 2 key blocks x 1 batch x 2 K/V heads
  CHECK(rep.engine.kernels.size() == 5);
  CHECK(rep.engine.kernels.at(2).spec.name == "flash3_bwd");
  CHECK(rep.engine.kernels.at(2).spec.grid.count() == 16);  // 2 key blocks x 8 query heads
}

TEST_CASE("GQA backward: flash3 runs it; schedules without it say so; bad groups are refused") {
  RunRequest r = gqa_backward(1, 8, 4, 128, 64);
  for (const char* algo : {"standard", "flash1", "flash2"}) {
    r.algorithm = algo;
    CAPTURE(algo);
    CHECK_THROWS_WITH_AS(simulate(test::profile(), r),
                         doctest::Contains("has one K/V head per query head"), ConfigError);
  }
  r.algorithm = "flash3";
  r.problem.kv_heads = 3;
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r), doctest::Contains("must divide --heads 8"),
                       ConfigError);
}
