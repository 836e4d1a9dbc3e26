#include "sim/base/memory_budget.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <limits>
#include <mutex>
#include <utility>

#include "sim/base/errors.hpp"
#include "sim/base/human_units.hpp"
#include "sim/base/run_control.hpp"

namespace iosim::memory_budget {
namespace {

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

// A cgroup's limit in bytes, or kUnlimited ("max", no file: not in a limited cgroup).
std::uint64_t cgroup_limit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max",                       // cgroup v2
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {  // v1
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max") continue;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    // v1 says "no limit" with a huge number: min() keeps physical memory.
    if (ec == std::errc{} && end == text.data() + text.size() && v > 0) return v;
  }
  return kUnlimited;
}

std::uint64_t rlimit_bytes(int resource) {
  rlimit r{};
  if (getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return kUnlimited;
  return static_cast<std::uint64_t>(r.rlim_cur);
}

// The reservations of every thread.
struct State {
  std::mutex mutex;
  std::condition_variable freed;
  std::uint64_t reserved = 0;
};

// The calling thread's budget (the header says why not the process's).
thread_local Budget t_budget;

State& state() {
  static State s;
  return s;
}

std::uint64_t default_bytes() {
  return machine_bytes() / 4 * 3;
}

// The calling thread's budget and its description.
std::uint64_t budget_bytes() {
  return t_budget.bytes ? t_budget.bytes : default_bytes();
}

std::string describe_budget() {
  if (t_budget.bytes) {
    return fmt::format("{} ({})", human_bytes(static_cast<double>(t_budget.bytes)),
                       t_budget.origin);
  }
  return fmt::format("{} (three quarters of the {} this process may use; --max-memory sets it)",
                     human_bytes(static_cast<double>(default_bytes())),
                     human_bytes(static_cast<double>(machine_bytes())));
}

// The budget, under the state's lock held by `lock`; throws ConfigError (unlocking first) when
// `estimate` bytes for `what` could never fit in it.
std::uint64_t budget_or_refuse(std::unique_lock<std::mutex>& lock, double estimate,
                               std::string_view what, std::string_view advice) {
  const std::uint64_t budget = budget_bytes();
  if (estimate <= static_cast<double>(budget)) return budget;
  const std::string text = describe_budget();
  lock.unlock();
  throw ConfigError(
      fmt::format("{} would take about {} of memory, more than the memory budget of {}; {}", what,
                  human_bytes(estimate), text, advice));
}

}  // namespace

std::uint64_t machine_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  std::uint64_t bytes = pages > 0 && page > 0
                            ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                            : kUnlimited;
  bytes = std::min({bytes, cgroup_limit(), rlimit_bytes(RLIMIT_AS), rlimit_bytes(RLIMIT_DATA)});
  // Nothing said how much there is: a budget that refuses nothing a 64-bit count could hold.
  return bytes == kUnlimited ? kUnlimited / 2 : bytes;
}

void set_bytes(std::uint64_t bytes, const std::string& origin) {
  t_budget.bytes = bytes;
  t_budget.origin = origin;
}

Budget current_budget() {
  return t_budget;
}

Adopt::Adopt(Budget budget) : previous_(std::exchange(t_budget, std::move(budget))) {}

Adopt::~Adopt() {
  t_budget = std::move(previous_);
}

std::uint64_t bytes() {
  return budget_bytes();
}

std::string describe() {
  return describe_budget();
}

void check(double estimate, std::string_view what, std::string_view advice) {
  std::unique_lock<std::mutex> lock(state().mutex);
  budget_or_refuse(lock, estimate, what, advice);
}

Reservation::Reservation(double estimate, std::string_view what, std::string_view advice) {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  const std::uint64_t budget = budget_or_refuse(lock, estimate, what, advice);
  const auto want = static_cast<std::uint64_t>(std::ceil(std::max(estimate, 0.0)));
  // Others' reservations end as their runs do; a stop is honoured while waiting for them.
  while (s.reserved > budget - want) {
    s.freed.wait_for(lock, std::chrono::milliseconds(100));
    if (run_control::stop_requested()) {
      lock.unlock();
      run_control::check();
    }
  }
  s.reserved += want;
  bytes_ = want;
}

Reservation::~Reservation() {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.reserved -= bytes_;
  }
  s.freed.notify_all();
}

std::uint64_t reserved_bytes() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.reserved;
}

std::uint64_t parse_size(std::string_view text, std::string_view flag) {
  const auto bad = [&](std::string_view why) -> ConfigError {
    return ConfigError(fmt::format(
        "{} '{}': {}; give bytes, or a number with a unit: 512M, 8G, 1.5GiB (powers of 1024), "
        "8GB (powers of 1000)",
        flag, text, why));
  };
  std::size_t i = 0;
  double value = 0;
  bool any = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, any = true) {
    value = value * 10 + (text[i] - '0');
  }
  if (i < text.size() && text[i] == '.') {
    double scale = 0.1;
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, any = true) {
      value += (text[i] - '0') * scale;
      scale /= 10;
    }
  }
  if (!any) throw bad("not a decimal number");
  const std::string_view unit = text.substr(i);
  double scale = 1;
  if (!unit.empty()) {
    static constexpr std::string_view kPrefixes = "kMGT";
    const std::size_t p = kPrefixes.find(unit[0] == 'K' ? 'k' : unit[0]);
    const std::string_view rest = unit.substr(1);
    if (p == std::string_view::npos || !(rest.empty() || rest == "iB" || rest == "B")) {
      throw bad(fmt::format("'{}' is not a unit", unit));
    }
    scale = std::pow(rest == "B" ? 1000.0 : 1024.0, static_cast<double>(p + 1));
  }
  const double bytes = value * scale;
  if (!(bytes >= 1)) throw bad("the budget must be at least one byte");
  if (!(bytes < 9.2e18)) throw bad("out of range");
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace iosim::memory_budget
