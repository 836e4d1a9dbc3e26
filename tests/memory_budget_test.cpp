// The memory budget (sim/base/memory_budget.hpp): sizes as --max-memory reads them, refusals
// that carry the estimate, reservations that wait for each other instead of passing the budget,
// and the L2 model's estimate, which must hold what the model really allocates.
#include "sim/base/memory_budget.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "sim/base/errors.hpp"
#include "sim/base/run_control.hpp"
#include "sim/memory/l2_system.hpp"

using namespace iosim;

namespace {

// Restores the default budget when a test case ends, whatever it checked.
struct DefaultBudgetAfter {
  ~DefaultBudgetAfter() { memory_budget::set_bytes(0, ""); }
};

}  // namespace

TEST_CASE("--max-memory sizes: decimal bytes with a binary or decimal unit, nothing else") {
  const auto size = [](const char* text) {
    return memory_budget::parse_size(text, "--max-memory");
  };
  CHECK(size("100") == 100);
  CHECK(size("1k") == 1024);
  CHECK(size("1K") == 1024);
  CHECK(size("1kB") == 1000);
  CHECK(size("512M") == 512ull << 20);
  CHECK(size("512MiB") == 512ull << 20);
  CHECK(size("8G") == 8ull << 30);
  CHECK(size("8GB") == 8000000000ull);
  CHECK(size("1.5GiB") == 3ull << 29);
  CHECK(size("2T") == 2ull << 40);
  for (const char* bad : {"", "0", "0.2", "-1", "1e9", "0x10", "1.5Q", "G", "nan", "inf", " 8G",
                          "8 G", "8GiBs", "9000000T"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(size(bad), ConfigError);
  }
  try {
    size("1.5Q");
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    CHECK(m.find("--max-memory '1.5Q'") != std::string::npos);
    CHECK(m.find("'Q' is not a unit") != std::string::npos);
  }
}

TEST_CASE("the default budget is three quarters of what the process may use") {
  const DefaultBudgetAfter restore;
  memory_budget::set_bytes(0, "");
  CHECK(memory_budget::machine_bytes() > 0);
  CHECK(memory_budget::bytes() == memory_budget::machine_bytes() / 4 * 3);
  CHECK(memory_budget::describe().find("three quarters") != std::string::npos);
  memory_budget::set_bytes(5000, "--max-memory");
  CHECK(memory_budget::bytes() == 5000);
  CHECK(memory_budget::describe() == "5 KB (--max-memory)");
}

TEST_CASE("work over the budget is refused with its estimate; work within it is not") {
  const DefaultBudgetAfter restore;
  memory_budget::set_bytes(1000000, "--max-memory");
  CHECK_NOTHROW(memory_budget::check(1000000, "this", "advice"));
  try {
    memory_budget::check(2500000, "the thing", "shrink it");
    FAIL("not refused");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "the thing would take about 2.5 MB of memory, more than the memory budget of 1 MB "
          "(--max-memory); shrink it");
  }
  CHECK_THROWS_AS(memory_budget::Reservation(1000001, "x", "y"), ConfigError);
  CHECK(memory_budget::reserved_bytes() == 0);
}

TEST_CASE("a reservation waits while others hold the budget, and runs once they let go") {
  const DefaultBudgetAfter restore;
  memory_budget::set_bytes(1000, "--max-memory");
  std::atomic<bool> got{false};
  std::thread second;
  {
    const memory_budget::Reservation first(800, "first", "");
    // (A sweep's thread: it works under the budget of the thread that started it.)
    second = std::thread([&, budget = memory_budget::current_budget()] {
      const memory_budget::Adopt adopt(budget);
      const memory_budget::Reservation r(500, "second", "");
      got = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    CHECK_FALSE(got.load());  // 800 + 500 > 1000: it waits
    CHECK(memory_budget::reserved_bytes() == 800);
  }
  second.join();
  CHECK(got.load());
  CHECK(memory_budget::reserved_bytes() == 0);
}

TEST_CASE("a memory budget is its thread's: another thread neither shares it nor resets it") {
  // One process-wide budget: a Python call's max_memory went back to the default when another
  // thread's call ended (issue #50's sixth probe).
  const DefaultBudgetAfter restore;
  memory_budget::set_bytes(1000, "--max-memory");
  std::uint64_t other = 0;
  std::thread([&] {
    other = memory_budget::bytes();   // the default: no budget of its own
    memory_budget::set_bytes(0, "");  // its call ends: it resets its own
  }).join();
  CHECK(other != 1000);
  CHECK(memory_budget::bytes() == 1000);
  CHECK_THROWS_AS(memory_budget::check(1001, "x", "y"), ConfigError);
  std::uint64_t adopted = 0;
  std::thread([&, budget = memory_budget::current_budget()] {
    const memory_budget::Adopt adopt(budget);  // a sweep's thread, working for this one
    adopted = memory_budget::bytes();
  }).join();
  CHECK(adopted == 1000);
}

TEST_CASE("a reservation waiting for memory honours a stop") {
  const DefaultBudgetAfter restore;
  memory_budget::set_bytes(1000, "--max-memory");
  const memory_budget::Reservation first(800, "first", "");
  run_control::set_budget(0.2, "--max-seconds");
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(memory_budget::Reservation(500, "second", ""), Stopped);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(waited < 1.5);
  run_control::set_budget(0.0, "--max-seconds");  // none, for the tests after this one
  CHECK(memory_budget::reserved_bytes() == 800);
}

TEST_CASE("the L2 model's estimate holds what it allocates, dirty queue at its longest included") {
  std::mt19937_64 rng(7);
  for (const std::int64_t capacity : {std::int64_t{1} << 20, std::int64_t{5} << 20,
                                      std::int64_t{50} << 20, std::int64_t{60} << 20}) {
    for (const int sector : {16, 32, 64}) {
      for (const int partitions : {1, 2}) {
        CAPTURE(capacity);
        CAPTURE(sector);
        CAPTURE(partitions);
        const double estimate = L2System::memory_bytes(capacity, sector, partitions);
        L2System l2(capacity, sector, partitions, /*max_dirty_fraction=*/0.5);
        const auto fresh = static_cast<double>(l2.allocated_bytes());
        CHECK(fresh <= estimate);
        CHECK(estimate <= 4 * fresh);  // an estimate, not a guess: within 4x of a fresh model
        // Writes and reads over three times the capacity, in pieces of up to a few regions: the
        // dirty queue and the batch scratch grow as far as they will.
        PerTensor wb{};
        const auto span = static_cast<std::uint64_t>(3 * capacity);
        for (int i = 0; i < 20000; ++i) {
          const std::uint64_t addr = rng() % span;
          const std::uint64_t len = 1 + rng() % (static_cast<std::uint64_t>(sector) * 512);
          if (i % 3 == 0) {
            l2.read(addr, len, TensorId::K, i % 132, wb);
          } else {
            l2.write(addr, len, TensorId::O, i % 132, wb);
          }
        }
        CHECK(static_cast<double>(l2.allocated_bytes()) <= estimate);
      }
    }
  }
}
