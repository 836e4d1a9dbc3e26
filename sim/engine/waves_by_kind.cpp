#include "sim/engine/waves_by_kind.hpp"

#include <array>

namespace iosim::detail {

void WavesByKind::before_dispatch(double t, KernelProgress& run) {
  if (run.next_cta % wave_ctas_ == 0) start_of_wave(t, run);
}

// At the dispatch of a wave's first CTA (at `t`), closes the previous wave's record of its kind,
// leaves out the waves ahead whose kinds repeat (short of the grid's last two full waves and its
// partial one), and opens the next wave's record.
void WavesByKind::start_of_wave(double t, KernelProgress& run) {
  const std::uint64_t dram = run.dram_bytes();
  // The second wave is not recorded either: its time and counters hold what was left of the
  // first when it began, and the first wave, started at once on idle SMs, ends otherwise than
  // the later ones (flash2 B=1 H=64 N=65536 d=64, L2 off: K/V reads 0.03% short, 1e-5 of
  // them in all, where it was).
  if (open_wave_ >= 2 * wave_ctas_) {
    const std::int64_t kind = kind_of(open_wave_);
    const std::array<std::int64_t, 2> records = {kind, kAnyStraddle};
    for (std::size_t i = 0; i < (kind == kInner ? 1 : 2); ++i) {
      const std::int64_t record = records[i];
      // With the L2 on, only a wave that turned it over: else what it left (K/V that fits in
      // the L2) is what the next one hits, and a left-out stretch would leave other data behind.
      if (run.l2_on && dram - open_dram_ < kTurnover * run.l2_bytes) {
        kinds_[record].clear();
      } else {
        kinds_[record].add(t + run.skipped_s - open_t_, *run.counters, open_counters_);
      }
    }
  }
  std::map<std::int64_t, std::int64_t> left_out;  // record -> waves
  std::int64_t k = run.next_cta;
  for (; k + 3 * wave_ctas_ <= run.ctas; k += wave_ctas_) {
    const std::int64_t record = steady_record(kind_of(k));
    if (record == kNone) break;
    ++left_out[record];
  }
  if (k > run.next_cta) {
    double dt = 0.0;
    for (const auto& [record, waves] : left_out) {
      dt += kinds_[record].time_for(waves);
      kinds_[record].add_counters_for(waves, *run.counters);
    }
    run.skip(dt);
    run.stats->ctas_extrapolated += k - run.next_cta;
    run.next_cta = k;
  }
  open_wave_ = run.next_cta;
  open_t_ = t + run.skipped_s;
  open_counters_ = *run.counters;
  open_dram_ = run.dram_bytes();
}

// The record whose waves stand for those of `kind`: its own once its last waves agree, or for
// a straddling wave all straddling waves once the last ones, at other offsets, agree (where
// the split between the two runs changes nothing, as in a grid of alike CTAs streaming their
// runs' K/V in lockstep, a head's straddling waves cost one kind, not one per offset); kNone.
std::int64_t WavesByKind::steady_record(std::int64_t kind) const {
  const auto own = kinds_.find(kind);
  if (own != kinds_.end() && own->second.steady()) return kind;
  if (kind == kInner) return kNone;
  const auto any = kinds_.find(kAnyStraddle);
  return any != kinds_.end() && any->second.steady() ? kAnyStraddle : kNone;
}

}  // namespace iosim::detail
