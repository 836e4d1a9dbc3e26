#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "algorithms/algorithm.hpp"
#include "algorithms/schedules.hpp"
#include "sim/errors.hpp"
#include "sim/suggest.hpp"

namespace iosim {

void Registry::add(std::unique_ptr<Algorithm> algorithm) {
  ensure(algorithm != nullptr, "null algorithm registered");
  const std::string n = algorithm->name();
  for (const auto& a : algorithms_) ensure(a->name() != n, "algorithm registered twice: {}", n);
  algorithms_.push_back(std::move(algorithm));
}

const Algorithm& Registry::get(const std::string& name) const {
  for (const auto& a : algorithms_) {
    if (a->name() == name) return *a;
  }
  const std::vector<std::string> valid = names();
  throw ConfigError(fmt::format("unknown algorithm '{}'; valid algorithms: {}{}", name,
                                fmt::join(valid, ", "), did_you_mean(name, valid)));
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const auto& a : algorithms_) out.push_back(a->name());
  return out;
}

void register_builtin_algorithms(Registry& registry) {
  registry.add(make_standard_algorithm());
  registry.add(make_flash1_algorithm());
  registry.add(make_flash2_algorithm());
  registry.add(make_block_sparse_algorithm());
  registry.add(make_flash_decoding_algorithm());
  registry.add(make_paged_algorithm());
}

const Registry& builtin_registry() {
  static const Registry registry = [] {
    Registry r;
    register_builtin_algorithms(r);
    return r;
  }();
  return registry;
}

std::int64_t sram_bytes(const HardwareProfile& profile) {
  return profile.sm.smem_per_cta_max_bytes.value;
}

}  // namespace iosim
