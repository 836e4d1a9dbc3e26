#include "kvcache/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <tuple>
#include <variant>

#include "kvcache/contiguous_policy.hpp"
#include "kvcache/paged_policy.hpp"
#include "kvcache/sequences.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/run_control.hpp"
#include "sim/base/suggest.hpp"

namespace iosim::kvcache {
namespace {

using detail::Admitted;
using detail::ContiguousPolicy;
using detail::PagedPolicy;
using detail::Seq;
using detail::Sequences;
using detail::Unfilled;

// Beyond this many blocks the per-block arrays get large; real budgets hold tens of thousands.
constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 26;

// Windows of the time series, aligned to multiples of a width that doubles (merging neighbours)
// whenever the run outgrows `max_points` windows.
class SeriesBuilder {
 public:
  explicit SeriesBuilder(int max_points) : max_(std::max(2, max_points)) {}

  // Adds one step's totals `steps` times, for steps [t, t + steps).
  void add(std::int64_t t, const StepTotals& s, std::int64_t steps) {
    while (steps > 0) {
      std::int64_t k = t / width_;
      while (k >= max_) {
        merge();
        k = t / width_;
      }
      while (static_cast<std::int64_t>(windows_.size()) <= k) {
        SeriesPoint p;
        p.start_step = static_cast<std::int64_t>(windows_.size()) * width_;
        windows_.push_back(p);
      }
      const std::int64_t n = std::min(steps, (k + 1) * width_ - t);
      SeriesPoint& w = windows_[static_cast<std::size_t>(k)];
      w.totals.add(s, static_cast<double>(n));
      w.max_running = std::max(w.max_running, s.running);
      t += n;
      steps -= n;
    }
  }

  const std::vector<SeriesPoint>& windows() const { return windows_; }

 private:
  void merge() {
    std::vector<SeriesPoint> merged;
    for (std::size_t i = 0; i < windows_.size(); i += 2) {
      SeriesPoint p = windows_[i];
      if (i + 1 < windows_.size()) {
        p.totals.add(windows_[i + 1].totals, 1.0);
        p.max_running = std::max(p.max_running, windows_[i + 1].max_running);
      }
      merged.push_back(p);
    }
    windows_ = std::move(merged);
    width_ *= 2;
  }

  std::int64_t max_;
  std::int64_t width_ = 1;
  std::vector<SeriesPoint> windows_;
};

enum class State : std::uint8_t { pending, waiting, running, finished, rejected };

struct Finishing {
  std::int32_t slot, request, sample;
};

}  // namespace

void StepTotals::add(const StepTotals& s, double w) {
  steps += s.steps * w;
  running += s.running * w;
  sequences += s.sequences * w;
  waiting += s.waiting * w;
  reserved_bytes += s.reserved_bytes * w;
  token_bytes += s.token_bytes * w;
  future_bytes += s.future_bytes * w;
  internal_frag_bytes += s.internal_frag_bytes * w;
  external_frag_bytes += s.external_frag_bytes * w;
  free_bytes += s.free_bytes * w;
  saved_by_sharing_bytes += s.saved_by_sharing_bytes * w;
  generated_tokens += s.generated_tokens * w;
}

double KvCacheSummary::utilization() const {
  return totals.reserved_bytes > 0 ? totals.token_bytes / totals.reserved_bytes : 0.0;
}

std::string_view policy_name(Policy p) {
  return p == Policy::contiguous ? "contiguous" : "paged";
}

Policy parse_policy(std::string_view s) {
  if (s == "contiguous") return Policy::contiguous;
  if (s == "paged") return Policy::paged;
  throw ConfigError(fmt::format("unknown policy '{}'; valid policies: contiguous, paged{}", s,
                                did_you_mean(s, {"contiguous", "paged"})));
}

void validate(const CacheConfig& c) {
  const ModelShape& m = c.model;
  for (auto [flag, v, hi] : {std::tuple{"--layers", m.layers, std::int64_t{1000}},
                             std::tuple{"--kv-heads", m.kv_heads, std::int64_t{1024}},
                             std::tuple{"--head-dim", m.head_dim, std::int64_t{4096}}}) {
    if (v < 1 || v > hi)
      throw ConfigError(fmt::format("{} {} is out of range [1, {}]", flag, v, hi));
  }
  if (c.block_tokens < 1 || c.block_tokens > 4096) {
    throw ConfigError(fmt::format("--block-tokens {} is out of range [1, 4096]", c.block_tokens));
  }
  if (c.budget_bytes < 1) {
    throw ConfigError(fmt::format("the KV-cache budget {} bytes must be positive", c.budget_bytes));
  }
  if (c.max_running < 0) {
    throw ConfigError(fmt::format("--max-running {} must be >= 0 (0: no limit)", c.max_running));
  }
  if (!(c.watermark >= 0.0 && c.watermark < 1.0)) {
    throw ConfigError(fmt::format("--watermark {} must be in [0, 1)", c.watermark));
  }
  if (c.series_points < 2 || c.series_points > 100000) {
    throw ConfigError(
        fmt::format("--series-points {} is out of range [2, 100000]", c.series_points));
  }
  const std::int64_t bpt = m.bytes_per_token();
  if (c.policy == Policy::paged) {
    const std::int64_t block_bytes = bpt * c.block_tokens;
    const std::int64_t blocks = c.budget_bytes / block_bytes;
    if (blocks < 1) {
      throw ConfigError(
          fmt::format("the KV-cache budget {} bytes holds no block of {} tokens x {} "
                      "bytes per token",
                      c.budget_bytes, c.block_tokens, bpt));
    }
    if (blocks > kMaxBlocks) {
      throw ConfigError(fmt::format(
          "the KV-cache budget {} bytes holds {} blocks of {} bytes; iosim models at most {} "
          "(raise --block-tokens)",
          c.budget_bytes, blocks, block_bytes, kMaxBlocks));
    }
  } else if (c.budget_bytes / bpt < 1) {
    throw ConfigError(fmt::format("the KV-cache budget {} bytes holds no token of {} bytes",
                                  c.budget_bytes, bpt));
  }
}

// The stepping loop: arrivals, first-come-first-served admission, one token per running sequence
// per step, preemption and finishing, and the totals. Where tokens live is the policy's.
struct KvCacheSim::Impl {
  using Policies = std::variant<ContiguousPolicy, PagedPolicy>;

  const CacheConfig cfg;
  const RequestStream& s;
  const std::int64_t bpt;  // bytes per token
  Sequences seqs;
  Policies policy;
  const std::int64_t capacity_tokens;

  std::vector<State> state;               // per request
  std::vector<std::int32_t> live;         // per request: samples not finished
  std::vector<std::int64_t> first_admit;  // per request, -1 before

  std::deque<std::int32_t> waiting;
  std::vector<std::int32_t> running;  // admission order: the newest last
  std::size_t next_arrival = 0;
  std::int64_t t = 0;
  std::vector<Finishing> finishing;

  KvCacheSummary sum;
  StepTotals last;
  SeriesBuilder series;
  double queue_delay_sum = 0, latency_sum = 0;

  Impl(const CacheConfig& c, const RequestStream& stream)
      : cfg(checked(c, stream)),
        s(stream),
        bpt(c.model.bytes_per_token()),
        seqs(stream),
        policy(make_policy(cfg, seqs)),
        capacity_tokens(std::visit([](const auto& p) { return p.capacity_tokens(); }, policy)),
        series(c.series_points) {
    const std::size_t n = s.requests.size();
    state.assign(n, State::pending);
    live.assign(n, 0);
    first_admit.assign(n, -1);
    sum.requests = static_cast<std::int64_t>(n);
  }

  // `c`, once it and the stream's shape are usable.
  static const CacheConfig& checked(const CacheConfig& c, const RequestStream& stream) {
    validate(c);
    ensure(stream.samples >= 1 &&
               stream.output_tokens.size() ==
                   stream.requests.size() * static_cast<std::size_t>(stream.samples),
           "KvCacheSim: stream has {} output lengths for {} requests x {} samples",
           stream.output_tokens.size(), stream.requests.size(), stream.samples);
    return c;
  }
  static Policies make_policy(const CacheConfig& c, Sequences& seqs) {
    if (c.policy == Policy::paged) return Policies(std::in_place_type<PagedPolicy>, c, seqs);
    return Policies(std::in_place_type<ContiguousPolicy>, c, seqs);
  }

  std::int64_t capacity_bytes() const { return capacity_tokens * bpt; }
  bool done() const { return sum.finished + sum.rejected == sum.requests; }

  void free_seq(std::int32_t slot) {
    std::visit([&](auto& p) { p.free(slot); }, policy);
  }

  // Frees every resident sequence of `v` and puts it at the head of the queue (recompute).
  void preempt(std::int32_t v) {
    for (std::size_t k = 0; k < seqs.samples(); ++k) {
      const std::int32_t slot = seqs.slot_of(v, k);
      if (slot < 0) continue;
      const Seq& q = seqs[slot];
      seqs.generated(v, k) = q.len - q.prompt;
      free_seq(slot);
    }
    state[static_cast<std::size_t>(v)] = State::waiting;
    waiting.push_front(v);
    ++sum.preemptions;
  }

  void admit() {
    while (!waiting.empty() &&
           (cfg.max_running == 0 || static_cast<std::int64_t>(running.size()) < cfg.max_running)) {
      if ((sum.admissions & 0xFFFF) == 0)
        run_control::check();  // a burst admits millions in a step
      const std::int32_t r = waiting.front();
      const std::optional<Admitted> a = std::visit([&](auto& p) { return p.admit(r); }, policy);
      if (!a) return;
      const auto ri = static_cast<std::size_t>(r);
      live[ri] = a->sequences;
      sum.prefill_tokens += a->prefill_tokens;
      if (first_admit[ri] >= 0) sum.recomputed_tokens += a->prefill_tokens;
      waiting.pop_front();
      state[ri] = State::running;
      running.push_back(r);
      ++sum.admissions;
      if (first_admit[ri] < 0) first_admit[ri] = t;
    }
  }

  void record(const StepTotals& st, std::int64_t steps) {
    sum.totals.add(st, static_cast<double>(steps));
    sum.max_running = std::max(sum.max_running, st.running);
    sum.max_waiting = std::max(sum.max_waiting, st.waiting);
    sum.max_reserved_bytes = std::max(sum.max_reserved_bytes, st.reserved_bytes);
    sum.max_saved_bytes = std::max(sum.max_saved_bytes, st.saved_by_sharing_bytes);
    series.add(t, st, steps);
  }

  void step() {
    if (done()) return;
    while (next_arrival < s.requests.size() && s.requests[next_arrival].arrival_step <= t) {
      // A burst of millions of requests arrives in one step: checked every 65536 of them.
      if ((next_arrival & 0xFFFFu) == 0) run_control::check();
      const auto r = static_cast<std::int32_t>(next_arrival++);
      if (std::visit([&](const auto& p) { return p.fits_alone(r); }, policy)) {
        state[static_cast<std::size_t>(r)] = State::waiting;
        waiting.push_back(r);
      } else {
        state[static_cast<std::size_t>(r)] = State::rejected;
        ++sum.rejected;
      }
    }
    admit();
    if (running.empty()) {
      ensure(waiting.empty(), "KvCacheSim: request {} does not fit in an empty cache",
             waiting.empty() ? -1 : waiting.front());
      if (next_arrival >= s.requests.size()) {
        ensure(done(), "KvCacheSim: nothing running, waiting or arriving, but not done");
        return;
      }
      const std::int64_t gap = s.requests[next_arrival].arrival_step - t;
      last = StepTotals{};
      last.steps = 1;
      last.free_bytes = static_cast<double>(capacity_bytes());
      record(last, gap);
      t += gap;
      return;
    }
    std::visit([&](auto& p) { decode(p); }, policy);
    t += 1;
  }

  template <typename P>
  void decode(P& pol) {
    StepTotals st;
    st.steps = 1;
    std::size_t live_end = running.size();
    finishing.clear();
    // Token counts of this step (integers: cheaper than doubles in the hottest loop).
    std::int64_t step_future = 0, step_never = 0, step_seqs = 0, step_tokens = 0;
    for (std::size_t i = 0; i < live_end; ++i) {
      const std::int32_t r = running[i];
      // Out of memory mid-step: preempts the newest running request; false when that was r.
      auto make_room = [&] {
        ensure(live_end > 0, "KvCacheSim: out of blocks with nothing to preempt");
        const std::int32_t victim = running[--live_end];
        preempt(victim);
        return victim != r;
      };
      std::int64_t future = 0, never = 0, nseq = 0;
      bool self_preempted = false;
      for (std::size_t k = 0; k < seqs.samples(); ++k) {
        const std::int32_t slot = seqs.slot_of(r, k);
        if (slot < 0) continue;
        Seq& q = seqs[slot];
        if (!pol.append(q, make_room)) {
          self_preempted = true;
          break;
        }
        const Unfilled u = pol.unfilled(q);
        future += u.coming;
        never += u.never;
        ++nseq;
        ++step_tokens;
        if (q.len == q.target) finishing.push_back({slot, r, static_cast<std::int32_t>(k)});
      }
      if (!self_preempted) {
        step_future += future;
        step_never += never;
        step_seqs += nseq;
      }
    }
    running.resize(live_end);  // the preempted were the newest, at the end

    st.generated_tokens = static_cast<double>(step_tokens);
    st.sequences = static_cast<double>(step_seqs);
    st.future_bytes = static_cast<double>(step_future * bpt);
    st.internal_frag_bytes = static_cast<double>(step_never * bpt);
    st.running = static_cast<double>(running.size());
    st.waiting = static_cast<double>(waiting.size());
    pol.count_bytes(st);
    st.free_bytes = static_cast<double>(capacity_bytes()) - st.reserved_bytes;
    last = st;
    record(st, 1);
    sum.generated_tokens += static_cast<std::int64_t>(st.generated_tokens);

    bool any_finished = false;
    for (const Finishing& f : finishing) {
      const auto k = static_cast<std::size_t>(f.sample);
      if (state[static_cast<std::size_t>(f.request)] != State::running ||
          seqs.slot_of(f.request, k) != f.slot) {
        continue;  // its request was preempted in this step; the sample's output is complete
      }
      seqs.generated(f.request, k) = seqs.output_of(f.request, k);
      pol.free(f.slot);
      if (--live[static_cast<std::size_t>(f.request)] == 0) {
        const auto r = static_cast<std::size_t>(f.request);
        state[r] = State::finished;
        ++sum.finished;
        queue_delay_sum += static_cast<double>(first_admit[r] - s.requests[r].arrival_step);
        latency_sum += static_cast<double>(t + 1 - s.requests[r].arrival_step);
        any_finished = true;
      }
    }
    if (any_finished) {
      std::erase_if(running, [&](std::int32_t r) {
        return state[static_cast<std::size_t>(r)] == State::finished;
      });
    }
  }

  void audit() const;
  KvCacheResult result() const;
};

void KvCacheSim::Impl::audit() const {
  const std::vector<Seq>& slots = seqs.slots();
  std::int64_t live_seqs = 0;
  for (std::size_t slot = 0; slot < slots.size(); ++slot) {
    const Seq& q = slots[slot];
    if (q.request < 0) continue;
    ++live_seqs;
    ensure(state[static_cast<std::size_t>(q.request)] == State::running,
           "audit: sequence {} of request {} resident while the request is not running", slot,
           q.request);
    ensure(seqs.slot_of(q.request, static_cast<std::size_t>(q.sample)) ==
               static_cast<std::int32_t>(slot),
           "audit: sample {} of request {} does not point at its slot {}", q.sample, q.request,
           slot);
    ensure(q.len >= 1 && q.len <= q.target, "audit: sequence {} holds {} of {} tokens", slot, q.len,
           q.target);
  }
  ensure(live_seqs + static_cast<std::int64_t>(seqs.free_slots()) ==
             static_cast<std::int64_t>(slots.size()),
         "audit: {} live + {} free slots != {}", live_seqs, seqs.free_slots(), slots.size());
  for (std::int32_t r : running) {
    ensure(state[static_cast<std::size_t>(r)] == State::running,
           "audit: request {} in the running "
           "list is not running",
           r);
  }
  std::visit([](const auto& p) { p.audit(); }, policy);
}

KvCacheResult KvCacheSim::Impl::result() const {
  KvCacheResult res;
  res.config = cfg;
  res.capacity_bytes = capacity_bytes();
  res.capacity_tokens = capacity_tokens;
  res.summary = sum;
  if (const auto* paged = std::get_if<PagedPolicy>(&policy)) {
    res.blocks = paged->blocks();
    res.summary.cow_copies = paged->cow_copies();
    res.summary.cow_copied_bytes = paged->cow_copied_bytes();
  }
  res.summary.steps = t;
  if (sum.finished > 0) {
    res.summary.queue_delay_steps_mean = queue_delay_sum / static_cast<double>(sum.finished);
    res.summary.latency_steps_mean = latency_sum / static_cast<double>(sum.finished);
  }
  res.series = series.windows();
  return res;
}

KvCacheSim::KvCacheSim(const CacheConfig& config, const RequestStream& stream)
    : impl_(std::make_unique<Impl>(config, stream)) {}
KvCacheSim::~KvCacheSim() = default;
bool KvCacheSim::done() const {
  return impl_->done();
}
void KvCacheSim::step() {
  impl_->step();
}
void KvCacheSim::run() {
  while (!impl_->done()) {
    run_control::check();  // Ctrl-C, SIGTERM: a long trace runs for minutes
    impl_->step();
  }
}
std::int64_t KvCacheSim::now() const {
  return impl_->t;
}
const StepTotals& KvCacheSim::last_step() const {
  return impl_->last;
}
void KvCacheSim::audit() const {
  impl_->audit();
}
std::int64_t KvCacheSim::allocations() const {
  return std::visit([](const auto& p) { return p.allocations(); }, impl_->policy);
}
KvCacheResult KvCacheSim::result() const {
  return impl_->result();
}

KvCacheResult simulate_kvcache(const CacheConfig& config, const RequestStream& stream) {
  KvCacheSim sim(config, stream);
  sim.run();
  return sim.result();
}

}  // namespace iosim::kvcache
