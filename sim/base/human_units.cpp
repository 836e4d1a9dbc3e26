#include "sim/base/human_units.hpp"

#include <fmt/format.h>

#include <cmath>

namespace iosim {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (std::abs(b) >= 1000.0 && u < 5) {
    b /= 1000.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.3g} {}", b, units[u]);
}

std::string human_seconds(double s) {
  if (s >= 1.0) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

}  // namespace iosim
