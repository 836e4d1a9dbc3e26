#pragma once
// The progress bar of the commands that run many points (sweep, tune): a bar, the points done and
// an ETA on stderr, redrawn at most ten times a second; for SweepOptions::on_progress when stderr
// is a terminal.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "api/sweep.hpp"

namespace iosim::cli {

class ProgressBar {
 public:
  void operator()(const SweepProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (p.done < p.total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double fraction = p.total_work > 0 ? p.done_work / p.total_work : 1.0;
    const int width = 30;
    const int filled = static_cast<int>(fraction * width);
    std::string eta = "--";
    if (p.done > 0 && fraction > 0) eta = duration_text(elapsed * (1.0 - fraction) / fraction);
    fmt::print(stderr, "\r[{}{}] {}/{} points  {:3.0f}%  elapsed {}  ETA {}   ",
               std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(width - filled), '-'), p.done, p.total,
               fraction * 100, duration_text(elapsed), eta);
    if (p.done == p.total) fmt::print(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  static std::string duration_text(double s) {
    if (s < 60) return fmt::format("{:.0f}s", s);
    return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  }
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace iosim::cli
