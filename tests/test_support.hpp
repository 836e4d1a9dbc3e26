#pragma once
// Shared helpers of the doctest suites: profiles, request builders, a seeded shape generator.
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "api/iosim.hpp"

namespace iosim::test {

/// A built-in profile, loaded once per process.
const HardwareProfile& profile(const std::string& name = "h100-sxm5-80gb");

/// A request with the given shape; L2 on unless told otherwise.
/// A tiling value as the tests write it: 0 means "left out" (the algorithm's default).
template <typename T>
std::optional<T> given(T v) {
  return v != 0 ? std::optional<T>(v) : std::nullopt;
}

/// A tiling request that sets only the block sizes.
inline TilingRequest blocks(std::int64_t block_q, std::int64_t block_kv) {
  TilingRequest t;
  t.block_q = block_q;
  t.block_kv = block_kv;
  return t;
}

/// Requires a two-level run (--l2 off) of `r` to move exactly its closed form's HBM bytes; on a
/// failure doctest prints the request's shape and the resolved blocks.
void require_closed_form(const RunRequest& r, const Report& rep);

RunRequest request(const std::string& algo, std::int64_t b, std::int64_t h, std::int64_t n,
                   std::int64_t d, std::int64_t block_q = 0, std::int64_t block_kv = 0);

/// Random but reproducible problem shapes for property tests.
struct ShapeGen {
  std::mt19937_64 rng;
  explicit ShapeGen(std::uint64_t seed) : rng(seed) {}
  std::int64_t pick(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  }
  template <typename T, std::size_t K>
  T pick(const T (&options)[K]) {
    return options[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(K) - 1))];
  }
  bool coin() { return pick(0, 1) == 1; }
};

inline std::uint64_t hbm_total(const Report& r) {
  return r.engine.total.hbm.read_total() + r.engine.total.hbm.write_total();
}

}  // namespace iosim::test
