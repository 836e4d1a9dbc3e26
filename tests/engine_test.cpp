// The engine: occupancy limits at capacity and capacity + 1, conservation of bytes between the
// levels, L2 reuse of K/V across concurrent CTAs, cold-L2 runs, determinism, time sanity.
#include "sim/engine/engine.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <set>
#include <utility>

#include "reports/writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/engine/event_queue.hpp"
#include "tests/test_support.hpp"

using namespace iosim;
using iosim::test::hbm_total;

// A profile may reserve no shared memory per CTA (compute capability 7.x reserves none), and some
// backward kernels use none: the shared-memory limit then divided by zero (SIGFPE, issue #50 C1).
TEST_CASE("occupancy: no shared memory needed and none reserved is no shared-memory limit") {
  HardwareProfile hw = test::profile();
  hw.sm.smem_reserved_per_cta_bytes.value = 0;
  KernelSpec k;
  k.threads_per_cta = 128;
  k.registers_per_thread = 32;
  k.smem_bytes_per_cta = 0;
  const Occupancy o = occupancy(hw, k);
  CHECK(o.ctas_per_sm == hw.sm.max_threads_per_sm.value / 128);
  CHECK(o.limiter.find("shared memory") == std::string::npos);
}

TEST_CASE("occupancy: shared memory at capacity fits, one byte more does not") {
  const HardwareProfile& hw = test::profile();
  KernelSpec k;
  k.threads_per_cta = 128;
  k.registers_per_thread = 64;
  k.smem_bytes_per_cta = hw.sm.smem_per_cta_max_bytes.value;
  CHECK(occupancy(hw, k).ctas_per_sm == 1);
  k.smem_bytes_per_cta += 1;
  const Occupancy none = occupancy(hw, k);
  CHECK(none.ctas_per_sm == 0);
  CHECK(none.limiter.find("shared memory") != std::string::npos);
  // Two CTAs fit exactly when twice (smem + reserved) equals the SM's shared memory.
  k.smem_bytes_per_cta =
      hw.sm.smem_per_sm_bytes.value / 2 - hw.sm.smem_reserved_per_cta_bytes.value;
  CHECK(occupancy(hw, k).ctas_per_sm == 2);
  k.smem_bytes_per_cta += 1;
  CHECK(occupancy(hw, k).ctas_per_sm == 1);
  // Registers: 255 per thread round up to 8192 per warp; 8 warps fill the SM's 65536, 16 do not.
  k.smem_bytes_per_cta = 0;
  k.threads_per_cta = 256;
  k.registers_per_thread = 255;
  CHECK(occupancy(hw, k).ctas_per_sm == 1);
  k.threads_per_cta = 512;
  CHECK(occupancy(hw, k).ctas_per_sm == 0);
  k.threads_per_cta = 256;
  k.registers_per_thread = 128;
  CHECK(occupancy(hw, k).ctas_per_sm == 2);
  CHECK(occupancy(hw, k).limiter == "registers");
}

TEST_CASE("an infeasible tile is a result with the bytes needed and available") {
  const Report r = simulate(test::profile(), test::request("flash2", 1, 1, 4096, 128, 512, 512));
  REQUIRE_FALSE(r.feasible());
  CHECK(r.infeasible_reason.find("bytes") != std::string::npos);
  CHECK(r.infeasible_reason.find("232448") != std::string::npos);
}

TEST_CASE("bytes are conserved between levels with L2 on" * doctest::test_suite("long")) {
  test::ShapeGen gen(99);
  const char* algos[] = {"standard", "flash1", "flash2"};
  const std::int64_t dims[] = {64, 128};
  for (int i = 0; i < test::cases(24); ++i) {
    RunRequest r = test::request(gen.pick(algos), gen.pick(1, 4), gen.pick(1, 8),
                                 64 * gen.pick(1, 24), gen.pick(dims));
    r.problem.causal = gen.coin();
    const Report on = simulate(test::profile(), r);
    r.engine.l2_enabled = false;
    const Report off = simulate(test::profile(), r);
    REQUIRE(on.feasible());
    const Counters& c = on.engine.total;
    CAPTURE(r.algorithm);
    CAPTURE(r.problem.seq);
    // d * 2 bytes is a multiple of the 32-byte sector: every requested byte reaches the L2 and
    // the L2 request count equals the two-level count.
    CHECK(c.l2.read_total() == off.engine.total.hbm.read_total());
    CHECK(c.l2.write_total() == off.engine.total.hbm.write_total());
    // DRAM reads are misses of those requests; DRAM writes are write-backs of dirty sectors.
    CHECK(c.hbm.read_total() <= c.l2.read_total());
    CHECK(c.hbm.write_total() + c.l2_dirty_at_end_bytes <= c.l2.write_total());
    std::uint64_t dirty = 0;
    for (std::size_t t = 0; t < kTensorCount; ++t) {
      CHECK(c.hbm.read_bytes[t] <= c.l2.read_bytes[t]);
      // A tensor's lines dirty at the end are bytes it wrote and HBM has not received.
      CHECK(c.hbm.write_bytes[t] + c.l2_dirty_at_end[t] <= c.l2.write_bytes[t]);
      dirty += c.l2_dirty_at_end[t];
    }
    CHECK(dirty == c.l2_dirty_at_end_bytes);
  }
}

TEST_CASE("per-tensor bytes: the output's lines left dirty in L2 at the end are its, and shown") {
  // 4 heads of 1024 x 64 fit the L2: O is written to it and none of it reaches HBM during the
  // run. "Where do the bytes go" gave O 0 B of HBM writes and no bar.
  const Report r = simulate(test::profile(), test::request("flash2", 1, 4, 1024, 64));
  REQUIRE(r.feasible());
  const Counters& c = r.engine.total;
  const std::size_t o = index_of(TensorId::O);
  CHECK(c.hbm.write_bytes[o] == 0);
  CHECK(c.l2_dirty_at_end[o] == c.l2.write_bytes[o]);
  CHECK(c.l2_dirty_at_end[o] == 4 * 1024 * 64 * 2);
  // The JSON's per-tensor counts carry it beside the writes during the run (which the accuracy
  // tables compare with Nsight Compute's DRAM counters: unchanged), and they sum to the total.
  const nlohmann::json j = report_to_json(r);
  const nlohmann::json& pt = j["counters"]["per_tensor"];
  CHECK(pt["O"]["hbm_write_bytes"] == 0);
  CHECK(pt["O"]["hbm_write_dirty_at_end_bytes"] == c.l2_dirty_at_end[o]);
  std::uint64_t dirty = 0;
  for (const auto& [name, v] : pt.items())
    dirty += v["hbm_write_dirty_at_end_bytes"].get<std::uint64_t>();
  CHECK(dirty == j["counters"]["hbm_write_dirty_at_end_bytes"].get<std::uint64_t>());
  // The table's per-tensor rows have the column.
  const std::string table = format_table(r);
  CHECK(table.find("tensor          HBM read  HBM write  dirty@end    L2 read   L2 write") !=
        std::string::npos);
  CHECK(table.find("O                    0 B        0 B     524 KB        0 B     524 KB") !=
        std::string::npos);
}

TEST_CASE("wide-row matrices held in 4-row blocks still count every byte exactly") {
  // S and P rows of 4 KiB or more are laid out in 4-row x 1 KiB blocks, padded to whole blocks
  // of rows (odd query counts) and cut into 1 KiB pieces; the L2 must still see exactly the
  // bytes the two-level count moves, and write back or keep dirty no more than was written.
  test::ShapeGen gen(7);
  const std::int64_t kv_lens[] = {2048, 2560, 4096};
  const std::int64_t dims[] = {64, 128};
  for (int i = 0; i < 10; ++i) {
    RunRequest r = test::request("standard", 1, gen.pick(1, 3), gen.pick(1, 1500), gen.pick(dims),
                                 0, 32 * gen.pick(1, 4));
    r.problem.seq_kv = gen.pick(kv_lens);
    r.problem.causal = gen.coin();
    const Report on = simulate(test::profile(), r);
    r.engine.l2_enabled = false;
    const Report off = simulate(test::profile(), r);
    REQUIRE(on.feasible());
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    const Counters& c = on.engine.total;
    CHECK(c.l2.read_total() == off.engine.total.hbm.read_total());
    CHECK(c.l2.write_total() == off.engine.total.hbm.write_total());
    CHECK(c.hbm.write_total() + c.l2_dirty_at_end_bytes <= c.l2.write_total());
    CHECK(c.hbm.write_total() + c.l2_dirty_at_end_bytes > 0);
  }
}

namespace {

// One CTA that adds a 16 x 32 fp16 tile into dS (64 x 4096: 8 KiB rows, held in 4-row blocks).
// The tile's rows fill 4 whole blocks, which the address map sends as one two-level run.
class ReduceSchedule final : public WholeCtaSchedule {
 public:
  std::vector<TensorDecl> tensors() const override { return {{TensorId::dS, 1, 64, 4096, 2}}; }
  std::vector<KernelSpec> kernels() const override {
    KernelSpec k;
    k.name = "reduce";
    k.grid = {1, 1, 1};
    k.threads_per_cta = 128;
    return {k};
  }
  void emit_whole_cta(std::size_t, std::int64_t, std::vector<TileOp>& out) const override {
    out.push_back(TileOp::reduce({TensorId::dS, 0, 0, 16, 0, 32}));
  }
};

}  // namespace

TEST_CASE("a reduction into a wide-row matrix reads and writes every row of every block") {
  const std::uint64_t tile_bytes = 16 * 32 * 2;
  for (bool l2 : {true, false}) {
    CAPTURE(l2);
    EngineOptions o;
    o.l2_enabled = l2;
    const Counters c = run_schedule(test::profile(), ReduceSchedule(), o).total;
    const std::size_t ds = index_of(TensorId::dS);
    CHECK((l2 ? c.l2.read_bytes[ds] : c.hbm.read_bytes[ds]) == tile_bytes);
    CHECK((l2 ? c.l2.write_bytes[ds] : c.hbm.write_bytes[ds]) == tile_bytes);
  }
}

TEST_CASE("outputs written once are either written back or still dirty at the end") {
  const Report r = simulate(test::profile(), test::request("flash2", 2, 8, 2048, 64));
  const Counters& c = r.engine.total;
  CHECK(c.hbm.write_total() + c.l2_dirty_at_end_bytes == c.l2.write_total());
}

TEST_CASE("concurrent CTAs of one head share K/V in L2") {
  // Each head's K and V (4096 x 64 fp16 = 512 KiB each) fit easily in L2: DRAM reads of K stay
  // near one pass although every one of the 32 Q-block CTAs of a head reads all of K.
  const Report r = simulate(test::profile(), test::request("flash2", 4, 16, 4096, 64));
  const Counters& c = r.engine.total;
  const double k_bytes = 4.0 * 16 * 4096 * 64 * 2;
  CHECK(static_cast<double>(c.hbm.read_bytes[index_of(TensorId::K)]) <= 1.05 * k_bytes);
  CHECK(static_cast<double>(c.l2.read_bytes[index_of(TensorId::K)]) >= 30 * k_bytes);
}

TEST_CASE("narrow tiles of a wide-row matrix do not crowd the L2 (4-row x 1 KiB regions)") {
  // The QK^T GEMM writes S (8192 x 8192 per head, 16 KiB rows) in 128 x 32 tiles: 64 bytes of
  // each of 128 rows. Every column of tiles re-reads the head's whole Q (1 MiB), which stays in
  // the L2 between columns. With a 4 KiB region per row piece, a wave of CTAs took ~67 MB of
  // region slots for ~1 MB of S and evicted Q: 244 MB of Q came from DRAM instead of 2 MB.
  const HardwareProfile& hw = test::profile();
  const Report r = simulate(hw, test::request("standard", 1, 2, 8192, 64, 128, 32));
  REQUIRE(r.feasible());
  const KernelResult& qk = r.engine.kernels.front();
  REQUIRE(qk.spec.name == "gemm_qk");
  const std::uint64_t q_bytes = 2ULL * 8192 * 64 * 2;
  const std::uint64_t q_dram = qk.counters.hbm.read_bytes[index_of(TensorId::Q)];
  CHECK(q_dram >= q_bytes);
  CHECK(q_dram <= q_bytes + q_bytes / 10);
  // The row pieces' bytes are counted exactly all the same: S is written once, in full.
  CHECK(qk.counters.l2.write_bytes[index_of(TensorId::S)] == 2ULL * 8192 * 8192 * 2);
}

TEST_CASE("a cold L2 per kernel re-reads the intermediates from DRAM") {
  RunRequest r = test::request("standard", 1, 4, 1024, 64);
  const Report warm = simulate(test::profile(), r);
  r.engine.flush_l2_between_kernels = true;
  const Report cold = simulate(test::profile(), r);
  const std::size_t s = index_of(TensorId::S);
  // 8 MiB of S fits in L2: warm, softmax finds it there; cold, it comes from DRAM.
  CHECK(warm.engine.total.hbm.read_bytes[s] < cold.engine.total.hbm.read_bytes[s]);
  CHECK(cold.engine.total.hbm.read_bytes[s] == 4ull * 1024 * 1024 * 2);
}

TEST_CASE("runs are deterministic") {
  const RunRequest r = test::request("standard", 2, 4, 1000, 80, 64, 128);
  const Report a = simulate(test::profile(), r);
  const Report b = simulate(test::profile(), r);
  CHECK(a.engine.time_s == b.engine.time_s);
  CHECK(a.engine.total.hbm.read_total() == b.engine.total.hbm.read_total());
  CHECK(a.engine.total.hbm.write_total() == b.engine.total.hbm.write_total());
}

TEST_CASE("each kernel's timeline: launch first, whole waves in order, the tail at the end") {
  // Several waves (flash2, B=4 H=16 N=4096: 2048 CTAs), several kernels (standard at N=1024:
  // 21, 62 and 1.3 waves), steady-state extrapolation on and off: a wave end per whole wave,
  // increasing, within the kernel's time after its launch; the tail never negative, and with the
  // launch within the kernel's time. (Standard at N=1024: its 4096's score matrices made this
  // case 37 s of the sanitizers' unit_rest.)
  for (const bool exact : {false, true}) {
    for (const char* algo : {"flash2", "standard"}) {
      const std::int64_t n = std::string(algo) == "standard" ? 1024 : 4096;
      RunRequest req = test::request(algo, 4, 16, n, 64, 128, 64);
      req.engine.exact = exact;
      const Report r = simulate(test::profile(), req);
      REQUIRE(r.feasible());
      double sum = 0;
      for (const KernelResult& k : r.engine.kernels) {
        CAPTURE(k.spec.name);
        CAPTURE(exact);
        sum += k.time_s;
        CHECK(k.launch_s > 0);
        CHECK(k.tail_s >= 0);
        CHECK(k.launch_s + k.tail_s <= k.time_s);
        CHECK(k.wave_end_s.size() == static_cast<std::size_t>(std::floor(k.waves + 1e-9)));
        double previous = k.launch_s;
        for (double w : k.wave_end_s) {
          CHECK(w >= previous);
          previous = w;
        }
        CHECK(previous <= k.time_s * (1 + 1e-12));
      }
      CHECK(test::rel_close(sum, r.engine.time_s, 1e-12));
    }
  }
}

TEST_CASE("more HBM bandwidth never makes a memory-bound run slower") {
  HardwareProfile fast = test::profile();
  fast.hbm.bandwidth_gbps.value *= 2;
  const RunRequest r = test::request("standard", 2, 16, 2048, 64);
  const Report slow_r = simulate(test::profile(), r);
  const Report fast_r = simulate(fast, r);
  CHECK(slow_r.bound == "memory");
  CHECK(fast_r.engine.time_s < slow_r.engine.time_s);
}

TEST_CASE("a lower SM clock slows compute-bound work in proportion") {
  RunRequest r = test::request("flash2", 4, 16, 4096, 128);
  const Report boost = simulate(test::profile(), r);
  r.engine.sm_clock_mhz = test::profile().sm.boost_clock_mhz.value / 2;
  const Report half = simulate(test::profile(), r);
  CHECK(half.engine.time_s > 1.5 * boost.engine.time_s);
}

TEST_CASE("an L2-bound run slows less than the SM clock where the L2 has its own clock") {
  // Standard attention's score traffic is L2-bound; at 0.7 of the boost clock the H200 (its L2 in
  // its own clock domain) takes less than 1/0.7 of its boost time, and the same profile with the
  // L2 in the SM domain (the section removed) takes longer still. Counts never depend on it.
  const HardwareProfile own = test::profile("h200-sxm-141gb");
  REQUIRE(own.clock_domains.present);
  HardwareProfile sm_domain = own;
  sm_domain.clock_domains.present = false;
  RunRequest r = test::request("standard", 1, 8, 1024, 64);
  const double boost = own.sm.boost_clock_mhz.value;
  r.engine.sm_clock_mhz = boost;
  const Report fast = simulate(own, r);
  r.engine.sm_clock_mhz = 0.7 * boost;
  const Report own_slow = simulate(own, r);
  const Report sm_slow = simulate(sm_domain, r);
  CHECK(own_slow.engine.time_s < sm_slow.engine.time_s);
  CHECK(own_slow.engine.time_s < fast.engine.time_s / 0.7);
  CHECK(own_slow.engine.time_s >= fast.engine.time_s);
  CHECK(own_slow.engine.total.l2.read_total() == sm_slow.engine.total.l2.read_total());
  CHECK(own_slow.achieved.l2_peak_gbps == doctest::Approx(own.l2.bandwidth_gbps.value));
  CHECK(sm_slow.achieved.l2_peak_gbps == doctest::Approx(0.7 * own.l2.bandwidth_gbps.value));
}

TEST_CASE("bad problems are configuration errors naming the flag") {
  RunRequest r = test::request("flash2", 1, 1, 0, 64);
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r), doctest::Contains("--seq"), ConfigError);
  r = test::request("flash2", 1, 1, 128, 64);
  r.problem.causal = true;
  r.problem.seq_kv = 64;
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r), doctest::Contains("--seq-kv"), ConfigError);
  r = test::request("flsh2", 1, 1, 128, 64);
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r), doctest::Contains("did you mean 'flash2'"),
                       ConfigError);
  r = test::request("flash2", 1, 1, 128, 64);
  r.problem.dropout = 1.0;
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r), doctest::Contains("--dropout"), ConfigError);
}

TEST_CASE("the event queue hands out events earliest first, ties by issue, as a sorted list") {
  // The engine's loop: take the earliest event, put back a later one (replace_top) or drop it
  // (pop), sometimes add one (push). Heaps of 1 to 300 events (resident CTAs), times with many
  // ties; a sorted multiset is the reference.
  std::mt19937_64 rng(5);
  for (int resident : {1, 2, 3, 4, 5, 17, 132, 264, 300}) {
    CAPTURE(resident);
    detail::EventQueue q;
    std::set<std::pair<double, std::uint64_t>> reference;
    std::uint64_t issue = 0;
    auto add = [&](double t) {
      const auto slot = static_cast<std::uint32_t>(issue % 1000);
      q.push({t, issue, slot});
      reference.insert({t, issue++});
    };
    for (int i = 0; i < resident; ++i) add(static_cast<double>(rng() % 8));
    for (int step = 0; step < 20000 && !q.empty(); ++step) {
      const detail::Event top = q.top();
      const auto expected = *reference.begin();
      REQUIRE(top.t() == expected.first);
      const std::uint64_t top_issue = top.order >> detail::Event::kSlotBits;
      REQUIRE(top_issue == expected.second);
      reference.erase(reference.begin());
      const std::uint64_t r = rng() % 16;
      if (r == 0) {
        q.pop();
      } else {
        const double t = top.t() + static_cast<double>(rng() % 4);
        const auto slot = static_cast<std::uint32_t>(issue % 1000);
        q.replace_top({t, issue, slot});
        reference.insert({t, issue++});
        if (r == 1) add(t + static_cast<double>(rng() % 3));
      }
    }
  }
}
