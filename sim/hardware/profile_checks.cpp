// The checks of a profile's values, once every key reads: each number in the range a real GPU
// can have, and the numbers consistent with each other.
#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>

#include "sim/hardware/profile.hpp"
#include "sim/hardware/profile_reader.hpp"
#include "sim/memory/l2_cache.hpp"

namespace iosim {

namespace {

using profile_yaml::Bounds;
using profile_yaml::Field;
using profile_yaml::Reader;

// The checks of a key's Bounds (profile_schema.hpp).
enum class Check { sign, max, range, fraction };

// Notes at `path` where `v` fails `check` of `b`.
template <typename T>
void check_value(Reader& reader, const std::string& path, T v, const Bounds& b, Check check) {
  const auto x = static_cast<double>(v);
  switch (check) {
    case Check::sign:
      if (b.sign == Bounds::Sign::positive && !(v > 0)) {
        reader.note_at(path, fmt::format("{} = {} must be > 0", path, v));
      }
      if (b.sign == Bounds::Sign::non_negative && v < 0) {
        reader.note_at(path, fmt::format("{} = {} must be >= 0", path, v));
      }
      return;
    case Check::max:
      if (b.max_why != nullptr && x > b.max) {
        reader.note_at(path, fmt::format("{} = {} exceeds {} ({})", path, v, b.max, b.max_why));
      }
      return;
    case Check::range:
      if (b.unit != nullptr && x > 0 && (x < b.lo || x > b.hi)) {
        reader.note_at(path, fmt::format("{} = {} is outside [{}, {}] {} (no GPU is that far from "
                                         "today's)",
                                         path, x, b.lo, b.hi, b.unit));
      }
      return;
    case Check::fraction:
      if (b.fraction == Bounds::Interval::open_zero_one && !(x > 0.0 && x <= 1.0)) {
        reader.note_at(path, fmt::format("{} = {} is not in (0, 1]", path, x));
      }
      if (b.fraction == Bounds::Interval::zero_one && !(x >= 0.0 && x <= 1.0)) {
        reader.note_at(path, fmt::format("{} = {} is not in [0, 1]", path, x));
      }
      return;
  }
}

// `check` of every key of `section`, in the table's order.
template <typename Spec, std::size_t N>
void check_keys(Reader& reader, const char* section, const std::array<Field<Spec>, N>& fields,
                const Spec& spec, Check check) {
  for (const Field<Spec>& f : fields) {
    const std::string path = std::string(section) + "." + f.key;
    std::visit([&](auto m) { check_value(reader, path, (spec.*m).value, f.bounds, check); },
               f.member);
  }
}

// Every check of every key of an optional section, key by key.
template <typename Spec, std::size_t N>
void check_each_key(Reader& reader, const char* section, const std::array<Field<Spec>, N>& fields,
                    const Spec& spec) {
  for (const Field<Spec>& f : fields) {
    for (const Check check : {Check::sign, Check::max, Check::range, Check::fraction}) {
      check_keys(reader, section, std::array<Field<Spec>, 1>{f}, spec, check);
    }
  }
}

}  // namespace

void profile_yaml::validate(const HardwareProfile& p, Reader& reader) {
  // Each key by itself (profile_schema.hpp's Bounds): in the required sections the signs, then
  // the upper limits, then the ranges; then the optional sections present, key by key (the power
  // section last, below).
  for (const Check check : {Check::sign, Check::max, Check::range}) {
    for_each_section(p, [&](const char* section, const auto& fields, const auto& spec) {
      check_keys(reader, section, fields, spec, check);
    });
  }
  for_each_optional_section(p, [&](const char* section, const auto& fields, const auto& spec) {
    if constexpr (!std::is_same_v<std::decay_t<decltype(spec)>, PowerSpec>) {
      if (spec.present) check_each_key(reader, section, fields, spec);
    }
  });
  const SmSpec& sm = p.sm;
  const L2Spec& l2 = p.l2;
  const HbmSpec& hbm = p.hbm;
  // The L2 model keeps a few bytes per sector: 1-byte sectors made 1.6 GB a point. GPUs use
  // 32-byte sectors; a line is a few of them.
  if (l2.sector_bytes.value > 0 && l2.sector_bytes.value < 16) {
    reader.note_at("l2.sector_bytes",
                   fmt::format("l2.sector_bytes = {} is below 16 (iosim's limit: the L2 model "
                               "keeps state per sector; GPUs use 32-byte sectors)",
                               l2.sector_bytes.value));
  }
  // Both clocks alike: sm.base_clock_mhz = 1e-300 (--set) was accepted where the boost clock's
  // 1e-300 was refused, though no GPU runs at either.
  if (sm.boost_clock_mhz.value < 1) {
    reader.note_at("sm.boost_clock_mhz",
                   fmt::format("sm.boost_clock_mhz = {} is below 1 MHz", sm.boost_clock_mhz.value));
  }
  if (sm.base_clock_mhz.value < 1) {
    reader.note_at("sm.base_clock_mhz",
                   fmt::format("sm.base_clock_mhz = {} is below 1 MHz", sm.base_clock_mhz.value));
  }
  // The L2 model tracks regions of 128 sectors; every partition must hold at least one.
  const std::int64_t region_bytes =
      static_cast<std::int64_t>(l2.sector_bytes.value) * L2Cache::kSectorsPerRegion;
  if (l2.partitions.value > 0 && l2.size_bytes.value / l2.partitions.value < region_bytes) {
    reader.note_at(
        "l2.size_bytes",
        fmt::format("l2.size_bytes = {} over l2.partitions = {} leaves less than one region of "
                    "{} sectors x {} bytes = {} bytes per partition",
                    l2.size_bytes.value, l2.partitions.value, L2Cache::kSectorsPerRegion,
                    l2.sector_bytes.value, region_bytes));
  }

  // Cross-field consistency.
  if (sm.base_clock_mhz.value > sm.boost_clock_mhz.value) {
    reader.note_at("sm.base_clock_mhz",
                   fmt::format("sm.base_clock_mhz = {} exceeds sm.boost_clock_mhz = {}",
                               sm.base_clock_mhz.value, sm.boost_clock_mhz.value));
  }
  if (sm.smem_per_cta_max_bytes.value > sm.smem_per_sm_bytes.value) {
    reader.note_at("sm.smem_per_cta_max_bytes",
                   fmt::format("sm.smem_per_cta_max_bytes = {} exceeds sm.smem_per_sm_bytes = {}",
                               sm.smem_per_cta_max_bytes.value, sm.smem_per_sm_bytes.value));
  }
  if (sm.smem_per_cta_max_bytes.value + sm.smem_reserved_per_cta_bytes.value >
      sm.smem_per_sm_bytes.value) {
    reader.note_at(
        "sm.smem_reserved_per_cta_bytes",
        fmt::format("sm.smem_per_cta_max_bytes + sm.smem_reserved_per_cta_bytes = {} + {} = {} "
                    "exceeds sm.smem_per_sm_bytes = {}",
                    sm.smem_per_cta_max_bytes.value, sm.smem_reserved_per_cta_bytes.value,
                    sm.smem_per_cta_max_bytes.value + sm.smem_reserved_per_cta_bytes.value,
                    sm.smem_per_sm_bytes.value));
  }
  if (sm.max_registers_per_thread.value > sm.registers_per_sm.value) {
    reader.note_at("sm.max_registers_per_thread",
                   fmt::format("sm.max_registers_per_thread = {} exceeds sm.registers_per_sm = {}",
                               sm.max_registers_per_thread.value, sm.registers_per_sm.value));
  }
  // A maximum of 0 says the GPU has no register reallocation; the other keys are then unused.
  if (sm.setmaxnreg_max_registers.value > 0 &&
      sm.setmaxnreg_min_registers.value > sm.setmaxnreg_max_registers.value) {
    reader.note_at(
        "sm.setmaxnreg_min_registers",
        fmt::format("sm.setmaxnreg_min_registers = {} exceeds "
                    "sm.setmaxnreg_max_registers = {}",
                    sm.setmaxnreg_min_registers.value, sm.setmaxnreg_max_registers.value));
  }
  if (sm.max_ctas_per_sm.value > sm.max_threads_per_sm.value) {
    reader.note_at("sm.max_ctas_per_sm",
                   fmt::format("sm.max_ctas_per_sm = {} exceeds sm.max_threads_per_sm = {} (a CTA "
                               "has at least one thread)",
                               sm.max_ctas_per_sm.value, sm.max_threads_per_sm.value));
  }
  // (A size that is not positive was noted above; it divides nothing.)
  if (l2.sector_bytes.value > 0 && l2.line_bytes.value % l2.sector_bytes.value != 0) {
    reader.note_at("l2.sector_bytes",
                   fmt::format("l2.sector_bytes = {} does not divide l2.line_bytes = {}",
                               l2.sector_bytes.value, l2.line_bytes.value));
  }
  if (l2.line_bytes.value > 0 && l2.size_bytes.value % l2.line_bytes.value != 0) {
    reader.note_at("l2.line_bytes",
                   fmt::format("l2.line_bytes = {} does not divide l2.size_bytes = {}",
                               l2.line_bytes.value, l2.size_bytes.value));
  }
  // The shares of a whole: hbm.achievable_fraction, l2.max_dirty_fraction.
  for_each_section(p, [&](const char* section, const auto& fields, const auto& spec) {
    check_keys(reader, section, fields, spec, Check::fraction);
  });
  // It scales hbm.bandwidth_gbps, so it gets a floor as the rates do (a million times below
  // today's GPUs' 0.9): 1e-300 made times of 1e295 s, as hbm.bandwidth_gbps = 1e-300 did before
  // its range check.
  if (hbm.achievable_fraction.value > 0 && hbm.achievable_fraction.value < 1e-6) {
    reader.note_at("hbm.achievable_fraction",
                   fmt::format("hbm.achievable_fraction = {} is below 1e-06 (no GPU is that far "
                               "from today's)",
                               hbm.achievable_fraction.value));
  }

  if (const PowerSpec& w = p.power; w.present) {
    check_each_key(reader, "power", profile_yaml::kPowerFields, w);
    if (w.static_w.value >= w.limit_w.value) {
      reader.note_at("power.static_w",
                     fmt::format("power.static_w = {} must be below power.limit_w = {}",
                                 w.static_w.value, w.limit_w.value));
    }
  }
}

}  // namespace iosim
