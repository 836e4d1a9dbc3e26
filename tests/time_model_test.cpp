// The time model's mechanisms, each held by a test that fails without it: one --stages
// convention (K/V buffer pairs) and measured registers per kernel role; shared-memory reads by
// the decode kernel's warp layout; the mask's INT32 work and block-sparse's mask on every block;
// FlashAttention-1's in-step row statistics and O round trips; paged gathers' address
// arithmetic; a CTA's own critical path; the softmax as one CTA per row; the CTA refill between
// the CTAs of kernels that launch one per tile, and which built-in kernels are persistent.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "algorithms/tile_costs.hpp"
#include "api/validation.hpp"
#include "sim/engine/engine.hpp"
#include "sim/schedule/block_mask.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

RunRequest decode_request(const std::string& algo, std::int64_t b, std::int64_t h, std::int64_t hkv,
                          std::int64_t nkv, std::int64_t d, std::int64_t splits, int stages) {
  RunRequest r = test::request(algo, b, h, 1, d, 16, d <= 64 ? 128 : 64);
  r.problem.seq_kv = nkv;
  r.problem.kv_heads = hkv;
  r.tiling.splits = test::given(splits);
  r.tiling.pipeline_stages = test::given(stages);
  r.engine.flush_l2_between_kernels = true;
  return r;
}

// A one-kernel schedule whose CTAs each run the given ops (tensors Q, K of 1 x 4096 x 64 fp16).
class OpsSchedule final : public WholeCtaSchedule {
 public:
  OpsSchedule(std::vector<TileOp> ops, std::int64_t ctas, int threads, bool persistent = false)
      : ops_(std::move(ops)), ctas_(ctas), threads_(threads), persistent_(persistent) {}
  std::vector<TensorDecl> tensors() const override {
    return {{TensorId::Q, 1, 4096, 64, 2}, {TensorId::K, 1, 4096, 64, 2}};
  }
  std::vector<KernelSpec> kernels() const override {
    KernelSpec k;
    k.name = "ops";
    k.grid = {ctas_, 1, 1};
    k.threads_per_cta = threads_;
    k.smem_bytes_per_cta = 200 * 1024;  // one CTA per SM
    k.pipeline_stages = 2;
    k.persistent = persistent_;
    return {k};
  }
  void emit_whole_cta(std::size_t, std::int64_t, std::vector<TileOp>& out) const override {
    out.insert(out.end(), ops_.begin(), ops_.end());
  }

 private:
  std::vector<TileOp> ops_;
  std::int64_t ctas_;
  int threads_;
  bool persistent_;
};

double run_time(const std::vector<TileOp>& ops, int threads = 128) {
  EngineOptions o;
  o.flush_l2_between_kernels = true;
  return run_schedule(test::profile(), OpsSchedule(ops, 1, threads), o).time_s;
}

TileOp fp32_work(std::int64_t flops) {
  TileOp op;
  op.kind = OpKind::compute;
  op.compute = ComputeKind::online_softmax;
  op.tile = {TensorId::S, 0, 0, 64, 0, 64};
  op.fp32_flops = flops;
  return op;
}

}  // namespace

TEST_CASE("--stages counts K/V buffer pairs in flash2 and in the split-KV schedules alike") {
  for (const char* algo : {"flash-decoding", "paged"}) {
    for (int pairs : {1, 2, 3}) {
      const RunRequest r = decode_request(algo, 2, 8, 8, 4096, 128, 4, pairs);
      const Report rep = simulate(test::profile(), r);
      REQUIRE(rep.feasible());
      const KernelSpec& split = rep.engine.kernels.front().spec;
      CAPTURE(algo);
      CAPTURE(pairs);
      // Q (16 x 128) plus `pairs` pairs of K and V (64 x 128), fp16.
      CHECK(split.smem_bytes_per_cta == (16 + 2 * pairs * 64) * 128 * 2);
      CHECK(split.pipeline_stages == kv_pipeline_depth(pairs));
    }
  }
  for (int pairs : {1, 2}) {
    RunRequest r = test::request("flash2", 1, 2, 1024, 64, 128, 64);
    r.tiling.pipeline_stages = pairs;
    const Report rep = simulate(test::profile(), r);
    const KernelSpec& k = rep.engine.kernels.front().spec;
    CHECK(k.smem_bytes_per_cta == (128 + 2 * pairs * 64) * 64 * 2);
    CHECK(k.pipeline_stages == kv_pipeline_depth(pairs));
  }
  // One pair still overlaps the next tile's copy with this tile's products (FlashAttention
  // alternates the K and V copies with them).
  CHECK(kv_pipeline_depth(1) == 2);
  CHECK(kv_pipeline_depth(3) == 3);
}

TEST_CASE("validate takes K/V buffer pairs from the measured shared memory") {
  using nlohmann::json;
  // Our decode kernel: Q 16 x 128 + 2 pairs of 64 x 128 (69632 B); the paged one adds its table.
  CHECK(kv_buffer_pairs(json{{"block_q", 16}, {"block_kv", 64}, {"smem_bytes_per_cta", 69632}}, 128,
                        2) == 2);
  CHECK(kv_buffer_pairs(json{{"block_q", 16}, {"block_kv", 64}, {"smem_bytes_per_cta", 71808}}, 128,
                        2) == 2);
  // PyTorch's FlashAttention split-KV kernel: 64 x 128 tiles, one pair (81920 B).
  CHECK(kv_buffer_pairs(json{{"block_q", 64}, {"block_kv", 128}, {"smem_bytes_per_cta", 81920}},
                        128, 2) == 1);
  // Not a Q + pairs layout, or no shared memory given.
  CHECK(kv_buffer_pairs(json{{"block_q", 64}, {"block_kv", 128}, {"smem_bytes_per_cta", 100000}},
                        128, 2) == 0);
  CHECK(kv_buffer_pairs(json{{"block_q", 64}, {"block_kv", 128}}, 128, 2) == 0);
}

TEST_CASE("validate passes measured registers per kernel role, multi-kernel cases included") {
  using nlohmann::json;
  auto kernel = [](const char* role, int regs) {
    return json{{"role", role}, {"launch", {{"launch__registers_per_thread", regs}}}};
  };
  const json kernels = json::array(
      {kernel("split", 164), kernel("reduce", 54), kernel("gemm_qk", 168), kernel("softmax", 32)});
  const std::map<std::string, int> regs = measured_registers_by_role(kernels);
  CHECK(regs.at("split") == 164);
  CHECK(regs.at("reduce") == 54);
  CHECK(regs.at("softmax") == 32);
  CHECK(regs.count("gemm_qk") == 0);  // cuBLAS's tiling is not the schedule's
  // Two different kernels under one role: neither count is used.
  CHECK(measured_registers_by_role(json::array({kernel("attention", 128), kernel("attention", 64)}))
            .empty());

  // The engine applies them to the kernels of that role: 255 registers x 128 threads leave
  // room for 2 CTAs per SM where the schedule's estimate allows more.
  RunRequest r = decode_request("flash-decoding", 4, 32, 8, 16384, 128, 16, 2);
  const Report estimated = simulate(test::profile(), r);
  r.engine.registers_by_role = {{"split", 255}, {"reduce", 54}};
  const Report measured = simulate(test::profile(), r);
  CHECK(measured.engine.kernels[0].spec.registers_per_thread == 255);
  CHECK(measured.engine.kernels[1].spec.registers_per_thread == 54);
  CHECK(measured.engine.kernels[0].occupancy.ctas_per_sm == 2);
  CHECK(estimated.engine.kernels[0].occupancy.ctas_per_sm > 2);
}

TEST_CASE("split-KV shared-memory reads follow the warp layout: key-split warps read K/V once") {
  test::ShapeGen gen(5);
  for (int i = 0; i < 12; ++i) {
    const std::int64_t d = gen.coin() ? 64 : 128, bkv = d == 64 ? 128 : 64;
    // At least 2 splits: partials leave from registers (one split stores O through smem).
    const std::int64_t hkv = 8, splits = gen.pick(2, 4), nkv = bkv * splits * gen.pick(1, 6);
    const std::int64_t block_q = gen.coin() ? 16 : 64;
    RunRequest r = decode_request("flash-decoding", gen.pick(1, 3), 32, hkv, nkv, d, splits, 2);
    r.tiling.block_q = block_q;
    const Report rep = simulate(test::profile(), r);
    REQUIRE(rep.feasible());
    // Per K/V tile: 4 warps; a 16-row tile gives each warp a quarter of the keys (Q read by all
    // four, K and V once), a 64-row tile a 16-row m-tile each (Q once, K and V by all four).
    const std::int64_t tiles = r.problem.batch * hkv * (nkv / bkv);
    const std::int64_t row_warps = block_q / 16, key_warps = 4 / row_warps;
    const std::int64_t per_tile = (key_warps * block_q + 2 * row_warps * bkv) * d * 2;
    const Counters& c = rep.engine.kernels[0].counters;
    CAPTURE(d);
    CAPTURE(block_q);
    CHECK(c.smem_read_bytes == static_cast<std::uint64_t>(tiles * per_tile));
  }
}

TEST_CASE(
    "a mask is INT32 work; block-sparse evaluates it on every block, flash2 only where needed") {
  test::ShapeGen gen(17);
  for (int i = 0; i < 8; ++i) {
    const std::int64_t n = 128 * gen.pick(4, 16), d = gen.coin() ? 64 : 128;
    RunRequest dense = test::request("flash2", 1, 2, n, d, 128, 64);
    const Report f2 = simulate(test::profile(), dense);
    CHECK(f2.engine.total.int32_ops == 0);  // no block needs a mask
    RunRequest sparse = dense;
    sparse.algorithm = "block-sparse";
    sparse.problem.pattern = std::make_shared<const BlockPattern>(parse_block_pattern("local:2"));
    const Report bs = simulate(test::profile(), sparse);
    const BlockMask blocks(sparse.problem, 128, 64);
    std::int64_t scores = 0;
    for (std::int64_t qb = 0; qb < blocks.rows(); ++qb)
      for (std::int64_t kb = 0; kb < blocks.cols(); ++kb)
        if (blocks.at(qb, kb)) scores += 128 * 64;
    CAPTURE(n);
    CHECK(bs.engine.total.int32_ops ==
          static_cast<std::uint64_t>(costs::kMaskIntOpsPerScore * scores * sparse.problem.bh()));
  }
  // Causal flash2 masks the blocks on the diagonal only.
  RunRequest causal = test::request("flash2", 1, 1, 1024, 64, 128, 64);
  causal.problem.causal = true;
  const Report c = simulate(test::profile(), causal);
  // 8 query blocks of 128 rows, each crossing 2 key blocks of 64: 16 masked 128 x 64 blocks.
  CHECK(c.engine.total.int32_ops ==
        static_cast<std::uint64_t>(costs::kMaskIntOpsPerScore * 16 * 128 * 64));
}

TEST_CASE("INT32 work takes time on its own pipe") {
  TileOp masked = fp32_work(0);
  masked.compute = ComputeKind::apply_mask;
  masked.int_ops = 64 * 1000 * 4;  // 1000 cycles of a 64-lane pipe... on 4 schedulers' share
  const double with = run_time({masked});
  const double without = run_time({fp32_work(0)});
  const HardwareProfile& hw = test::profile();
  const double expected_s =
      static_cast<double>(masked.int_ops) /
      (hw.compute.int32_ops_per_clk_per_sm.value * hw.sm.boost_clock_mhz.value * 1e6);
  CAPTURE(with - without);
  CAPTURE(expected_s);
  CHECK(test::rel_close(with - without, expected_s, 1e-6));
}

TEST_CASE("a load issued in the step waits behind the compute before its first use") {
  const TileRef q{TensorId::Q, 0, 0, 64, 0, 64}, k{TensorId::K, 0, 0, 64, 0, 64};
  const TileOp before = fp32_work(256 * 50), after = fp32_work(256 * 100);
  // Prefetched: the K load rides with Q's, before the compute.
  const double prefetched = run_time({TileOp::load(q), TileOp::load(k), before, after});
  // In-step: issued when the compute starts; its latency (a cold DRAM read) is exposed past
  // the little compute that does not need it.
  const double in_step = run_time({TileOp::load(q), before, TileOp::load_in_step(k), after});
  const double latency_s = test::profile().hbm.latency_ns.value * 1e-9;
  CHECK(in_step - prefetched > 0.3 * latency_s);
  CHECK(in_step - prefetched <= latency_s + 1e-12);
  // With enough compute before its use the same load costs nothing more than a prefetch.
  const TileOp long_before = fp32_work(256 * 5000);
  CHECK(run_time({TileOp::load(q), long_before, TileOp::load_in_step(k), after}) <=
        run_time({TileOp::load(q), TileOp::load(k), long_before, after}) + 1e-12);
}

TEST_CASE("a warp's chain of shared-memory round trips adds to a lone warp's time") {
  const HardwareProfile& hw = test::profile();
  const double clock_hz = hw.sm.boost_clock_mhz.value * 1e6;
  TileOp chained = fp32_work(256 * 500);
  chained.smem_round_trips = 16;
  chained.chain_fp32_ops = 64;
  const double chain_s =
      (16 * hw.sm.smem_latency_cycles.value + 64 * hw.compute.fp32_latency_cycles.value) / clock_hz;
  // One CTA of 4 warps (one per scheduler): nothing hides the chain.
  const double added_s = run_time({chained}) - run_time({fp32_work(256 * 500)});
  CAPTURE(added_s);
  CAPTURE(chain_s);
  CHECK(test::rel_close(added_s, chain_s, 1e-6));
  // A CTA's stage takes at least its own work plus its chain: a longer chain never helps, and
  // more warps never make the chain cost more.
  TileOp longer = chained;
  longer.smem_round_trips *= 2;
  CHECK(run_time({longer}) > run_time({chained}));
  CHECK(run_time({chained}, 512) <= run_time({chained}, 128) + 1e-12);
}

TEST_CASE("flash1: m and l are loaded in the step; O is rescaled through shared memory") {
  RunRequest r = test::request("flash1", 1, 1, 256, 64, 64, 64);
  Planned planned = builtin_registry().get("flash1").plan(r.problem, test::profile(), r.tiling);
  REQUIRE(planned.feasible());
  std::vector<TileOp> ops;
  planned.schedule->emit_cta(0, 0, ops);
  std::int64_t in_step = 0, trips = 0, updates = 0;
  for (const TileOp& op : ops) {
    if (op.kind == OpKind::load && op.in_step) {
      ++in_step;
      CHECK((op.tile.tensor == TensorId::l || op.tile.tensor == TensorId::m));
    }
    if (op.kind == OpKind::load && !op.in_step) {
      CHECK((op.tile.tensor != TensorId::l && op.tile.tensor != TensorId::m));
    }
    if (op.kind == OpKind::compute && op.compute == ComputeKind::flash1_update) {
      ++updates;
      trips += op.smem_round_trips;
    }
  }
  // 4 x 4 (K/V block, Q block) steps; the first K/V block starts from the known initial state.
  CHECK(updates == 16);
  CHECK(in_step == 2 * 12);
  // 64 rows on 4 warps: one 16-row m-tile each, 2 x d/8 = 16 round trips per step after j = 0.
  CHECK(trips == 12 * 16);
}

TEST_CASE("paged gathers pay their address arithmetic on the INT32 pipe") {
  for (std::int64_t page : {16, 64}) {
    RunRequest paged = decode_request("paged", 2, 32, 8, 4096, 128, 1, 2);
    paged.problem.page_tokens = page;
    const Report p = simulate(test::profile(), paged);
    RunRequest contiguous = paged;
    contiguous.algorithm = "flash-decoding";
    contiguous.problem.page_tokens = 0;
    const Report c = simulate(test::profile(), contiguous);
    REQUIRE(p.feasible());
    // K and V of every (batch, kv head): 2 x 4096 x 128 fp16 in 16-byte chunks.
    const std::uint64_t chunks = 2ull * 2 * 8 * 4096 * 128 * 2 / 16;
    CHECK(p.engine.total.int32_ops == 36 * chunks);
    CHECK(c.engine.total.int32_ops == 0);
    CHECK(p.engine.time_s > c.engine.time_s);
  }
}

TEST_CASE("standard: the forward softmax runs one CTA per row") {
  const Report r = simulate(test::profile(), test::request("standard", 2, 3, 512, 64));
  const KernelResult* softmax = nullptr;
  for (const KernelResult& k : r.engine.kernels)
    if (k.spec.name == "softmax") softmax = &k;
  REQUIRE(softmax != nullptr);
  CHECK(softmax->spec.grid.count() == 2 * 3 * 512);
  CHECK(softmax->spec.smem_bytes_per_cta == 512 * 2);
  CHECK(softmax->spec.role == "softmax");
}

TEST_CASE(
    "property: a slot waits the profile's refill between the CTAs of a kernel that launches "
    "one per tile; a persistent kernel's slots, and a profile without the section, do not") {
  // CTAs of FP32 work only, one per SM: they share nothing, so each slot runs its CTAs back to
  // back and the refill adds (CTAs per slot - 1) refills to the kernel, at the clock's cycle time.
  const HardwareProfile& hw = test::profile();
  REQUIRE(hw.cta_dispatch.present);
  const double refill_cycles = hw.cta_dispatch.slot_refill_cycles.value;
  REQUIRE(refill_cycles > 0);
  HardwareProfile none = hw;
  none.cta_dispatch.present = false;
  const std::int64_t sms = hw.sm.count.value;
  for (const double clock : {hw.sm.boost_clock_mhz.value, 1400.0}) {
    for (const std::int64_t per_slot : {1, 2, 3, 7}) {
      for (const std::int64_t work : {4096, 65536}) {
        CAPTURE(clock);
        CAPTURE(per_slot);
        CAPTURE(work);
        EngineOptions o;
        o.sm_clock_mhz = clock;
        const std::vector<TileOp> ops = {fp32_work(work)};
        const double with = run_schedule(hw, OpsSchedule(ops, sms * per_slot, 128), o).time_s;
        const double without = run_schedule(none, OpsSchedule(ops, sms * per_slot, 128), o).time_s;
        const double persistent =
            run_schedule(hw, OpsSchedule(ops, sms * per_slot, 128, true), o).time_s;
        const double refill_s = refill_cycles / (clock * 1e6);
        CHECK(with - without == doctest::Approx(static_cast<double>(per_slot - 1) * refill_s)
                                    .epsilon(1e-9)
                                    .scale(without));  // relative to the run, not to 1 s
        CHECK(persistent == without);
      }
    }
  }
}

TEST_CASE(
    "persistent grids are the ones measured so: flash3's forward and backward main kernels, "
    "standard's GEMMs where the GPU has wgmma (cuBLAS's Hopper kernels), none elsewhere") {
  // What each built-in kernel declares (KernelSpec::persistent) decides whether its slots pay
  // the profile's CTA refill between tiles; the measured kernels' grids say which are persistent
  // (cuda_validate/measurements/*/measurements_2026-11-22.json, launch__grid_size).
  const auto persistent_kernels = [](const std::string& profile, const std::string& algo,
                                     Pass pass) {
    RunRequest r = test::request(algo, 1, 4, 1024, 64);
    r.problem.pass = pass;
    const Report rep = simulate(test::profile(profile), r);
    REQUIRE(rep.feasible());
    std::set<std::string> out;
    for (const KernelResult& k : rep.engine.kernels)
      if (k.spec.persistent) out.insert(k.spec.name);
    return out;
  };
  for (const char* hopper : {"h100-sxm5-80gb", "h200-sxm-141gb"}) {
    CAPTURE(hopper);
    CHECK(persistent_kernels(hopper, "standard", Pass::fwd) ==
          std::set<std::string>{"gemm_qk", "gemm_pv"});
    CHECK(persistent_kernels(hopper, "standard", Pass::bwd) ==
          std::set<std::string>{"gemm_dp", "gemm_dv", "gemm_dq", "gemm_dk"});
    CHECK(persistent_kernels(hopper, "flash3", Pass::fwd) == std::set<std::string>{"flash3_fwd"});
    CHECK(persistent_kernels(hopper, "flash3", Pass::bwd) == std::set<std::string>{"flash3_bwd"});
    CHECK(persistent_kernels(hopper, "flash2", Pass::fwdbwd).empty());
    CHECK(persistent_kernels(hopper, "flash-decoding", Pass::fwd).empty());
  }
  // Ampere: cuBLAS launches a CTA per tile.
  CHECK(persistent_kernels("a100-sxm4-80gb", "standard", Pass::fwdbwd).empty());
}
