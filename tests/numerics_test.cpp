// Executing each schedule's op stream numerically gives exact attention (FP32 arithmetic against
// an FP64 reference), over many shapes: ragged last blocks, causal, masks, dropout, N != N_kv.
#include <doctest/doctest.h>

#include "numerics/numeric_executor.hpp"
#include "sim/base/errors.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

double executed_error(RunRequest r) {
  r.execute = true;
  r.engine.l2_enabled = false;  // numerics do not depend on the memory model; keep it fast
  const Report rep = simulate(test::profile(), r);
  REQUIRE(rep.feasible());
  REQUIRE(rep.numerics.executed);
  REQUIRE(rep.numerics.max_abs_error.has_value());
  return *rep.numerics.max_abs_error;
}

}  // namespace

TEST_CASE("every schedule computes exact attention over random shapes" *
          doctest::test_suite("long")) {
  test::ShapeGen gen(7);
  const char* algos[] = {"standard", "flash1", "flash2"};
  const std::int64_t dims[] = {8, 16, 32, 64, 128};
  const std::int64_t blocks[] = {16, 32, 48, 64, 128};
  for (int i = 0; i < test::cases(60); ++i) {
    RunRequest r = test::request(gen.pick(algos), gen.pick(1, 2), gen.pick(1, 2), gen.pick(1, 300),
                                 gen.pick(dims), gen.pick(blocks), gen.pick(blocks));
    r.problem.seq_kv = r.problem.seq + (gen.coin() ? 0 : gen.pick(0, 200));
    r.problem.causal = gen.coin();
    r.problem.mask = gen.pick(0, 2) == 0;
    r.problem.dropout = gen.pick(0, 2) == 0 ? 0.2 : 0.0;
    r.seed = static_cast<std::uint64_t>(i) + 1;
    CAPTURE(r.algorithm);
    CAPTURE(r.problem.seq);
    CAPTURE(r.problem.seq_kv);
    CAPTURE(r.problem.head_dim);
    CAPTURE(r.tiling.block_q);
    CAPTURE(r.tiling.block_kv);
    CAPTURE(r.problem.causal);
    CAPTURE(r.problem.mask);
    CAPTURE(r.problem.dropout);
    CHECK(executed_error(r) <= 1e-5);
  }
}

TEST_CASE("the issue's case: flash2 at N=1000, d=64, blocks 128x64") {
  RunRequest r = test::request("flash2", 1, 2, 1000, 64, 128, 64);
  CHECK(executed_error(r) <= 1e-5);
  r.problem.causal = true;
  CHECK(executed_error(r) <= 1e-5);
}

TEST_CASE("a schedule that skips a needed block is caught by execution") {
  // A broken schedule: flash2's emission, minus the last K/V block of every CTA.
  class Broken final : public WholeCtaSchedule {
   public:
    explicit Broken(std::unique_ptr<Schedule> inner) : inner_(std::move(inner)) {}
    std::vector<TensorDecl> tensors() const override { return inner_->tensors(); }
    std::vector<KernelSpec> kernels() const override { return inner_->kernels(); }
    void emit_whole_cta(std::size_t k, std::int64_t cta, std::vector<TileOp>& out) const override {
      std::vector<TileOp> all;
      inner_->emit_cta(k, cta, all);
      std::size_t last_k = 0, finalize = 0;
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (all[i].kind == OpKind::load && all[i].tile.tensor == TensorId::K) last_k = i;
        if (all[i].kind == OpKind::compute && all[i].compute == ComputeKind::finalize) finalize = i;
      }
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (i >= last_k && i < finalize) continue;  // the last K/V block's loads and math
        out.push_back(all[i]);
      }
    }

   private:
    std::unique_ptr<Schedule> inner_;
  };
  AttentionProblem p;
  p.seq = p.seq_kv = 128;
  p.head_dim = 32;
  Planned planned = builtin_registry().get("flash2").plan(p, test::profile(), test::blocks(64, 64));
  REQUIRE(planned.feasible());
  const Broken broken(std::move(planned.schedule));
  CHECK(execute_schedule(broken, p, 3).max_abs_error() > 1e-2);
}

TEST_CASE("--execute refuses problems too large to execute, before it simulates them") {
  struct Counting : OpObserver {
    std::int64_t ops = 0;
    void on_op(std::size_t, std::int64_t, int, const TileOp&, const Counters&) override { ++ops; }
  } seen;
  RunRequest r = test::request("flash2", 64, 16, 8192, 128);
  r.execute = true;
  r.engine.observer = &seen;
  CHECK_THROWS_AS(simulate(test::profile(), r), ConfigError);
  CHECK(seen.ops == 0);
  // (The observer does see the ops of a run that simulates.)
  r.problem.batch = r.problem.heads = 1;
  r.problem.seq = r.problem.seq_kv = 1024;
  r.execute = false;
  CHECK_NOTHROW(simulate(test::profile(), r));
  CHECK(seen.ops > 0);
}
