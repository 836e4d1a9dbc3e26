// The op vocabulary (algorithms/compute_ops.*): one complete row per ComputeKind, and the rows
// hold what the numeric executor does: the buffers a row says its op writes are the ones the
// executor's case changes, and every kind a row gives a numeric meaning is carried out.
#include "algorithms/compute_ops.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "numerics/numeric_executor.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

// An on-chip buffer as the executor's observer shows it.
struct Held {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> values;
  bool operator==(const Held&) const = default;
};

// After each compute op, which buffers changed since the op before it in the same CTA.
class ChangeRecorder final : public NumericObserver {
 public:
  std::set<ComputeKind> seen;
  std::vector<std::string> failures;  // "online_softmax changed dS, which its row does not name"

  void on_op(std::size_t kernel, std::int64_t cta, std::size_t index, const TileOp& op,
             const std::function<MatrixView(TensorId)>& on_chip) override {
    std::vector<Held> now(kTensorCount);
    for (std::size_t t = 0; t < kTensorCount; ++t) {
      const MatrixView v = on_chip(static_cast<TensorId>(t));
      now[t] = {v.rows, v.cols, {v.data, v.data + v.rows * v.cols}};
    }
    // A CTA starts with nothing on chip; its ops come one after another.
    if (index == 0) before_.assign(kTensorCount, Held{});
    const bool in_order = index == 0 || last_ == std::tuple{kernel, cta, index - 1};
    if (!in_order) failures.push_back("the executor's ops of a CTA came out of order");
    if (op.kind == OpKind::compute && in_order) {
      const ComputeOpDef& def = compute_op_def(op.compute);
      seen.insert(op.compute);
      const std::vector<TensorId> writes = written_by(op);
      for (std::size_t t = 0; t < kTensorCount; ++t) {
        const TensorId id = static_cast<TensorId>(t);
        const bool named = std::find(writes.begin(), writes.end(), id) != writes.end();
        if (!(now[t] == before_[t]) && !named) {
          failures.push_back(
              fmt::format("{} changed {}, which its row does not name", def.name, tensor_name(id)));
        }
        if (named && now[t].rows == 0) {
          failures.push_back(
              fmt::format("{} left {}, which its row names, empty", def.name, tensor_name(id)));
        }
      }
    }
    before_ = std::move(now);
    last_ = {kernel, cta, index};
  }
  void on_reference(TensorId, std::int64_t, const std::vector<double>&, std::int64_t,
                    std::int64_t) override {}

 private:
  std::vector<Held> before_;
  std::tuple<std::size_t, std::int64_t, std::size_t> last_{static_cast<std::size_t>(-1), -1, 0};
};

}  // namespace

TEST_CASE("the op vocabulary: every ComputeKind has one complete row") {
  const auto defs = compute_op_defs();
  REQUIRE(defs.size() == kComputeKindCount);
  std::set<std::string_view> names;
  TileOp op;
  op.kind = OpKind::compute;
  op.tile = {TensorId::dK, 1, 16, 8, 32, 8};
  for (std::size_t k = 0; k < kComputeKindCount; ++k) {
    const ComputeKind kind = static_cast<ComputeKind>(k);
    const ComputeOpDef& def = defs[k];
    CAPTURE(def.name);
    CHECK(def.kind == kind);
    CHECK(&compute_op_def(kind) == &def);
    CHECK(!def.name.empty());
    CHECK(names.insert(def.name).second);  // each name once
    CHECK(!def.formula.empty());
    CHECK(!def.narration.empty());
    // It writes something, named either by its row or by its tile.
    CHECK((def.writes.count > 0) != def.writes_own_tile);
    op.compute = kind;
    CHECK(written_by(op).size() == (def.writes_own_tile ? 1 : def.writes.count));
    // Its narration's fields are those narrate() fills (fmt throws on any other).
    std::string words;
    CHECK_NOTHROW(words = narrate(op));
    CHECK(words.find_first_of("{}") == std::string::npos);
    CHECK(words.find("16:24") != std::string::npos);  // it says which rows
    CHECK((def.numeric == NumericMeaning::executed || def.numeric == NumericMeaning::none));
  }
  CHECK_THROWS(compute_op_def(ComputeKind::kCount));
}

TEST_CASE("the op vocabulary holds what the numeric executor does, for every kind it executes") {
  struct Case {
    std::string algo;
    Pass pass;
    std::int64_t head_dim;  // above the standard kernel's 128-wide load chunk: S accumulates
    std::int64_t block_q;   // flash3's: a multiple of wgmma's 64 rows
    bool causal;
    double dropout;
  };
  const Case cases[] = {
      {"standard", Pass::fwdbwd, 192, 16, true, 0.2},
      {"flash1", Pass::fwdbwd, 32, 16, true, 0.2},
      {"flash2", Pass::fwdbwd, 32, 16, false, 0.0},
      {"flash2", Pass::fwdbwd, 32, 16, true, 0.2},
      {"flash3", Pass::fwdbwd, 64, 64, true, 0.0},
      {"flash-decoding", Pass::fwd, 64, 16, false, 0.0},
      {"paged", Pass::fwd, 64, 16, false, 0.0},
  };
  ChangeRecorder recorder;
  for (const Case& c : cases) {
    const bool decode = c.algo == "flash-decoding" || c.algo == "paged";
    RunRequest r = test::request(c.algo, 1, 2, decode ? 1 : 40, c.head_dim, c.block_q, 16);
    if (decode) {
      r.problem.seq_kv = 100;
      r.tiling.splits = test::given(std::int64_t{3});
      if (c.algo == "paged") r.problem.page_tokens = 16;
    }
    r.problem.pass = c.pass;
    r.problem.causal = c.causal;
    r.problem.dropout = c.dropout;
    r.execute = true;
    r.engine.l2_enabled = false;
    r.numeric_observer = &recorder;
    CAPTURE(c.algo);
    const Report rep = simulate(test::profile(), r);
    CAPTURE(rep.infeasible_reason);
    REQUIRE(rep.feasible());
    REQUIRE(rep.numerics.executed);
  }
  for (const std::string& f : recorder.failures) FAIL_CHECK(f);
  for (const ComputeOpDef& def : compute_op_defs()) {
    CAPTURE(def.name);
    // The kinds the executor refuses never reach it; every other kind ran here.
    CHECK(recorder.seen.contains(def.kind) == (def.numeric == NumericMeaning::executed));
  }
}
