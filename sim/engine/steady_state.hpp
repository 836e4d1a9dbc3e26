#pragma once
// Steady-state extrapolation: how the engine leaves out work that repeats. Each kind below is its
// own class behind the interface its event loop (sim/engine/engine.cpp) calls
// (sim/engine/extrapolator.hpp): steps in step_windows.*, CTAs in cta_periods.*, waves in
// waves_by_kind.*; what they share (RepeatDetector, WaveRecord, kTolerance, kWindows) is here.
//
// A FlashAttention grid repeats itself: every head does the same work at other addresses, and
// inside a CTA that streams K/V every step does what the previous one did on the next block.
// After a few waves (or steps) the machine settles: each period moves the same bytes and takes
// the same time. The engine then stops simulating repetitions and adds them in closed form:
//
//   - Steps (Repetition::part_period). Every `resident CTAs x part_period` events the engine
//     takes a window: the time, the counters, and each resident CTA's part. When no CTA started
//     or ended and each advanced exactly part_period parts in each of the last kWindows windows,
//     and the windows' times and counters agree within kTolerance, it cuts m windows out of the
//     time line: each resident CTA leaves out m x part_period parts at the end of its steady
//     range (Schedule::steady_parts), the counters gain m times the windows' mean, the kernel's
//     time m times their mean duration. The CTAs go on from where they are, with what they would
//     have read next after the cut at their addresses minus the cut's blocks, so the CTAs that
//     share a K/V block still meet on it in the same order, and the L2 holds the blocks just
//     before the ones they read next, as it would have. The windows must also leave the same
//     queue on DRAM and the L2 (the time up to which the transfers requested are booked, past the
//     window's end): windows of the same time and counters can be a transient in which deep
//     pipelines, refilled with the servers idle, run at their compute's pace while DRAM's queue
//     grows by as much each window, until their stages of slack are spent and DRAM sets a slower
//     pace (GEMM K loops of 8-16 stages: cut there, a second wave's time came out 5% short with
//     the L2 off, and one with the L2 on, on the 4 MB test L2, 1.65% short).
//   - CTAs (Repetition::cta_period). At every dispatch of CTA k x P (P: the least common multiple
//     of cta_period and the resident CTAs, so that periods are whole waves) the engine takes the
//     time and the counters. When the last kWindows periods agree within kTolerance, it leaves n
//     periods out of the grid (the next CTA it dispatches is k x P + n x P) and adds n times their
//     mean; the last two periods and the final partial wave are simulated, so that the L2 holds at
//     the kernel's end the data of the grid's last CTAs, as the next kernel would find it. P
//     doubles (still whole waves and whole periods of heads) after kWindows comparisons that
//     failed, and with the L2 on while a period moves less than twice the L2's size through
//     DRAM, as long as the grid has room for kWindows + 4 doubled periods; with the L2 on and
//     no room, no CTA is left out. Short periods do not agree even in a steady state: a
//     period's DRAM writes are the write-backs its loads happened to evict (+-6% of the writes of
//     a 16-CTA period on 8 SMs with a 4 MB L2, 1.5% at 128 CTAs), and dispatch times jitter
//     (0.15% with the L2 off). When such periods agreed by chance (flash2 B=32 H=64 N=1024 d=64
//     and flash3 d=128 on that machine), the CTAs they left out put O's write-backs more than
//     0.5% off; tests/steady_state_test.cpp ("whole periods") holds L2-on grids that leave
//     CTAs out to the tolerance.
//   - Waves (Repetition::alike_run, when a run of alike CTAs is longer than a wave; it takes the
//     place of periods there). A wave of resident CTAs that lies inside one run of alike CTAs
//     (a head's query blocks, not causally masked) is any other such wave at other rows; a wave
//     that straddles two runs is like the waves that straddle at the same offset (CTA mod the
//     run). At the dispatch of each wave's first CTA the engine closes the previous wave's record
//     of its kind (the time and counters from its first dispatch to this one). Once the last
//     kWindows waves of a kind agree within kTolerance, the waves ahead of that kind are left
//     out (adding their mean) up to the first of a kind not yet steady, and always short of the
//     grid's last two full waves and its partial one. The first two waves are not recorded (the
//     first starts on idle SMs and ends otherwise; the second's record holds the first's end).
//     Where the last kWindows straddling waves, at other offsets, agree, every straddling wave
//     is left out on their record: the split between two heads' CTAs that stream their own K/V
//     in lockstep changes neither bytes nor time there (flash2 B=64 H=64 N=1,048,576 d=256 on
//     the H100: 33 offsets within 1e-7 in time when each was simulated three times). So a long
//     head costs a few waves however many it has: that grid (8192 CTAs a head, 132 a wave, 62
//     waves a head, 33 straddling offsets) simulates 10 of its 254,200 waves, against a period
//     of heads and waves of lcm(8192, 132) = 270,336 CTAs before. With the L2 on, a wave is
//     recorded only where it moved kTurnover L2 sizes through DRAM (else its kind's record starts
//     over): then what the L2 holds at a wave's end comes from that wave, so the L2 that a left-out
//     stretch leaves behind (the last simulated wave's K/V and dirty O, at its own addresses)
//     differs from the full run's only in addresses, which the argument below covers. A grid whose
//     waves hit in what earlier waves left (K/V that fits in the L2) never records a wave, and is
//     simulated.
//   - Ramps (Repetition::ramp_run, when a run is at least 24 waves long; it takes the place of
//     periods there). A causal head's query blocks each compute one or two K/V blocks more than
//     the one before, so no period of CTAs repeats, and resident CTAs refilled one by one stay
//     staggered, so no window of steps does. What repeats is growth: every step of a wave's CTAs
//     (a quarter wave, or the largest part of it that divides the wave) the engine takes the time,
//     the counters and the parts simulated, and compares windows of a wave that slide a step (the
//     order in which a wave's CTAs end cycles through it: steps of a quarter wave went up and down
//     by 15% about their line). Once the last kWindows + 1 windows lie on a line within
//     kTolerance, every tensor's DRAM reads stay in one ratio to its L2 reads over them, and all
//     but 2% of those reads miss (K/V far beyond the L2), the run's CTAs up to its last are left
//     out, their time and counters the line's sum over them (TrendDetector; a tensor's DRAM reads
//     the windows' ratio times its L2 reads ahead: a line of misses over a hit rate that still
//     moved put flash2 causal N=1,048,576's K/V reads 12% high), at most as far as that ratio's
//     own line moves by 0.5%. Each resident CTA goes on as the CTA that many later, which the
//     full run would have resident then, from the part it is at; that CTA would be further along,
//     so parts are left out at the end of the residents' steady ranges, as many as make the parts
//     simulated and left out add up to the grid's, shared in proportion to the part each is at (a
//     resident's progress at a dispatch grows with the CTAs' lengths). Snapshots are taken only
//     while every resident CTA belongs to the run being dispatched: the previous run's last CTAs,
//     the longest, outlive the first half of the next run's and bend its line. Flash2 causal B=1
//     H=8 N=1,048,576 d=128 on the H100 (31 waves a head) leaves 41,000 of its 65,536 CTAs out,
//     every counter within 0.1% and the time within 1e-5 of the full run; shorter runs came out
//     beyond the tolerance (flash3 causal N=262144, 15.5 waves a head: DRAM reads 0.6% over).
//     Where the runs are also alike up to an address offset (Repetition::cta_period = ramp_run:
//     heads), whole runs are left out too (RampPeriods::alike_runs). The first run starts on idle
//     SMs, every later one among the previous run's longest CTAs, so the second run is the
//     reference: its time and counters are kept at every step of the run up to its cut (which
//     waits two waves more for it), and the third run's windows are compared with them at the
//     same steps. Once its last kWindows + 1 windows agree within kTolerance, its reads miss
//     the L2 (as for a cut) and its first CTAs hit the L2 as the second's did (within kTolerance
//     of a run's DRAM reads; see below), the third run goes on as the second did, and so would
//     every later one: the runs up to the last are left out, each the period from the second run's
//     step to the third's, the resident CTAs relabelled that many runs on, the last run simulated
//     from there. After the previous run's CTAs drain, the two runs' windows agreed to 1e-12 in
//     time and parts (the dispatch order repeats); their DRAM reads, where the L2 still hits,
//     differed by up to 6% (which partition and set holds a line depends on its address), and
//     converged once the reads missed. The windows compared lie where every read misses, so they
//     cannot tell heads whose L2 hits differ: those come where two heads meet (the previous head's
//     longest CTAs and the next one's first), and what the L2 holds there depends on the heads'
//     addresses. Flash2 causal B=1 H=5 N=57344 d=128 on 8 SMs with a 4 MB L2 had its heads' K reads
//     that hit vary from 3.1e7 to 4.8e7 bytes (of 3.25e9) under --exact, and the third head's first
//     CTAs hit 6.6e7 bytes against the second's 4.6e7: a period of the second head stood for every
//     later one with its DRAM reads 0.4% below theirs (0.67% in all, the bound 0.5%). So the first
//     CTAs' hits are compared too (hits_alike), over the whole run up to the step. A grid of alike
//     heads whose hits agree costs about two heads' ramps however many it has. The power model's
//     first trial, at the boost clock, is a clock probe (EngineOptions::clock_probe): there a
//     memory-bound ramp's reads still hit the L2 and its windows' times scatter about their line
//     (RampPeriods::kProbeTimeTolerance), so that no cut above would be taken and its heads would
//     all be simulated; the probe cuts there too, and is run again without where it would be the
//     answer (the limit does not bind).
//
// When it is exact: the repeated work is the same operations on disjoint address ranges (another
// head's matrices, the next K/V block), and it interacts with the rest only through the L2 and
// the bandwidth servers, whose state after a period is the state before it moved in time and in
// addresses. The engine's time model is invariant under both; the L2 is up to where moved
// addresses land: set = region mod sets moves every region of a tensor by the same number of
// sets (exact when the moves are multiples of the set count), but the home partition is a hash
// of the region, so which partition holds a moved region changes. That is why the result is an
// approximation, measured by tests/steady_state_test.cpp (every counter within 0.5% and the time
// within 1% of full simulation on every schedule that declares a repetition) rather than exact.
// Where a schedule declares nothing (paged attention: random page placement), or the windows
// never agree, everything is simulated. EngineOptions::exact (--exact) turns it off.
//
// With the L2 on, steps are left out only where three more conditions hold at the window, because
// windows that agree do not yet mean a steady state there:
//   1. Lockstep on equally shared SMs: every resident CTA within two part periods of every other
//      (a wave dispatched as a straddling one ends starts two parts apart, and every CTA advancing
//      exactly a period a window keeps it so), and every SM that holds CTAs holds as many. CTAs
//      that share an SM unequally drift apart slowly, and once a laggard trails its head's leader
//      by more than the L2 holds, its K/V reads start to miss. Windows taken before that agree
//      within 0.1% and predict too few misses: flash2 B=1 H=2 N=32768 d=64 with a 4 MB L2
//      (tests/steady_state_test.cpp's machine), whose second wave puts 248 CTAs on 132 SMs, had the
//      spread between its CTAs grow by a part every three windows, and cut with none of these
//      conditions came out 6.7% off in time and beyond 0.5% in K/V misses. Symmetric CTAs have no
//      such drift: the first wave there stayed within one part over all 256 parts.
//   2. No L2 writes since the latest CTA start: what is dirty is older than the windows.
//   3. The L2 turned over: DRAM has delivered twice the L2's capacity since the latest CTA start.
//      Then what it holds is the recent stream, which a cut relabels as the L2-off argument
//      above does, and nothing from before (the previous wave's dirty O, the first K/V blocks the
//      next wave reads again) can survive in a cut run that a full run would have evicted:
//      without it, flash3 B=1 H=2 N=16384 d=64 on the 4 MB L2 kept the first wave's O dirty in
//      the cut second wave, its O and L write-backs and dirty-at-end bytes beyond the 0.5%
//      tolerance.
// So a grid whose K/V fit in the L2 (flash2 B=1 H=2 N=131072 d=64 on the H100: 32 MB per head)
// never leaves steps out with the L2 on: its later waves hit on what earlier ones left. Where the
// conditions hold the results agree closely (flash2 B=1 H=1 N=262144 d=128 on the H100: 2.1 of
// 8.4 million parts left out, counters identical to --exact, time within 1e-13), but the L2 must
// turn over in every wave before a cut: 2 x 50 MB at 64 KB of K/V per step is 1600 steps of each
// wave's CTAs simulated. With the L2 off nothing carries state from one step to the next but the
// bandwidth servers, and the results agree to 1e-11.
#include <array>
#include <cstdint>
#include <deque>

#include "sim/engine/counters.hpp"

namespace iosim {

/// What the engine simulated and what it extrapolated for one kernel (or a whole run).
struct Extrapolation {
  std::int64_t ctas_simulated = 0;
  std::int64_t ctas_extrapolated = 0;  // never dispatched: whole periods of the grid
  std::int64_t parts_simulated = 0;
  std::int64_t parts_extrapolated = 0;  // steps of CTAs, in steady windows and periods left out
  double time_extrapolated_s = 0.0;
  // Cuts that only a clock probe takes (EngineOptions::clock_probe): such a result steers the
  // power model's solve and is no answer.
  bool probe_cuts = false;
  bool applied() const { return ctas_extrapolated > 0 || parts_extrapolated > 0; }
  Extrapolation& operator+=(const Extrapolation& o);
};

namespace detail {

/// Relative agreement required of the time and every compared counter across windows.
inline constexpr double kTolerance = 1e-3;
/// Windows (or periods) that must agree before any is left out.
inline constexpr int kWindows = 3;

/// The last kWindows + 1 snapshots of (time, counters) taken at the ends of windows; whether the
/// windows between them agree; their mean.
class RepeatDetector {
 public:
  void clear() { snapshots_.clear(); }
  void push(double t, const Counters& c);
  bool empty() const { return snapshots_.empty(); }
  /// Whether it holds kWindows + 1 snapshots, so that steady() compared windows.
  bool full() const { return snapshots_.size() > static_cast<std::size_t>(kWindows); }
  /// Whether the last kWindows windows agree within kTolerance.
  bool steady() const;
  /// Mean duration of the last kWindows windows, times `n`.
  double time_for(std::int64_t n) const;
  /// Adds to `c` the mean counters of the last kWindows windows, times `n` (rounded).
  void add_counters_for(std::int64_t n, Counters& c) const;

 private:
  struct Snapshot {
    double t;
    Counters c;
  };
  std::deque<Snapshot> snapshots_;
};

/// Snapshots of (time, counters) taken every step of a quantity of work that grows by a constant
/// amount from one step to the next (sim/engine/ramp_periods.hpp), compared over windows of
/// `span` steps that slide a step at a time (a wave of CTAs: steps inside it do not repeat, the
/// order in which its CTAs end cycles): whether the last kWindows + 1 windows lie on a line within
/// kTolerance; the sum of the steps ahead on that line.
class TrendDetector {
 public:
  explicit TrendDetector(std::size_t span) : span_(span) {}
  void clear() { snapshots_.clear(); }
  /// A snapshot at `t`: the counters, and `parts` simulated so far.
  void push(double t, const Counters& c, std::int64_t parts);
  /// Whether it holds the snapshots of kWindows + 1 windows.
  bool full() const { return snapshots_.size() >= kPeriods + span_; }
  /// Whether the last kWindows + 1 windows lie on a line within kTolerance of their mean (the
  /// windows' durations within `time_tolerance`).
  bool steady(double time_tolerance = kTolerance) const;
  /// The time of the next `n` steps (n real: the line's integral over them), on the line.
  double time_for(double n) const;
  /// The parts the next `n` steps would simulate, on the line.
  double parts_for(double n) const;
  /// Adds to `c` the counters of the next `n` steps, on the line (rounded).
  void add_counters_for(double n, Counters& c) const;
  /// Steps ahead over which no tensor's ratio of DRAM to L2 reads, on the line through its
  /// windows' ratios, moves by more than `drift` of itself (a huge number where none moves).
  double steps_within(double drift) const;
  /// Whether every tensor read through the L2 in the windows missed it in all but `settled` of
  /// its reads.
  bool settled(double settled) const;
  /// Moves every snapshot on by `n` periods of work that took `dt`, moved `newer - older` and did
  /// `parts` parts (a stretch left out between two snapshots), so that the windows stay as taken.
  void shift(std::int64_t n, double dt, const Counters& newer, const Counters& older,
             std::int64_t parts);

 private:
  static constexpr std::size_t kPeriods = kWindows + 1;  // windows on the line
  using Windows = std::array<double, kPeriods>;
  struct Snapshot {
    double t;
    Counters c;
    std::int64_t parts;
  };
  // Sum of the next n steps of a quantity whose last windows were `d` (least-squares line).
  double ahead(const Windows& d, double n) const;
  std::size_t span_;
  std::deque<Snapshot> snapshots_;
};

/// The time, the counters and the parts done (simulated and left out) at one moment of a run.
struct Mark {
  double t = -1.0;  // < 0: not taken
  Counters c{};
  std::int64_t parts = 0;
  bool taken() const { return t >= 0.0; }
};

/// Whether the windows a0 -> a1 and b0 -> b1 agree: their durations and every quantity a
/// RepeatDetector compares within kTolerance of b's (with its floor of a hundredth of the level's
/// traffic).
bool windows_alike(const Mark& a0, const Mark& a1, const Mark& b0, const Mark& b1);

/// Whether every tensor read through the L2 hit it (its L2 reads less its DRAM reads) as often
/// from a0 to a1 as from b0 to b1, within kTolerance of its DRAM reads from p0 to p1 (with a
/// floor of a hundredth of all DRAM reads there).
bool hits_alike(const Mark& a0, const Mark& a1, const Mark& b0, const Mark& b1, const Mark& p0,
                const Mark& p1);

/// Whether every tensor read through the L2 from a0 to a1 missed it in all but `settled` of its
/// reads.
bool settled(const Mark& a0, const Mark& a1, double settled);

/// Adds to `c` n times (newer - older), field by field.
void add_times(std::int64_t n, const Counters& newer, const Counters& older, Counters& c);

/// The waves of one kind (sim/engine/waves_by_kind.hpp), each the time and counters from its first
/// CTA's dispatch to the next wave's, strung end to end so that a RepeatDetector compares the last
/// kWindows of them.
class WaveRecord {
 public:
  WaveRecord() { clear(); }
  void clear();
  /// A wave of this kind took `dt` and moved `after - before`.
  void add(double dt, const Counters& after, const Counters& before);
  bool steady() const { return steady_; }  // the engine asks once a wave it may leave out
  double time_for(std::int64_t n) const { return waves_.time_for(n); }
  void add_counters_for(std::int64_t n, Counters& c) const { waves_.add_counters_for(n, c); }

 private:
  double t_ = 0.0;
  Counters c_{};
  RepeatDetector waves_;
  bool steady_ = false;
};

}  // namespace detail
}  // namespace iosim
