// Issue #47's K/V drift, on the host: what iosim's engine does with the CTAs of a wave in their
// K/V loops, and what the model's L2 makes of any order of those loops. Three commands, all on
// our flash2 forward as the edge_l2 suite runs it (d 128, 128 x 64 tiles, 8 warps; the H100
// profile unless --profile names another):
//
//   kv_drift_tool engine --batch B --heads H --seq N [--causal] --out PREFIX
//     runs the engine (every CTA simulated, the profile's boost clock) and writes the trace that
//     cuda_validate/microbench/kv_drift.cu writes on the GPU (PREFIX.json, PREFIX.bin): per CTA
//     its SM, K/V steps, start, end and a stamp every `every` steps. The engine's clock is the
//     order of its K/V loads (each stage is one step of one CTA): a load's time is the engine's
//     kernel time times its place among all the kernel's K/V loads, which is time where the
//     steps run at one rate, as they do in the engine's waves.
//   kv_drift_tool replay --trace PREFIX [--uniform | --lockstep] [--profile NAME]
//     replays a trace through the model's L2 (sim/memory's L2System, the profile's size,
//     sectors and partitions): each CTA reads Q at its start, K and V block j at its step j - 1
//     (block 0 with Q), the time of a step between two stamps linearly interpolated, and writes
//     O at its end; prints the DRAM bytes read, by tensor. --uniform replaces every CTA's stamps
//     by steps of one length between its start and end (what drift within a CTA adds);
//     --lockstep also gives every CTA the median step time from its own start (what is left is
//     the order and times of the starts).
//   kv_drift_tool stats --trace PREFIX [--uniform | --lockstep] [--slots 132]
//     the spread of the trace's CTAs and the LRU miss curve of its K/V reads (run_stats below).
//
// Built on request: cmake --build build --target iosim_kv_drift (not part of `all`).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <queue>
#include <string>
#include <vector>

#include "api/iosim.hpp"
#include "sim/memory/l2_system.hpp"

namespace {

constexpr int kD = 128, kBQ = 128, kBKV = 64, kWarps = 8, kEvery = 32;
constexpr const char* kProfile = "h100-sxm5-80gb";  // --profile names another

struct Shape {
  int batch = 1, heads = 8, seq = 65536, every = kEvery;
  bool causal = false;
};

struct Cta {
  std::uint32_t sm = 0, steps = 0;
  double start = 0, end = 0;
  std::vector<double> stamps;  // at steps 0, every, 2 every, ...
};

std::string arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}
bool flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return true;
  }
  return false;
}

// Records, in the engine's order, each CTA's K loads (one per K/V step).
class LoadOrder final : public iosim::OpObserver {
 public:
  explicit LoadOrder(const Shape& s) : shape_(s) {
    ctas_.resize(static_cast<std::size_t>(s.seq / kBQ) * s.batch * s.heads);
  }
  void on_op(std::size_t, std::int64_t cta, int sm, const iosim::TileOp& op,
             const iosim::Counters&) override {
    if (op.kind != iosim::OpKind::load || op.tile.tensor != iosim::TensorId::K) return;
    Cta& c = ctas_[static_cast<std::size_t>(cta)];
    const double t = static_cast<double>(loads_++);
    // Load L is block L, issued at the top of step L - 1 (block 0 at the start), as the GPU's
    // stamps are taken.
    if (c.steps == 0) c.start = t;
    if (c.steps >= 1 && (c.steps - 1) % static_cast<std::uint32_t>(shape_.every) == 0) {
      c.stamps.push_back(t);
    }
    c.sm = static_cast<std::uint32_t>(sm);
    c.end = t + 1;
    ++c.steps;
  }
  // The CTAs, their last step's stamp (which issues no load) at the end.
  std::vector<Cta>& ctas() {
    for (Cta& c : ctas_) {
      const std::size_t n = (c.steps + shape_.every - 1) / static_cast<std::uint32_t>(shape_.every);
      while (c.stamps.size() < n) c.stamps.push_back(c.end);
    }
    return ctas_;
  }
  double loads() const { return static_cast<double>(loads_); }

 private:
  Shape shape_;
  std::vector<Cta> ctas_;
  std::uint64_t loads_ = 0;
};

void write_trace(const std::string& prefix, const Shape& s, const std::vector<Cta>& ctas,
                 double time_ms, const std::string& source) {
  std::vector<std::uint32_t> words;
  for (const Cta& c : ctas) {
    words.push_back(c.sm);
    words.push_back(c.steps);
    words.push_back(static_cast<std::uint32_t>(std::llround(c.start)));
    words.push_back(static_cast<std::uint32_t>(std::llround(c.end)));
    for (double t : c.stamps) words.push_back(static_cast<std::uint32_t>(std::llround(t)));
  }
  std::ofstream bin(prefix + ".bin", std::ios::binary);
  bin.write(reinterpret_cast<const char*>(words.data()),
            static_cast<std::streamsize>(words.size() * 4));
  std::ofstream json(prefix + ".json");
  json << fmt::format(
      "{{\"gpu\": \"{}\", \"batch\": {}, \"heads\": {}, \"seq\": {}, \"head_dim\": {}, "
      "\"block_q\": {}, \"block_kv\": {}, \"warps\": {}, \"causal\": {}, \"every\": {}, "
      "\"ctas\": {}, \"event_ms\": {:.4f}}}\n",
      source, s.batch, s.heads, s.seq, kD, kBQ, kBKV, kWarps, s.causal ? "true" : "false", s.every,
      ctas.size(), time_ms);
}

int run_engine(int argc, char** argv) {
  Shape s;
  s.batch = std::stoi(arg(argc, argv, "--batch", "1"));
  s.heads = std::stoi(arg(argc, argv, "--heads", "8"));
  s.seq = std::stoi(arg(argc, argv, "--seq", "65536"));
  s.causal = flag(argc, argv, "--causal");
  const std::string out = arg(argc, argv, "--out", "");
  if (out.empty()) return 2;
  const iosim::HardwareProfile profile =
      iosim::load_profile(arg(argc, argv, "--profile", kProfile));
  iosim::RunRequest r;
  r.algorithm = "flash2";
  r.problem.batch = s.batch;
  r.problem.heads = s.heads;
  r.problem.seq = s.seq;
  r.problem.head_dim = kD;
  r.problem.causal = s.causal;
  r.tiling.block_q = kBQ;
  r.tiling.block_kv = kBKV;
  r.tiling.threads = 32 * kWarps;
  r.engine.flush_l2_between_kernels = true;
  r.engine.sm_clock_mhz = profile.sm.boost_clock_mhz.value;  // one engine run, no clock solve
  LoadOrder order(s);
  r.engine.observer = &order;
  const iosim::Report rep = iosim::simulate(profile, r);
  // Load counts to ns of the engine's kernel time.
  const double ns_per_load = rep.engine.time_s * 1e9 / order.loads();
  for (Cta& c : order.ctas()) {
    c.start *= ns_per_load;
    c.end *= ns_per_load;
    for (double& t : c.stamps) t *= ns_per_load;
  }
  write_trace(out, s, order.ctas(), rep.engine.time_s * 1e3, "iosim engine, " + profile.name);
  std::printf("%s: %zu CTAs, %.3f ms, DRAM read %.4f GB\n", out.c_str(), order.ctas().size(),
              rep.engine.time_s * 1e3,
              static_cast<double>(rep.engine.total.hbm.read_total()) / 1e9);
  return 0;
}

// Reads PREFIX.json's shape and PREFIX.bin's CTAs.
bool read_trace(const std::string& prefix, Shape& s, std::vector<Cta>& ctas) {
  std::ifstream json(prefix + ".json");
  const std::string text((std::istreambuf_iterator<char>(json)), {});
  auto number = [&](const char* key) {
    const std::size_t at = text.find(fmt::format("\"{}\": ", key));
    return at == std::string::npos ? -1 : std::stoi(text.substr(at + std::strlen(key) + 4));
  };
  s.batch = number("batch");
  s.heads = number("heads");
  s.seq = number("seq");
  s.every = number("every");
  s.causal = text.find("\"causal\": true") != std::string::npos;
  if (s.batch <= 0 || s.heads <= 0 || s.seq <= 0 || s.every <= 0) return false;
  std::ifstream bin(prefix + ".bin", std::ios::binary);
  std::vector<std::uint32_t> w;
  std::uint32_t x = 0;
  while (bin.read(reinterpret_cast<char*>(&x), 4)) w.push_back(x);
  std::size_t i = 0;
  ctas.clear();
  while (i + 4 <= w.size()) {
    Cta c;
    c.sm = w[i];
    c.steps = w[i + 1];
    c.start = w[i + 2];
    c.end = w[i + 3];
    i += 4;
    const std::size_t n = (c.steps + s.every - 1) / static_cast<std::uint32_t>(s.every);
    for (std::size_t k = 0; k < n && i < w.size(); ++k) c.stamps.push_back(w[i++]);
    ctas.push_back(std::move(c));
  }
  return ctas.size() == static_cast<std::size_t>(s.seq / kBQ) * s.batch * s.heads;
}

// The time CTA c reads K/V block j: the start of step j - 1 (block 0: its start), between the
// stamps linearly; the end stands for step `steps`.
double read_time(const Cta& c, int every, std::uint32_t j) {
  if (j == 0) return c.start;
  const double step = j - 1;
  const std::size_t k = static_cast<std::size_t>(step) / static_cast<std::size_t>(every);
  const double s0 = static_cast<double>(k) * every;
  const double t0 = c.stamps[k];
  const bool last = k + 1 >= c.stamps.size();
  const double s1 = last ? c.steps : s0 + every;
  const double t1 = last ? c.end : c.stamps[k + 1];
  return t0 + (t1 - t0) * (step - s0) / std::max(1.0, s1 - s0);
}

// Calls f(cta, j) for every CTA's K/V block j (j < steps) and its end (j == steps), in time
// order (ties by CTA).
template <typename F>
void for_each_in_time(const std::vector<Cta>& ctas, int every, F&& f) {
  struct Next {
    double t;
    std::uint32_t cta, j;
    bool operator>(const Next& o) const { return t > o.t || (t == o.t && cta > o.cta); }
  };
  std::priority_queue<Next, std::vector<Next>, std::greater<>> heap;
  for (std::uint32_t c = 0; c < ctas.size(); ++c) heap.push({ctas[c].start, c, 0});
  while (!heap.empty()) {
    const Next e = heap.top();
    heap.pop();
    const Cta& c = ctas[e.cta];
    f(e.cta, e.j);
    if (e.j == c.steps) continue;
    const std::uint32_t next = e.j + 1;
    heap.push({next == c.steps ? c.end : read_time(c, every, next), e.cta, next});
  }
}

bool load(int argc, char** argv, Shape& s, std::vector<Cta>& ctas) {
  const std::string prefix = arg(argc, argv, "--trace", "");
  if (!read_trace(prefix, s, ctas)) {
    std::fprintf(stderr, "kv_drift_tool: cannot read trace %s\n", prefix.c_str());
    return false;
  }
  if (flag(argc, argv, "--lockstep")) {
    // Every CTA at the median step time from its own start: the GPU's dispatch alone.
    std::vector<double> step;
    for (const Cta& c : ctas) step.push_back((c.end - c.start) / c.steps);
    std::nth_element(step.begin(), step.begin() + static_cast<std::ptrdiff_t>(step.size() / 2),
                     step.end());
    for (Cta& c : ctas) c.end = c.start + step[step.size() / 2] * c.steps;
  }
  if (flag(argc, argv, "--uniform") || flag(argc, argv, "--lockstep")) {
    for (Cta& c : ctas) {
      for (std::size_t k = 0; k < c.stamps.size(); ++k) {
        c.stamps[k] = c.start + (c.end - c.start) * static_cast<double>(k) * s.every / c.steps;
      }
    }
  }
  return true;
}

int run_replay(int argc, char** argv) {
  Shape s;
  std::vector<Cta> ctas;
  if (!load(argc, argv, s, ctas)) return 2;
  const iosim::HardwareProfile profile =
      iosim::load_profile(arg(argc, argv, "--profile", kProfile));
  iosim::L2System l2(profile.l2.size_bytes.value, profile.l2.sector_bytes.value,
                     profile.l2.partitions.value, profile.l2.max_dirty_fraction.value);
  const std::uint64_t mat = static_cast<std::uint64_t>(s.seq) * kD * 2;  // bytes of one head
  const std::uint64_t tensor = mat * static_cast<std::uint64_t>(s.batch * s.heads);
  const std::uint64_t gap = (tensor + (std::uint64_t{1} << 30)) & ~((std::uint64_t{1} << 30) - 1);
  const std::uint64_t base_q = std::uint64_t{1} << 30, base_k = base_q + gap, base_v = base_k + gap,
                      base_o = base_v + gap;
  const std::uint32_t q_blocks = static_cast<std::uint32_t>(s.seq / kBQ);
  constexpr std::uint64_t kTile = kBKV * kD * 2, kQTile = kBQ * kD * 2;
  iosim::PerTensor written_back{};
  std::uint64_t dram_q = 0, dram_kv = 0;
  // K/V bytes read and missed by the CTAs of each tenth of a head's query blocks.
  std::vector<double> kv_read(10, 0.0), kv_missed(10, 0.0);
  for_each_in_time(ctas, s.every, [&](std::uint32_t cta, std::uint32_t j) {
    const Cta& c = ctas[cta];
    const int sm = static_cast<int>(c.sm);
    const std::uint64_t head = cta / q_blocks, q_block = cta % q_blocks;
    if (j == c.steps) {
      l2.write(base_o + head * mat + q_block * kQTile, kQTile, iosim::TensorId::O, sm,
               written_back);
      return;
    }
    if (j == 0) {
      dram_q += l2.read(base_q + head * mat + q_block * kQTile, kQTile, iosim::TensorId::Q, sm,
                        written_back)
                    .miss_bytes;
    }
    const std::uint64_t off = head * mat + std::uint64_t{j} * kTile;
    const std::uint64_t missed =
        l2.read(base_k + off, kTile, iosim::TensorId::K, sm, written_back).miss_bytes +
        l2.read(base_v + off, kTile, iosim::TensorId::V, sm, written_back).miss_bytes;
    dram_kv += missed;
    const std::size_t tenth = q_block * 10 / q_blocks;
    kv_read[tenth] += 2.0 * kTile;
    kv_missed[tenth] += static_cast<double>(missed);
  });
  std::string tenths;
  for (std::size_t i = 0; i < 10; ++i) {
    tenths += fmt::format("{}{:.4f}", i == 0 ? "" : ", ", kv_missed[i] / std::max(1.0, kv_read[i]));
  }
  std::printf(
      "{\"uniform\": %s, \"dram_read_gb\": %.4f, \"kv_gb\": %.4f, \"q_gb\": %.4f, "
      "\"kv_miss_by_tenth\": [%s]}\n",
      flag(argc, argv, "--lockstep")  ? "\"lockstep\""
      : flag(argc, argv, "--uniform") ? "true"
                                      : "false",
      static_cast<double>(dram_q + dram_kv) / 1e9, static_cast<double>(dram_kv) / 1e9,
      static_cast<double>(dram_q) / 1e9, tenths.c_str());
  return 0;
}

// The q-quantile of v (sorted in place).
double quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

// CTA c's position (K/V steps done, fractional) at time t, from its stamps (stamp k: k x every
// steps done).
double position(const Cta& c, int every, double t) {
  if (t <= c.start) return 0.0;
  if (t >= c.end) return c.steps;
  double s0 = 0, t0 = c.start;
  for (std::size_t k = 0; k <= c.stamps.size(); ++k) {
    const bool last = k == c.stamps.size();
    const double s1 = last ? c.steps : static_cast<double>(k) * every;
    const double t1 = last ? c.end : c.stamps[k];
    if (t < t1) return s0 + (s1 - s0) * (t - t0) / std::max(1e-9, t1 - t0);
    s0 = s1;
    t0 = t1;
  }
  return c.steps;
}

// What a trace says about drift, as one JSON object:
// - the CTAs' mean step times (median, and their spread: coefficient of variation);
// - the first wave (the `slots` earliest starts, which start together): the 10th, 50th and
//   90th percentile of its running CTAs' positions after a quarter, half and all of the median
//   first-wave CTA's steps;
// - every CTA's lead over lockstep at a quarter, half and three quarters of the kernel: its
//   position less the steps the median step time gives since its start (p10, p90 over the
//   running CTAs, in steps);
// - LRU stack distances of the K/V reads over all SMs in time order (distinct K/V bytes read
//   since the block's last read; first reads infinite): the share of reads an LRU cache of each
//   size would miss, the cache in MiB of K/V.
int run_stats(int argc, char** argv) {
  Shape s;
  std::vector<Cta> ctas;
  if (!load(argc, argv, s, ctas)) return 2;
  const int slots = std::stoi(arg(argc, argv, "--slots", "132"));
  std::vector<double> step_ns;
  double t_end = 0, mean = 0, sq = 0;
  for (const Cta& c : ctas) {
    step_ns.push_back((c.end - c.start) / c.steps);
    t_end = std::max(t_end, c.end);
  }
  for (double x : step_ns) mean += x / static_cast<double>(step_ns.size());
  for (double x : step_ns) sq += (x - mean) * (x - mean) / static_cast<double>(step_ns.size());
  const double median_step = quantile(step_ns, 0.5);
  std::vector<std::size_t> order(ctas.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return ctas[a].start < ctas[b].start; });
  order.resize(std::min<std::size_t>(order.size(), static_cast<std::size_t>(slots)));
  std::vector<double> first_steps;
  for (std::size_t i : order) first_steps.push_back(ctas[i].steps);
  const double horizon = quantile(first_steps, 0.5);
  std::string wave;
  for (double f : {0.25, 0.5, 1.0}) {
    const double t = ctas[order.front()].start + f * horizon * median_step;
    std::vector<double> pos;
    for (std::size_t i : order) {
      if (ctas[i].end > t) pos.push_back(position(ctas[i], s.every, t));
    }
    const double lo = quantile(pos, 0.1), mid = quantile(pos, 0.5), hi = quantile(pos, 0.9);
    wave += fmt::format(
        "{}{{\"at_steps\": {:.0f}, \"running\": {}, \"p10\": {:.1f}, "
        "\"median\": {:.1f}, \"p90\": {:.1f}}}",
        wave.empty() ? "" : ", ", f * horizon, pos.size(), lo, mid, hi);
  }
  std::string lead;
  for (double f : {0.25, 0.5, 0.75}) {
    const double t = f * t_end;
    std::vector<double> d;
    for (const Cta& c : ctas) {
      if (c.start < t && c.end > t)
        d.push_back(position(c, s.every, t) - (t - c.start) / median_step);
    }
    const double lo = quantile(d, 0.1), hi = quantile(d, 0.9);
    lead += fmt::format("{}{{\"at\": {:.2f}, \"running\": {}, \"p10\": {:.1f}, \"p90\": {:.1f}}}",
                        lead.empty() ? "" : ", ", f, d.size(), lo, hi);
  }
  // Stack distances: a Fenwick tree over read indices marks each block's latest read.
  std::size_t reads = 0;
  for (const Cta& c : ctas) reads += c.steps;
  std::vector<std::int32_t> tree(reads + 1, 0);
  auto add = [&](std::size_t i, std::int32_t v) {
    for (++i; i <= reads; i += i & (~i + 1)) tree[i] += v;
  };
  auto prefix = [&](std::size_t i) {  // marks at indices < i
    std::int64_t sum = 0;
    for (; i > 0; i -= i & (~i + 1)) sum += tree[i];
    return sum;
  };
  const std::uint32_t q_blocks = static_cast<std::uint32_t>(s.seq / kBQ);
  const std::uint64_t kv_blocks = static_cast<std::uint64_t>(s.seq / kBKV);
  std::vector<std::int64_t> last(kv_blocks * static_cast<std::uint64_t>(s.batch * s.heads), -1);
  const std::vector<double> mib = {8, 12, 16, 20, 22, 24, 25, 26, 28, 30, 32, 40, 48, 64};
  std::vector<double> misses(mib.size(), 0.0);
  constexpr double kBlockMib = 2.0 * kBKV * kD * 2 / 1048576.0;  // K and V of one block
  std::size_t index = 0;
  for_each_in_time(ctas, s.every, [&](std::uint32_t cta, std::uint32_t j) {
    if (j == ctas[cta].steps) return;
    const std::uint64_t key = cta / q_blocks * kv_blocks + j;
    double distance = 1e30;
    if (last[key] >= 0) {
      distance =
          static_cast<double>(prefix(index) - prefix(static_cast<std::size_t>(last[key]) + 1)) *
          kBlockMib;
      add(static_cast<std::size_t>(last[key]), -1);
    }
    add(index, 1);
    last[key] = static_cast<std::int64_t>(index++);
    for (std::size_t m = 0; m < mib.size(); ++m) {
      if (distance >= mib[m]) misses[m] += 1.0;
    }
  });
  std::string curve;
  for (std::size_t m = 0; m < mib.size(); ++m) {
    curve += fmt::format("{}\"{:g}\": {:.4f}", curve.empty() ? "" : ", ", mib[m],
                         misses[m] / static_cast<double>(reads));
  }
  std::printf(
      "{\"uniform\": %s, \"ctas\": %zu, \"kernel_ms\": %.3f, \"step_ns_median\": %.1f, "
      "\"step_ns_cv\": %.4f, \"first_wave\": [%s], \"lead_steps\": [%s], "
      "\"lru_miss_by_mib\": {%s}}\n",
      flag(argc, argv, "--lockstep")  ? "\"lockstep\""
      : flag(argc, argv, "--uniform") ? "true"
                                      : "false",
      ctas.size(), t_end / 1e6, median_step, std::sqrt(sq) / mean, wave.c_str(), lead.c_str(),
      curve.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  try {
    if (cmd == "engine") return run_engine(argc, argv);
    if (cmd == "replay") return run_replay(argc, argv);
    if (cmd == "stats") return run_stats(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kv_drift_tool: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: kv_drift_tool engine|replay ... (see the file's head)\n");
  return 2;
}
