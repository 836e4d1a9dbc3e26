// The two-level counts of every schedule equal its closed form, over many shapes; they never fall
// below the lower bound; bigger blocks or more SRAM never mean more traffic; golden values.
#include <doctest/doctest.h>

#include "tests/test_support.hpp"

using namespace iosim;
using iosim::test::hbm_total;

namespace {

Report two_level(RunRequest r, const HardwareProfile& hw = test::profile()) {
  r.engine.l2_enabled = false;
  return simulate(hw, r);
}

}  // namespace

TEST_CASE("two-level HBM bytes equal the closed form over random shapes") {
  test::ShapeGen gen(20261122);
  const char* algos[] = {"standard", "flash1", "flash2"};
  const Dtype dtypes[] = {Dtype::fp16, Dtype::bf16, Dtype::fp32};
  const std::int64_t dims[] = {16, 32, 48, 64, 80, 96, 128};
  const std::int64_t blocks[] = {0, 16, 32, 64, 96, 128};
  int checked = 0;
  for (int i = 0; i < 240; ++i) {
    RunRequest r = test::request(gen.pick(algos), gen.pick(1, 3), gen.pick(1, 3), gen.pick(1, 700),
                                 gen.pick(dims), gen.pick(blocks), gen.pick(blocks));
    r.problem.seq_kv = gen.coin() ? r.problem.seq : r.problem.seq + gen.pick(0, 300);
    r.problem.dtype = gen.pick(dtypes);
    r.problem.causal = gen.coin();
    r.problem.mask = gen.pick(0, 3) == 0;
    r.problem.dropout = gen.pick(0, 3) == 0 ? 0.1 : 0.0;
    const Report rep = two_level(r);
    if (!rep.feasible()) continue;
    test::require_closed_form(r, rep);
    REQUIRE(hbm_total(rep) >= rep.bounds.lower_bound_bytes);
    // Compulsory bytes against the tensors' sizes, not against the bound made from them.
    REQUIRE(rep.bounds.compulsory_bytes == test::dense_compulsory_bytes(r.problem));
    REQUIRE(hbm_total(rep) >= rep.bounds.compulsory_bytes);
    // Two-level: there is no L2, so nothing is counted there and nothing stays dirty.
    REQUIRE(rep.engine.total.l2.read_total() == 0);
    REQUIRE(rep.engine.total.l2_dirty_at_end_bytes == 0);
    ++checked;
  }
  CHECK(checked > 150);
}

TEST_CASE("golden: flash2 two-level bytes for one head, N=256, d=64, 128x128 blocks") {
  const Report r = two_level(test::request("flash2", 1, 1, 256, 64, 128, 128));
  // Q once (256*64*2), K and V once per Q block (2 blocks * 2 * 256*64*2), O once, L in fp32.
  CHECK(r.engine.total.hbm.read_total() == 32768 + 131072);
  CHECK(r.engine.total.hbm.write_total() == 32768 + 1024);
  CHECK(r.engine.total.tensor_flops == 4ull * 256 * 256 * 64);
}

TEST_CASE("golden: standard two-level bytes for one head, N=256, d=64, 128x128 GEMM tiles") {
  const Report r = two_level(test::request("standard", 1, 1, 256, 64, 128, 128));
  const std::uint64_t qk = 256 * 64 * 2;  // one of Q, K, V or O
  const std::uint64_t s = 256 * 256 * 2;  // one N x N matrix
  // gemm_qk reads Q and K twice each (2 x 2 tiles), writes S; softmax reads S, writes P;
  // gemm_pv reads P once and V twice (2 query tiles), writes O.
  CHECK(r.engine.total.hbm.read_total() == 2 * qk + 2 * qk + s + s + 2 * qk);
  CHECK(r.engine.total.hbm.write_total() == s + s + qk);
}

TEST_CASE("golden: flash1 two-level bytes, N=256, d=64, 64x64 blocks") {
  const Report r = two_level(test::request("flash1", 1, 1, 256, 64, 64, 64));
  const std::uint64_t tile = 64 * 64 * 2, lm = 2 * 64 * 4;
  // K, V once (4 blocks each); each of the 16 (j, i) steps reads Q_i and writes O_i, l_i, m_i;
  // the 12 steps with j > 0 also read O_i, l_i, m_i.
  CHECK(r.engine.total.hbm.read_total() == 8 * tile + 16 * tile + 12 * (tile + lm));
  CHECK(r.engine.total.hbm.write_total() == 16 * (tile + lm));
}

TEST_CASE("flash traffic never grows with bigger blocks or more SRAM") {
  for (std::int64_t d : {64, 128}) {
    std::uint64_t previous = UINT64_MAX;
    for (std::int64_t bq : {16, 32, 64, 128}) {
      const Report r = two_level(test::request("flash2", 2, 2, 1024, d, bq, 64));
      REQUIRE(r.feasible());
      CHECK(hbm_total(r) <= previous);
      previous = hbm_total(r);
    }
  }
  // flash1 picks its blocks from M: a GPU with more shared memory moves no more bytes.
  HardwareProfile small = test::profile();
  std::uint64_t previous = UINT64_MAX;
  for (std::int64_t smem : {32768, 65536, 131072, 232448}) {
    small.sm.smem_per_cta_max_bytes.value = smem;
    small.sm.smem_per_sm_bytes.value = std::max<std::int64_t>(smem + 1024, 233472);
    const Report r = two_level(test::request("flash1", 1, 2, 2048, 64), small);
    REQUIRE(r.feasible());
    CHECK(hbm_total(r) <= previous);
    previous = hbm_total(r);
  }
}

TEST_CASE("flash moves far fewer HBM bytes than standard, standard is Theta(N^2)") {
  const Report std_r = two_level(test::request("standard", 64, 16, 1024, 64));
  const Report fa2 = two_level(test::request("flash2", 64, 16, 1024, 64));
  CHECK(hbm_total(std_r) > 3 * hbm_total(fa2));
  // Doubling N roughly quadruples standard's bytes (the N^2 matrices dominate).
  const Report std_2n = two_level(test::request("standard", 1, 1, 4096, 64));
  const Report std_n = two_level(test::request("standard", 1, 1, 2048, 64));
  const double ratio =
      static_cast<double>(hbm_total(std_2n)) / static_cast<double>(hbm_total(std_n));
  CHECK(ratio > 3.5);
  CHECK(ratio < 4.1);
}

TEST_CASE("lower bound switches regime at M = d^2") {
  AttentionProblem p;
  p.seq = p.seq_kv = 4096;
  p.head_dim = 128;
  p.dtype = Dtype::fp16;
  const IoBounds big =
      io_bounds(p, flash2_closed_form(p, 128, 64), 232448);  // M = 116224 >= d^2 = 16384
  const IoBounds small = io_bounds(p, flash2_closed_form(p, 128, 64), 16384);  // M = 8192 < d^2
  CHECK(big.lower_bound_formula == "N*N_kv*d^2/M");
  CHECK(small.lower_bound_formula == "N*N_kv*d/sqrt(M)");
  CHECK(small.lower_bound_bytes > big.lower_bound_bytes);
}
