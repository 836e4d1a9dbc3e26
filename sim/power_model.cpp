#include "sim/power_model.hpp"

#include <algorithm>
#include <cmath>

namespace iosim {

namespace {

// Switching energy per operation at clock f relative to the boost clock: (V(f)/V(boost))^2.
double voltage_scale(const PowerSpec& w, double clock_mhz, double boost_mhz) {
  const double v = 1.0 - w.voltage_clock_slope.value * (1.0 - clock_mhz / boost_mhz);
  return v * v;
}

// The lowest clock the solver considers: a tenth of the boost clock (a run that exceeds the
// limit even there is reported there, binding).
constexpr double kMinClockFraction = 0.1;

}  // namespace

double board_power_w(const HardwareProfile& profile, const Counters& c, double time_s,
                     double clock_mhz, Dtype dtype) {
  const PowerSpec& w = profile.power;
  const double boost = profile.sm.boost_clock_mhz.value;
  const double pj = 1e-12;
  const double tensor_pj =
      dtype == Dtype::fp8 ? w.tensor_fp8_pj_per_flop.value : w.tensor_fp16_pj_per_flop.value;
  const double switched_j =
      pj * (tensor_pj * static_cast<double>(c.tensor_flops) +
            w.fp32_pj_per_flop.value * static_cast<double>(c.fp32_flops) +
            w.sfu_pj_per_op.value * static_cast<double>(c.sfu_ops) +
            w.l2_pj_per_byte.value * static_cast<double>(c.l2.read_total() + c.l2.write_total()));
  const double hbm_j =
      pj * w.hbm_pj_per_byte.value * static_cast<double>(c.hbm.read_total() + c.hbm.write_total());
  const double per_s = time_s > 0 ? 1.0 / time_s : 0.0;
  return w.static_w.value +
         voltage_scale(w, clock_mhz, boost) *
             (w.clock_w.value * clock_mhz / boost + switched_j * per_s) +
         hbm_j * per_s;
}

PowerSolution solve_power_clock(const HardwareProfile& profile, Dtype dtype,
                                const std::function<EngineResult(double)>& simulate_at,
                                EngineResult& result) {
  PowerSolution s;
  s.limit_w = profile.power.limit_w.value;
  const double boost = profile.sm.boost_clock_mhz.value;
  result = simulate_at(boost);
  s.engine_runs = 1;
  s.clock_mhz = boost;
  s.watts = board_power_w(profile, result.total, result.time_s, boost, dtype);
  if (s.watts <= s.limit_w) return s;

  const Counters counts = result.total;  // counts do not depend on the clock; time does
  double f_a = boost, t_a = result.time_s, g = 1.0;
  const double lo_clock = kMinClockFraction * boost;
  const auto power_at = [&](double f) {
    return board_power_w(profile, counts, t_a * std::pow(f_a / f, g), f, dtype);
  };
  constexpr int kMaxRuns = 6;
  while (s.engine_runs < kMaxRuns) {
    // Power rises with the clock on this model (rates ∝ f^g, g >= 0; s(f) rises): bisect.
    double lo = lo_clock, hi = boost;
    if (power_at(lo) >= s.limit_w) {
      hi = lo;
    } else {
      for (int i = 0; i < 60 && hi - lo > 0.01; ++i) {
        const double mid = 0.5 * (lo + hi);
        (power_at(mid) > s.limit_w ? hi : lo) = mid;
      }
      hi = lo;  // the highest clock found within the limit
    }
    const double f = hi;
    result = simulate_at(f);
    ++s.engine_runs;
    const double t = result.time_s;
    const bool settled = std::abs(f - f_a) < 1.0;
    if (t > 0 && t_a > 0 && std::abs(std::log(f_a / f)) > 1e-6) {
      g = std::clamp(std::log(t / t_a) / std::log(f_a / f), 0.0, 1.0);
    }
    f_a = f;
    t_a = t;
    s.clock_mhz = f;
    if (settled) break;
  }
  s.watts = board_power_w(profile, result.total, result.time_s, s.clock_mhz, dtype);
  s.binding = s.clock_mhz < boost;
  return s;
}

}  // namespace iosim
