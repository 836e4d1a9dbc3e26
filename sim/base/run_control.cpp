#include "sim/base/run_control.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>
#include <utility>

namespace iosim::run_control {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_stop_signal{-1};  // -1: no stop asked for; else the signal (0: none named)
static_assert(std::atomic<int>::is_always_lock_free);

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
thread_local Budget t_budget;

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
  int expected = -1;
  g_stop_signal.compare_exchange_strong(expected, signal);
}

void clear_stop() noexcept {
  g_stop_signal.store(-1);
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
  if (g_stop_signal.load(std::memory_order_relaxed) >= 0) return true;
  const std::int64_t deadline = t_budget.deadline_ns;
  return deadline != 0 &&
         std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
                 .count() >= deadline;
}

void check() {
  if (!stop_requested()) return;
  const int sig = g_stop_signal.load();
  if (sig >= 0) throw Stopped(fmt::format("stopped by {}", signal_name(sig)));
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
