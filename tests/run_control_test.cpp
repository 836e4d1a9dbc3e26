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
