#pragma once
// How much memory a command may take, checked before it is taken. Every large allocation of
// iosim is sized from its inputs before it is made: the L2 model's arrays (from the profile's
// L2 size and sector), `--execute`'s tensors and FP64 reference, explain's trace. Each asks here
// first; one that would not fit is refused with its estimate in the message (ConfigError,
// exit 2) instead of growing until the machine swaps or the kernel kills the process.
// The reservations are process-wide: a sweep's points run on several threads, and each reservation
// waits while the memory the others hold leaves no room for it, so `--jobs` never takes the
// process past the budget (the points still run, in fewer at a time; the results do not change).
// The budget itself is the calling thread's, adopted by the threads a sweep starts for it (Adopt),
// as run_control's time budget: calls on several threads of one process (the Python package's)
// each keep their own max_memory, which another thread's call ending used to put back to the
// default (issue #50's sixth probe).
// In sim/base/ because the engine, the executor and explain all reserve through it.
#include <cstdint>
#include <string>
#include <string_view>

namespace iosim::memory_budget {

/// The memory this process may use at most: physical memory, or less where the cgroup's limit
/// (memory.max) or the process's address-space or data limit (ulimit -v, -d) is lower.
std::uint64_t machine_bytes();

/// Sets the calling thread's budget to `bytes` (0: the default, three quarters of
/// machine_bytes()); `origin` names where it came from in messages ("--max-memory"). A budget
/// over machine_bytes() is allowed: the user knows what else the machine holds.
void set_bytes(std::uint64_t bytes, const std::string& origin);

/// A thread's budget, as set_bytes() left it.
struct Budget {
  std::uint64_t bytes = 0;  // 0: the default
  std::string origin;
};

/// The calling thread's budget.
Budget current_budget();

/// While it lives, the calling thread reserves under `budget` (a thread working for another, a
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

/// The budget in bytes.
std::uint64_t bytes();

/// "8 GB (--max-memory)" or "18 GB (three quarters of this machine's 24 GB)".
std::string describe();

/// Throws ConfigError when `estimate` bytes for `what` ("the L2 model of this profile") would not
/// fit in the budget on their own; `advice` ends the message (what to change).
void check(double estimate, std::string_view what, std::string_view advice);

/// Holds `estimate` bytes of the budget for as long as it lives. Refuses (ConfigError, as check())
/// what could never fit; otherwise waits while other reservations leave too little, honouring a
/// stop (run_control::check()) while it waits.
class Reservation {
 public:
  Reservation(double estimate, std::string_view what, std::string_view advice);
  ~Reservation();
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;

 private:
  std::uint64_t bytes_ = 0;
};

/// Bytes held by reservations now (tests).
std::uint64_t reserved_bytes();

/// Reads a size as `--max-memory` takes it: a decimal number of bytes, optionally followed by a
/// unit: k, M, G, T (powers of 1024; KiB, MiB, GiB, TiB say the same) or kB, MB, GB, TB (powers of
/// 1000). Throws ConfigError naming `flag` for anything else, zero or negative sizes included.
std::uint64_t parse_size(std::string_view text, std::string_view flag);

}  // namespace iosim::memory_budget
