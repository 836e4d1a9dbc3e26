#pragma once
// Stopping a long run early, and showing how far it is. A signal handler or a time budget asks
// the run to stop; the engine calls wave_done() once per wave of CTAs, which throws Stopped when
// a stop was asked for and feeds the progress display; within a long wave the engine, and between
// their own steps the numeric executor, explain's recorders and kvcache's loop, call check().
// A signal's stop is process-wide: a sweep's threads all stop. The time budget is the calling
// thread's, adopted by the threads a sweep starts for it (Adopt), so that calls on several
// threads of one process (the Python package's) each keep their own: one process-wide budget let
// a call's max_seconds be replaced, or cleared when another thread's call ended, and that call
// ran on for ever (issue #50's sixth probe). In sim/base/ because every command's loops use it.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace iosim {

/// A run stopped by a signal or by its time budget (exit code 3 at the CLI). Nothing is written.
class Stopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace run_control {

/// Asks every run going on now to stop at its next check; `signal` names the reason (0: none
/// given). Async-signal-safe: it only stores to lock-free atomics.
void request_stop(int signal) noexcept;

/// Forgets, for the calling thread's runs (and the threads that adopt its budget), the stops
/// asked for until now, so that its next run starts afresh: for a process that goes on after a
/// stopped run (the Python module: KeyboardInterrupt, then another call). Other threads' stops
/// stay: process-wide, a call starting on one thread cancelled a Ctrl-C still on its way to the
/// main thread's call (issue #50's sixth probe).
void clear_stop() noexcept;

/// Budgets of this many seconds or more (and infinity) are no budget.
inline constexpr double kUnboundedSeconds = 1e9;

/// Stops the calling thread's runs `seconds` of wall time from now (<= 0 or >= kUnboundedSeconds:
/// no budget). `flag` names it in messages.
void set_budget(double seconds, const std::string& flag);

/// A thread's time budget, as set_budget() left it.
struct Budget {
  std::int64_t deadline_ns = 0;  // steady_clock ns since its epoch; 0: none
  double seconds = 0.0;
  std::string flag;
  std::uint64_t stops_seen = 0;  // request_stop() calls its runs ignore (clear_stop)
};

/// The calling thread's budget.
Budget current_budget();

/// While it lives, the calling thread runs under `budget` (a thread working for another, a
/// sweep's); the thread's own budget is put back after.
class Adopt {
 public:
  explicit Adopt(Budget budget);
  ~Adopt();
  Adopt(const Adopt&) = delete;
  Adopt& operator=(const Adopt&) = delete;

 private:
  Budget previous_;
};

/// Throws Stopped when a stop was asked for or the budget is spent.
void check();

/// True once check() would throw.
bool stop_requested();

/// Called with the kernel's name, its CTAs finished and its CTAs in all, at most once a wave.
using ProgressHook =
    std::function<void(const std::string& kernel, std::int64_t done, std::int64_t total)>;
/// Installs (or, with an empty hook, removes) the progress display of single runs.
void set_progress_hook(ProgressHook hook);

/// The engine's hook: a wave of `kernel`'s CTAs finished. Checks for a stop, then reports.
void wave_done(const std::string& kernel, std::int64_t done, std::int64_t total);

}  // namespace run_control
}  // namespace iosim
