// The layer's GEMM schedule (transformer/gemm_schedule.*): with the L2 off it moves exactly the
// closed form's HBM bytes (X once per column of output tiles, W once per row, Y once, ragged
// edges exact) and does 2MNK tensor-core FLOPs, over random shapes and tiles.
#include "transformer/gemm_schedule.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/engine/engine.hpp"
#include "test_support.hpp"
#include "transformer/gemm_tile_choice.hpp"

using iosim::GemmProblem;
using iosim::GemmTiling;
using iosim::TensorId;

namespace {

std::uint64_t gemm_at(const iosim::LevelTraffic& t, bool read, TensorId id) {
  return (read ? t.read_bytes : t.write_bytes)[iosim::index_of(id)];
}

}  // namespace

TEST_CASE("GEMM schedule: L2 off moves exactly the closed form's bytes, 2MNK FLOPs") {
  iosim::test::ShapeGen gen(3201);
  const std::int64_t tiles_m[] = {64, 128}, tiles_n[] = {64, 128, 256}, chunks[] = {32, 64};
  for (const char* hw_name : {"h100-sxm5-80gb", "a100-sxm4-80gb"}) {
    const iosim::HardwareProfile& hw = iosim::test::profile(hw_name);
    for (int trial = 0; trial < 30; ++trial) {
      GemmProblem p;
      p.m = gen.pick(1, 700);
      p.n = gen.pick(1, 700);
      p.k = gen.pick(1, 600);
      p.bias = gen.coin();
      p.dtype = gen.coin() ? iosim::Dtype::bf16 : iosim::Dtype::fp16;
      iosim::GemmTilingRequest req;
      req.bm = gen.pick(tiles_m);
      req.bn = gen.pick(tiles_n);
      req.bk = gen.pick(chunks);
      // W multicast to this many M tiles, X to this many N tiles: clusters are Hopper's.
      const int clusters[] = {1, 2, 4}, none[] = {1};
      const bool hopper = hw.compute.wgmma_latency_cycles.value > 0;
      req.cluster_m = hopper ? gen.pick(clusters) : gen.pick(none);
      req.cluster_n = hopper ? gen.pick(clusters) : gen.pick(none);
      req.cluster_n = std::min(req.cluster_n, iosim::kMaxClusterCtas / req.cluster_m);
      const GemmTiling t = iosim::resolve_gemm_tiling(hw, p, req);
      CAPTURE(hw_name);
      CAPTURE(p.m);
      CAPTURE(p.n);
      CAPTURE(p.k);
      CAPTURE(p.bias);
      CAPTURE(t.bm);
      CAPTURE(t.bn);
      CAPTURE(t.bk);
      iosim::EngineOptions opt;
      opt.l2_enabled = false;
      opt.exact = true;
      const auto sched = iosim::make_gemm_schedule(p, t);
      const iosim::EngineResult r = iosim::run_schedule(hw, *sched, opt);
      const iosim::GemmBytes want = iosim::gemm_closed_form(p, t);
      CHECK(r.total.hbm.read_total() == want.read);
      CHECK(r.total.hbm.write_total() == want.write);
      // Per tensor, from the sizes alone (independent of gemm_closed_form).
      const std::uint64_t eb = 2;
      const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
      const std::uint64_t col_tiles = u((p.n + t.bn - 1) / t.bn),
                          row_tiles = u((p.m + t.bm - 1) / t.bm);
      // X once per cluster of N tiles and W once per cluster of M tiles: a cluster's members
      // load shares that make one tile together.
      const std::uint64_t x_reads = (col_tiles + u(t.cluster_n) - 1) / u(t.cluster_n);
      const std::uint64_t w_reads = (row_tiles + u(t.cluster_m) - 1) / u(t.cluster_m);
      CAPTURE(t.cluster_m);
      CAPTURE(t.cluster_n);
      CHECK(gemm_at(r.total.hbm, true, TensorId::X) == u(p.m * p.k) * eb * x_reads);
      CHECK(gemm_at(r.total.hbm, true, TensorId::W) == u(p.n * p.k) * eb * w_reads);
      CHECK(gemm_at(r.total.hbm, false, TensorId::Y) == u(p.m * p.n) * eb);
      CHECK(gemm_at(r.total.hbm, true, TensorId::bias) == (p.bias ? u(p.n) * eb * row_tiles : 0));
      CHECK(r.total.tensor_flops == 2 * u(p.m) * u(p.n) * u(p.k));
      CHECK(r.total.fp32_flops == (p.bias ? u(p.m) * u(p.n) : 0));
      REQUIRE(r.kernels.size() == 1);
      CHECK(r.kernels[0].spec.grid.x == static_cast<std::int64_t>(row_tiles));
      CHECK(r.kernels[0].spec.grid.y == static_cast<std::int64_t>(col_tiles));
      CHECK(r.time_s > 0);
    }
  }
}

TEST_CASE("GEMM tiling: wgmma on Hopper, mma.sync on the A100, stages to fit, bad tiles refused") {
  GemmProblem p;
  p.m = p.n = p.k = 1024;
  const iosim::HardwareProfile& h100 = iosim::test::profile("h100-sxm5-80gb");
  const GemmTiling h = iosim::resolve_gemm_tiling(h100, p);
  CHECK(h.instruction == iosim::TensorInstruction::wgmma);
  // Hopper: the chosen tile (gemm_tile_choice.hpp), K chunks of 64, CTAs in groups of 8 M tiles,
  // stages filling shared memory less 16 KiB (at most 16); the A100 keeps 128 x 128 tiles.
  CHECK(h.bk == 64);
  CHECK(h.group_m == 8);
  GemmTiling one = h;
  one.pipeline_stages = 1;
  const std::int64_t room = h100.sm.smem_per_cta_max_bytes.value - 16 * 1024;
  CHECK(h.pipeline_stages * iosim::gemm_smem_bytes(one, p.dtype) <= room);
  CHECK((h.pipeline_stages == 16 ||
         (h.pipeline_stages + 1) * iosim::gemm_smem_bytes(one, p.dtype) > room));
  // A requested tile is kept, and the cluster and split with it.
  iosim::GemmTilingRequest asked;
  asked.bm = 128;
  asked.bn = 192;
  asked.cluster_m = 2;
  asked.cluster_n = 4;
  const GemmTiling hr = iosim::resolve_gemm_tiling(h100, p, asked);
  CHECK(hr.bm == 128);
  CHECK(hr.bn == 192);
  CHECK(hr.cluster_m == 2);
  CHECK(hr.cluster_n == 4);
  CHECK(hr.split_k == 1);
  const GemmTiling a = iosim::resolve_gemm_tiling(iosim::test::profile("a100-sxm4-80gb"), p);
  CHECK(a.instruction == iosim::TensorInstruction::mma_sync);
  CHECK(a.bn == 128);
  CHECK(a.cluster_m == 1);
  iosim::GemmTilingRequest negative;
  negative.cluster_m = -1;
  CHECK_THROWS_AS(iosim::resolve_gemm_tiling(iosim::test::profile("h100-sxm5-80gb"), p, negative),
                  iosim::ConfigError);
  negative.cluster_m = 0;
  negative.cluster_n = -1;
  CHECK_THROWS_AS(iosim::resolve_gemm_tiling(iosim::test::profile("h100-sxm5-80gb"), p, negative),
                  iosim::ConfigError);
  // A tiling built by hand reaches the schedule without resolve_gemm_tiling's checks: a cluster
  // of 0 would divide by zero in the CTA's share.
  GemmTiling no_cluster = h;
  no_cluster.cluster_n = 0;
  CHECK_THROWS_AS(iosim::make_gemm_schedule(p, no_cluster), iosim::ConfigError);
  no_cluster.cluster_n = 1;
  no_cluster.cluster_m = 0;
  CHECK_THROWS_AS(iosim::make_gemm_schedule(p, no_cluster), iosim::ConfigError);
  // 256 x 256 x 64 bf16 stages are 64 KiB each: two fit in the A100's 163 KiB, not three.
  iosim::GemmTilingRequest big;
  big.bm = big.bn = 256;
  const GemmTiling b = iosim::resolve_gemm_tiling(iosim::test::profile("a100-sxm4-80gb"), p, big);
  CHECK(b.pipeline_stages == 2);
  CHECK(iosim::gemm_smem_bytes(b, p.dtype) <=
        iosim::test::profile("a100-sxm4-80gb").sm.smem_per_cta_max_bytes.value);
  iosim::GemmTilingRequest huge;
  huge.bm = huge.bn = 4096;
  CHECK_THROWS_AS(iosim::resolve_gemm_tiling(iosim::test::profile("h100-sxm5-80gb"), p, huge),
                  iosim::ConfigError);
  iosim::GemmTilingRequest zero;
  zero.bk = -1;
  CHECK_THROWS_AS(iosim::resolve_gemm_tiling(iosim::test::profile("h100-sxm5-80gb"), p, zero),
                  iosim::ConfigError);
  p.m = 0;
  CHECK_THROWS_AS(iosim::make_gemm_schedule(p, h), iosim::ConfigError);
}

TEST_CASE("GEMM tiling: a K chunk whose stages no tile fits is refused, not chosen from nothing") {
  // --gemm-bk 1024 on the H100 left choose_gemm_tiling() no candidate, and it ranked an empty
  // list (a crash). The largest K chunk the choice runs with is two stages of its smallest tile
  // (8 x 64); one more is refused, by the choice itself too.
  GemmProblem p;
  p.m = 128;
  p.n = p.k = 4096;
  for (const char* name : {"h100-sxm5-80gb", "h200-sxm-141gb"}) {
    const iosim::HardwareProfile& hw = iosim::test::profile(name);
    CAPTURE(name);
    const std::int64_t most = iosim::max_chosen_gemm_bk(hw, p.dtype);
    CHECK(2 * (8 + 64) * most * 2 <= hw.sm.smem_per_cta_max_bytes.value);
    CHECK(2 * (8 + 64) * (most + 1) * 2 > hw.sm.smem_per_cta_max_bytes.value);
    iosim::GemmTilingRequest req;
    req.bk = most;
    CHECK(iosim::resolve_gemm_tiling(hw, p, req).bk == most);
    for (const std::int64_t bk : {most + 1, std::int64_t{1024}, std::int64_t{1} << 20}) {
      req.bk = bk;
      CHECK_THROWS_AS(iosim::resolve_gemm_tiling(hw, p, req), iosim::ConfigError);
      CHECK_THROWS_AS(iosim::choose_gemm_tiling(hw, p, bk), iosim::ConfigError);
    }
    CHECK(iosim::max_gemm_bk(hw, p.dtype, {}) == most);
    // A requested tile: one stage of it.
    iosim::GemmTilingRequest tile;
    tile.bm = tile.bn = 128;
    CHECK(iosim::max_gemm_bk(hw, p.dtype, tile) == hw.sm.smem_per_cta_max_bytes.value / (256 * 2));
  }
}

TEST_CASE("GEMM clusters: Hopper's, of at most 8 CTAs") {
  // --gemm-cluster-m 1048576 was accepted, and on the A100 (no clusters, no TMA multicast) a
  // cluster shared its operands among CTAs all the same.
  GemmProblem p;
  p.m = p.n = p.k = 1024;
  const iosim::HardwareProfile& h100 = iosim::test::profile("h100-sxm5-80gb");
  const iosim::HardwareProfile& a100 = iosim::test::profile("a100-sxm4-80gb");
  iosim::GemmTilingRequest req;
  req.bm = req.bn = 128;
  for (const auto& [cluster_m, cluster_n, fits] :
       {std::tuple{2, 4, true}, std::tuple{8, 1, true}, std::tuple{1, 8, true},
        std::tuple{4, 4, false}, std::tuple{16, 1, false}, std::tuple{1048576, 1, false}}) {
    // (Copies: clang 14 refuses a structured binding inside CAPTURE's lambda.)
    const int cm = cluster_m, cn = cluster_n;
    CAPTURE(cm);
    CAPTURE(cn);
    req.cluster_m = cm;
    req.cluster_n = cn;
    if (fits) {
      CHECK(iosim::resolve_gemm_tiling(h100, p, req).cluster_m == cm);
    } else {
      CHECK_THROWS_WITH_AS(iosim::resolve_gemm_tiling(h100, p, req),
                           doctest::Contains("a thread-block cluster holds at most 8"),
                           iosim::ConfigError);
    }
    CHECK_THROWS_WITH_AS(iosim::resolve_gemm_tiling(a100, p, req),
                         doctest::Contains("has no thread-block clusters"), iosim::ConfigError);
  }
  req.cluster_m = req.cluster_n = 1;
  CHECK(iosim::resolve_gemm_tiling(a100, p, req).cluster_m == 1);
  // One side requested, the chosen other side fits the cluster beside it (--gemm-cluster-m 8
  // with the choice's 4 along N was a cluster of 32).
  for (const std::int64_t m : {std::int64_t{128}, std::int64_t{4096}}) {
    for (const int side : {1, 2, 4, 8}) {
      GemmProblem q = p;
      q.m = m;
      q.n = 4096;
      q.k = 4096;
      iosim::GemmTilingRequest one_side;
      one_side.cluster_m = side;
      const GemmTiling tm = iosim::resolve_gemm_tiling(h100, q, one_side);
      CHECK(tm.cluster_m == side);
      CHECK(tm.cluster_m * tm.cluster_n <= iosim::kMaxClusterCtas);
      one_side.cluster_m = 0;
      one_side.cluster_n = side;
      const GemmTiling tn = iosim::resolve_gemm_tiling(h100, q, one_side);
      CHECK(tn.cluster_n == side);
      CHECK(tn.cluster_m * tn.cluster_n <= iosim::kMaxClusterCtas);
    }
  }
}

TEST_CASE("GEMM: no faster than the tensor cores or HBM allow; a decode GEMM streams its weights") {
  const iosim::HardwareProfile& hw = iosim::test::profile("h100-sxm5-80gb");
  const auto run = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    GemmProblem p;
    p.m = m;
    p.n = n;
    p.k = k;
    const auto sched = iosim::make_gemm_schedule(p, iosim::resolve_gemm_tiling(hw, p));
    return iosim::run_schedule(hw, *sched, iosim::EngineOptions{});
  };
  // 4096^3: 137 GFLOP, at most the profile's bf16 peak.
  const iosim::EngineResult square = run(4096, 4096, 4096);
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  CHECK(square.time_s >= flops / (hw.compute.tensor_bf16_tflops.value * 1e12));
  CHECK(square.kernels.at(0).bound != "latency");
  // Batch-4 decode through Llama-3-8B's gate/up projection: 235 MB of weights, 0.5 GFLOP. The
  // weights are read once (the four rows fit one M tile) and the time is their stream's.
  const iosim::EngineResult decode = run(4, 28672, 4096);
  const double weights = 28672.0 * 4096 * 2;
  CHECK(static_cast<double>(decode.total.hbm.read_total()) >= weights);
  CHECK(static_cast<double>(decode.total.hbm.read_total()) < 1.01 * weights);
  CHECK(decode.kernels.at(0).bound == "memory");
  const double stream_s =
      weights / (hw.hbm.bandwidth_gbps.value * hw.hbm.achievable_fraction.value * 1e9);
  CHECK(decode.time_s >= stream_s);
  CHECK(decode.time_s < 1.5 * stream_s);
}

TEST_CASE("GEMM CTA groups: the same bytes without L2, every tile once, fewer HBM reads with it" *
          doctest::test_suite("long")) {
  const iosim::HardwareProfile& hw = iosim::test::profile("h100-sxm5-80gb");
  iosim::test::ShapeGen gen(3202);
  for (int trial = 0; trial < iosim::test::cases(20); ++trial) {
    GemmProblem p;
    p.m = gen.pick(1, 1500);
    p.n = gen.pick(1, 700);
    p.k = gen.pick(1, 300);
    iosim::GemmTilingRequest req;
    req.group_m = gen.pick(1, 9);
    const GemmTiling t = iosim::resolve_gemm_tiling(hw, p, req);
    CAPTURE(p.m);
    CAPTURE(p.n);
    CAPTURE(t.group_m);
    const auto sched = iosim::make_gemm_schedule(p, t);
    // Every output tile is stored by exactly one CTA: Y's bytes are written once, each element
    // once.
    iosim::EngineOptions opt;
    opt.l2_enabled = false;
    opt.exact = true;
    const iosim::EngineResult r = iosim::run_schedule(hw, *sched, opt);
    const iosim::GemmBytes want = iosim::gemm_closed_form(p, t);
    CHECK(r.total.hbm.read_total() == want.read);
    CHECK(r.total.hbm.write_total() == want.write);
    std::vector<int> stored(static_cast<std::size_t>(sched->kernels()[0].grid.count()), 0);
    const std::int64_t tm = (p.m + t.bm - 1) / t.bm;
    for (std::int64_t cta = 0; cta < sched->kernels()[0].grid.count(); ++cta) {
      std::vector<iosim::TileOp> ops;
      sched->emit_cta(0, cta, ops);
      REQUIRE(ops.back().kind == iosim::OpKind::store);
      const iosim::TileRef& y = ops.back().tile;
      ++stored.at(static_cast<std::size_t>((y.col0 / t.bn) * tm + y.row0 / t.bm));
    }
    CHECK(std::count(stored.begin(), stored.end(), 1) ==
          static_cast<std::ptrdiff_t>(stored.size()));
  }
  // Llama-3-70B's MLP up projection at 8192 tokens (tp 8): X is 128 MiB, more than the L2. Walking
  // all 64 M tiles per N tile streams X from HBM once per N tile; groups of 8 keep it in L2.
  GemmProblem up;
  up.m = 8192;
  up.n = 7168;
  up.k = 8192;
  const auto hbm_read = [&](std::int64_t group) {
    iosim::GemmTilingRequest req;
    req.group_m = group;
    req.bn = 128;  // 128 x 128 tiles without multicast (the prefill default moves X less)
    req.cluster_m = 1;
    const auto sched = iosim::make_gemm_schedule(up, iosim::resolve_gemm_tiling(hw, up, req));
    return iosim::run_schedule(hw, *sched, iosim::EngineOptions{}).total.hbm.read_total();
  };
  // A group of all 64 M tiles is the M tile fastest over the whole of M.
  const std::uint64_t ungrouped = hbm_read(64), grouped = hbm_read(8);
  const std::uint64_t compulsory = 2ull * (8192ull * 8192 + 7168ull * 8192);
  CHECK(grouped >= compulsory);
  CHECK(grouped < ungrouped / 2);
}

TEST_CASE("GEMM split-K: partials out and back, Y once, 2MNK FLOPs, a reduction kernel") {
  iosim::test::ShapeGen gen(3203);
  const iosim::HardwareProfile& hw = iosim::test::profile("h100-sxm5-80gb");
  for (int trial = 0; trial < 25; ++trial) {
    GemmProblem p;
    p.m = gen.pick(1, 300);
    p.n = gen.pick(1, 500);
    p.k = gen.pick(128, 1200);
    p.bias = gen.coin();
    iosim::GemmTilingRequest req;
    req.bm = 64;
    req.bn = 128;
    req.split_k = static_cast<int>(std::min<std::int64_t>(gen.pick(2, 7), (p.k + 63) / 64));
    const GemmTiling t = iosim::resolve_gemm_tiling(hw, p, req);
    CAPTURE(p.m);
    CAPTURE(p.n);
    CAPTURE(p.k);
    CAPTURE(t.split_k);
    // Whole chunks per split, none left empty.
    const std::int64_t chunks = (p.k + 63) / 64, per = (chunks + req.split_k - 1) / req.split_k;
    CHECK(t.split_k == (chunks + per - 1) / per);
    iosim::EngineOptions opt;
    opt.l2_enabled = false;
    opt.exact = true;
    const iosim::EngineResult r = iosim::run_schedule(hw, *iosim::make_gemm_schedule(p, t), opt);
    const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    const std::uint64_t partials = u(t.split_k) * u(p.m) * u(p.n) * 4;
    CHECK(gemm_at(r.total.hbm, false, TensorId::Y_partial) == partials);
    CHECK(gemm_at(r.total.hbm, true, TensorId::Y_partial) == partials);
    CHECK(gemm_at(r.total.hbm, false, TensorId::Y) == u(p.m * p.n) * 2);
    CHECK(gemm_at(r.total.hbm, true, TensorId::bias) ==
          (p.bias ? u(p.n) * 2 * u((p.m + 15) / 16) : 0));
    const iosim::GemmBytes want = iosim::gemm_closed_form(p, t);
    CHECK(r.total.hbm.read_total() == want.read);
    CHECK(r.total.hbm.write_total() == want.write);
    CHECK(r.total.tensor_flops == 2 * u(p.m) * u(p.n) * u(p.k));
    CHECK(r.total.fp32_flops == u(t.split_k - 1 + (p.bias ? 1 : 0)) * u(p.m) * u(p.n));
    REQUIRE(r.kernels.size() == (t.split_k > 1 ? 2u : 1u));
  }
  iosim::GemmTilingRequest too_many;
  too_many.split_k = 3;
  GemmProblem small;
  small.m = small.n = 64;
  small.k = 128;  // two chunks of 64
  CHECK_THROWS_AS(iosim::resolve_gemm_tiling(hw, small, too_many), iosim::ConfigError);
  too_many.split_k = -1;
  CHECK_THROWS_AS(iosim::resolve_gemm_tiling(hw, small, too_many), iosim::ConfigError);
}

TEST_CASE("GEMM tile choice: decode-sized GEMMs fill the GPU, never slower than a fixed tile") {
  const iosim::HardwareProfile& hw = iosim::test::profile("h100-sxm5-80gb");
  iosim::test::ShapeGen gen(3204);
  for (int trial = 0; trial < 4; ++trial) {
    GemmProblem p;
    p.m = gen.pick(1, 256);
    p.n = 256 * gen.pick(4, 40);
    p.k = 512 * gen.pick(2, 16);
    CAPTURE(p.m);
    CAPTURE(p.n);
    CAPTURE(p.k);
    const GemmTiling t = iosim::resolve_gemm_tiling(hw, p);
    // The estimate is never under the HBM floor of the operands read once.
    const iosim::GemmChoice c =
        iosim::estimate_gemm_tiling(hw, p, t.bm, t.bn, t.bk, t.cluster_m, t.cluster_n, t.split_k);
    const double floor_s = 2.0 * static_cast<double>(p.m * p.k + p.n * p.k + p.m * p.n) /
                           (hw.hbm.bandwidth_gbps.value * hw.hbm.achievable_fraction.value * 1e9);
    CHECK(c.estimate_s >= floor_s);
    // Enough CTAs to draw on most SMs' ports.
    const std::int64_t ctas = ((p.m + t.bm - 1) / t.bm) * ((p.n + t.bn - 1) / t.bn) * t.split_k;
    CHECK(ctas >= hw.sm.count.value / 2);
    iosim::EngineOptions boost;
    boost.sm_clock_mhz = hw.sm.boost_clock_mhz.value;
    const double chosen = iosim::run_schedule(hw, *iosim::make_gemm_schedule(p, t), boost).time_s;
    iosim::GemmTilingRequest fixed;
    fixed.bm = fixed.bn = 128;
    fixed.cluster_m = 1;
    const GemmTiling f = iosim::resolve_gemm_tiling(hw, p, fixed);
    CHECK(chosen <= iosim::run_schedule(hw, *iosim::make_gemm_schedule(p, f), boost).time_s);
  }
}

TEST_CASE("property: the tile estimate's L2 bytes are the schedule's operand loads") {
  // The estimate ranks candidates partly by L2 bytes; it once counted a smaller last cluster as
  // a whole one (3 M tiles in clusters of 2 read W 1.5x, where the schedule reads it twice) and
  // chose an LM head's tile that the engine timed 7% slower.
  const iosim::HardwareProfile& hw = iosim::test::profile("h200-sxm-141gb");
  iosim::test::ShapeGen gen(3207);
  const std::int64_t sides[] = {16, 32, 64, 128, 192, 256};
  const int clusters[] = {1, 2, 4};
  for (int trial = 0; trial < 40; ++trial) {
    GemmProblem p;
    p.m = gen.pick(1, 1500);
    p.n = gen.pick(8, 3000);
    p.k = 64 * gen.pick(1, 40);
    iosim::GemmTilingRequest req;
    req.bm = gen.pick(sides);
    req.bn = gen.pick(sides);
    req.cluster_m = gen.pick(clusters);
    req.cluster_n = std::min(gen.pick(clusters), iosim::kMaxClusterCtas / req.cluster_m);
    req.split_k = 1;
    const GemmTiling t = iosim::resolve_gemm_tiling(hw, p, req);
    CAPTURE(p.m);
    CAPTURE(p.n);
    CAPTURE(p.k);
    CAPTURE(t.bm);
    CAPTURE(t.bn);
    CAPTURE(t.cluster_m);
    CAPTURE(t.cluster_n);
    const iosim::GemmChoice c =
        iosim::estimate_gemm_tiling(hw, p, t.bm, t.bn, t.bk, t.cluster_m, t.cluster_n, 1);
    const iosim::GemmBytes b = iosim::gemm_closed_form(p, t);  // no bias: operands only
    CHECK(static_cast<double>(c.l2_bytes) ==
          doctest::Approx(static_cast<double>(b.read)).epsilon(1e-9));
  }
}

TEST_CASE("GEMM clusters of 4 run on the SMs their placement leaves") {
  // 132 tiles of 128 x 256 on the H200 (tensor-bound): in clusters of 2 one wave of 132 SMs; in
  // clusters of 4 (2 x 2) the measured 120 SMs, so 12 tiles wait for a second round; without the
  // profile's clusters section, one wave again.
  const iosim::HardwareProfile& h200 = iosim::test::profile("h200-sxm-141gb");
  iosim::HardwareProfile anywhere = h200;
  anywhere.clusters.present = false;
  GemmProblem p;
  p.m = 128 * 12;
  p.n = 256 * 11;
  p.k = 4096;
  const auto run = [&](const iosim::HardwareProfile& hw, int cm, int cn) {
    iosim::GemmTilingRequest req;
    req.bm = 128;
    req.bn = 256;
    req.cluster_m = cm;
    req.cluster_n = cn;
    req.split_k = 1;
    iosim::EngineOptions opt;
    opt.sm_clock_mhz = 1980;
    return iosim::run_schedule(
        hw, *iosim::make_gemm_schedule(p, iosim::resolve_gemm_tiling(hw, p, req)), opt);
  };
  const iosim::EngineResult two = run(h200, 2, 1), four = run(h200, 2, 2),
                            four_anywhere = run(anywhere, 2, 2);
  REQUIRE(four.kernels.size() == 1);
  CHECK(four.kernels[0].spec.cluster_ctas == 4);
  CHECK(four.kernels[0].occupancy.sms == 120);
  CHECK(four.kernels[0].waves == doctest::Approx(132.0 / 120.0));
  CHECK(two.kernels[0].occupancy.sms == 132);
  CHECK(four_anywhere.kernels[0].occupancy.sms == 132);
  // The same loads and work; a second round of whole tiles takes most of another tile's time.
  CHECK(four.total.l2.read_total() == four_anywhere.total.l2.read_total());
  CHECK(four.time_s > 1.6 * four_anywhere.time_s);
}

TEST_CASE("GEMM tile choice memo: each machine keeps its own answer, in either order") {
  // resolve_gemm_tiling() remembers a choice by the profile's values: the H200 and the same
  // profile with half its SMs (one name, other values) choose differently for decode shapes, and
  // asking in either order gives each its own choice, equal to asking again.
  const iosim::HardwareProfile& full = iosim::test::profile("h200-sxm-141gb");
  iosim::HardwareProfile half = full;
  half.sm.count.value = 66;
  const auto tile = [](const iosim::HardwareProfile& hw, std::int64_t m, std::int64_t n) {
    GemmProblem p;
    p.m = m;
    p.n = n;
    p.k = 1024;  // short: under the sanitizers each choice times up to 8 candidates
    const GemmTiling t = iosim::resolve_gemm_tiling(hw, p);
    return std::vector<std::int64_t>{t.bm, t.bn, t.cluster_m, t.split_k, t.pipeline_stages};
  };
  int differ = 0;
  for (const std::int64_t n : {4096, 6144}) {
    const std::int64_t m = 16;
    CAPTURE(n);
    const bool full_first = n == 4096;
    const auto a = full_first ? tile(full, m, n) : tile(half, m, n);
    const auto b = full_first ? tile(half, m, n) : tile(full, m, n);
    const auto full_t = full_first ? a : b, half_t = full_first ? b : a;
    differ += full_t != half_t;
    CHECK(tile(full, m, n) == full_t);
    CHECK(tile(half, m, n) == half_t);
  }
  CHECK(differ == 2);
}

TEST_CASE("GEMM batch: B independent GEMMs move B times one's bytes and FLOPs, each its own") {
  // torch.bmm's batch (multi-head latent attention's per-head products): every member has its own
  // X, W and Y, so with the L2 off the batch moves exactly `batch` times the bytes of one member
  // run alone, per tensor, and the closed form says the same; the grid holds every member's tiles
  // (and splits). Split-K, clusters and bias too, on Hopper and the A100.
  iosim::test::ShapeGen gen(3207);
  const std::int64_t tiles_m[] = {64, 128}, tiles_n[] = {64, 128}, chunks[] = {32, 64};
  for (const char* hw_name : {"h100-sxm5-80gb", "a100-sxm4-80gb"}) {
    const iosim::HardwareProfile& hw = iosim::test::profile(hw_name);
    const bool hopper = hw.compute.wgmma_latency_cycles.value > 0;
    for (int trial = 0; trial < 12; ++trial) {
      GemmProblem one;
      one.m = gen.pick(1, 200);
      one.n = gen.pick(1, 300);
      one.k = gen.pick(1, 400);
      one.bias = gen.pick(0, 3) == 0;
      iosim::GemmTilingRequest req;
      req.bm = gen.pick(tiles_m);
      req.bn = gen.pick(tiles_n);
      req.bk = gen.pick(chunks);
      const int clusters[] = {1, 2}, none[] = {1};
      req.cluster_m = hopper ? gen.pick(clusters) : gen.pick(none);
      req.cluster_n = hopper ? gen.pick(clusters) : gen.pick(none);
      const std::int64_t k_chunks = (one.k + req.bk - 1) / req.bk;
      req.split_k =
          static_cast<int>(gen.coin() ? 1 : gen.pick(1, std::min<std::int64_t>(k_chunks, 4)));
      GemmProblem batched = one;
      batched.batch = gen.pick(2, 6);
      const GemmTiling t = iosim::resolve_gemm_tiling(hw, batched, req);
      CAPTURE(hw_name);
      CAPTURE(one.m);
      CAPTURE(one.n);
      CAPTURE(one.k);
      CAPTURE(one.bias);
      CAPTURE(batched.batch);
      CAPTURE(t.split_k);
      CAPTURE(t.cluster_m);
      CAPTURE(t.cluster_n);
      iosim::EngineOptions opt;
      opt.l2_enabled = false;
      opt.exact = true;
      const iosim::EngineResult a =
          iosim::run_schedule(hw, *iosim::make_gemm_schedule(one, t), opt);
      const iosim::EngineResult b =
          iosim::run_schedule(hw, *iosim::make_gemm_schedule(batched, t), opt);
      const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
      const std::uint64_t members = u(batched.batch);
      for (const TensorId id :
           {TensorId::X, TensorId::W, TensorId::Y, TensorId::bias, TensorId::Y_partial}) {
        CAPTURE(iosim::index_of(id));
        CHECK(gemm_at(b.total.hbm, true, id) == members * gemm_at(a.total.hbm, true, id));
        CHECK(gemm_at(b.total.hbm, false, id) == members * gemm_at(a.total.hbm, false, id));
      }
      CHECK(b.total.tensor_flops == members * 2 * u(one.m) * u(one.n) * u(one.k));
      CHECK(b.total.fp32_flops == members * a.total.fp32_flops);
      const iosim::GemmBytes want = iosim::gemm_closed_form(batched, t);
      const iosim::GemmBytes member = iosim::gemm_closed_form(one, t);
      CHECK(b.total.hbm.read_total() == want.read);
      CHECK(b.total.hbm.write_total() == want.write);
      CHECK(want.read == members * member.read);
      CHECK(want.write == members * member.write);
      REQUIRE(b.kernels.size() == a.kernels.size());
      CHECK(b.kernels[0].spec.grid.z == static_cast<std::int64_t>(members) * t.split_k);
      if (b.kernels.size() == 2) CHECK(b.kernels[1].spec.grid.z == batched.batch);
    }
  }
  GemmProblem none;
  none.m = none.n = none.k = 64;
  none.batch = 0;
  CHECK_THROWS_WITH_AS(iosim::make_gemm_schedule(none, GemmTiling{}),
                       "GEMM batch must be positive, got 0", iosim::ConfigError);
}

TEST_CASE("GEMM batch: the tile choice's estimate counts every member's CTAs and bytes") {
  // 128 heads' q_absorb at decode batch 8 (DeepSeek-V3): a member of 8 x 512 x 128 is 4 CTAs of
  // 64 x 128 tiles, the batch 512 of them, 4 waves on the H100's 132 SMs where one member's fill
  // a wave; its L2 bytes are 128 members'. (Estimated as one member, the choice split K to fill
  // the GPU with a single head's 4 tiles.)
  const iosim::HardwareProfile& hw = iosim::test::profile("h100-sxm5-80gb");
  GemmProblem one;
  one.m = 8;
  one.n = 512;
  one.k = 128;
  GemmProblem batched = one;
  batched.batch = 128;
  const iosim::GemmChoice a = iosim::estimate_gemm_tiling(hw, one, 64, 128, 64, 1, 1, 1);
  const iosim::GemmChoice b = iosim::estimate_gemm_tiling(hw, batched, 64, 128, 64, 1, 1, 1);
  const std::int64_t sms = hw.sm.count.value;
  CHECK(a.waves == 1.0);
  CHECK(b.waves == static_cast<double>((512 + sms - 1) / sms));
  CHECK(b.l2_bytes == 128 * a.l2_bytes);
  CHECK(b.estimate_s > a.estimate_s);
}
