// The largest shapes iosim accepts: every count fits in the 64-bit counters. validate_problem()
// refuses a problem whose counts could pass 2^64; at the largest batch it accepts, each closed
// form equals B times its value at batch 1 computed in 128-bit arithmetic (a wrapped count would
// not), and one more batch is refused with a message that names the limit.
#include <doctest/doctest.h>

#include <string>

#include "algorithms/io_formulas.hpp"
#include "sim/base/errors.hpp"
#include "sim/schedule/problem.hpp"

using namespace iosim;

namespace {

__extension__ typedef unsigned __int128 u128;  // GCC and clang; -Wpedantic needs the marker

// The largest batch validate_problem() accepts for this problem (found by bisection).
std::int64_t largest_batch(AttentionProblem p) {
  std::int64_t lo = 1, hi = kMaxBatch;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    p.batch = mid;
    try {
      validate_problem(p);
      lo = mid;
    } catch (const ConfigError&) {
      hi = mid - 1;
    }
  }
  return lo;
}

u128 total(const ReadWriteBytes& b) {
  return static_cast<u128>(b.read) + b.write;
}

}  // namespace

TEST_CASE("at the largest accepted shapes the closed forms are exact; one batch more is refused") {
  // flash1's and flash2's closed forms visit every (query block, key block) pair, so at
  // N = 2^24 only standard's is evaluated (2^34 pairs would take minutes).
  struct Case {
    std::int64_t heads, seq, head_dim;
    Pass pass;
    bool pairs;  // evaluate the forms that visit block pairs
  };
  const Case cases[] = {{64, 1 << 20, 256, Pass::fwd, true},
                        {16, 1 << 24, 64, Pass::fwd, false},
                        {128, 1 << 18, 128, Pass::fwdbwd, true},
                        {1, 1 << 24, 1024, Pass::bwd, false},
                        {4, 1 << 20, 1024, Pass::bwd, true}};
  int checked = 0;
  for (const Case& c : cases) {
    AttentionProblem p;
    p.heads = c.heads;
    p.seq = p.seq_kv = c.seq;
    p.head_dim = c.head_dim;
    p.pass = c.pass;
    const std::int64_t batch = largest_batch(p);
    CAPTURE(c.heads);
    CAPTURE(c.seq);
    CAPTURE(c.head_dim);
    CAPTURE(batch);
    REQUIRE(batch >= 1);
    if (batch < kMaxBatch) {
      p.batch = batch + 1;
      try {
        validate_problem(p);
        FAIL("batch + 1 was accepted");
      } catch (const ConfigError& e) {
        const std::string m = e.what();
        const bool named = m.find("more than the 64-bit counters hold") != std::string::npos ||
                           m.find("Q, K and V alone take") != std::string::npos;
        CHECK_MESSAGE(named, m);
      }
    }
    AttentionProblem one = p;
    one.batch = 1;
    p.batch = batch;
    using Form = ReadWriteBytes (*)(const AttentionProblem&, std::int64_t, std::int64_t);
    const Form forms[] = {&standard_closed_form, &flash1_closed_form,
                          [](const AttentionProblem& q, std::int64_t bq, std::int64_t bkv) {
                            return flash2_closed_form(q, bq, bkv);
                          }};
    for (Form form : forms) {
      if (!c.pairs && form != forms[0]) continue;
      for (std::int64_t block : {64, 128}) {
        const u128 expected = static_cast<u128>(batch) * total(form(one, block, block));
        REQUIRE(expected < (static_cast<u128>(1) << 64));
        CHECK(total(form(p, block, block)) == expected);
        ++checked;
      }
    }
  }
  CHECK(checked == 22);  // 3 cases x 3 forms x 2 blocks + 2 cases x 1 form x 2 blocks
}
