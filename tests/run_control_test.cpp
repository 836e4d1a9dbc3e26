// The stop mechanism's time budget (sim/base/run_control.hpp): a budget stops a run once spent;
// an unbounded one (inf, or a billion seconds and more) never does.
#include "sim/base/run_control.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <limits>
#include <thread>

using namespace iosim;

TEST_CASE("a time budget past a billion seconds, or infinite, is no budget") {
  for (const double seconds : {std::numeric_limits<double>::infinity(), 1e10, 1e300}) {
    CAPTURE(seconds);
    run_control::set_budget(seconds, "--max-seconds");
    CHECK_FALSE(run_control::stop_requested());  // it overflowed into the past: stopped at once
  }
  run_control::set_budget(1e-6, "--max-seconds");  // a spent budget does stop
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CHECK(run_control::stop_requested());
  run_control::set_budget(0.0, "--max-seconds");  // none, for the tests after this one
  CHECK_FALSE(run_control::stop_requested());
}

TEST_CASE("a time budget is its thread's: another thread neither shares it nor clears it") {
  // One process-wide budget: a Python call's max_seconds was replaced, or cleared when another
  // thread's call ended, and the call ran on for ever (issue #50's sixth probe).
  run_control::set_budget(1e-6, "--max-seconds");
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  bool other_stopped = true;
  std::thread other([&] {
    other_stopped = run_control::stop_requested();  // no budget of its own
    run_control::set_budget(0.0, "max_seconds");    // its call ends: it clears its own
  });
  other.join();
  CHECK_FALSE(other_stopped);
  CHECK(run_control::stop_requested());  // this thread's budget is still spent
  // A thread working for this one (a sweep's) adopts its budget, and gives it back.
  bool adopted_stopped = false;
  bool after_stopped = true;
  std::thread worker([&, budget = run_control::current_budget()] {
    {
      const run_control::Adopt adopt(budget);
      adopted_stopped = run_control::stop_requested();
    }
    after_stopped = run_control::stop_requested();
  });
  worker.join();
  CHECK(adopted_stopped);
  CHECK_FALSE(after_stopped);
  run_control::set_budget(0.0, "--max-seconds");  // none, for the tests after this one
  CHECK_FALSE(run_control::stop_requested());
}

TEST_CASE("a stop stays with the runs it was asked of: another thread's fresh start keeps it") {
  // Process-wide, a Python call starting on another thread (clear_stop, so that its run starts
  // afresh) cancelled a Ctrl-C still on its way to the main thread's call, which then ran to its
  // end (issue #50's sixth probe).
  run_control::clear_stop();
  CHECK_FALSE(run_control::stop_requested());
  run_control::request_stop(2);  // SIGINT, as the Python module's handler asks
  bool other_stopped_after_clear = true;
  bool worker_stopped = false;
  std::thread other([&] {
    run_control::clear_stop();  // another thread's call starts
    other_stopped_after_clear = run_control::stop_requested();
  });
  other.join();
  CHECK_FALSE(other_stopped_after_clear);
  CHECK(run_control::stop_requested());  // this thread's run still stops
  CHECK_THROWS_AS(run_control::check(), Stopped);
  std::thread worker([&, budget = run_control::current_budget()] {
    const run_control::Adopt adopt(budget);  // a sweep's thread working for this one
    worker_stopped = run_control::stop_requested();
  });
  worker.join();
  CHECK(worker_stopped);
  run_control::clear_stop();  // this thread's next run starts afresh
  CHECK_FALSE(run_control::stop_requested());
}
