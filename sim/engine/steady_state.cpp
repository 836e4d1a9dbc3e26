#include "sim/engine/steady_state.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace iosim {

Extrapolation& Extrapolation::operator+=(const Extrapolation& o) {
  ctas_simulated += o.ctas_simulated;
  ctas_extrapolated += o.ctas_extrapolated;
  parts_simulated += o.parts_simulated;
  parts_extrapolated += o.parts_extrapolated;
  time_extrapolated_s += o.time_extrapolated_s;
  probe_cuts = probe_cuts || o.probe_cuts;
  return *this;
}

namespace detail {
namespace {

// What must repeat: the time, the work, and every tensor's bytes at every level (totals that
// agree can hide windows that caught a different mix of CTAs' phases: more Q loads and fewer K/V
// ones). Each is compared against itself, with a floor of a hundredth of its level's traffic
// (write-backs come in bursts: a window with none beside one with a few KB of a level moving
// hundreds of MB repeats). Entry 0 is the time; entries 1-4 the levels' totals.
constexpr std::size_t kCompared = 8 + 4 * kTensorCount;
std::array<double, kCompared> compared(double t, const Counters& c) {
  std::array<double, kCompared> v = {t,
                                     static_cast<double>(c.hbm.read_total()),
                                     static_cast<double>(c.hbm.write_total()),
                                     static_cast<double>(c.l2.read_total()),
                                     static_cast<double>(c.l2.write_total()),
                                     static_cast<double>(c.smem_read_bytes + c.smem_write_bytes),
                                     static_cast<double>(c.tensor_flops),
                                     static_cast<double>(c.fp32_flops + c.sfu_ops + c.int32_ops)};
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    v[8 + 4 * i] = static_cast<double>(c.hbm.read_bytes[i]);
    v[9 + 4 * i] = static_cast<double>(c.hbm.write_bytes[i]);
    v[10 + 4 * i] = static_cast<double>(c.l2.read_bytes[i]);
    v[11 + 4 * i] = static_cast<double>(c.l2.write_bytes[i]);
  }
  return v;
}

// The same field of every counter: f(field of newer, field of older) -> new value of `into`.
template <typename F>
void for_each_field(Counters& into, const Counters& newer, const Counters& older, F&& f) {
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    f(into.hbm.read_bytes[i], newer.hbm.read_bytes[i], older.hbm.read_bytes[i]);
    f(into.hbm.write_bytes[i], newer.hbm.write_bytes[i], older.hbm.write_bytes[i]);
    f(into.l2.read_bytes[i], newer.l2.read_bytes[i], older.l2.read_bytes[i]);
    f(into.l2.write_bytes[i], newer.l2.write_bytes[i], older.l2.write_bytes[i]);
  }
  f(into.smem_read_bytes, newer.smem_read_bytes, older.smem_read_bytes);
  f(into.smem_write_bytes, newer.smem_write_bytes, older.smem_write_bytes);
  f(into.tensor_flops, newer.tensor_flops, older.tensor_flops);
  f(into.fp32_flops, newer.fp32_flops, older.fp32_flops);
  f(into.sfu_ops, newer.sfu_ops, older.sfu_ops);
  f(into.int32_ops, newer.int32_ops, older.int32_ops);
}

// The least-squares line through periods d[0..K): its mean and slope per period, about the middle
// period (K - 1) / 2.
struct Line {
  double mean = 0, slope = 0;
  template <std::size_t K>
  static double x(std::size_t k) {
    return static_cast<double>(k) - 0.5 * static_cast<double>(K - 1);
  }
  template <std::size_t K>
  static Line fit(const std::array<double, K>& d) {
    Line l;
    double norm = 0;
    for (std::size_t k = 0; k < K; ++k) {
      l.mean += d[k] / static_cast<double>(K);
      norm += x<K>(k) * x<K>(k);
    }
    for (std::size_t k = 0; k < K; ++k) l.slope += x<K>(k) * (d[k] - l.mean) / norm;
    return l;
  }
};

}  // namespace

void RepeatDetector::push(double t, const Counters& c) {
  snapshots_.push_back({t, c});
  if (snapshots_.size() > static_cast<std::size_t>(kWindows) + 1) snapshots_.pop_front();
}

bool RepeatDetector::steady() const {
  if (snapshots_.size() < static_cast<std::size_t>(kWindows) + 1) return false;
  std::array<std::array<double, kCompared>, kWindows> deltas{};
  for (std::size_t w = 0; w < static_cast<std::size_t>(kWindows); ++w) {
    const auto a = compared(snapshots_[w].t, snapshots_[w].c);
    const auto b = compared(snapshots_[w + 1].t, snapshots_[w + 1].c);
    for (std::size_t q = 0; q < kCompared; ++q) deltas[w][q] = b[q] - a[q];
  }
  if (deltas[0][0] <= 0) return false;  // no time passed: nothing to extrapolate
  for (std::size_t q = 0; q < kCompared; ++q) {
    double lo = deltas[0][q], hi = lo, sum = 0;
    for (const auto& d : deltas) {
      lo = std::min(lo, d[q]);
      hi = std::max(hi, d[q]);
      sum += d[q];
    }
    const double mean = sum / kWindows;
    // The level's traffic: HBM read + write (fields 1, 2), L2 (3, 4); others themselves.
    double level = mean;
    const bool hbm = q == 1 || q == 2 || (q >= 8 && (q - 8) % 4 < 2);
    const bool l2 = q == 3 || q == 4 || (q >= 8 && (q - 8) % 4 >= 2);
    if (hbm) level = deltas[0][1] + deltas[0][2];
    if (l2) level = deltas[0][3] + deltas[0][4];
    const double scale = std::max(std::abs(mean), 0.01 * std::abs(level));
    if (hi - lo > kTolerance * scale) return false;
  }
  return true;
}

double RepeatDetector::time_for(std::int64_t n) const {
  const double span = snapshots_.back().t - snapshots_.front().t;
  return span * static_cast<double>(n) / kWindows;
}

void RepeatDetector::add_counters_for(std::int64_t n, Counters& c) const {
  __extension__ using I128 = unsigned __int128;
  for_each_field(c, snapshots_.back().c, snapshots_.front().c,
                 [&](std::uint64_t& into, std::uint64_t newer, std::uint64_t older) {
                   const I128 total = static_cast<I128>(newer - older) * static_cast<I128>(n);
                   into += static_cast<std::uint64_t>((total + kWindows / 2) / kWindows);
                 });
}

void TrendDetector::push(double t, const Counters& c, std::int64_t parts) {
  snapshots_.push_back({t, c, parts});
  if (snapshots_.size() > kPeriods + span_) snapshots_.pop_front();
}

bool TrendDetector::steady(double time_tolerance) const {
  if (snapshots_.size() < kPeriods + span_) return false;
  std::array<std::array<double, kCompared>, kPeriods> deltas{};
  for (std::size_t w = 0; w < kPeriods; ++w) {
    const auto a = compared(snapshots_[w].t, snapshots_[w].c);
    const auto b = compared(snapshots_[w + span_].t, snapshots_[w + span_].c);
    for (std::size_t q = 0; q < kCompared; ++q) deltas[w][q] = b[q] - a[q];
  }
  if (deltas[0][0] <= 0) return false;
  // Each quantity's windows on their least-squares line, within kTolerance of their mean (with
  // RepeatDetector's floor of a hundredth of the level's traffic).
  for (std::size_t q = 0; q < kCompared; ++q) {
    Windows d{};
    for (std::size_t k = 0; k < kPeriods; ++k) d[k] = deltas[k][q];
    const Line line = Line::fit(d);
    double level = line.mean;
    const bool hbm = q == 1 || q == 2 || (q >= 8 && (q - 8) % 4 < 2);
    const bool l2 = q == 3 || q == 4 || (q >= 8 && (q - 8) % 4 >= 2);
    if (hbm) level = deltas[0][1] + deltas[0][2];
    if (l2) level = deltas[0][3] + deltas[0][4];
    const double scale = std::max(std::abs(line.mean), 0.01 * std::abs(level));
    for (std::size_t k = 0; k < kPeriods; ++k) {
      const double off = d[k] - (line.mean + line.slope * Line::x<kPeriods>(k));
      if (std::abs(off) > (q == 0 ? time_tolerance : kTolerance) * scale) {
        return false;
      }
    }
  }
  // A tensor's DRAM reads in a fixed ratio to its L2 reads (add_counters_for extrapolates them so):
  // where they lie on a line but the L2's hit rate still moves, the line runs off. Flash2 causal
  // B=1 H=8 N=1,048,576 d=128 on the H100 had its K/V misses on a line within 0.1% over windows
  // whose hit rate fell, and the line put them 12% above the full run's, above the L2 reads.
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    double dram = 0, l2 = 0;
    for (const auto& d : deltas) {
      dram += d[8 + 4 * i];
      l2 += d[10 + 4 * i];
    }
    if (l2 <= 0) continue;  // the L2 off: DRAM reads on their line
    const double ratio = dram / l2;
    const double scale =
        std::max(std::abs(dram) / kPeriods, 0.01 * std::abs(deltas[0][1] + deltas[0][2]));
    for (const auto& d : deltas) {
      if (std::abs(d[8 + 4 * i] - ratio * d[10 + 4 * i]) > kTolerance * scale) {
        return false;
      }
    }
  }
  return true;
}

double TrendDetector::ahead(const Windows& d, double n) const {
  // Window k covers steps k .. k + span - 1 (step j: from snapshot j to j + 1), its middle step
  // k + (span - 1) / 2; a step's share of the line is 1 / span of a window's. The next steps are
  // kPeriods - 1 + span on: their integral from half a step before, which sums them for whole n.
  const Line line = Line::fit(d);
  const double span = static_cast<double>(span_);
  const double from = Line::x<kPeriods>(kPeriods - 1) + 0.5 * (span - 1.0) + 0.5;
  return (n * line.mean + line.slope * (n * from + 0.5 * n * n)) / span;
}

double TrendDetector::time_for(double n) const {
  Windows d{};
  for (std::size_t k = 0; k < kPeriods; ++k) {
    d[k] = snapshots_[k + span_].t - snapshots_[k].t;
  }
  return ahead(d, n);
}

double TrendDetector::parts_for(double n) const {
  Windows d{};
  for (std::size_t k = 0; k < kPeriods; ++k) {
    d[k] = static_cast<double>(snapshots_[k + span_].parts - snapshots_[k].parts);
  }
  return ahead(d, n);
}

void TrendDetector::add_counters_for(double n, Counters& c) const {
  // Each window's counters, then field by field (the order for_each_field walks them) the sum
  // ahead.
  std::array<Counters, kPeriods> windows{};
  for (std::size_t k = 0; k < kPeriods; ++k) {
    for_each_field(windows[k], snapshots_[k + span_].c, snapshots_[k].c,
                   [](std::uint64_t& into, std::uint64_t newer, std::uint64_t older) {
                     into = newer - older;
                   });
  }
  std::vector<std::uint64_t*> into;
  for_each_field(c, c, c,
                 [&](std::uint64_t& f, std::uint64_t, std::uint64_t) { into.push_back(&f); });
  std::vector<Windows> d(into.size());
  for (std::size_t k = 0; k < kPeriods; ++k) {
    std::size_t i = 0;
    for_each_field(windows[k], windows[k], windows[k],
                   [&](std::uint64_t&, std::uint64_t v, std::uint64_t) {
                     d[i++][k] = static_cast<double>(v);
                   });
  }
  std::vector<double> sums(into.size());
  for (std::size_t i = 0; i < into.size(); ++i) sums[i] = std::max(0.0, ahead(d[i], n));
  // A tensor's DRAM reads (field 4t, beside its L2 reads at 4t + 2): the windows' ratio of the
  // two times the L2 reads ahead (steady() says why).
  for (std::size_t t = 0; t < kTensorCount; ++t) {
    double dram = 0, l2 = 0;
    for (std::size_t k = 0; k < kPeriods; ++k) {
      dram += d[4 * t][k];
      l2 += d[4 * t + 2][k];
    }
    sums[4 * t] = l2 > 0 ? dram / l2 * sums[4 * t + 2] : sums[4 * t];
  }
  for (std::size_t i = 0; i < into.size(); ++i) {
    *into[i] += static_cast<std::uint64_t>(std::llround(sums[i]));
  }
}

double TrendDetector::steps_within(double drift) const {
  double steps = 1e300;
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    Windows ratio{};
    bool read = true;
    for (std::size_t k = 0; k < kPeriods && read; ++k) {
      const double l2 = static_cast<double>(snapshots_[k + span_].c.l2.read_bytes[i] -
                                            snapshots_[k].c.l2.read_bytes[i]);
      const double dram = static_cast<double>(snapshots_[k + span_].c.hbm.read_bytes[i] -
                                              snapshots_[k].c.hbm.read_bytes[i]);
      read = l2 > 0;
      ratio[k] = read ? dram / l2 : 0;
    }
    const Line line = Line::fit(ratio);
    // The line moves by its slope a window, a window a step apart.
    if (read && line.slope != 0) steps = std::min(steps, drift * line.mean / std::abs(line.slope));
  }
  return steps;
}

bool TrendDetector::settled(double settled) const {
  return detail::settled(Mark{snapshots_.front().t, snapshots_.front().c, 0},
                         Mark{snapshots_.back().t, snapshots_.back().c, 0}, settled);
}

bool settled(const Mark& a0, const Mark& a1, double settled) {
  const Counters& a = a0.c;
  const Counters& b = a1.c;
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    const double l2 = static_cast<double>(b.l2.read_bytes[i] - a.l2.read_bytes[i]);
    const double dram = static_cast<double>(b.hbm.read_bytes[i] - a.hbm.read_bytes[i]);
    if (l2 > 0 && dram < (1 - settled) * l2) return false;
  }
  return true;
}

void TrendDetector::shift(std::int64_t n, double dt, const Counters& newer, const Counters& older,
                          std::int64_t parts) {
  for (Snapshot& s : snapshots_) {
    s.t += static_cast<double>(n) * dt;
    add_times(n, newer, older, s.c);
    s.parts += n * parts;
  }
}

bool windows_alike(const Mark& a0, const Mark& a1, const Mark& b0, const Mark& b1) {
  const auto a = compared(a1.t, a1.c), a_from = compared(a0.t, a0.c);
  const auto b = compared(b1.t, b1.c), b_from = compared(b0.t, b0.c);
  std::array<double, kCompared> da{}, db{};
  for (std::size_t q = 0; q < kCompared; ++q) {
    da[q] = a[q] - a_from[q];
    db[q] = b[q] - b_from[q];
  }
  if (db[0] <= 0) return false;
  for (std::size_t q = 0; q < kCompared; ++q) {
    double level = db[q];
    const bool hbm = q == 1 || q == 2 || (q >= 8 && (q - 8) % 4 < 2);
    const bool l2 = q == 3 || q == 4 || (q >= 8 && (q - 8) % 4 >= 2);
    if (hbm) level = db[1] + db[2];
    if (l2) level = db[3] + db[4];
    const double scale = std::max(std::abs(db[q]), 0.01 * std::abs(level));
    if (std::abs(da[q] - db[q]) > kTolerance * scale) return false;
  }
  const double pa = static_cast<double>(a1.parts - a0.parts);
  const double pb = static_cast<double>(b1.parts - b0.parts);
  return std::abs(pa - pb) <= kTolerance * pb;
}

bool hits_alike(const Mark& a0, const Mark& a1, const Mark& b0, const Mark& b1, const Mark& p0,
                const Mark& p1) {
  const auto hits = [](const Mark& from, const Mark& to, std::size_t i) {
    return static_cast<double>(to.c.l2.read_bytes[i] - from.c.l2.read_bytes[i]) -
           static_cast<double>(to.c.hbm.read_bytes[i] - from.c.hbm.read_bytes[i]);
  };
  const double dram = static_cast<double>(p1.c.hbm.read_total() - p0.c.hbm.read_total());
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    if (p1.c.l2.read_bytes[i] == p0.c.l2.read_bytes[i]) continue;  // not read through the L2
    const double reads = static_cast<double>(p1.c.hbm.read_bytes[i] - p0.c.hbm.read_bytes[i]);
    const double scale = std::max(reads, 0.01 * dram);
    if (std::abs(hits(a0, a1, i) - hits(b0, b1, i)) > kTolerance * scale) return false;
  }
  return true;
}

void add_times(std::int64_t n, const Counters& newer, const Counters& older, Counters& c) {
  for_each_field(c, newer, older, [n](std::uint64_t& into, std::uint64_t nw, std::uint64_t old) {
    into += static_cast<std::uint64_t>(n) * (nw - old);
  });
}

void WaveRecord::clear() {
  t_ = 0.0;
  c_ = Counters{};
  waves_.clear();
  waves_.push(t_, c_);
  steady_ = false;
}

void WaveRecord::add(double dt, const Counters& after, const Counters& before) {
  t_ += dt;
  for_each_field(
      c_, after, before,
      [](std::uint64_t& into, std::uint64_t newer, std::uint64_t older) { into += newer - older; });
  waves_.push(t_, c_);
  steady_ = waves_.steady();
}

}  // namespace detail
}  // namespace iosim
