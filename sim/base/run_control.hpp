#pragma once
// Stopping a long run early, and showing how far it is. A signal handler or a time budget asks
// the run to stop; the engine calls wave_done() once per wave of CTAs, which throws Stopped when
// a stop was asked for and feeds the progress display; within a long wave the engine, and between
// their own steps the numeric executor, explain's recorders and kvcache's loop, call check().
// Process-wide: a sweep's threads all stop. In sim/base/ because every command's loops use it.
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

/// Asks every run to stop at its next check; `signal` names the reason (0: none given).
/// Async-signal-safe: it only stores to lock-free atomics.
void request_stop(int signal) noexcept;

/// Forgets a stop asked for earlier, so that the next run starts afresh: for a process that
/// goes on after a stopped run (the Python module: KeyboardInterrupt, then another call).
void clear_stop() noexcept;

/// Budgets of this many seconds or more (and infinity) are no budget.
inline constexpr double kUnboundedSeconds = 1e9;

/// Stops runs `seconds` of wall time from now (<= 0 or >= kUnboundedSeconds: no budget). `flag`
/// names it in messages.
void set_budget(double seconds, const std::string& flag);

/// Throws Stopped when a stop was asked for or the budget is spent.
void check();

/// True once check() would throw.
bool stop_requested();

/// Seconds since the budget or the process's first check started counting.
double elapsed_s();

/// Called with the kernel's name, its CTAs finished and its CTAs in all, at most once a wave.
using ProgressHook =
    std::function<void(const std::string& kernel, std::int64_t done, std::int64_t total)>;
/// Installs (or, with an empty hook, removes) the progress display of single runs.
void set_progress_hook(ProgressHook hook);

/// The engine's hook: a wave of `kernel`'s CTAs finished. Checks for a stop, then reports.
void wave_done(const std::string& kernel, std::int64_t done, std::int64_t total);

}  // namespace run_control
}  // namespace iosim
