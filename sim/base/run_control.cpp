#include "sim/base/run_control.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>

namespace iosim::run_control {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_stop_signal{-1};  // -1: no stop asked for; else the signal (0: none named)
static_assert(std::atomic<int>::is_always_lock_free);

struct Budget {
  std::mutex mutex;
  Clock::time_point start = Clock::now();
  double seconds = 0.0;
  std::string flag;
  ProgressHook hook;
};

Budget& budget() {
  static Budget b;
  return b;
}

std::atomic<std::int64_t> g_deadline_ns{0};  // steady_clock ns since epoch; 0: none
std::atomic<bool> g_has_hook{false};

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
  Budget& b = budget();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.start = Clock::now();
  b.seconds = seconds;
  b.flag = flag;
  g_deadline_ns.store(
      seconds > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(
                        (b.start + std::chrono::duration<double>(seconds)).time_since_epoch())
                        .count()
                  : 0);
}

double elapsed_s() {
  Budget& b = budget();
  std::lock_guard<std::mutex> lock(b.mutex);
  return std::chrono::duration<double>(Clock::now() - b.start).count();
}

bool stop_requested() {
  if (g_stop_signal.load(std::memory_order_relaxed) >= 0) return true;
  const std::int64_t deadline = g_deadline_ns.load(std::memory_order_relaxed);
  return deadline != 0 &&
         std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
                 .count() >= deadline;
}

void check() {
  if (!stop_requested()) return;
  const int sig = g_stop_signal.load();
  if (sig >= 0) throw Stopped(fmt::format("stopped by {}", signal_name(sig)));
  Budget& b = budget();
  std::lock_guard<std::mutex> lock(b.mutex);
  throw Stopped(fmt::format("stopped: the time budget {} {} s ran out", b.flag, b.seconds));
}

void set_progress_hook(ProgressHook hook) {
  Budget& b = budget();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.hook = std::move(hook);
  g_has_hook.store(static_cast<bool>(b.hook));
}

void wave_done(const std::string& kernel, std::int64_t done, std::int64_t total) {
  check();
  if (!g_has_hook.load(std::memory_order_relaxed)) return;
  Budget& b = budget();
  ProgressHook hook;
  {
    std::lock_guard<std::mutex> lock(b.mutex);
    if (!b.hook) return;
    hook = b.hook;
  }
  hook(kernel, done, total);
}

}  // namespace iosim::run_control
