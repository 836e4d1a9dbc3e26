// Backward passes and block-sparse FlashAttention: two-level counts equal the closed forms over
// many shapes (ragged, causal, N != N_kv, masks, dropout), forward + backward = fwdbwd, gradients
// equal the FP64 reference, block-sparse traffic falls with the density, bad patterns are
// configuration errors naming the file and line.
#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "numerics/numeric_executor.hpp"
#include "sim/base/errors.hpp"
#include "sim/schedule/block_mask.hpp"
#include "tests/test_support.hpp"

using namespace iosim;
using iosim::test::hbm_total;

namespace {

const std::string kPatterns = std::string(IOSIM_TEST_DATA_DIR) + "/patterns/";

Report two_level(RunRequest r) {
  r.engine.l2_enabled = false;
  return simulate(test::profile(), r);
}

std::shared_ptr<const BlockPattern> pattern(const std::string& spec) {
  return std::make_shared<const BlockPattern>(parse_block_pattern(spec));
}

// The max error of --execute; -1 when the tiling is infeasible (random blocks may not fit).
double executed_error(RunRequest r) {
  r.execute = true;
  r.engine.l2_enabled = false;
  const Report rep = simulate(test::profile(), r);
  if (!rep.feasible()) return -1;
  REQUIRE(rep.numerics.max_abs_error.has_value());
  return *rep.numerics.max_abs_error;
}

// A random problem of the property tests: ragged blocks, causal, N != N_kv, masks, dropout.
RunRequest random_request(test::ShapeGen& gen, const char* algo, Pass pass, std::int64_t max_seq) {
  const std::int64_t dims[] = {16, 32, 48, 64, 96, 128};
  const std::int64_t blocks[] = {0, 16, 32, 48, 64, 128};
  RunRequest r = test::request(algo, gen.pick(1, 2), gen.pick(1, 3), gen.pick(1, max_seq),
                               gen.pick(dims), gen.pick(blocks), gen.pick(blocks));
  r.problem.seq_kv = gen.coin() ? r.problem.seq : r.problem.seq + gen.pick(0, max_seq / 2);
  r.problem.causal = gen.coin();
  r.problem.mask = gen.pick(0, 3) == 0;
  r.problem.dropout = gen.pick(0, 3) == 0 ? 0.15 : 0.0;
  r.problem.pass = pass;
  if (std::string(algo) == "block-sparse") {
    const char* specs[] = {"local:1",      "local:2",       "strided:2", "strided:3",
                           "random:0.5:7", "random:0.3:11", "causal"};
    if (gen.pick(0, 4) > 0) r.problem.pattern = pattern(gen.pick(specs));
  }
  return r;
}

}  // namespace

TEST_CASE("backward and fwdbwd two-level bytes equal the closed form over random shapes") {
  test::ShapeGen gen(3);
  const char* algos[] = {"standard", "flash1", "flash2", "block-sparse"};
  const Pass passes[] = {Pass::bwd, Pass::fwdbwd};
  const Dtype dtypes[] = {Dtype::fp16, Dtype::bf16, Dtype::fp32};
  int checked = 0;
  for (int i = 0; i < 240; ++i) {
    RunRequest r = random_request(gen, gen.pick(algos), gen.pick(passes), 700);
    r.problem.dtype = gen.pick(dtypes);
    const Report rep = two_level(r);
    if (!rep.feasible()) continue;
    test::require_closed_form(r, rep);
    REQUIRE(hbm_total(rep) >= rep.bounds.lower_bound_bytes);
    // Compulsory bytes against the tensors' sizes (block-sparse may skip untouched rows).
    if (r.algorithm == "block-sparse")
      REQUIRE(rep.bounds.compulsory_bytes <= test::dense_compulsory_bytes(r.problem));
    else
      REQUIRE(rep.bounds.compulsory_bytes == test::dense_compulsory_bytes(r.problem));
    REQUIRE(hbm_total(rep) >= rep.bounds.compulsory_bytes);
    REQUIRE(rep.engine.total.l2.read_total() == 0);
    ++checked;
  }
  CHECK(checked > 180);
}

TEST_CASE("fwdbwd is the forward's kernels then the backward's: two-level counts add up") {
  test::ShapeGen gen(5);
  const char* algos[] = {"standard", "flash1", "flash2", "block-sparse"};
  for (int i = 0; i < 24; ++i) {
    RunRequest r = random_request(gen, gen.pick(algos), Pass::fwd, 500);
    r.tiling.block_q = 64;  // one tiling for all three runs (defaults differ by pass)
    r.tiling.block_kv = 32;
    const Report fwd = two_level(r);
    r.problem.pass = Pass::bwd;
    const Report bwd = two_level(r);
    r.problem.pass = Pass::fwdbwd;
    const Report both = two_level(r);
    REQUIRE(both.feasible());
    CAPTURE(r.algorithm);
    CHECK(hbm_total(both) == hbm_total(fwd) + hbm_total(bwd));
    CHECK(both.engine.total.flops() == fwd.engine.total.flops() + bwd.engine.total.flops());
    CHECK(both.engine.kernels.size() == fwd.engine.kernels.size() + bwd.engine.kernels.size());
    CHECK(both.bounds.closed_form_bytes ==
          fwd.bounds.closed_form_bytes + bwd.bounds.closed_form_bytes);
  }
}

TEST_CASE("every backward computes exact gradients over random shapes" *
          doctest::test_suite("long")) {
  test::ShapeGen gen(11);
  const char* algos[] = {"standard", "flash1", "flash2", "block-sparse"};
  const Pass passes[] = {Pass::bwd, Pass::fwdbwd};
  int executed = 0;
  for (int i = 0; i < test::cases(48); ++i) {
    RunRequest r = random_request(gen, gen.pick(algos), gen.pick(passes), 260);
    r.seed = static_cast<std::uint64_t>(i) + 100;
    CAPTURE(r.algorithm);
    CAPTURE(pass_name(r.problem.pass));
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    CAPTURE(r.problem.head_dim);
    CAPTURE(r.tiling.block_q);
    CAPTURE(r.tiling.block_kv);
    CAPTURE(r.problem.causal);
    CAPTURE(r.problem.mask);
    CAPTURE(r.problem.dropout);
    const double error = executed_error(r);
    if (error < 0) continue;
    CHECK(error <= 1e-4);
    ++executed;
  }
  CHECK(executed > (test::kSanitized ? 0 : 36));  // the sanitized run draws a tenth of the shapes
}

TEST_CASE("a backward that drops a Q block's dQ share is caught by execution") {
  // flash2's backward, minus the atomic adds of the last K/V block of every head.
  class Broken final : public WholeCtaSchedule {
   public:
    explicit Broken(std::unique_ptr<Schedule> inner) : inner_(std::move(inner)) {}
    std::vector<TensorDecl> tensors() const override { return inner_->tensors(); }
    std::vector<KernelSpec> kernels() const override { return inner_->kernels(); }
    void emit_whole_cta(std::size_t k, std::int64_t cta, std::vector<TileOp>& out) const override {
      std::vector<TileOp> all;
      inner_->emit_cta(k, cta, all);
      const bool last_kv =
          k == 1 && cta % inner_->kernels()[1].grid.x == inner_->kernels()[1].grid.x - 1;
      for (const TileOp& op : all) {
        if (last_kv && op.kind == OpKind::reduce) continue;
        out.push_back(op);
      }
    }

   private:
    std::unique_ptr<Schedule> inner_;
  };
  AttentionProblem p;
  p.seq = p.seq_kv = 128;
  p.head_dim = 32;
  p.pass = Pass::bwd;
  Planned planned = builtin_registry().get("flash2").plan(p, test::profile(), test::blocks(64, 64));
  REQUIRE(planned.feasible());
  CHECK(execute_schedule(*planned.schedule, p, 3).max_abs_error() <= 1e-4);
  const Broken broken(std::move(planned.schedule));
  CHECK(execute_schedule(broken, p, 3).max_abs_error() > 1e-2);
}

TEST_CASE("golden: flash2 backward two-level bytes for one head, N=256, d=64, 128x128 blocks") {
  RunRequest r = test::request("flash2", 1, 1, 256, 64, 128, 128);
  r.problem.pass = Pass::bwd;
  const Report rep = two_level(r);
  const std::uint64_t rows = 256 * 64 * 2, rows32 = 256 * 64 * 4, vec = 256 * 4;
  // dot_do_o: O, dO in; D and a zeroed dQaccum out. Main: 2 K/V blocks each read K_j, V_j once
  // and, per Q block (2), Q_i, dO_i, L_i, D_i, and dQaccum by atomics (read and write); dK, dV
  // out. convert: dQaccum in, dQ out.
  CHECK(rep.engine.total.hbm.read_total() ==
        2 * rows + (2 * rows + 2 * (2 * rows + 2 * vec + rows32)) + rows32);
  CHECK(rep.engine.total.hbm.write_total() == vec + rows32 + (2 * rows32 + 2 * rows) + rows);
  // Five products of 2*N*N*d each (S recomputed, dV, dP, dQ, dK) against the forward's two.
  CHECK(rep.engine.total.tensor_flops == 10ull * 256 * 256 * 64);
}

TEST_CASE("golden: standard backward two-level bytes for one head, N=256, d=64, 128x128 tiles") {
  RunRequest r = test::request("standard", 1, 1, 256, 64, 128, 128);
  r.problem.pass = Pass::bwd;
  const Report rep = two_level(r);
  const std::uint64_t qk = 256 * 64 * 2, s = 256 * 256 * 2;
  // gemm_dp: dO and V twice each (2 x 2 tiles), dP out; gemm_dv: P, dO twice, dV out; softmax
  // gradient: P and dP in, dS out; gemm_dq: dS, K twice, dQ out; gemm_dk: dS, Q twice, dK out.
  CHECK(rep.engine.total.hbm.read_total() ==
        (4 * qk) + (s + 2 * qk) + (2 * s) + (s + 2 * qk) + (s + 2 * qk));
  CHECK(rep.engine.total.hbm.write_total() == s + qk + s + qk + qk);
}

TEST_CASE("training: flash does more FLOPs (recomputation) and moves far fewer bytes") {
  for (const char* flash : {"flash1", "flash2"}) {
    RunRequest r = test::request("standard", 4, 16, 1024, 64);
    r.problem.pass = Pass::fwdbwd;
    const Report standard = two_level(r);
    r.algorithm = flash;
    const Report fa = two_level(r);
    REQUIRE(fa.feasible());
    CAPTURE(flash);
    CHECK(fa.engine.total.tensor_flops > standard.engine.total.tensor_flops);
    CHECK(hbm_total(standard) > 3 * hbm_total(fa));
  }
}

TEST_CASE("backward with L2 on: requests equal the two-level counts, DRAM sees fewer") {
  test::ShapeGen gen(17);
  const char* algos[] = {"standard", "flash1", "flash2", "block-sparse"};
  for (int i = 0; i < 8; ++i) {
    RunRequest r =
        test::request(gen.pick(algos), gen.pick(1, 2), gen.pick(1, 4), 64 * gen.pick(1, 12), 64);
    r.problem.pass = gen.coin() ? Pass::bwd : Pass::fwdbwd;
    r.problem.causal = gen.coin();
    const Report on = simulate(test::profile(), r);
    const Report off = two_level(r);
    REQUIRE(on.feasible());
    CAPTURE(r.algorithm);
    const Counters& c = on.engine.total;
    // Rows of 128 bytes (d = 64 in fp16, or fp32 dQaccum rows of 256): every byte is a whole
    // sector, and an atomic add counts one L2 read and one L2 write as it does two HBM accesses.
    CHECK(c.l2.read_total() == off.engine.total.hbm.read_total());
    CHECK(c.l2.write_total() == off.engine.total.hbm.write_total());
    CHECK(c.hbm.read_total() <= c.l2.read_total());
    CHECK(c.hbm.write_total() + c.l2_dirty_at_end_bytes <= c.l2.write_total());
  }
}

TEST_CASE("block-sparse equals dense attention under the same block mask" *
          doctest::test_suite("long")) {
  test::ShapeGen gen(23);
  const char* specs[] = {"local:1",      "local:3",      "strided:2", "strided:4",
                         "random:0.4:1", "random:0.2:9", "causal"};
  const Pass passes[] = {Pass::fwd, Pass::bwd, Pass::fwdbwd};
  for (int i = 0; i < test::cases(24); ++i) {
    RunRequest r = random_request(gen, "block-sparse", gen.pick(passes), 300);
    r.problem.pattern = pattern(gen.pick(specs));
    r.seed = static_cast<std::uint64_t>(i) + 7;
    CAPTURE(r.problem.pattern->spec);
    CAPTURE(pass_name(r.problem.pass));
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    CAPTURE(r.tiling.block_q);
    CAPTURE(r.tiling.block_kv);
    CAPTURE(r.problem.causal);
    const double error = executed_error(r);
    CHECK(error >= 0);
    CHECK(error <= 1e-4);
  }
  // A file grid with empty query rows (O = 0, L = +inf) and an empty key column (dK = dV = 0).
  RunRequest r = test::request("block-sparse", 1, 2, 256, 32, 64, 64);
  r.problem.pattern = pattern("file:" + kPatterns + "sparse_rows4.txt");
  for (Pass pass : passes) {
    r.problem.pass = pass;
    CHECK(executed_error(r) <= 1e-4);
  }
}

TEST_CASE("block-sparse skips zero blocks: no loads, no FLOPs") {
  RunRequest r = test::request("block-sparse", 1, 1, 256, 32, 64, 64);
  r.problem.pattern = pattern("file:" + kPatterns + "diag4.txt");
  const Report sparse = two_level(r);
  REQUIRE(sparse.density.has_value());
  CHECK(*sparse.density == doctest::Approx(7.0 / 16));
  r.problem.pattern = nullptr;
  const Report dense = two_level(r);
  CHECK(*dense.density == 1.0);
  // Tensor work is exactly the nonzero blocks' share; K and V are read once per nonzero block.
  CHECK(sparse.engine.total.tensor_flops * 16 == dense.engine.total.tensor_flops * 7);
  CHECK(sparse.engine.total.hbm.read_bytes[index_of(TensorId::K)] == 7ull * 64 * 32 * 2);
}

TEST_CASE("block-sparse HBM bytes fall roughly in proportion to the density") {
  // strided:S keeps every S-th of the 32 key blocks of each row: s = 1, 1/2, 1/4, 1/8 exactly.
  for (Pass pass : {Pass::fwd, Pass::bwd, Pass::fwdbwd}) {
    double dense_bytes = 0;
    double previous = 0;
    for (int stride : {1, 2, 4, 8}) {
      RunRequest r = test::request("block-sparse", 1, 4, 4096, 64, 128, 128);
      r.problem.pass = pass;
      r.problem.pattern = pattern("strided:" + std::to_string(stride));
      const Report rep = two_level(r);
      REQUIRE(rep.feasible());
      const double s = 1.0 / stride;
      CAPTURE(pass_name(pass));
      CAPTURE(stride);
      CHECK(*rep.density == doctest::Approx(s));
      CHECK(hbm_total(rep) == rep.bounds.closed_form_bytes);
      const double bytes = static_cast<double>(hbm_total(rep));
      if (stride == 1) dense_bytes = bytes;
      // The N*d terms (Q, O, dO, dQ, dK, dV once) do not shrink: Theta(N d + N^2 d^2 s / M).
      CHECK(bytes / dense_bytes >= s);
      CHECK(bytes / dense_bytes <= s + 0.15);
      if (stride > 1) CHECK(bytes < 0.65 * previous);
      previous = bytes;
    }
  }
}

TEST_CASE("block patterns: definitions") {
  AttentionProblem p;
  p.seq = p.seq_kv = 512;
  p.pattern = pattern("local:2");
  const BlockMask local(p, 64, 64);  // 8 x 8 blocks: the band |j - i| < 2
  CHECK(local.nonzero_blocks() == 8 + 2 * 7);
  CHECK(local.at(3, 2));
  CHECK_FALSE(local.at(3, 5));
  p.causal = true;  // with --causal: the 2 blocks ending at the diagonal
  CHECK(BlockMask(p, 64, 64).nonzero_blocks() == 8 + 7);
  p.causal = false;
  p.pattern = pattern("strided:4");
  const BlockMask strided(p, 64, 64);
  CHECK(strided.nonzero_blocks() == 16);
  CHECK(strided.at(5, 1));
  p.pattern = pattern("causal");
  CHECK(BlockMask(p, 64, 64).nonzero_blocks() == 36);
  p.pattern = pattern("random:0.25:3");
  const double s = BlockMask(p, 8, 8).density();  // 4096 blocks
  CHECK(test::rel_close(s, 0.25, 0.1));           // 4096 draws: the spread of s is about 3% of 0.25
  // The seed decides the blocks: a pattern parsed again with the same seed draws the same grid,
  // another seed another grid of about the same density.
  AttentionProblem again = p, other = p;
  again.pattern = pattern("random:0.25:3");
  other.pattern = pattern("random:0.25:4");
  const BlockMask first(p, 8, 8), same(again, 8, 8), different(other, 8, 8);
  std::int64_t same_blocks = 0, different_blocks = 0;
  for (std::int64_t i = 0; i < first.rows(); ++i) {
    for (std::int64_t j = 0; j < first.cols(); ++j) {
      same_blocks += first.at(i, j) == same.at(i, j) ? 1 : 0;
      different_blocks += first.at(i, j) == different.at(i, j) ? 1 : 0;
    }
  }
  CHECK(same_blocks == 4096);
  CHECK(different_blocks < 4096 - 100);  // independent draws agree on about 5/8 of the blocks
  CHECK(test::rel_close(different.density(), 0.25, 0.1));
}

TEST_CASE("bad patterns are configuration errors naming the flag, file and line") {
  CHECK_THROWS_WITH_AS(parse_block_pattern("banded:3"), doctest::Contains("--pattern 'banded:3'"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_block_pattern("local:0"), doctest::Contains("W '0'"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_block_pattern("strided:x"), doctest::Contains("S 'x'"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_block_pattern("random:1.5:2"), doctest::Contains("(0, 1]"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_block_pattern("random:0.5"), doctest::Contains("DENSITY:SEED"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_block_pattern("random:0.5:-1"), doctest::Contains("SEED '-1'"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_block_pattern("file:/nonexistent/grid.txt"),
                       doctest::Contains("cannot read pattern file '/nonexistent/grid.txt'"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_block_pattern("file:" + kPatterns + "bad_char.txt"),
                       doctest::Contains("bad_char.txt' line 3: expected 0 or 1, found 'x'"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_block_pattern("file:" + kPatterns + "ragged.txt"),
                       doctest::Contains("ragged.txt' line 2: 2 blocks, line 1 has 3"),
                       ConfigError);
  // A grid that does not match the problem's blocks.
  RunRequest r = test::request("block-sparse", 1, 1, 512, 32, 64, 64);
  r.problem.pattern = pattern("file:" + kPatterns + "diag4.txt");
  CHECK_THROWS_WITH_AS(
      simulate(test::profile(), r),
      doctest::Contains("diag4.txt' line 1: the grid is 4 x 4 blocks, the problem has 8 x 8"),
      ConfigError);
  // --pattern belongs to block-sparse.
  r.algorithm = "flash2";
  r.problem.pattern = pattern("local:2");
  CHECK_THROWS_WITH_AS(simulate(test::profile(), r), doctest::Contains("--pattern applies to"),
                       ConfigError);
}

TEST_CASE("flash2 backward against PyTorch's FlashAttention-2 measured on the H200") {
  // cuda_validate/measurements/h200-sxm-141gb/pytorch_sdpa_*.json: Nsight Compute counters of
  // PyTorch's flash backward (cold L2 per kernel, clocks locked to base). Its main kernel is
  // compared with ours at the SM clock ncu measured: DRAM bytes, bytes the SMs received from L2,
  // and time.
  const std::string path =
      std::string(IOSIM_REPO_DIR) +
      "/cuda_validate/measurements/h200-sxm-141gb/pytorch_sdpa_2026-11-22.json";
  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json data = nlohmann::json::parse(in);
  int compared = 0;
  for (const nlohmann::json& c : data.at("cases")) {
    if (c.at("schedule") != "flash2" || c.at("pass") == "fwd") continue;
    const nlohmann::json& p = c.at("problem");
    if (p.at("seq").get<std::int64_t>() > 4096) continue;  // keep the suite fast
    for (const nlohmann::json& k : c.at("kernels")) {
      if (k.at("kind") != "flash_bwd_main") continue;
      const nlohmann::json& m = k.at("metrics");
      RunRequest r =
          test::request("flash2", p.at("batch"), p.at("heads"), p.at("seq"), p.at("head_dim"));
      r.problem.pass = Pass::bwd;
      r.engine.flush_l2_between_kernels = true;
      r.engine.sm_clock_mhz = m.at("sm__cycles_elapsed.avg.per_second").get<double>() / 1e6;
      const Report rep = simulate(test::profile("h200-sxm-141gb"), r);
      REQUIRE(rep.feasible());
      const KernelResult& ours = rep.engine.kernels.at(1);
      REQUIRE(ours.spec.name == "flash2_bwd");
      CAPTURE(c.at("id").get<std::string>());
      CHECK(ours.spec.smem_bytes_per_cta ==
            k.at("launch").at("launch__shared_mem_per_block_dynamic").get<std::int64_t>());
      // 2 FLOPs x 16 x 8 x 16 per mma.sync m16n8k16.
      CHECK(ours.counters.tensor_flops ==
            4096 * m.at("sm__inst_executed_pipe_tensor.sum").get<std::uint64_t>());
      const double dram_read = m.at("dram__bytes_read.sum").get<double>();
      const double sm_received = 32 * m.at("l1tex__m_xbar2l1tex_read_sectors.sum").get<double>();
      const double time_s = m.at("gpu__time_duration.sum").get<double>() * 1e-9;
      // The atomics' reads happen inside the L2; the SMs receive only the loads.
      const double loads = static_cast<double>(
          ours.counters.l2.read_total() - ours.counters.l2.read_bytes[index_of(TensorId::dQaccum)]);
      CAPTURE(ours.time_s);
      CAPTURE(time_s);
      CHECK(test::rel_close(static_cast<double>(ours.counters.hbm.read_total()), dram_read, 0.05));
      CHECK(test::rel_close(loads, sm_received, 0.01));
      CHECK(test::rel_close(ours.time_s, time_s, 0.15));
      ++compared;
    }
  }
  CHECK(compared == 4);
}
