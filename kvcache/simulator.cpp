#include "kvcache/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "kvcache/block_pool.hpp"
#include "kvcache/contiguous_arena.hpp"
#include "sim/errors.hpp"
#include "sim/suggest.hpp"

namespace iosim::kvcache {
namespace {

// Beyond this many blocks the per-block arrays get large; real budgets hold tens of thousands.
constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 26;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

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

// How an append may get a block: a decode step may preempt, a readmission's replay may not.
enum class Mode { decode, replay };

// One sampled sequence resident in the cache.
struct Seq {
  std::int32_t request = -1;  // -1: the slot is free
  std::int32_t sample = 0;
  std::int32_t len = 0;     // tokens whose K/V it holds
  std::int32_t target = 0;  // prompt + output: len when it finishes
  std::int32_t prompt = 0;
  std::int32_t last_blk = -1;  // paged: table.back(), kept here to spare the decode loop a load
  bool last_private = false;   // paged: the last block is known to be referenced by this only
  std::int64_t offset = 0;     // contiguous: first slot of its region
  std::int64_t reserved = 0;   // contiguous: region size in tokens
  std::vector<std::int32_t> table;  // paged: physical block of each logical block
};

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

struct KvCacheSim::Impl {
  const CacheConfig cfg;
  const RequestStream& s;
  const std::int64_t bpt;      // bytes per token
  const std::int32_t b;        // tokens per block (paged)
  const std::int64_t max_out;  // what contiguous reserves beyond the prompt
  const std::size_t nsamples;
  std::int64_t capacity_tokens = 0, blocks = 0, watermark_blocks = 0;
  std::optional<BlockPool> pool;
  std::optional<ContiguousArena> arena;
  std::int64_t contiguous_filled = 0;  // contiguous: tokens held

  std::vector<Seq> seqs;
  std::vector<std::int32_t> free_slots;
  std::vector<std::int32_t> generated;    // per sample; brought up to date on preempt and finish
  std::vector<std::int32_t> sample_slot;  // per sample: its Seq, or -1
  std::vector<State> state;               // per request
  std::vector<std::int32_t> live;         // per request: samples not finished
  std::vector<std::int64_t> first_admit;  // per request, -1 before

  // Prompt-prefix sharing (paged): the resident full blocks of each group's common prefix, in
  // order, and for each block the group and position it holds (-1: not a prefix block).
  std::unordered_map<std::int32_t, std::vector<std::int32_t>> prefix;
  std::vector<std::int32_t> block_group, block_prefix_index;
  std::int64_t logical_blocks = 0;  // sum of block-table lengths

  std::deque<std::int32_t> waiting;
  std::vector<std::int32_t> running;  // admission order: the newest last
  std::size_t next_arrival = 0;
  std::int64_t t = 0;
  std::vector<Finishing> finishing;
  std::vector<std::int32_t> prompt_table;  // scratch

  KvCacheSummary sum;
  StepTotals last;
  SeriesBuilder series;
  double queue_delay_sum = 0, latency_sum = 0;

  Impl(const CacheConfig& c, const RequestStream& stream)
      : cfg(c),
        s(stream),
        bpt(c.model.bytes_per_token()),
        b(static_cast<std::int32_t>(c.block_tokens)),
        max_out(stream.max_output_tokens),
        nsamples(static_cast<std::size_t>(stream.samples)),
        series(c.series_points) {
    validate(c);
    ensure(stream.samples >= 1 && stream.output_tokens.size() == stream.requests.size() * nsamples,
           "KvCacheSim: stream has {} output lengths for {} requests x {} samples",
           stream.output_tokens.size(), stream.requests.size(), stream.samples);
    if (cfg.policy == Policy::paged) {
      blocks = cfg.budget_bytes / (bpt * b);
      capacity_tokens = blocks * b;
      watermark_blocks = static_cast<std::int64_t>(cfg.watermark * static_cast<double>(blocks));
      pool.emplace(blocks, b);
      block_group.assign(static_cast<std::size_t>(blocks), -1);
      block_prefix_index.assign(static_cast<std::size_t>(blocks), -1);
    } else {
      capacity_tokens = cfg.budget_bytes / bpt;
      arena.emplace(capacity_tokens);
    }
    const std::size_t n = s.requests.size();
    generated.assign(n * nsamples, 0);
    sample_slot.assign(n * nsamples, -1);
    state.assign(n, State::pending);
    live.assign(n, 0);
    first_admit.assign(n, -1);
    sum.requests = static_cast<std::int64_t>(n);
  }

  std::int64_t capacity_bytes() const { return capacity_tokens * bpt; }
  std::size_t flat(std::int32_t r, std::size_t k) const {
    return static_cast<std::size_t>(r) * nsamples + k;
  }
  std::int32_t output_of(std::int32_t r, std::size_t k) const {
    return s.output_tokens[flat(r, k)];
  }
  bool done() const { return sum.finished + sum.rejected == sum.requests; }

  // The most this request can ever hold alone: contiguous reserves prompt + max output per
  // sample; paged holds the prompt's blocks plus, per sample, blocks for the tail of the prompt's
  // last block and its output (one sample keeps the original last block).
  bool fits_alone(std::int32_t r) const {
    const std::int64_t p = s.requests[static_cast<std::size_t>(r)].prompt_tokens;
    if (cfg.policy == Policy::contiguous) {
      return static_cast<std::int64_t>(nsamples) * (p + max_out) <= capacity_tokens;
    }
    const std::int64_t tail = p % b;
    std::int64_t peak = ceil_div(p, b) - (tail > 0 ? 1 : 0);
    for (std::size_t k = 0; k < nsamples; ++k) peak += ceil_div(tail + output_of(r, k), b);
    return peak <= blocks - watermark_blocks;
  }

  std::int32_t new_seq(std::int32_t r, std::size_t k, std::int32_t len) {
    std::int32_t slot;
    if (!free_slots.empty()) {
      slot = free_slots.back();
      free_slots.pop_back();
    } else {
      slot = static_cast<std::int32_t>(seqs.size());
      seqs.emplace_back();
    }
    Seq& q = seqs[static_cast<std::size_t>(slot)];
    q.request = r;
    q.sample = static_cast<std::int32_t>(k);
    q.len = len;
    q.prompt = s.requests[static_cast<std::size_t>(r)].prompt_tokens;
    q.target = q.prompt + output_of(r, k);
    q.table.clear();
    q.last_blk = -1;
    q.last_private = false;
    sample_slot[flat(r, k)] = slot;
    return slot;
  }

  void release_block(std::int32_t blk) {
    if (!pool->release(blk)) return;
    std::int32_t& g = block_group[static_cast<std::size_t>(blk)];
    if (g < 0) return;
    // Every table listing a later prefix block also lists this one, so when this one is freed
    // the later ones already are: the group's resident prefix ends here.
    std::vector<std::int32_t>& p = prefix[g];
    const auto idx = static_cast<std::size_t>(block_prefix_index[static_cast<std::size_t>(blk)]);
    if (p.size() > idx) p.resize(idx);
    if (p.empty()) prefix.erase(g);
    g = -1;
    block_prefix_index[static_cast<std::size_t>(blk)] = -1;
  }

  void free_seq(std::int32_t slot) {
    Seq& q = seqs[static_cast<std::size_t>(slot)];
    if (cfg.policy == Policy::paged) {
      for (auto it = q.table.rbegin(); it != q.table.rend(); ++it) release_block(*it);
      logical_blocks -= static_cast<std::int64_t>(q.table.size());
      q.table.clear();
    } else {
      arena->release(q.offset, q.reserved);
      contiguous_filled -= q.len;
    }
    sample_slot[flat(q.request, static_cast<std::size_t>(q.sample))] = -1;
    q.request = -1;
    free_slots.push_back(slot);
  }

  // Frees every resident sequence of `v` and puts it at the head of the queue (recompute).
  void preempt(std::int32_t v) {
    for (std::size_t k = 0; k < nsamples; ++k) {
      const std::int32_t slot = sample_slot[flat(v, k)];
      if (slot < 0) continue;
      const Seq& q = seqs[static_cast<std::size_t>(slot)];
      generated[flat(v, k)] = q.len - q.prompt;
      free_seq(slot);
    }
    state[static_cast<std::size_t>(v)] = State::waiting;
    waiting.push_front(v);
    ++sum.preemptions;
  }

  // A free block; in a decode step, preempts the newest running requests until one frees up.
  // -1 when replaying, or when `self` had to be preempted.
  std::int32_t take_block(Mode mode, std::int32_t self, std::size_t& live_end) {
    for (;;) {
      const std::int32_t blk = pool->allocate();
      if (blk >= 0) return blk;
      if (mode == Mode::replay) return -1;
      ensure(live_end > 0, "KvCacheSim: out of blocks with nothing to preempt");
      const std::int32_t victim = running[--live_end];
      preempt(victim);
      if (victim == self) return -1;
    }
  }

  // Appends one token to a paged sequence: a new block when the last is full, a private copy
  // when the last is shared (copy-on-write). False when no block could be had.
  bool append_paged(Seq& q, Mode mode, std::int32_t self, std::size_t& live_end) {
    // A last block can be shared only from admission to the first append: blocks gain
    // references only when a prompt's table is copied, and requests share only full blocks. So
    // once private, a sequence's last block stays private.
    std::int32_t blk = q.last_blk;
    if (!q.last_private && pool->refs(blk) == 1) q.last_private = true;
    const std::int32_t fill = pool->fill(blk);
    if (fill == b) {
      blk = take_block(mode, self, live_end);
      if (blk < 0) return false;
      q.table.push_back(blk);
      ++logical_blocks;
    } else if (!q.last_private) {
      const std::int32_t copy = take_block(mode, self, live_end);
      if (copy < 0) return false;
      pool->add_tokens(copy, fill);
      if (mode == Mode::decode) {
        ++sum.cow_copies;
        sum.cow_copied_bytes += fill * bpt;
      }
      release_block(blk);
      q.table.back() = copy;
      blk = copy;
    }
    q.last_blk = blk;
    q.last_private = true;
    pool->add_tokens(blk, 1);
    ++q.len;
    return true;
  }

  std::vector<std::int32_t> created;  // scratch: slots made by one admission attempt

  bool try_admit_paged(std::int32_t r) {
    const Request& q = s.requests[static_cast<std::size_t>(r)];
    const std::int32_t p = q.prompt_tokens;
    const auto nb = static_cast<std::size_t>(ceil_div(p, b));
    const std::size_t shared =
        s.shared_prefix_tokens > 0
            ? static_cast<std::size_t>(std::min<std::int64_t>(s.shared_prefix_tokens, p) / b)
            : 0;
    std::vector<std::int32_t>* group_prefix = nullptr;
    std::size_t reused = 0;
    if (shared > 0) {
      group_prefix = &prefix[q.group];
      reused = std::min(shared, group_prefix->size());
    }
    const auto drop_empty_prefix = [&] {
      const auto it = prefix.find(q.group);
      if (it != prefix.end() && it->second.empty()) prefix.erase(it);
    };
    if (pool->free_count() - static_cast<std::int64_t>(nb - reused) < watermark_blocks) {
      drop_empty_prefix();
      return false;
    }
    // The prompt's blocks, each held by one temporary reference while the tables are built.
    prompt_table.clear();
    bool ok = true;
    for (std::size_t j = 0; j < nb; ++j) {
      std::int32_t blk;
      if (j < reused) {
        blk = (*group_prefix)[j];
        pool->add_ref(blk);
      } else {
        blk = pool->allocate();
        if (blk < 0) {
          ok = false;
          break;
        }
        const auto start = static_cast<std::int32_t>(j) * b;
        pool->add_tokens(blk, std::min(b, p - start));
        if (j < shared) {
          block_group[static_cast<std::size_t>(blk)] = q.group;
          block_prefix_index[static_cast<std::size_t>(blk)] = static_cast<std::int32_t>(j);
          group_prefix->push_back(blk);
        }
      }
      prompt_table.push_back(blk);
    }
    created.clear();
    std::int64_t regenerated = 0;
    if (ok) {
      for (std::size_t k = 0; k < nsamples; ++k) {
        if (generated[flat(r, k)] >= output_of(r, k)) continue;
        const std::int32_t slot = new_seq(r, k, p);
        Seq& sq = seqs[static_cast<std::size_t>(slot)];
        sq.table = prompt_table;
        sq.last_blk = prompt_table.back();
        for (std::int32_t blk : prompt_table) pool->add_ref(blk);
        logical_blocks += static_cast<std::int64_t>(nb);
        created.push_back(slot);
      }
      // A readmitted request recomputes the tokens its samples had generated.
      std::size_t no_preempt = 0;
      for (std::int32_t slot : created) {
        Seq& sq = seqs[static_cast<std::size_t>(slot)];
        const std::int32_t g = generated[flat(r, static_cast<std::size_t>(sq.sample))];
        regenerated += g;
        for (std::int32_t i = 0; ok && i < g; ++i)
          ok = append_paged(sq, Mode::replay, r, no_preempt);
        if (!ok) break;
      }
    }
    for (auto it = prompt_table.rbegin(); it != prompt_table.rend(); ++it) release_block(*it);
    if (ok && pool->free_count() < watermark_blocks) ok = false;
    if (!ok) {
      for (std::int32_t slot : created) free_seq(slot);
      drop_empty_prefix();
      return false;
    }
    live[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(created.size());
    const bool readmission = first_admit[static_cast<std::size_t>(r)] >= 0;
    sum.prefill_tokens += p + regenerated;
    if (readmission) sum.recomputed_tokens += p + regenerated;
    return true;
  }

  bool try_admit_contiguous(std::int32_t r) {
    const std::int32_t p = s.requests[static_cast<std::size_t>(r)].prompt_tokens;
    const std::int64_t region = p + max_out;
    if (arena->largest_hole() < region) return false;
    created.clear();
    for (std::size_t k = 0; k < nsamples; ++k) {
      const std::int64_t offset = arena->reserve(region);
      if (offset < 0) {
        for (std::int32_t slot : created) free_seq(slot);
        return false;
      }
      const std::int32_t slot = new_seq(r, k, p);
      Seq& q = seqs[static_cast<std::size_t>(slot)];
      q.offset = offset;
      q.reserved = region;
      contiguous_filled += p;
      created.push_back(slot);
    }
    live[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(nsamples);
    sum.prefill_tokens += p;
    return true;
  }

  void admit() {
    while (!waiting.empty() &&
           (cfg.max_running == 0 || static_cast<std::int64_t>(running.size()) < cfg.max_running)) {
      const std::int32_t r = waiting.front();
      const bool ok = cfg.policy == Policy::paged ? try_admit_paged(r) : try_admit_contiguous(r);
      if (!ok) return;
      waiting.pop_front();
      state[static_cast<std::size_t>(r)] = State::running;
      running.push_back(r);
      ++sum.admissions;
      if (first_admit[static_cast<std::size_t>(r)] < 0)
        first_admit[static_cast<std::size_t>(r)] = t;
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
      const auto r = static_cast<std::int32_t>(next_arrival++);
      if (fits_alone(r)) {
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
    decode();
    t += 1;
  }

  void decode() {
    StepTotals st;
    st.steps = 1;
    std::size_t live_end = running.size();
    const bool paged = cfg.policy == Policy::paged;
    finishing.clear();
    // Token counts of this step (integers: cheaper than doubles in the hottest loop).
    std::int64_t step_future = 0, step_never = 0, step_seqs = 0, step_tokens = 0;
    for (std::size_t i = 0; i < live_end; ++i) {
      const std::int32_t r = running[i];
      std::int64_t future = 0, never = 0, nseq = 0;
      bool self_preempted = false;
      for (std::size_t k = 0; k < nsamples; ++k) {
        const std::int32_t slot = sample_slot[flat(r, k)];
        if (slot < 0) continue;
        Seq& q = seqs[static_cast<std::size_t>(slot)];
        if (paged) {
          if (!append_paged(q, Mode::decode, r, live_end)) {
            self_preempted = true;
            break;
          }
          const std::int32_t unfilled = b - pool->fill(q.last_blk);
          const std::int32_t coming = std::min(unfilled, q.target - q.len);
          future += coming;
          never += unfilled - coming;
        } else {
          ++q.len;
          ++contiguous_filled;
          future += q.target - q.len;
          never += q.reserved - q.target;
        }
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
    if (paged) {
      st.reserved_bytes = static_cast<double>(pool->used_count() * b * bpt);
      st.token_bytes = static_cast<double>(pool->filled_tokens() * bpt);
      st.saved_by_sharing_bytes =
          static_cast<double>((logical_blocks - pool->used_count()) * b * bpt);
    } else {
      st.reserved_bytes = static_cast<double>((capacity_tokens - arena->free_tokens()) * bpt);
      st.token_bytes = static_cast<double>(contiguous_filled * bpt);
      st.external_frag_bytes =
          static_cast<double>((arena->free_tokens() - arena->largest_hole()) * bpt);
    }
    st.free_bytes = static_cast<double>(capacity_bytes()) - st.reserved_bytes;
    last = st;
    record(st, 1);
    sum.generated_tokens += static_cast<std::int64_t>(st.generated_tokens);

    bool any_finished = false;
    for (const Finishing& f : finishing) {
      if (state[static_cast<std::size_t>(f.request)] != State::running ||
          sample_slot[flat(f.request, static_cast<std::size_t>(f.sample))] != f.slot) {
        continue;  // its request was preempted in this step; the sample's output is complete
      }
      generated[flat(f.request, static_cast<std::size_t>(f.sample))] =
          output_of(f.request, static_cast<std::size_t>(f.sample));
      free_seq(f.slot);
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
  std::int64_t live_seqs = 0;
  for (std::size_t slot = 0; slot < seqs.size(); ++slot) {
    const Seq& q = seqs[slot];
    if (q.request < 0) continue;
    ++live_seqs;
    ensure(state[static_cast<std::size_t>(q.request)] == State::running,
           "audit: sequence {} of request {} resident while the request is not running", slot,
           q.request);
    ensure(sample_slot[flat(q.request, static_cast<std::size_t>(q.sample))] ==
               static_cast<std::int32_t>(slot),
           "audit: sample {} of request {} does not point at its slot {}", q.sample, q.request,
           slot);
    ensure(q.len >= 1 && q.len <= q.target, "audit: sequence {} holds {} of {} tokens", slot, q.len,
           q.target);
  }
  ensure(live_seqs + static_cast<std::int64_t>(free_slots.size()) ==
             static_cast<std::int64_t>(seqs.size()),
         "audit: {} live + {} free slots != {}", live_seqs, free_slots.size(), seqs.size());
  for (std::int32_t r : running) {
    ensure(state[static_cast<std::size_t>(r)] == State::running,
           "audit: request {} in the running "
           "list is not running",
           r);
  }

  if (cfg.policy == Policy::contiguous) {
    std::vector<std::pair<std::int64_t, std::int64_t>> spans;  // (offset, size)
    std::int64_t filled = 0;
    for (const Seq& q : seqs) {
      if (q.request < 0) continue;
      ensure(q.reserved == s.requests[static_cast<std::size_t>(q.request)].prompt_tokens + max_out,
             "audit: region of {} tokens for request {}", q.reserved, q.request);
      spans.emplace_back(q.offset, q.reserved);
      filled += q.len;
    }
    ensure(filled == contiguous_filled, "audit: {} tokens held, {} counted", filled,
           contiguous_filled);
    for (const auto& [offset, size] : arena->holes()) spans.emplace_back(offset, -size);
    std::sort(spans.begin(), spans.end());
    std::int64_t at = 0;
    bool prev_hole = false;
    for (const auto& [offset, signed_size] : spans) {
      const bool hole = signed_size < 0;
      ensure(offset == at, "audit: address range not tiled at {} (next span at {})", at, offset);
      ensure(!(hole && prev_hole), "audit: adjacent holes at {}", offset);
      at += hole ? -signed_size : signed_size;
      prev_hole = hole;
    }
    ensure(at == capacity_tokens, "audit: regions and holes cover {} of {} tokens", at,
           capacity_tokens);
    return;
  }

  const auto nblocks = static_cast<std::size_t>(blocks);
  std::vector<std::int32_t> refs(nblocks, 0);
  std::vector<std::int32_t> owner(nblocks, -1);  // first request seen referencing the block
  std::vector<std::int64_t> stamp(nblocks, -1);  // last slot whose table listed it
  std::int64_t logical = 0;
  for (std::size_t slot = 0; slot < seqs.size(); ++slot) {
    const Seq& q = seqs[slot];
    if (q.request < 0) continue;
    ensure(static_cast<std::int64_t>(q.table.size()) == ceil_div(q.len, b),
           "audit: sequence {} holds {} tokens in {} blocks", slot, q.len, q.table.size());
    logical += static_cast<std::int64_t>(q.table.size());
    ensure(!q.table.empty() && q.last_blk == q.table.back() &&
               (!q.last_private || pool->refs(q.last_blk) == 1),
           "audit: sequence {} caches last block {} (private: {}), its table ends with {}", slot,
           q.last_blk, q.last_private, q.table.empty() ? -1 : q.table.back());
    for (std::size_t j = 0; j < q.table.size(); ++j) {
      const std::int32_t blk = q.table[j];
      ensure(blk >= 0 && blk < blocks, "audit: block id {} out of range", blk);
      const auto bi = static_cast<std::size_t>(blk);
      ensure(stamp[bi] != static_cast<std::int64_t>(slot),
             "audit: block {} listed twice by "
             "sequence {}",
             blk, slot);
      stamp[bi] = static_cast<std::int64_t>(slot);
      ++refs[bi];
      const std::int32_t want_fill =
          j + 1 < q.table.size() ? b : q.len - static_cast<std::int32_t>(j) * b;
      ensure(pool->fill(blk) == want_fill, "audit: block {} holds {} tokens, sequence {} says {}",
             blk, pool->fill(blk), slot, want_fill);
      if (owner[bi] < 0) {
        owner[bi] = q.request;
      } else if (owner[bi] != q.request) {
        const std::int32_t g = block_group[bi];
        ensure(g >= 0 && s.requests[static_cast<std::size_t>(owner[bi])].group == g &&
                   s.requests[static_cast<std::size_t>(q.request)].group == g &&
                   block_prefix_index[bi] == static_cast<std::int32_t>(j),
               "audit: block {} shared by requests {} and {} but is not their group's prefix "
               "block {}",
               blk, owner[bi], q.request, j);
      }
    }
  }
  ensure(logical == logical_blocks, "audit: {} logical blocks, {} counted", logical,
         logical_blocks);
  std::int64_t filled = 0;
  for (std::size_t bi = 0; bi < nblocks; ++bi) {
    const auto blk = static_cast<std::int32_t>(bi);
    ensure(refs[bi] == pool->refs(blk), "audit: block {} has {} references, {} tables list it", blk,
           pool->refs(blk), refs[bi]);
    filled += pool->fill(blk);
  }
  ensure(filled == pool->filled_tokens(), "audit: {} tokens in blocks, {} counted", filled,
         pool->filled_tokens());
  std::vector<char> on_free_list(nblocks, 0);
  for (std::int32_t blk : pool->free_list()) {
    const auto bi = static_cast<std::size_t>(blk);
    ensure(!on_free_list[bi], "audit: block {} on the free list twice", blk);
    on_free_list[bi] = 1;
    ensure(pool->refs(blk) == 0 && pool->fill(blk) == 0 && block_group[bi] < 0,
           "audit: free block {} has {} references, {} tokens, group {}", blk, pool->refs(blk),
           pool->fill(blk), block_group[bi]);
  }
  for (std::size_t bi = 0; bi < nblocks; ++bi) {
    ensure(on_free_list[bi] || refs[bi] > 0, "audit: block {} neither free nor referenced", bi);
  }
  for (const auto& [g, blocks_of_g] : prefix) {
    for (std::size_t j = 0; j < blocks_of_g.size(); ++j) {
      const auto bi = static_cast<std::size_t>(blocks_of_g[j]);
      ensure(refs[bi] > 0 && block_group[bi] == g &&
                 block_prefix_index[bi] == static_cast<std::int32_t>(j),
             "audit: group {} prefix block {} (#{}) is free or mislabelled", g, bi, j);
    }
  }
}

KvCacheResult KvCacheSim::Impl::result() const {
  KvCacheResult res;
  res.config = cfg;
  res.capacity_bytes = capacity_bytes();
  res.capacity_tokens = capacity_tokens;
  res.blocks = blocks;
  res.summary = sum;
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
  while (!impl_->done()) impl_->step();
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
  if (impl_->cfg.policy == Policy::paged) return impl_->pool->used_count();
  std::int64_t n = 0;
  for (const Seq& q : impl_->seqs) n += q.request >= 0 ? 1 : 0;
  return n;
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
