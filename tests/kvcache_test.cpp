// The KV-cache allocator simulation: request streams, the two allocators, and the scheduler's
// invariants over many random streams (audited after every step), plus a few exact goldens.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kvcache/block_pool.hpp"
#include "kvcache/contiguous_arena.hpp"
#include "kvcache/simulator.hpp"
#include "kvcache/workload.hpp"
#include "sim/base/errors.hpp"

namespace {

using namespace iosim;
using namespace iosim::kvcache;

// A model whose token takes 2 bytes (K and V of one element each), so budgets read as tokens.
constexpr ModelShape kTinyModel{1, 1, 1, 1};

CacheConfig config(Policy policy, std::int64_t budget_tokens, std::int64_t block_tokens = 16) {
  CacheConfig c;
  c.policy = policy;
  c.model = kTinyModel;
  c.budget_bytes = budget_tokens * kTinyModel.bytes_per_token();
  c.block_tokens = block_tokens;
  c.watermark = 0.0;
  return c;
}

StreamSpec spec_of(const std::string& prompt, const std::string& output, std::int64_t requests,
                   std::int64_t max_output = 64) {
  StreamSpec s;
  s.requests = requests;
  s.prompt_len = parse_length_dist(prompt, "--prompt-len");
  s.output_len = parse_length_dist(output, "--output-len");
  s.max_output_tokens = max_output;
  s.max_prompt_tokens = 512;
  return s;
}

std::string message_of(auto&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

std::int64_t total_output(const RequestStream& s) {
  return std::accumulate(s.output_tokens.begin(), s.output_tokens.end(), std::int64_t{0});
}

}  // namespace

TEST_CASE("kvcache: distributions and arrivals parse, and bad specs name the flag") {
  const LengthDist d = parse_length_dist("lognormal:5.5,0.9", "--output-len");
  CHECK(d.kind == LengthDist::Kind::lognormal);
  CHECK(d.a == 5.5);
  CHECK(d.b == 0.9);
  CHECK(parse_length_dist("uniform:3,9", "--prompt-len").kind == LengthDist::Kind::uniform);
  CHECK(parse_arrivals("poisson:2.5", "--arrivals").rate_per_step == 2.5);
  CHECK(parse_arrivals("burst", "--arrivals").kind == ArrivalProcess::Kind::burst);

  CHECK(message_of([] {
          parse_length_dist("unifrm:1,5", "--prompt-len");
        }).find("did you mean 'uniform'") != std::string::npos);
  CHECK(message_of([] {
          parse_length_dist("uniform:9,3", "--prompt-len");
        }).find("--prompt-len 'uniform:9,3'") != std::string::npos);
  CHECK(message_of([] {
          parse_length_dist("normal:5", "--output-len");
        }).find("takes 2 parameters") != std::string::npos);
  CHECK(message_of([] {
          parse_length_dist("const:x", "--output-len");
        }).find("'x' is not a number") != std::string::npos);
  CHECK(message_of([] {
          parse_arrivals("poisson:-1", "--arrivals");
        }).find("--arrivals 'poisson:-1'") != std::string::npos);
  CHECK(message_of([] {
          parse_arrivals("poison:1", "--arrivals");
        }).find("did you mean 'poisson'") != std::string::npos);
}

TEST_CASE("kvcache: a Poisson rate whose arrivals pass int64 steps is refused, not wrapped") {
  // poisson:1e-300 drew arrivals of about 1e300 steps; converted to int64 they became INT64_MIN
  // and the mean latency -9.2e18 steps.
  for (const char* spec : {"poisson:1e-300", "poisson:1e-16", "poisson:4.9e-324"}) {
    CAPTURE(spec);
    CHECK(message_of([&] { parse_arrivals(spec, "--arrivals"); }).find("in [1e-15, 1e+06]") !=
          std::string::npos);
  }
  CHECK(parse_arrivals("poisson:1e-15", "--arrivals").rate_per_step == 1e-15);
  // The least rate parses; a stream whose arrivals still pass the latest step is refused when it
  // is drawn (an ArrivalProcess made by hand, or many requests at the least rate).
  StreamSpec s = spec_of("const:10", "const:10", 100, 100);
  s.arrivals.kind = ArrivalProcess::Kind::poisson;
  s.arrivals.rate_per_step = 1e-300;
  s.arrivals.text = "poisson:1e-300";
  CHECK(message_of([&] {
          generate_stream(s);
        }).find("--arrivals 'poisson:1e-300': request 1 of 100 arrives after step 1e+15") !=
        std::string::npos);
  s.arrivals = parse_arrivals("poisson:1e-15", "--arrivals");
  CHECK(message_of([&] { generate_stream(s); }).find("arrives after step 1e+15") !=
        std::string::npos);
  s.arrivals = parse_arrivals("poisson:1e-12", "--arrivals");
  const RequestStream ok = generate_stream(s);
  for (const Request& r : ok.requests) CHECK(r.arrival_step > 0);
}

TEST_CASE("kvcache: drawn streams are deterministic per seed, clamped, and Poisson at the rate") {
  StreamSpec s = spec_of("lognormal:4,1.5", "normal:30,40", 20000, 100);
  s.max_prompt_tokens = 300;
  s.arrivals = parse_arrivals("poisson:3", "--arrivals");
  s.samples = 2;
  const RequestStream a = generate_stream(s), b = generate_stream(s);
  CHECK(a.output_tokens == b.output_tokens);
  CHECK(a.requests.back().arrival_step == b.requests.back().arrival_step);
  s.seed = 2;
  const RequestStream c = generate_stream(s);
  CHECK(a.output_tokens != c.output_tokens);
  CHECK(a.output_tokens.size() == 40000);
  for (const Request& r : a.requests) {
    CHECK_LE(r.prompt_tokens, 300);
    CHECK_GE(r.prompt_tokens, 1);
  }
  CHECK(*std::max_element(a.output_tokens.begin(), a.output_tokens.end()) == 100);
  CHECK(*std::min_element(a.output_tokens.begin(), a.output_tokens.end()) == 1);
  CHECK(a.clamped_requests > 0);
  // 20000 arrivals at 3 per step span about 6667 steps.
  CHECK(a.requests.back().arrival_step == doctest::Approx(20000 / 3.0).epsilon(0.03));
  CHECK(std::is_sorted(
      a.requests.begin(), a.requests.end(),
      [](const Request& x, const Request& y) { return x.arrival_step < y.arrival_step; }));
}

TEST_CASE("kvcache: traces parse, sort by arrival, and malformed lines name file and line") {
  StreamSpec s;
  s.samples = 2;
  const RequestStream t = parse_trace(
      "arrival,prompt_len,output_len,group\n# comment\n5,10,3,1\n\n0.5,7,4\n", "t.csv", s);
  REQUIRE(t.requests.size() == 2);
  CHECK(t.requests[0].arrival_step == 1);  // 0.5 -> may be admitted from step 1
  CHECK(t.requests[0].prompt_tokens == 7);
  CHECK(t.output(0, 1) == 4);
  CHECK(t.requests[1].group == 1);
  CHECK(t.output(1, 0) == 3);

  CHECK(message_of([&] {
          parse_trace("0,10,3\n1,abc,3\n", "t.csv", s);
        }).find("trace 't.csv' line 2: prompt_len 'abc'") != std::string::npos);
  CHECK(message_of([&] { parse_trace("0,10\n", "t.csv", s); }).find("line 1: expected 3 or 4") !=
        std::string::npos);
  CHECK(message_of([&] { parse_trace("-1,10,3\n", "t.csv", s); }).find("arrival '-1'") !=
        std::string::npos);
  CHECK(message_of([&] { parse_trace("0,10,0\n", "t.csv", s); }).find("output_len '0'") !=
        std::string::npos);
  CHECK(message_of([&] { parse_trace("# nothing\n", "t.csv", s); }).find("has no requests") !=
        std::string::npos);
  CHECK(message_of([&] {
          load_trace("/nonexistent/trace.csv", s);
        }).find("cannot read trace file") != std::string::npos);
}

// Issue #50's third probe: `arrival,output_len,prompt_len` was read as prompt_len,output_len, and
// a fourth field under a header of three columns was taken as the group.
TEST_CASE("kvcache: a trace's header names the documented columns and bounds its rows") {
  StreamSpec s;
  const std::vector<std::string> columns = {"arrival", "prompt_len", "output_len", "group"};
  for (const std::size_t n : {std::size_t{3}, std::size_t{4}}) {
    std::vector<std::string> cols(columns.begin(), columns.begin() + static_cast<long>(n));
    std::sort(cols.begin(), cols.end());
    do {  // every order of the columns: only the documented one is read
      std::string header;
      for (const auto& c : cols) header += (header.empty() ? "" : ",") + c;
      const std::string text = header + (n == 3 ? "\n0,10,3\n" : "\n0,10,3,1\n");
      const bool documented = std::equal(cols.begin(), cols.end(), columns.begin());
      if (documented) {
        const RequestStream t = parse_trace(text, "t.csv", s);
        CHECK(t.requests[0].prompt_tokens == 10);
        CHECK(t.output(0, 0) == 3);
      } else if (cols[0] == "arrival") {
        CHECK(message_of([&] {
                parse_trace(text, "t.csv", s);
              }).find("t.csv' line 1: the header '" + header + "' must be") != std::string::npos);
      }
    } while (std::next_permutation(cols.begin(), cols.end()));
  }
  // A row with more fields than the header names is refused; one without the group is group 0.
  for (const char* row : {"0,10,3,1", "0,10,3,1,9"}) {
    CHECK(message_of([&] {
            parse_trace(std::string("arrival,prompt_len,output_len\n") + row + "\n", "t.csv", s);
          }).find("line 2: ") != std::string::npos);
  }
  CHECK(message_of([&] {
          parse_trace("arrival,prompt,foo\n0,10,3\n", "t.csv", s);
        }).find("the header 'arrival,prompt,foo' must be") != std::string::npos);
  CHECK(
      parse_trace("arrival,prompt_len,output_len,group\n0,10,3\n", "t.csv", s).requests[0].group ==
      0);
}

TEST_CASE("kvcache: the contiguous arena places first-fit and merges neighbours") {
  ContiguousArena a(100);
  CHECK(a.reserve(30) == 0);
  CHECK(a.reserve(30) == 30);
  CHECK(a.reserve(30) == 60);
  CHECK(a.reserve(11) == -1);  // 10 free
  a.release(0, 30);
  a.release(60, 30);
  CHECK(a.free_tokens() == 70);
  CHECK(a.largest_hole() == 40);  // [60, 100): external fragmentation of 30
  CHECK(a.reserve(35) == 60);
  CHECK(a.reserve(30) == 0);
  a.release(30, 30);
  a.release(0, 30);
  a.release(60, 35);
  CHECK(a.holes().size() == 1);
  CHECK(a.largest_hole() == 100);
  CHECK_THROWS_AS(a.release(10, 5), InternalError);  // freeing free space is a bug
}

TEST_CASE("kvcache: blocks return to the free list with their last reference") {
  BlockPool p(2, 16);
  const std::int32_t x = p.allocate();
  p.add_ref(x);
  p.add_tokens(x, 5);
  CHECK(p.used_count() == 1);
  CHECK_FALSE(p.release(x));
  CHECK(p.filled_tokens() == 5);
  CHECK(p.release(x));
  CHECK(p.filled_tokens() == 0);
  CHECK(p.free_count() == 2);
  CHECK(p.allocate() >= 0);
  CHECK(p.allocate() >= 0);
  CHECK(p.allocate() == -1);
}

TEST_CASE("kvcache golden: parallel samples share the prompt and copy its last block on write") {
  // Prompt 40 tokens in 16-token blocks: A, B full, C holds 8. Three samples of 5 tokens each.
  StreamSpec s = spec_of("const:40", "const:5", 1, 8);
  s.samples = 3;
  const RequestStream stream = generate_stream(s);
  KvCacheSim paged(config(Policy::paged, 16 * 100), stream);
  paged.step();
  paged.audit();
  // Samples 0 and 1 copy C (8 tokens each), sample 2 writes into C: A B C C0 C1.
  CHECK(paged.allocations() == 5);
  const StepTotals& st = paged.last_step();
  CHECK(st.reserved_bytes == 5 * 16 * 2);
  CHECK(st.token_bytes == (16 + 16 + 3 * 9) * 2);
  CHECK(st.saved_by_sharing_bytes == (9 - 5) * 16 * 2);  // three tables of 3 blocks, 5 blocks
  CHECK(st.generated_tokens == 3);
  CHECK(st.future_bytes + st.internal_frag_bytes == st.reserved_bytes - st.token_bytes);
  paged.run();
  paged.audit();
  CHECK(paged.allocations() == 0);
  const KvCacheResult r = paged.result();
  CHECK(r.summary.cow_copies == 2);
  CHECK(r.summary.cow_copied_bytes == 2 * 8 * 2);
  CHECK(r.summary.steps == 5);
  CHECK(r.summary.generated_tokens == 15);
  CHECK(r.summary.finished == 1);

  // Contiguous: each sample reserves prompt + max output = 48 slots; nothing is shared.
  KvCacheSim contiguous(config(Policy::contiguous, 1000), stream);
  contiguous.step();
  contiguous.audit();
  CHECK(contiguous.allocations() == 3);
  CHECK(contiguous.last_step().reserved_bytes == 3 * 48 * 2);
  CHECK(contiguous.last_step().token_bytes == 3 * 41 * 2);
  CHECK(contiguous.last_step().future_bytes == 3 * 4 * 2);         // 4 tokens still to come
  CHECK(contiguous.last_step().internal_frag_bytes == 3 * 3 * 2);  // max 8, output 5
  contiguous.run();
  CHECK(contiguous.allocations() == 0);
}

TEST_CASE("kvcache golden: a group's prefix blocks outlive a finished owner") {
  // Two requests of one group with a 32-token shared prefix (blocks A, B) and 8 own tokens.
  StreamSpec s;
  s.shared_prefix_tokens = 32;
  const RequestStream stream = parse_trace("0,40,2,7\n0,40,6,7\n", "t", s);
  KvCacheSim sim(config(Policy::paged, 16 * 100), stream);
  sim.step();
  sim.audit();
  CHECK(sim.allocations() == 4);  // A B C0 C1
  CHECK(sim.last_step().saved_by_sharing_bytes == 2 * 16 * 2);
  sim.step();  // request 0 finishes: only its own block C0 is freed
  sim.audit();
  CHECK(sim.allocations() == 3);
  while (!sim.done()) {
    sim.step();
    sim.audit();
  }
  CHECK(sim.allocations() == 0);
  CHECK(sim.result().summary.finished == 2);
}

TEST_CASE("kvcache: a request fits at exactly its footprint and is rejected one token short") {
  StreamSpec s = spec_of("const:40", "const:5", 1, 8);
  s.samples = 2;
  const RequestStream stream = generate_stream(s);
  // Contiguous: 2 x (40 + 8) = 96 tokens.
  CHECK(simulate_kvcache(config(Policy::contiguous, 96), stream).summary.finished == 1);
  CHECK(simulate_kvcache(config(Policy::contiguous, 95), stream).summary.rejected == 1);
  // Paged with 8-token blocks: 5 prompt blocks (the last is full), then per sample 1 block of
  // output: 7 blocks = 56 tokens.
  CHECK(simulate_kvcache(config(Policy::paged, 56, 8), stream).summary.finished == 1);
  CHECK(simulate_kvcache(config(Policy::paged, 55, 8), stream).summary.rejected == 1);
}

TEST_CASE("kvcache: bad cache configurations are ConfigErrors naming the flag") {
  const RequestStream stream = generate_stream(spec_of("const:4", "const:4", 1));
  CacheConfig c = config(Policy::paged, 8, 16);
  CHECK(message_of([&] { KvCacheSim sim(c, stream); }).find("holds no block") != std::string::npos);
  c = config(Policy::paged, 1000, 0);
  CHECK(message_of([&] { KvCacheSim sim(c, stream); }).find("--block-tokens 0") !=
        std::string::npos);
  c = config(Policy::paged, 1000);
  c.model.layers = 0;
  CHECK(message_of([&] { KvCacheSim sim(c, stream); }).find("--layers 0") != std::string::npos);
  CHECK(message_of([] { parse_policy("pagd"); }).find("did you mean 'paged'") != std::string::npos);
}

TEST_CASE("kvcache property: random streams keep every allocator invariant at every step") {
  std::mt19937_64 rng(20240611);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const char* prompts[] = {"uniform:1,60", "lognormal:3,1", "const:17", "normal:20,15"};
  const char* outputs[] = {"uniform:1,40", "lognormal:2.5,1", "const:16", "normal:10,8"};
  int preempting_runs = 0, sharing_runs = 0;
  for (int trial = 0; trial < 200; ++trial) {
    StreamSpec s = spec_of(prompts[pick(0, 3)], outputs[pick(0, 3)], pick(5, 120), 48);
    s.max_prompt_tokens = 96;
    s.samples = static_cast<int>(pick(1, 4));
    s.prompt_groups = pick(1, 4);
    s.shared_prefix_tokens = pick(0, 1) ? pick(1, 40) : 0;
    s.arrivals = pick(0, 1) ? parse_arrivals("burst", "a") : parse_arrivals("poisson:0.7", "a");
    s.seed = static_cast<std::uint64_t>(trial);
    const RequestStream stream = generate_stream(s);
    const Policy policy = pick(0, 1) ? Policy::paged : Policy::contiguous;
    const std::int64_t blocks[] = {1, 2, 4, 8, 16, 32};
    CacheConfig c = config(policy, pick(150, 1200), blocks[pick(0, 5)]);
    c.watermark = pick(0, 1) ? 0.0 : 0.05;
    c.max_running = pick(0, 3) == 0 ? pick(1, 8) : 0;
    c.series_points = static_cast<int>(pick(2, 20));
    CAPTURE(trial);
    CAPTURE(std::string(policy_name(policy)));
    CAPTURE(c.block_tokens);
    CAPTURE(c.budget_bytes);
    CAPTURE(s.samples);
    CAPTURE(s.shared_prefix_tokens);

    KvCacheSim sim(c, stream);
    const double capacity = static_cast<double>(sim.result().capacity_bytes);
    while (!sim.done()) {
      sim.step();
      sim.audit();  // no block owned twice; refcounts match the tables; shared blocks stay
                    // allocated while any table lists them; regions and holes tile the range
      const StepTotals& st = sim.last_step();
      REQUIRE(st.token_bytes <= st.reserved_bytes);  // utilization <= 1
      REQUIRE(st.reserved_bytes <= capacity);
      REQUIRE(st.future_bytes + st.internal_frag_bytes == st.reserved_bytes - st.token_bytes);
      REQUIRE(st.external_frag_bytes <= st.free_bytes);
      if (c.max_running > 0) REQUIRE(st.running <= static_cast<double>(c.max_running));
    }
    sim.audit();
    CHECK(sim.allocations() == 0);  // every block and region freed at the end
    const KvCacheResult r = sim.result();
    CHECK(r.summary.finished + r.summary.rejected == r.summary.requests);
    CHECK(r.summary.utilization() <= 1.0);
    if (r.summary.rejected == 0) {
      // Each token is generated once, whatever was preempted and recomputed.
      CHECK(r.summary.generated_tokens == total_output(stream));
    }
    double steps = 0, tokens = 0;
    for (const SeriesPoint& p : r.series) {
      steps += p.totals.steps;
      tokens += p.totals.generated_tokens;
    }
    CHECK(steps == static_cast<double>(r.summary.steps));
    CHECK(tokens == static_cast<double>(r.summary.generated_tokens));
    CHECK(static_cast<int>(r.series.size()) <= c.series_points);
    if (r.summary.preemptions > 0) ++preempting_runs;
    if (r.summary.totals.saved_by_sharing_bytes > 0) ++sharing_runs;
  }
  // The trials must exercise preemption and sharing, or they prove little.
  CHECK(preempting_runs >= 10);
  CHECK(sharing_runs >= 30);
}

TEST_CASE("kvcache: same seed, same result; paged fits more requests than contiguous") {
  StreamSpec s = spec_of("lognormal:4,1", "lognormal:4,1", 400, 256);
  s.max_prompt_tokens = 256;
  const RequestStream stream = generate_stream(s);
  const KvCacheResult a = simulate_kvcache(config(Policy::paged, 8000), stream);
  const KvCacheResult b = simulate_kvcache(config(Policy::paged, 8000), stream);
  CHECK(a.summary.steps == b.summary.steps);
  CHECK(a.summary.totals.token_bytes == b.summary.totals.token_bytes);
  CHECK(a.summary.preemptions == b.summary.preemptions);
  const KvCacheResult c = simulate_kvcache(config(Policy::contiguous, 8000), stream);
  CHECK(a.summary.utilization() > 0.9);
  CHECK(c.summary.utilization() < 0.6);
  const auto mean_running = [](const KvCacheResult& r) {
    return r.summary.totals.running / r.summary.totals.steps;
  };
  MESSAGE("mean running: paged ", mean_running(a), ", contiguous ", mean_running(c));
  CHECK(mean_running(a) > 1.5 * mean_running(c));
  CHECK(a.summary.steps < c.summary.steps);
}
