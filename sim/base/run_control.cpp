#include "sim/base/run_control.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>
#include <utility>

namespace iosim::run_control {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_stop_signal{-1};  // the latest stop's signal (0: none named)
static_assert(std::atomic<int>::is_always_lock_free);
// Stops asked for so far; a thread's runs stop on those past its budget's stops_seen.
std::atomic<std::uint64_t> g_stops{0};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

// The progress display of single runs (the CLI's): process-wide.
struct Progress {
  std::mutex mutex;
  ProgressHook hook;
};

Progress& progress() {
  static Progress p;
  return p;
}

std::atomic<bool> g_has_hook{false};

// The calling thread's time budget (the header says why not the process's).
// A thread's runs ignore the stops asked for before its first (a thread started later for a new
// call is not that call's); one working for another adopts that one's (Adopt).
Budget fresh_budget() {
  Budget b;
  b.stops_seen = g_stops.load();
  return b;
}
thread_local Budget t_budget = fresh_budget();

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT (Ctrl-C)";
    case SIGTERM:
      return "SIGTERM";
    case 0:
      return "a stop request";
    default:
      return fmt::format("signal {}", sig);
  }
}

}  // namespace

void request_stop(int signal) noexcept {
  g_stop_signal.store(signal);
  g_stops.fetch_add(1);
}

void clear_stop() noexcept {
  t_budget.stops_seen = g_stops.load();
}

void set_budget(double seconds, const std::string& flag) {
  // A budget of more than a billion seconds (30 years; inf) is none: the deadline, nanoseconds
  // since the clock's epoch in 64 bits, overflowed past ~9.2e9 s and lay in the past, stopping
  // the run at once (`--max-seconds inf`, exit 3).
  if (!(seconds < kUnboundedSeconds)) seconds = 0.0;
  const Clock::time_point start = Clock::now();
  t_budget.seconds = seconds;
  t_budget.flag = flag;
  t_budget.deadline_ns =
      seconds > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(
                        (start + std::chrono::duration<double>(seconds)).time_since_epoch())
                        .count()
                  : 0;
}

Budget current_budget() {
  return t_budget;
}

Adopt::Adopt(Budget budget) : previous_(std::exchange(t_budget, std::move(budget))) {}

Adopt::~Adopt() {
  t_budget = std::move(previous_);
}

bool stop_requested() {
  if (g_stops.load(std::memory_order_relaxed) > t_budget.stops_seen) return true;
  const std::int64_t deadline = t_budget.deadline_ns;
  return deadline != 0 &&
         std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
                 .count() >= deadline;
}

void check() {
  if (!stop_requested()) return;
  if (g_stops.load() > t_budget.stops_seen) {
    throw Stopped(fmt::format("stopped by {}", signal_name(std::max(0, g_stop_signal.load()))));
  }
  throw Stopped(
      fmt::format("stopped: the time budget {} {} s ran out", t_budget.flag, t_budget.seconds));
}

void set_progress_hook(ProgressHook hook) {
  Progress& b = progress();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.hook = std::move(hook);
  g_has_hook.store(static_cast<bool>(b.hook));
}

void wave_done(const std::string& kernel, std::int64_t done, std::int64_t total) {
  check();
  if (!g_has_hook.load(std::memory_order_relaxed)) return;
  Progress& b = progress();
  ProgressHook hook;
  {
    std::lock_guard<std::mutex> lock(b.mutex);
    if (!b.hook) return;
    hook = b.hook;
  }
  hook(kernel, done, total);
}

}  // namespace iosim::run_control
