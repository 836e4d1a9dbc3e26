// iosim explain's trace (teach/): recorded from the engine and the numeric executor, it must add
// up to the run's own totals, hold the closed form, show the exact output where O is final, and
// name the paper's lines where the schedule follows them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "sim/base/errors.hpp"
#include "teach/html_writer.hpp"
#include "teach/text_writer.hpp"
#include "teach/trace.hpp"
#include "test_support.hpp"

namespace iosim {
namespace {

std::uint64_t hbm(const Counters& c) {
  return c.hbm.read_total() + c.hbm.write_total();
}
std::uint64_t l2(const Counters& c) {
  return c.l2.read_total() + c.l2.write_total();
}

struct Case {
  const char* algo;
  Pass pass;
};

}  // namespace

TEST_CASE("explain: the trace's steps add up to the run's totals at every level") {
  const Case cases[] = {
      {"standard", Pass::fwd},     {"flash1", Pass::fwd},         {"flash2", Pass::fwd},
      {"block-sparse", Pass::fwd}, {"flash-decoding", Pass::fwd}, {"paged", Pass::fwd},
      {"standard", Pass::bwd},     {"flash1", Pass::bwd},         {"flash2", Pass::fwdbwd}};
  test::ShapeGen gen(16);
  for (const Case& c : cases) {
    for (int trial = 0; trial < 3; ++trial) {
      const std::int64_t n = std::uniform_int_distribution<std::int64_t>(1, 64)(gen.rng);
      const std::int64_t d = std::uniform_int_distribution<std::int64_t>(1, 16)(gen.rng);
      const std::int64_t bq = std::uniform_int_distribution<std::int64_t>(1, 4)(gen.rng) * 8;
      const std::int64_t bkv = std::uniform_int_distribution<std::int64_t>(1, 4)(gen.rng) * 8;
      RunRequest r = test::request(c.algo, 1, 2, n, d, bq, bkv);
      r.problem.pass = c.pass;
      r.problem.causal = trial == 1 && c.pass == Pass::fwd;
      CAPTURE(c.algo);
      CAPTURE(pass_name(c.pass));
      CAPTURE(n);
      CAPTURE(d);
      CAPTURE(bq);
      CAPTURE(bkv);
      const teach::Trace t = teach::build_trace(test::profile(), r);
      REQUIRE_FALSE(t.steps.empty());
      const teach::LevelBytes& last = t.steps.back().total;
      // The report's run is at --l2 on (the request's default); the other view is two-level.
      CHECK(last.l2 == l2(t.report.engine.total));
      CHECK(last.hbm == hbm(t.report.engine.total));
      CHECK(last.hbm_two_level == hbm(t.other.engine.total));
      CHECK(last.hbm_two_level == t.report.bounds.closed_form_bytes);
      // Each CTA's operations are numbered 0, 1, ... in program order and the last is marked.
      std::size_t ends = 0;
      for (const teach::TraceStep& s : t.steps) ends += s.last_of_cta ? 1 : 0;
      std::size_t ctas = 0;
      for (const KernelSpec& k : t.kernels) ctas += static_cast<std::size_t>(k.grid.count());
      CHECK(ends <=
            ctas);  // a CTA that emits nothing (a causal split past the diagonal) has no step
      CHECK(ends > 0);
    }
  }
}

TEST_CASE("explain: with the L2 off the trace follows the two-level run") {
  RunRequest r = test::request("flash2", 1, 1, 48, 16, 16, 16);
  r.engine.l2_enabled = false;
  const teach::Trace t = teach::build_trace(test::profile(), r);
  CHECK(t.steps.back().total.hbm_two_level == hbm(t.report.engine.total));
  CHECK(t.steps.back().total.l2 == l2(t.other.engine.total));
}

TEST_CASE("explain --execute: final O (and dQ, dK, dV) tiles match FP64; online softmax rescales") {
  for (const char* algo : {"flash1", "flash2", "standard", "flash-decoding", "paged"}) {
    CAPTURE(algo);
    RunRequest r = test::request(algo, 1, 1, 40, 16, 16, 16);
    r.execute = true;
    const teach::Trace t = teach::build_trace(test::profile(), r);
    REQUIRE(t.max_error);
    CHECK(*t.max_error < 1e-5);
    std::int64_t checked_rows = 0;
    for (const teach::TraceStep& s : t.steps) {
      if (!s.max_error) continue;
      CHECK(*s.max_error < 1e-5);
      checked_rows += s.op.tile.rows;
    }
    CHECK(checked_rows == 40);  // every row of O is checked once, where it is final
  }
  for (const char* algo : {"standard", "flash1", "flash2"}) {
    CAPTURE(algo);
    RunRequest r = test::request(algo, 1, 1, 40, 16, 16, 16);
    r.problem.pass = Pass::bwd;
    r.execute = true;
    const teach::Trace t = teach::build_trace(test::profile(), r);
    std::map<TensorId, std::int64_t> checked_rows;  // each gradient's rows, checked where final
    for (const teach::TraceStep& s : t.steps) {
      if (!s.max_error) continue;
      CHECK(*s.max_error < 1e-5);
      checked_rows[s.op.tile.tensor] += s.op.tile.rows;
    }
    CHECK(checked_rows == std::map<TensorId, std::int64_t>{
                              {TensorId::dQ, 40}, {TensorId::dK, 40}, {TensorId::dV, 40}});
  }
  RunRequest r = test::request("flash2", 1, 1, 32, 8, 16, 16);
  r.execute = true;
  const teach::Trace t = teach::build_trace(test::profile(), r);
  int rescales = 0;
  for (const teach::TraceStep& s : t.steps) {
    for (const teach::NumberTile& n : s.numbers) {
      if (n.name.rfind("rescale", 0) != 0) continue;
      ++rescales;
      for (double f : n.values) CHECK((f >= 0.0 && f <= 1.0));  // e^(m_old - m_new), m grows
    }
  }
  CHECK(rescales == 4);  // 2 CTAs x 2 K/V blocks
}

TEST_CASE("explain: refuses problems past the largest it traces, naming the limit") {
  auto refused = [](RunRequest r, const char* words) {
    CAPTURE(words);
    CHECK_THROWS_WITH_AS(teach::check_explainable(r), doctest::Contains(words), ConfigError);
  };
  refused(test::request("flash2", 1, 1, 65, 16), "--seq 65 is larger than the 64 allowed");
  refused(test::request("flash2", 1, 1, 64, 17), "--head-dim 17 is larger than the 16 allowed");
  refused(test::request("flash2", 5, 1, 64, 16), "--batch x --heads 5 is larger than the 4");
  RunRequest kv = test::request("flash-decoding", 1, 1, 1, 16);
  kv.problem.seq_kv = 65;
  refused(kv, "--seq-kv 65");
  CHECK_NOTHROW(teach::check_explainable(test::request("flash2", 2, 2, 64, 16)));
}

TEST_CASE("explain: the paper's lines of FlashAttention-2's forward") {
  const teach::Trace t =
      teach::build_trace(test::profile(), test::request("flash2", 1, 1, 32, 16, 16, 16));
  auto line_of = [&](OpKind kind, ComputeKind compute, TensorId tensor) {
    for (const teach::TraceStep& s : t.steps) {
      if (s.op.kind != kind) continue;
      if (kind == OpKind::compute ? s.op.compute == compute : s.op.tile.tensor == tensor) {
        return s.paper.line;
      }
    }
    return std::string("(none)");
  };
  CHECK(line_of(OpKind::load, {}, TensorId::Q) == "line 4");
  CHECK(line_of(OpKind::load, {}, TensorId::K) == "line 7");
  CHECK(line_of(OpKind::compute, ComputeKind::scores, {}) == "line 8");
  CHECK(line_of(OpKind::compute, ComputeKind::online_softmax, {}) == "line 9");
  CHECK(line_of(OpKind::compute, ComputeKind::accumulate_pv, {}) == "line 10");
  CHECK(line_of(OpKind::store, {}, TensorId::O) == "line 14");
  CHECK(t.steps.front().paper.algorithm == "FlashAttention-2, Algorithm 1");
}

TEST_CASE("explain: text and page writers") {
  RunRequest r = test::request("flash2", 1, 1, 32, 16, 16, 16);
  r.execute = true;
  const teach::Trace t = teach::build_trace(test::profile(), r);
  std::ostringstream all, one;
  teach::write_trace(all, t, {});
  CHECK(all.str().find("step 30/30") != std::string::npos);
  CHECK(all.str().find("= the closed form for these blocks") != std::string::npos);
  CHECK(all.str().find("\033[") == std::string::npos);  // no color unless asked
  teach::TextOptions step3;
  step3.step = 3;
  teach::write_trace(one, t, step3);
  CHECK(one.str().find("step 3/30") != std::string::npos);
  CHECK(one.str().find("step 4/30") == std::string::npos);
  teach::TextOptions past;
  past.step = 31;
  std::ostringstream none;
  CHECK_THROWS_AS(teach::write_trace(none, t, past), ConfigError);
  const std::string page = teach::trace_html(t);
  CHECK(page.find("<script type=\"application/json\" id=\"trace\">") != std::string::npos);
  CHECK(page.find("http") == std::string::npos);  // self-contained: nothing fetched
}

}  // namespace iosim
