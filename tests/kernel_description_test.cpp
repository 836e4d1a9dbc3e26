// Kernel descriptions (algorithms/kernel_description.hpp): a preset's description runs exactly as
// its algorithm over many shapes; mechanisms change the time and never the bytes; the two-pass
// backward equals its closed form, computes exact gradients and never moves fewer bytes than
// the compulsory ones; bad descriptions are refused with the key path and the reason.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "algorithms/dataflow.hpp"
#include "algorithms/kernel_schema.hpp"
#include "api/tune.hpp"
#include "reports/writers.hpp"
#include "sim/base/yaml_reader.hpp"
#include "test_support.hpp"

namespace iosim {
namespace {

using nlohmann::json;

RunRequest random_request(test::ShapeGen& gen, Pass pass, std::int64_t max_seq) {
  RunRequest r;
  AttentionProblem& p = r.problem;
  p.batch = gen.pick(1, 2);
  p.heads = gen.pick(1, 3);
  p.seq = gen.pick(1, max_seq);
  p.seq_kv = gen.coin() ? p.seq : p.seq + gen.pick(0, max_seq);
  const std::int64_t dims[] = {16, 32, 64, 128};
  p.head_dim = gen.pick(dims);
  p.causal = gen.coin();
  p.pass = pass;
  const std::int64_t blocks[] = {16, 32, 64, 128};
  r.tiling.block_q = gen.pick(blocks);
  r.tiling.block_kv = gen.pick(blocks);
  r.engine.l2_enabled = gen.coin();
  return r;
}

Report run_kernel(const KernelDescription& d, RunRequest r, const std::string& gpu) {
  r.kernel = std::make_shared<const KernelDescription>(d);
  return simulate(test::profile(gpu), r);
}

// A description of the two-pass backward alone, every other field left to its default.
KernelDescription two_pass_description() {
  KernelDescription d;
  d.name = "two_pass";
  d.source = "test";
  d.backward = "two_pass";
  return d;
}

// Everything a run reports that a user reads, as one JSON value (the wall time aside).
json summary(const Report& rep) {
  json kernels = json::array();
  for (const KernelResult& k : rep.engine.kernels) {
    kernels.push_back({k.spec.name, k.spec.grid.count(), k.spec.smem_bytes_per_cta,
                       k.spec.registers_per_thread, k.occupancy.ctas_per_sm, k.time_s,
                       k.counters.hbm.read_total(), k.counters.hbm.write_total(),
                       k.counters.l2.read_total(), k.counters.smem_read_bytes, k.counters.flops()});
  }
  return {rep.infeasible_reason,      rep.tiling.block_q,
          rep.tiling.block_kv,        rep.tiling.threads,
          rep.tiling.pipeline_stages, rep.bounds.closed_form_bytes,
          rep.engine.time_s,          kernels};
}

}  // namespace

// A built-in algorithm is its preset planned as a description (registry.cpp): this holds what
// `iosim kernels --show` prints, read back as a user's file is, to the built-in name.
TEST_CASE("every preset's description runs exactly as its algorithm, over random shapes") {
  test::ShapeGen gen(27);
  const Pass passes[] = {Pass::fwd, Pass::bwd, Pass::fwdbwd};
  int compared = 0;
  for (const KernelDescription& preset : kernel_presets()) {
    // What `iosim kernels --show` prints, read back as a user's file is.
    const KernelDescription d = parse_kernel_description(kernel_description_json(preset), "test");
    for (int i = 0; i < 6; ++i) {
      const Pass pass = preset.backward.empty() ? Pass::fwd : gen.pick(passes);
      RunRequest r = random_request(gen, pass, 300);
      r.algorithm = preset.name;
      r.engine.sm_clock_mhz = 1500;
      if (preset.forward == "split_kv" || preset.forward == "paged") {
        r.tiling = {};
        r.problem.seq = gen.pick(1, 4);
        r.problem.causal = false;
      }
      CAPTURE(preset.name);
      CAPTURE(pass_name(pass));
      CAPTURE(r.problem.seq);
      CAPTURE(r.problem.seq_kv);
      CAPTURE(r.problem.head_dim);
      const char* gpu = preset.name == "flash3" ? "h100-sxm5-80gb" : "a100-sxm4-80gb";
      const Report by_name = simulate(test::profile(gpu), r);
      const Report described = run_kernel(d, r, gpu);
      CHECK(summary(described) == summary(by_name));
      ++compared;
    }
  }
  CHECK(compared == 6 * static_cast<int>(kernel_presets().size()));
}

// Mechanisms set the time; the bytes the SMs request are the dataflow's. (DRAM bytes may move a
// little with the L2 on: timing decides which CTAs share the L2 at once.)
TEST_CASE("mechanisms change the time, never the requested bytes: query-stationary forward") {
  test::ShapeGen gen(5);
  for (int i = 0; i < 12; ++i) {
    RunRequest r = random_request(gen, Pass::fwd, 2048);
    r.tiling.block_q = 128;
    r.tiling.block_kv = 64;
    r.problem.batch = 2;
    r.problem.heads = 8;
    r.engine.sm_clock_mhz = 1755;
    KernelDescription mma = kernel_preset("flash2");
    mma.name = "mine";
    KernelDescription wg = mma;
    wg.mechanisms = {MmaFamily::wgmma_rs, LoadPath::tma, WarpRoles::uniform, false, MmaWait::step};
    const Report a = run_kernel(mma, r, "h100-sxm5-80gb");
    const Report b = run_kernel(wg, r, "h100-sxm5-80gb");
    REQUIRE(a.feasible());
    REQUIRE(b.feasible());
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.head_dim);
    if (!r.engine.l2_enabled) {
      CHECK(a.engine.total.hbm.read_total() == b.engine.total.hbm.read_total());
      CHECK(a.engine.total.hbm.write_total() == b.engine.total.hbm.write_total());
    }
    CHECK(a.engine.total.l2.read_total() == b.engine.total.l2.read_total());
    CHECK(a.engine.total.tensor_flops == b.engine.total.tensor_flops);
    // wgmma reads the K/V tile once per warpgroup, not once per warp.
    CHECK(b.engine.total.smem_read_bytes < a.engine.total.smem_read_bytes);
    CHECK(b.engine.kernels[0].spec.tensor_instruction == TensorInstruction::wgmma);
    CHECK(b.engine.kernels[0].spec.producer_warps == 0);
    CHECK(b.engine.kernels[0].spec.consumer_warpgroups == 1);
  }
}

// The query-stationary forward with its K/V blocks visited from the last down (dataflow.kv_order).
KernelDescription descending_description() {
  KernelDescription d = kernel_preset("flash2");
  d.name = "fa2_library";
  d.source = "test";
  d.kv_order = KvOrder::descending;
  return d;
}

TEST_CASE("kv_order: the visiting order moves no requested byte and keeps the numerics exact" *
          doctest::test_suite("long")) {
  test::ShapeGen gen(46);
  const KernelDescription asc = [] {
    KernelDescription d = kernel_preset("flash2");
    d.name = "fa2_library";
    return d;
  }();
  const KernelDescription desc = descending_description();
  int executed = 0;
  for (int i = 0; i < test::cases(16); ++i) {
    RunRequest r = random_request(gen, Pass::fwd, 600);
    r.execute = i % 2 == 0;
    r.seed = static_cast<std::uint64_t>(i) + 3;
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    CAPTURE(r.problem.head_dim);
    CAPTURE(r.problem.causal);
    CAPTURE(r.engine.l2_enabled);
    const Report a = run_kernel(asc, r, "h100-sxm5-80gb");
    const Report b = run_kernel(desc, r, "h100-sxm5-80gb");
    REQUIRE(a.feasible() == b.feasible());
    if (!a.feasible()) continue;
    // The same tiles requested from the L2, the same work, the same closed form.
    CHECK(a.engine.total.l2.read_total() == b.engine.total.l2.read_total());
    CHECK(a.engine.total.l2.write_total() == b.engine.total.l2.write_total());
    CHECK(a.engine.total.tensor_flops == b.engine.total.tensor_flops);
    CHECK(a.bounds.closed_form_bytes == b.bounds.closed_form_bytes);
    // Without an L2 every request reaches HBM: the order cannot matter.
    if (!r.engine.l2_enabled) {
      CHECK(a.engine.total.hbm.read_total() == b.engine.total.hbm.read_total());
      CHECK(a.engine.total.hbm.write_total() == b.engine.total.hbm.write_total());
    }
    if (r.execute) {
      REQUIRE(b.numerics.max_abs_error.has_value());
      CHECK(*b.numerics.max_abs_error <= 1e-4);
      ++executed;
    }
  }
  CHECK(executed >= (test::kSanitized ? 0 : 6));  // the sanitized run draws a tenth of the shapes
}

// What the order changes: with causal masking, CTAs walking down start at their own diagonals,
// so a head's K/V is re-read from DRAM once it outgrows what the L2 keeps of data every SM reads
// (both partitions hold a copy); walking up, the CTAs that start together share each block.
// (PyTorch's FlashAttention-2 forward on the H100: cuda_validate/measurements/h100-sxm5-80gb/
// edge_l2_2026-12-06.) Golden: B=1, H=8, N=16384, d=128, 128 x 64 tiles, a 6 MB L2.
TEST_CASE("golden: kv_order descending re-reads a causal head's K/V that the L2 cannot hold") {
  RunRequest r;
  r.problem.batch = 1;
  r.problem.heads = 8;
  r.problem.seq = r.problem.seq_kv = 16384;
  r.problem.head_dim = 128;
  r.problem.causal = true;
  r.problem.pass = Pass::fwd;
  r.tiling.block_q = 128;
  r.tiling.block_kv = 64;
  r.engine.flush_l2_between_kernels = true;
  r.engine.sm_clock_mhz = 1755;
  HardwareProfile hw = test::profile("h100-sxm5-80gb");
  hw.l2.size_bytes.value = 6 * 1024 * 1024;
  KernelDescription asc = kernel_preset("flash2");
  asc.name = "fa2_library";
  auto run = [&](const KernelDescription& d, const HardwareProfile& gpu) {
    RunRequest q = r;
    q.kernel = std::make_shared<const KernelDescription>(d);
    return simulate(gpu, q);
  };
  const Report up = run(asc, hw);
  const Report down = run(descending_description(), hw);
  REQUIRE(up.feasible());
  REQUIRE(down.feasible());
  const std::uint64_t compulsory = 3 * 8 * 16384ull * 128 * 2;  // Q, K and V once
  CHECK(up.engine.total.hbm.read_total() == 614809600);
  CHECK(down.engine.total.hbm.read_total() == 4149284864);
  CHECK(down.engine.total.hbm.read_total() > 6 * up.engine.total.hbm.read_total());
  // With the profile's 50 MB a head's 8 MB of K/V (held twice: 16 MB of the 25 MB of each
  // partition) stays: walking up reads it once, walking down a little more.
  const Report up_full = run(asc, test::profile("h100-sxm5-80gb"));
  const Report down_full = run(descending_description(), test::profile("h100-sxm5-80gb"));
  CHECK(up_full.engine.total.hbm.read_total() == compulsory);
  CHECK(down_full.engine.total.hbm.read_total() >= compulsory);
  CHECK(down_full.engine.total.hbm.read_total() < compulsory * 12 / 10);
}

TEST_CASE("plain loads serialize the copy with the compute; asynchronous ones overlap it") {
  RunRequest r = test::request("flash2", 4, 16, 4096, 64, 128, 64);
  r.engine.sm_clock_mhz = 1755;
  KernelDescription d = kernel_preset("flash2");
  d.name = "loads";
  d.mechanisms.load = LoadPath::plain;
  const Report plain = run_kernel(d, r, "a100-sxm4-80gb");
  d.mechanisms.load = LoadPath::cp_async;
  const Report async = run_kernel(d, r, "a100-sxm4-80gb");
  CHECK(plain.engine.kernels[0].spec.pipeline_stages == 1);
  CHECK(async.engine.kernels[0].spec.pipeline_stages == 2);
  CHECK(plain.engine.time_s > async.engine.time_s);
  CHECK(plain.engine.total.l2.read_total() == async.engine.total.l2.read_total());
}

TEST_CASE("--stages: what runs is what was asked, and the table says how deep its copies go") {
  // --stages 1 of flash2 is one K/V buffer pair, FlashAttention-2's own kernel: shared memory for
  // one pair, copies timed 2 deep because the K and V copies alternate with the two products.
  // The table said stages=1 while the kernel ran 2 deep, and nothing said why.
  RunRequest r = test::request("flash2", 2, 8, 1024, 64, 128, 64);
  r.tiling.pipeline_stages = 1;
  const Report one = simulate(test::profile("h100-sxm5-80gb"), r);
  r.tiling.pipeline_stages = 2;
  const Report two = simulate(test::profile("h100-sxm5-80gb"), r);
  REQUIRE(one.feasible());
  REQUIRE(two.feasible());
  CHECK(one.tiling.pipeline_stages == 1);
  CHECK(two.engine.kernels[0].spec.smem_bytes_per_cta -
            one.engine.kernels[0].spec.smem_bytes_per_cta ==
        2 * 64 * 64 * 2);  // one more K and V buffer of 64 x 64 fp16
  CHECK(one.engine.kernels[0].spec.pipeline_stages == 2);
  CHECK(format_table(one).find("copies   flash2_fwd is timed 2 tiles deep at stages=1: one K/V "
                               "buffer pair") != std::string::npos);
  CHECK(format_table(two).find("copies ") == std::string::npos);  // 2 pairs: 2 deep
  // Plain loads wait for the compute: one stage is what runs (by default), more is refused (it
  // ran 1 deep with the shared memory of 2, and the table said stages=2).
  KernelDescription d = kernel_preset("flash2");
  d.name = "plain";
  d.source = "plain.yaml";
  d.mechanisms.load = LoadPath::plain;
  CHECK_THROWS_WITH_AS(run_kernel(d, r, "h100-sxm5-80gb"),
                       doctest::Contains("--stages 2 (or tiles.stages): plain.yaml loads through "
                                         "registers (mechanisms.load plain)"),
                       ConfigError);
  r.tiling.pipeline_stages.reset();
  const Report plain = run_kernel(d, r, "h100-sxm5-80gb");
  CHECK(plain.tiling.pipeline_stages == 1);
  CHECK(plain.engine.kernels[0].spec.pipeline_stages == 1);
  CHECK(format_table(plain).find("copies ") == std::string::npos);
  // tune's default space tries the one stage such a kernel runs (2, 3, 4 were all refused).
  r.kernel = std::make_shared<const KernelDescription>(d);
  CHECK(default_tune_space(test::profile("h100-sxm5-80gb"), r).stages == std::vector<int>{1});
}

TEST_CASE("two-pass backward: two-level bytes equal its closed form over random shapes") {
  test::ShapeGen gen(31);
  const KernelDescription d = two_pass_description();
  for (int i = 0; i < 60; ++i) {
    RunRequest r = random_request(gen, Pass::bwd, 700);
    r.engine.l2_enabled = false;
    if (gen.coin()) r.problem.mask = true;
    const Report rep = run_kernel(d, r, "h100-sxm5-80gb");
    if (!rep.feasible()) continue;
    test::require_closed_form(r, rep);
    // Never below what a backward must move: each input read and each gradient written once.
    CHECK(test::hbm_total(rep) >= test::dense_compulsory_bytes(r.problem));
    CHECK(rep.engine.kernels.size() == 2);
  }
}

TEST_CASE("two-pass backward: exact gradients, alone and after a query-stationary forward" *
          doctest::test_suite("long")) {
  test::ShapeGen gen(8);
  KernelDescription d;
  d.name = "fa2_two_pass";
  d.source = "test";
  d.forward = "query_stationary";
  d.backward = "two_pass";
  int executed = 0;
  for (int i = 0; i < test::cases(24); ++i) {
    RunRequest r = random_request(gen, i % 2 ? Pass::bwd : Pass::fwdbwd, 200);
    r.execute = true;
    r.seed = static_cast<std::uint64_t>(i) + 7;
    if (gen.coin()) r.problem.dropout = 0.1;
    CAPTURE(pass_name(r.problem.pass));
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    CAPTURE(r.problem.head_dim);
    CAPTURE(r.problem.causal);
    const Report rep = run_kernel(d, r, "h100-sxm5-80gb");
    if (!rep.feasible()) continue;
    REQUIRE(rep.numerics.max_abs_error.has_value());
    CHECK(*rep.numerics.max_abs_error <= 1e-4);
    ++executed;
  }
  CHECK(executed >= (test::kSanitized ? 1 : 20));  // the sanitized run draws a tenth
}

TEST_CASE("golden: two-pass backward bytes for one head, N=256, d=64, 64x128 blocks") {
  // Per head: pre-pass reads O, dO (2 x 256 x 64 x 2 = 65536) and writes D (1024); pass 1 reads
  // K, V once (65536) and, for each of the 2 key blocks, all 4 query blocks' Q, dO, L, D
  // (8 x (2 x 64 x 64 x 2 + 2 x 64 x 4) = 135168); pass 2 reads each query block's Q, dO, L, D
  // once (67584) and, for each of them, both key blocks' K, V (4 x 65536 = 262144).
  // Writes: dK, dV (65536), dQ (32768), D (1024).
  RunRequest r = test::request("flash2", 1, 1, 256, 64, 64, 128);
  r.problem.pass = Pass::bwd;
  r.engine.l2_enabled = false;
  KernelDescription d;
  d.name = "golden";
  d.backward = "two_pass";
  const Report rep = run_kernel(d, r, "h100-sxm5-80gb");
  REQUIRE(rep.feasible());
  CHECK(rep.engine.total.hbm.read_total() == 65536 + 65536 + 135168 + 67584 + 262144);
  CHECK(rep.engine.total.hbm.write_total() == 65536 + 32768 + 1024);
  CHECK(rep.engine.kernels[1].spec.grid.x == 4);  // max(Tr, Tc)
}

TEST_CASE("two-pass backward: score chunks re-read the kept rows, nothing else changes") {
  // Over random shapes: chunking the score tile's columns moves the same bytes and FLOPs and
  // reads more shared memory, never less, the more chunks the more.
  test::ShapeGen gen(2711);
  const KernelDescription d = two_pass_description();
  int checked = 0;
  for (int i = 0; i < 30; ++i) {
    RunRequest r = random_request(gen, Pass::bwd, 400);
    const Report whole = run_kernel(d, r, "h100-sxm5-80gb");
    if (!whole.feasible()) continue;
    KernelDescription halves = d, sixteens = d;
    halves.tiles.score_chunk = std::max<std::int64_t>(1, r.tiling.block_q.value_or(64) / 2);
    sixteens.tiles.score_chunk = 16;
    const Report a = run_kernel(halves, r, "h100-sxm5-80gb");
    const Report b = run_kernel(sixteens, r, "h100-sxm5-80gb");
    REQUIRE(a.feasible());
    REQUIRE(b.feasible());
    const KernelResult& k0 = whole.engine.kernels[1];
    for (const Report* rep : {&a, &b}) {
      const KernelResult& k = rep->engine.kernels[1];
      CHECK(k.counters.hbm.read_total() == k0.counters.hbm.read_total());
      CHECK(k.counters.l2.read_total() == k0.counters.l2.read_total());
      CHECK(k.counters.flops() == k0.counters.flops());
      CHECK(k.counters.smem_read_bytes >= k0.counters.smem_read_bytes);
    }
    ++checked;
  }
  CHECK(checked >= 20);
}

TEST_CASE("golden: two-pass shared-memory reads of 16-column score chunks") {
  // One head, N = 256, d = 64, 64 x 128 blocks, 4 warps, fp16. Warps split the kept block's
  // rows and read them once per chunk: pass 1 keeps 128 key rows and streams 64 queries (4
  // chunks of 16), re-reading K and V (S^T, dP^T) 3 more times: 2 x 3 x 128 x 64 x 2 = 98304
  // per step, 8 steps; pass 2 keeps 64 query rows and streams 128 keys (8 chunks), re-reading Q
  // and dO 7 more times: 2 x 7 x 64 x 64 x 2 = 114688 per step, 8 steps.
  RunRequest r = test::request("flash2", 1, 1, 256, 64, 64, 128);
  r.problem.pass = Pass::bwd;
  KernelDescription d;
  d.name = "golden";
  d.backward = "two_pass";
  const Report whole = run_kernel(d, r, "h100-sxm5-80gb");
  d.tiles.score_chunk = 16;
  const Report chunked = run_kernel(d, r, "h100-sxm5-80gb");
  REQUIRE(whole.feasible());
  REQUIRE(chunked.feasible());
  CHECK(chunked.engine.kernels[1].counters.smem_read_bytes -
            whole.engine.kernels[1].counters.smem_read_bytes ==
        8 * 98304 + 8 * 114688);
  // Shared memory per CTA: Q, dO + 2 stages of K, V (pass 2, the larger: 640 rows against pass
  // 1's 512) and 2 stages of L, D; no P or dS tile.
  CHECK(chunked.engine.kernels[1].spec.smem_bytes_per_cta ==
        (2 * 64 + 2 * 2 * 128) * 64 * 2 + 2 * 2 * 64 * 4);
}

TEST_CASE("two-pass backward with steps of its own: its closed form, the same FLOPs, exact" *
          doctest::test_suite("long")) {
  // Over random shapes and steps (pass 1's query rows, pass 2's key rows a step, apart from the
  // blocks each pass keeps): two-level bytes equal the closed form; the FLOPs outside the masked
  // diagonal's blocks are the steps' business only where the mask cuts them, so without a mask
  // they equal the run without steps; the gradients are exact.
  test::ShapeGen gen(4409);
  const std::int64_t steps[] = {16, 32, 64, 128};
  int checked = 0, executed = 0;
  for (int i = 0; i < test::cases(40); ++i) {
    RunRequest r = random_request(gen, Pass::bwd, 300);
    r.engine.l2_enabled = false;
    r.execute = i % 4 == 0;
    KernelDescription d = two_pass_description();
    d.tiles.query_step = gen.pick(steps);
    d.tiles.key_step = gen.pick(steps);
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    CAPTURE(r.problem.causal);
    CAPTURE(*d.tiles.query_step);
    CAPTURE(*d.tiles.key_step);
    const Report rep = run_kernel(d, r, "h100-sxm5-80gb");
    const Report blocks = run_kernel(two_pass_description(), r, "h100-sxm5-80gb");
    if (!rep.feasible() || !blocks.feasible()) continue;
    test::require_closed_form(r, rep);
    CHECK(rep.engine.kernels[1].spec.grid.count() == blocks.engine.kernels[1].spec.grid.count());
    if (!r.problem.causal) {
      CHECK(rep.engine.kernels[1].counters.flops() == blocks.engine.kernels[1].counters.flops());
    }
    if (r.execute) {
      REQUIRE(rep.numerics.max_abs_error.has_value());
      CHECK(*rep.numerics.max_abs_error <= 1e-4);
      ++executed;
    }
    ++checked;
  }
  CHECK(checked >= (test::kSanitized ? 2 : 25));
  CHECK(executed >= (test::kSanitized ? 0 : 5));
}

TEST_CASE("golden: a two-pass backward keeping 128-row blocks and streaming 32-row steps") {
  // One head, N = 256, d = 64, fp16, L2 off. Pre-pass: O, dO read (65536), D written (1024).
  // Pass 1: K, V of both key blocks once (65536) and, per key block, the 8 query steps' Q, dO
  // (2 x 32 x 64 x 2) and L, D (2 x 32 x 4): 16 x 8448 = 135168. Pass 2: both query blocks' Q,
  // dO, L, D once (2 x 33792 = 67584) and, per query block, the 8 key steps' K, V (2 x 32 x 64 x
  // 2): 16 x 8192 = 131072. Writes: dK, dV (65536), dQ (32768), D (1024).
  RunRequest r = test::request("flash2", 1, 1, 256, 64, 128, 128);
  r.problem.pass = Pass::bwd;
  r.engine.l2_enabled = false;
  KernelDescription d = two_pass_description();
  d.tiles.query_step = 32;
  d.tiles.key_step = 32;
  const Report rep = run_kernel(d, r, "h100-sxm5-80gb");
  REQUIRE(rep.feasible());
  CHECK(rep.engine.total.hbm.read_total() == 65536 + 65536 + 135168 + 67584 + 131072);
  CHECK(rep.engine.total.hbm.write_total() == 65536 + 32768 + 1024);
  CHECK(rep.engine.kernels[1].spec.grid.x == 2);  // one CTA a kept 128-row block
  // Shared memory: 128 kept rows of two operands and 2 stages of a 32-row step's two (pass 1
  // and pass 2 alike: 384 rows), and 2 stages of a step's L, D.
  CHECK(rep.engine.kernels[1].spec.smem_bytes_per_cta ==
        (2 * 128 + 2 * 2 * 32) * 64 * 2 + 2 * 2 * 32 * 4);
  // At d = 128 and 3 stages the 128-row blocks fit only with their 32-row steps: as whole
  // streamed blocks they would need 265216 bytes, more than an H100 CTA may have.
  RunRequest wide = test::request("flash2", 4, 16, 4096, 128, 128, 128);
  wide.problem.pass = Pass::bwd;
  wide.tiling.pipeline_stages = 3;
  KernelDescription whole = two_pass_description();
  const Report refused = run_kernel(whole, wide, "h100-sxm5-80gb");
  CHECK_FALSE(refused.feasible());
  CHECK(refused.infeasible_reason.find("265216 bytes") != std::string::npos);
  const Report stepped = run_kernel(d, wide, "h100-sxm5-80gb");
  CHECK(stepped.feasible());
}

TEST_CASE("bad descriptions are refused with the key path and the reason") {
  const auto refused = [](const json& doc, const std::string& needle) {
    CAPTURE(doc.dump());
    CHECK_THROWS_WITH_AS(parse_kernel_description(doc, "k.yaml"), doctest::Contains(needle.c_str()),
                         ConfigError);
  };
  const json ok = {{"name", "k"}, {"dataflow", {{"forward", "query_stationary"}}}};
  CHECK_NOTHROW(parse_kernel_description(ok, "k.yaml"));
  refused({{"name", "k"}}, "dataflow: required");
  // A name is one line: a line break or tab from an escape split the run's table line.
  for (const char* name : {"my\nkernel", "my\tkernel", "k\r", "\x7f"}) {
    json broken = ok;
    broken["name"] = name;
    refused(broken, "name: a name is one line of text: it holds the control character U+00");
  }
  refused({{"name", "k"}, {"dataflow", {{"forwrd", "query_stationary"}}}},
          "dataflow.forwrd: unknown key (did you mean 'forward'?)");
  refused({{"name", "k"}, {"dataflow", {{"forward", "query_stationery"}}}},
          "did you mean 'query_stationary'?");
  json bad_mma = ok;
  bad_mma["mechanisms"] = {{"mma", "wgmma"}};
  refused(bad_mma, "mechanisms.mma: unknown mma 'wgmma'");
  json bad_type = ok;
  bad_type["tiles"] = {{"block_q", "128"}};
  refused(bad_type, "tiles.block_q: expected an integer, got string");
  json bad_range = ok;
  bad_range["launch"] = {{"threads", 4096}};
  refused(bad_range, "launch.threads: 4096 is out of range");
  json chunk_forward = ok;
  chunk_forward["tiles"] = {{"score_chunk", 16}};
  refused(chunk_forward, "tiles.score_chunk: applies to the two_pass backward only");
  json chunk_two_pass = {
      {"name", "k"}, {"dataflow", {{"backward", "two_pass"}}}, {"tiles", {{"score_chunk", 16}}}};
  CHECK(parse_kernel_description(chunk_two_pass, "k.yaml").tiles.score_chunk == 16);
  json step_forward = ok;
  step_forward["tiles"] = {{"query_step", 32}};
  refused(step_forward, "tiles.query_step: applies to the two_pass backward only");
  json key_step_bad = {
      {"name", "k"}, {"dataflow", {{"backward", "two_pass"}}}, {"tiles", {{"key_step", 0}}}};
  refused(key_step_bad, "tiles.key_step: 0 is out of range");
  json steps_two_pass = {{"name", "k"},
                         {"dataflow", {{"backward", "two_pass"}}},
                         {"tiles", {{"query_step", 32}, {"key_step", 16}}}};
  const KernelDescription stepped = parse_kernel_description(steps_two_pass, "k.yaml");
  CHECK(stepped.tiles.query_step == 32);
  CHECK(stepped.tiles.key_step == 16);
  CHECK(kernel_description_json(stepped).at("tiles").at("key_step") == 16);
  CHECK(kernel_description_json(parse_kernel_description(chunk_two_pass, "k.yaml"))
            .at("tiles")
            .at("score_chunk") == 16);
  json order_elsewhere = {{"name", "k"},
                          {"dataflow", {{"forward", "kv_stationary"}, {"kv_order", "descending"}}}};
  refused(order_elsewhere, "dataflow.kv_order: applies to the query_stationary forward only");
  json order_typo = ok;
  order_typo["dataflow"]["kv_order"] = "descend";
  refused(order_typo, "dataflow.kv_order: unknown kv_order 'descend'");
  json order = ok;
  order["dataflow"]["kv_order"] = "descending";
  CHECK(parse_kernel_description(order, "k.yaml").kv_order == KvOrder::descending);
  CHECK(kernel_description_json(parse_kernel_description(order, "k.yaml"))
            .at("dataflow")
            .at("kv_order") == "descending");
  CHECK_FALSE(kernel_description_json(parse_kernel_description(ok, "k.yaml"))
                  .at("dataflow")
                  .contains("kv_order"));
  json two = ok;
  two["tiles"] = {{"block_q", 0}};
  two["extra"] = 1;
  refused(two, "2 problems");
  refused(json(nullptr), "the description is empty");
  refused(json::array(), "expected a map");
  // A mechanism the GPU lacks: wgmma on an A100.
  KernelDescription d = parse_kernel_description(ok, "k.yaml");
  d.mechanisms.mma = MmaFamily::wgmma_rs;
  CHECK_THROWS_WITH_AS(described_algorithm(d, test::profile("a100-sxm4-80gb")),
                       doctest::Contains("k.yaml: mechanisms.mma wgmma_rs needs wgmma"),
                       ConfigError);
}

// The rows (algorithms/kernel_schema.hpp) against the parser and the writers: an independent list
// of the keys a description may have, every integer row's bounds as the parser holds them, and
// every key through the YAML writer and back.
TEST_CASE("kernel description rows: the keys, their bounds, and the YAML writer's round trip") {
  std::vector<std::string> keys;
  for (const kernel_yaml::Key& k : kernel_yaml::kKeys) {
    keys.push_back(*k.section == '\0' ? std::string(k.key) : std::string(k.section) + "." + k.key);
  }
  CHECK(keys == std::vector<std::string>{"name",
                                         "dataflow.forward",
                                         "dataflow.backward",
                                         "dataflow.block_mask",
                                         "dataflow.kv_order",
                                         "tiles.block_q",
                                         "tiles.block_kv",
                                         "tiles.stages",
                                         "tiles.splits",
                                         "tiles.score_chunk",
                                         "tiles.query_step",
                                         "tiles.key_step",
                                         "tiles.backward_block_q",
                                         "tiles.backward_block_kv",
                                         "mechanisms.mma",
                                         "mechanisms.load",
                                         "mechanisms.warp_roles",
                                         "mechanisms.persistent",
                                         "mechanisms.mma_wait",
                                         "launch.threads",
                                         "launch.registers_per_thread",
                                         "launch.local_bytes_per_thread",
                                         "launch.smem_bytes_per_cta"});
  // Both passes of the two_pass pair, so that every tile key applies.
  const json base = {{"name", "k"},
                     {"dataflow", {{"forward", "query_stationary"}, {"backward", "two_pass"}}}};
  const std::string table = kernel_key_table(true);
  // `iosim kernels`'s summary line names every mechanism and each value it takes (it was typed,
  // and left mma_wait out).
  const std::string mechanisms = kernel_mechanisms_line();
  for (const kernel_yaml::Key& k : kernel_yaml::kKeys) {
    CAPTURE(k.key);
    CHECK(std::string(k.doc).size() > 10);
    if (std::string(k.section) == "mechanisms") {
      CHECK(mechanisms.find(std::string(" ") + k.key + " ") != std::string::npos);
      if (k.kind == kernel_yaml::Kind::choice) {
        for (const char* name : kernel_yaml::choices(k)) {
          CHECK(mechanisms.find(name) != std::string::npos);
        }
      }
    }
    const std::string dotted =
        *k.section == '\0' ? std::string(k.key) : std::string(k.section) + "." + k.key;
    CHECK(table.find("| `" + dotted + "` |") != std::string::npos);
    if (k.kind != kernel_yaml::Kind::integer) continue;
    CHECK(k.lo <= k.hi);
    for (const std::int64_t x : {k.lo - 1, k.hi + 1}) {
      json doc = base;
      doc[k.section][k.key] = x;
      CHECK_THROWS_WITH_AS(
          parse_kernel_description(doc, "k.yaml"),
          doctest::Contains(
              fmt::format("{}: {} is out of range [{}, {}]", dotted, x, k.lo, k.hi).c_str()),
          ConfigError);
    }
  }
  // Every tile and launch key set (the two_pass keys were dropped by the YAML writer before its
  // order came from the rows), every mechanism off its default: the YAML reads back the same.
  json full = base;
  full["dataflow"] = {{"backward", "two_pass"}};
  full["tiles"] = {{"block_q", 64}, {"block_kv", 32},         {"stages", 2},
                   {"splits", 3},   {"score_chunk", 16},      {"query_step", 16},
                   {"key_step", 8}, {"backward_block_q", 32}, {"backward_block_kv", 64}};
  full["mechanisms"] = {{"mma", "wgmma_ss"},
                        {"load", "tma"},
                        {"warp_roles", "pingpong"},
                        {"persistent", true},
                        {"mma_wait", "next_step"}};
  full["launch"] = {{"threads", 256}, {"registers_per_thread", 128}, {"smem_bytes_per_cta", 4096}};
  const KernelDescription d = parse_kernel_description(full, "k.yaml");
  const std::string yaml = kernel_description_yaml(d);
  CAPTURE(yaml);
  const KernelDescription back =
      parse_kernel_description(read_yaml_json(yaml, "shown.yaml", "kernel description"), "again");
  CHECK(kernel_description_json(back) == kernel_description_json(d));
  CHECK(kernel_description_json(d) == full);
}

TEST_CASE("a preset's mechanisms are checked against the GPU as a description's are") {
  // --algo flash3 and --kernel flash3 ran wgmma and TMA on the A100, where a description with the
  // same mechanisms was refused. Every preset whose mechanisms need Hopper is refused there by
  // either name; standard (the vendor library's GEMMs, on any GPU) runs, as the rest do.
  const HardwareProfile& a100 = test::profile("a100-sxm4-80gb");
  for (const KernelDescription& preset : kernel_presets()) {
    CAPTURE(preset.name);
    const ResolvedMechanisms m = resolve_mechanisms(preset);
    const bool hopper = (m.wgmma() || m.load == LoadPath::tma) && preset.forward != "unfused";
    RunRequest by_name = test::request(preset.name, 1, 2, 256, 64);
    if (preset.name == "flash-decoding" || preset.name == "paged") by_name.problem.seq = 1;
    if (preset.block_mask) by_name.problem.pattern = nullptr;
    RunRequest by_kernel = by_name;
    by_kernel.kernel = std::make_shared<const KernelDescription>(preset);
    for (const RunRequest* r : {&by_name, &by_kernel}) {
      if (hopper) {
        const std::string want =
            preset.name + " (its mechanisms: iosim kernels --show " + preset.name + "): mechanisms";
        CHECK_THROWS_WITH_AS(simulate(a100, *r), doctest::Contains(want.c_str()), ConfigError);
      } else {
        CHECK_NOTHROW(check_preset_runs_on(preset.name, a100));
      }
    }
    CHECK_NOTHROW(check_preset_runs_on(preset.name, test::profile("h100-sxm5-80gb")));
  }
  CHECK_NOTHROW(check_preset_runs_on("toy", a100));  // an algorithm without a preset
}

TEST_CASE("a description's tiles yield to the flags; launch facts set occupancy") {
  KernelDescription d = kernel_preset("flash2");
  d.name = "tiles";
  d.tiles.block_q = 64;
  d.tiles.block_kv = 64;
  d.tiles.registers_per_thread = 255;
  RunRequest r = test::request("flash2", 2, 8, 2048, 128);
  Report rep = run_kernel(d, r, "h100-sxm5-80gb");
  CHECK(rep.tiling.block_q == 64);
  CHECK(rep.engine.kernels[0].spec.registers_per_thread == 255);
  r.tiling.block_q = 128;  // --block-q 128
  rep = run_kernel(d, r, "h100-sxm5-80gb");
  CHECK(rep.tiling.block_q == 128);
  CHECK(rep.tiling.block_kv == 64);
}

}  // namespace iosim

namespace iosim {

// docs/ARCHITECTURE.md's checklist for a new dataflow names its list entry, the schema's enum and
// docs/kernels.md: a dataflow missing from either is caught here.
TEST_CASE("every dataflow and mechanism is in the schema and in docs/kernels.md") {
  const std::string root = IOSIM_REPO_DIR;
  std::ifstream schema_file(root + "/schemas/kernel.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(schema_file);
  std::ifstream doc_file(root + "/docs/kernels.md");
  const std::string doc((std::istreambuf_iterator<char>(doc_file)), {});
  const auto& df = schema.at("properties").at("dataflow").at("properties");
  for (const auto& [list, key] :
       {std::pair{&forward_dataflows(), "forward"}, std::pair{&backward_dataflows(), "backward"}}) {
    std::vector<std::string> names;
    for (const Dataflow* d : *list) {
      names.emplace_back(d->name);
      CAPTURE(d->name);
      CHECK(doc.find(std::string("`") + d->name + "`") != std::string::npos);
    }
    CHECK(df.at(key).at("enum").get<std::vector<std::string>>() == names);
  }
  CHECK(df.at("kv_order").at("enum").get<std::vector<std::string>>() ==
        std::vector<std::string>{"ascending", "descending"});
  CHECK(doc.find("`dataflow.kv_order`") != std::string::npos);
  const auto& mech = schema.at("properties").at("mechanisms").at("properties");
  CHECK(mech.at("mma").at("enum").get<std::vector<std::string>>() ==
        std::vector<std::string>{mma_name(MmaFamily::mma_sync), mma_name(MmaFamily::wgmma_ss),
                                 mma_name(MmaFamily::wgmma_rs)});
  CHECK(mech.at("load").at("enum").get<std::vector<std::string>>() ==
        std::vector<std::string>{load_name(LoadPath::plain), load_name(LoadPath::cp_async),
                                 load_name(LoadPath::tma)});
  CHECK(mech.at("warp_roles").at("enum").get<std::vector<std::string>>() ==
        std::vector<std::string>{warp_roles_name(WarpRoles::uniform),
                                 warp_roles_name(WarpRoles::producer_consumer),
                                 warp_roles_name(WarpRoles::pingpong)});
  CHECK(mech.at("mma_wait").at("enum").get<std::vector<std::string>>() ==
        std::vector<std::string>{mma_wait_name(MmaWait::step), mma_wait_name(MmaWait::next_step)});
  CHECK(doc.find("`mechanisms.mma_wait`") != std::string::npos);
}

}  // namespace iosim
