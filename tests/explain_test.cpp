// iosim explain's trace (teach/): recorded from the engine and the numeric executor, it must add
// up to the run's own totals, hold the closed form, show the exact output where O is final, and
// name the paper's lines where the schedule follows them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

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

// The last `n` cells of the line of `text` that starts with "  " + label (a --compare row).
std::vector<std::string> row_cells(const std::string& text, const std::string& label,
                                   std::size_t n) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  " + label + " ", 0) != 0) continue;
    std::istringstream words(line.substr(2 + label.size()));
    std::vector<std::string> cells;
    for (std::string w; words >> w;) cells.push_back(w);
    if (cells.size() < n) return {};
    return {cells.end() - static_cast<std::ptrdiff_t>(n), cells.end()};
  }
  return {};
}

// The first group of `pattern` in `text`, or "" when it is not there.
std::string first_match(const std::string& text, const char* pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern)) ? m[1].str() : "";
}

// A trace run with --execute: its largest error and every step that checked a final tile against
// FP64 within 1e-5; the rows those steps checked, in all.
std::int64_t rows_checked_exact(const teach::Trace& t) {
  REQUIRE(t.max_error);
  CHECK(*t.max_error < 1e-5);
  std::int64_t rows = 0;
  for (const teach::TraceStep& s : t.steps) {
    if (!s.max_error) continue;
    CHECK(*s.max_error < 1e-5);
    rows += s.op.tile.rows;
  }
  return rows;
}

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
    const std::int64_t checked_rows = rows_checked_exact(t);
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
  int rescales = 0, firsts = 0;
  for (const teach::TraceStep& s : t.steps) {
    for (const teach::NumberTile& n : s.numbers) {
      if (n.name == "m before" || n.name == "m") {  // -inf exactly where marked unseen
        for (std::size_t i = 0; i < n.values.size(); ++i) {
          CHECK((i < n.unseen.size() && n.unseen[i]) == std::isinf(n.values[i]));
        }
      }
      if (n.name.rfind("rescale", 0) != 0) continue;
      ++rescales;
      for (double f : n.values) CHECK((f >= 0.0 && f <= 1.0));  // e^(m_old - m_new), m grows
      if (n.unseen.empty()) {
        CHECK(n.note.empty());
        continue;
      }
      // A CTA's first K/V block: m was -inf in every row, the factor is 0 and says so.
      ++firsts;
      CHECK(std::count(n.unseen.begin(), n.unseen.end(), true) ==
            static_cast<std::ptrdiff_t>(n.values.size()));
      for (double f : n.values) CHECK(f == 0.0);
      CHECK(n.note.find("0 by definition") != std::string::npos);
    }
  }
  CHECK(rescales == 4);  // 2 CTAs x 2 K/V blocks
  CHECK(firsts == 2);    // the first of each CTA
}

TEST_CASE("explain --execute: each O row is checked against its own head, whatever O's layout") {
  // Several heads: O as [B*H][N][d], a packed group's [B*H_kv][g*N][d] (decoding at N = 1,
  // --pack-gqa on) or the reduce kernel's flat [1][B*H*N][d]. The reference is per query head:
  // a store of rows past one head's N once read past its end.
  struct Case {
    const char* algo;
    std::int64_t seq;
    GqaPacking pack;
  };
  for (const Case& c : {Case{"flash-decoding", 2, GqaPacking::automatic},
                        Case{"flash-decoding", 1, GqaPacking::automatic},
                        Case{"paged", 2, GqaPacking::automatic}, Case{"paged", 1, GqaPacking::on},
                        Case{"flash2", 24, GqaPacking::on}, Case{"flash2", 24, GqaPacking::off}}) {
    CAPTURE(c.algo);
    CAPTURE(c.seq);
    RunRequest r = test::request(c.algo, 1, 4, c.seq, 16, 16, 16);
    r.problem.kv_heads = 2;
    r.problem.seq_kv = 40;
    r.problem.pack_gqa = c.pack;
    r.execute = true;
    const teach::Trace t = teach::build_trace(test::profile(), r);
    const std::int64_t checked_rows = rows_checked_exact(t);
    CHECK(checked_rows == 4 * c.seq);  // every row of every head's O, once
  }
}

TEST_CASE("explain: a latent cache's decode loads no V and holds O of latent_dim columns") {
  // Multi-head latent attention (--latent-dim): every O tile on chip and every store of O is
  // latent_dim wide, K the only K/V tensor loaded, each O row checked exactly where final.
  for (const char* algo : {"flash-decoding", "paged"}) {
    CAPTURE(algo);
    RunRequest r = test::request(algo, 1, 4, 1, 16, 0, 16);
    r.problem.kv_heads = 1;
    r.problem.latent_dim = 8;
    r.problem.seq_kv = 64;
    r.tiling.splits = 2;
    r.execute = true;
    const teach::Trace t = teach::build_trace(test::profile(), r);
    CHECK(rows_checked_exact(t) == 4);
    int o_tiles = 0, k_loads = 0;
    for (const teach::TraceStep& s : t.steps) {
      CHECK(!(s.op.kind == OpKind::load && s.op.tile.tensor == TensorId::V));
      if (s.op.kind == OpKind::load && s.op.tile.tensor == TensorId::K) ++k_loads;
      for (const teach::OnChipTile& held : s.on_chip) {
        if (held.tile.tensor != TensorId::O && held.tile.tensor != TensorId::partial_O) continue;
        CHECK(held.tile.cols == 8);
        ++o_tiles;
      }
    }
    CHECK(k_loads > 0);
    CHECK(o_tiles > 0);
    std::ostringstream text;
    teach::write_trace(text, t, {});
    CHECK(text.str().find("d=16 latent=8") != std::string::npos);
    CHECK(text.str().find("V = the first 8 of K's 16 columns") != std::string::npos);
  }
}

TEST_CASE("explain: a gradient's conversion from fp32 names its own tensor and holds its rows") {
  // FlashAttention-3's grouped-query backward converts dQ, dK and dV (convert_dq, convert_dkv).
  RunRequest r = test::request("flash3", 1, 2, 64, 16, 64, 32);
  r.problem.kv_heads = 1;
  r.problem.pass = Pass::bwd;
  const teach::Trace t = teach::build_trace(test::profile(), r);
  std::set<TensorId> converted;
  for (const teach::TraceStep& s : t.steps) {
    if (s.op.kind != OpKind::compute || s.op.compute != ComputeKind::convert_dq) continue;
    const std::string grad(tensor_name(s.op.tile.tensor));
    CAPTURE(grad);
    converted.insert(s.op.tile.tensor);
    CHECK(teach::describe(s).rfind(grad + " := " + grad + "accum", 0) == 0);
    const auto held =
        std::find_if(s.on_chip.begin(), s.on_chip.end(),
                     [&](const teach::OnChipTile& h) { return h.tile.tensor == s.op.tile.tensor; });
    REQUIRE(held != s.on_chip.end());
    CHECK(held->tile.row0 == s.op.tile.row0);
    CHECK(held->tile.rows == s.op.tile.rows);
  }
  CHECK(converted == std::set<TensorId>{TensorId::dQ, TensorId::dK, TensorId::dV});
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
  // The first online softmax of a CTA: m before and the factor are "not yet seen", not -inf, 0.
  CHECK(all.str().find("m before (first 8 of 16 rows):        -        -") != std::string::npos);
  CHECK(all.str().find("('-' = no score seen yet in the row") != std::string::npos);
  const std::string page = teach::trace_html(t);
  CHECK(page.find("<script type=\"application/json\" id=\"trace\">") != std::string::npos);
  CHECK(page.find("\"unseen\":[true,") != std::string::npos);
  CHECK(page.find("<div id=\"legend\">") != std::string::npos);
  CHECK(page.find("http") == std::string::npos);  // self-contained: nothing fetched
}

TEST_CASE("explain --compare: each column's totals are what explain prints for its algorithm") {
  const char* algos[] = {"standard", "flash1", "flash2"};
  struct Flags {
    Pass pass;
    bool causal, l2;
  };
  for (const Flags& flags : {Flags{Pass::fwd, false, true}, Flags{Pass::fwd, true, false},
                             Flags{Pass::bwd, false, true}}) {
    CAPTURE(pass_name(flags.pass));
    CAPTURE(flags.causal);
    CAPTURE(flags.l2);
    auto request = [&](const char* algo) {
      RunRequest r = test::request(algo, 1, 2, 40, 16, 16, 16);
      r.problem.pass = flags.pass;
      r.problem.causal = flags.causal;
      r.engine.l2_enabled = flags.l2;
      return r;
    };
    std::vector<teach::Trace> traces;
    for (const char* algo : algos)
      traces.push_back(teach::build_trace(test::profile(), request(algo)));
    std::ostringstream compare;
    teach::write_compare(compare, traces, false);
    const std::string text = compare.str();
    CAPTURE(text);
    CHECK(text.find("iosim explain --compare standard,flash1,flash2: ") == 0);
    CHECK(row_cells(text, "", 3) == std::vector<std::string>{"standard", "flash1", "flash2"});
    const auto steps = row_cells(text, "steps (tile operations)", 3);
    const auto hbm2 = row_cells(text, "HBM bytes, two-level model", 3);
    const auto l2_bytes = row_cells(text, "L2 bytes requested (L2 on)", 3);
    const auto dram = row_cells(text, "DRAM bytes (L2 on, incl. dirty at end)", 3);
    const auto closed = row_cells(text, "closed form (two-level)", 3);
    REQUIRE(steps.size() == 3);
    REQUIRE(hbm2.size() == 3);
    REQUIRE(l2_bytes.size() == 3);
    REQUIRE(dram.size() == 3);
    REQUIRE(closed.size() == 3);
    const std::string page = teach::compare_html(traces);
    for (std::size_t i = 0; i < 3; ++i) {
      CAPTURE(algos[i]);
      // The algorithm explained alone, from the same flags: its own summary's numbers.
      std::ostringstream alone;
      teach::write_trace(alone, teach::build_trace(test::profile(), request(algos[i])), {});
      const std::string one = alone.str();
      CHECK(steps[i] == first_match(one, R"(\n(\d+) steps, \d+ kernel)"));
      CHECK(hbm2[i] == first_match(one, R"(HBM, two-level model: ([0-9,]+) B)"));
      CHECK(l2_bytes[i] == first_match(one, R"(L2 requests ([0-9,]+) B, DRAM)"));
      CHECK(dram[i] == first_match(one, R"(DRAM ([0-9,]+) B incl\. dirty)"));
      CHECK(closed[i] == (one.find("= the closed form for these blocks") != std::string::npos
                              ? hbm2[i]
                              : first_match(one, R"(\(closed form: ([0-9,]+) B\))")));
      // The page holds the same cells.
      for (const std::string& cell : {hbm2[i], l2_bytes[i], dram[i]}) {
        CHECK(page.find("<td>" + cell + "</td>") != std::string::npos);
      }
    }
    // Every schedule but the one with the fewest HBM bytes is held against it.
    std::size_t ratios = 0;
    for (std::size_t at = 0; (at = text.find(" moves ", at)) != std::string::npos; ++at) ++ratios;
    CHECK(ratios == 2);
    // The page: one bar per algorithm and level, no script, nothing fetched.
    std::size_t bars = 0;
    for (std::size_t at = 0; (at = page.find("class=\"bar\"", at)) != std::string::npos; ++at) {
      ++bars;
    }
    CHECK(bars == 9);
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.find("http") == std::string::npos);
  }
  std::vector<teach::Trace> one;
  one.push_back(teach::build_trace(test::profile(), test::request("flash2", 1, 1, 32, 16)));
  std::ostringstream none;
  CHECK_THROWS_AS(teach::write_compare(none, one, false), InternalError);
}

}  // namespace iosim
