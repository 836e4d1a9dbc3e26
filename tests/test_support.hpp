#pragma once
// Shared helpers of the doctest suites: profiles, request builders, a seeded shape generator.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "api/iosim.hpp"
#include "sim/schedule/schedule.hpp"  // WholeCtaSchedule, for CtaOps

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

/// True in a build under AddressSanitizer (scripts/sanitize.sh's): clang's __has_feature, g++'s
/// __SANITIZE_ADDRESS__.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

/// How many random shapes a long property (doctest suite "long", ctest entry unit_long) draws:
/// all `n` in Release, a tenth of them (at least 1) under the sanitizers. unit_long runs in both
/// of CI's builds: the property's statistics come from the Release run, the memory and
/// undefined-behaviour checks of the same code from the sanitized one, which is 10-30x slower.
inline int cases(int n) {
  return kSanitized ? std::max(1, n / 10) : n;
}

/// For a long case's fixed corpus: whether its `i`-th entry runs (every one in Release, every
/// tenth under the sanitizers, the first included).
inline bool kept(int i) {
  return !kSanitized || i % 10 == 0;
}

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

/// Every count of `a` equals `e`'s: bytes per level and direction, FLOPs per unit, dirty at end
/// (what a method declared exact, as extrapolation off or a replay at the recorded clock, keeps).
inline bool identical(const Counters& a, const Counters& e) {
  return a.hbm.read_bytes == e.hbm.read_bytes && a.hbm.write_bytes == e.hbm.write_bytes &&
         a.l2.read_bytes == e.l2.read_bytes && a.l2.write_bytes == e.l2.write_bytes &&
         a.smem_read_bytes == e.smem_read_bytes && a.smem_write_bytes == e.smem_write_bytes &&
         a.tensor_flops == e.tensor_flops && a.fp32_flops == e.fp32_flops &&
         a.sfu_ops == e.sfu_ops && a.int32_ops == e.int32_ops &&
         a.l2_dirty_at_end_bytes == e.l2_dirty_at_end_bytes;
}

/// |actual / expected - 1| <= rel. Use it for every time, rate or ratio: doctest's Approx scales
/// its epsilon by max(1, |a|, |b|), so on values far below 1 (seconds) it is an absolute tolerance
/// that passes predictions many times off. An expected value of 0 never matches.
inline bool rel_close(double actual, double expected, double rel) {
  return expected != 0.0 && std::abs(actual / expected - 1.0) <= rel;
}

/// The bytes a pass must move at least once, from the tensors' shapes alone (written apart from
/// io_formulas.cpp's compulsory bytes so that the tests hold one against the other): a forward
/// reads Q, K, V and writes O (O in its own element size, K and V in their stored one); a
/// backward reads Q, K, V, dO and writes dQ, dK, dV. Dense problems only (block-sparse may skip
/// rows no block touches). A latent cache (--latent-dim) is one tensor, K, whose first
/// latent_dim columns are V; O is B*H*N rows of latent_dim.
inline std::uint64_t dense_compulsory_bytes(const AttentionProblem& p) {
  const std::uint64_t eb = static_cast<std::uint64_t>(p.elem_bytes());
  const std::uint64_t q = static_cast<std::uint64_t>(p.batch * p.heads * p.seq * p.head_dim);
  const std::uint64_t kv =
      static_cast<std::uint64_t>(p.batch * p.kv_head_count() * p.seq_kv * p.head_dim);
  const std::uint64_t kv_eb = static_cast<std::uint64_t>(p.kv_elem_bytes());  // --kv-dtype
  const std::uint64_t o = static_cast<std::uint64_t>(
      p.batch * p.heads * p.seq * (p.latent_dim > 0 ? p.latent_dim : p.head_dim));
  const std::uint64_t kv_tensors = p.latent_dim > 0 ? 1 : 2;
  std::uint64_t bytes = 0;
  if (runs_forward(p.pass))
    bytes += eb * q + kv_eb * kv_tensors * kv + static_cast<std::uint64_t>(p.out_elem_bytes()) * o;
  if (runs_backward(p.pass)) bytes += eb * (2 * q + 2 * kv) + eb * (q + 2 * kv);  // in, out
  return bytes;
}

/// A committed measured file (FORMAT.md), by its path under cuda_validate/measurements/.
inline nlohmann::json measured_document(
    const std::string& file = "h100-sxm5-80gb/measurements_2026-11-22.json") {
  std::ifstream in(std::string(IOSIM_REPO_DIR) + "/cuda_validate/measurements/" + file);
  return nlohmann::json::parse(in);
}

/// The case of `doc` with id `id`, or null.
inline nlohmann::json measured_case(const nlohmann::json& doc, const std::string& id) {
  for (const nlohmann::json& c : doc.at("cases"))
    if (c.at("id") == id) return c;
  return nullptr;
}

/// The ConfigError message simulate() refuses `r` with on the default profile, or "accepted".
inline std::string refusal(const RunRequest& r) {
  try {
    (void)simulate(profile(), r);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

inline std::uint64_t hbm_total(const Report& r) {
  return r.engine.total.hbm.read_total() + r.engine.total.hbm.write_total();
}

// A kernel whose every CTA runs `ops`, launched as `spec` says.
class CtaOps final : public WholeCtaSchedule {
 public:
  CtaOps(std::vector<TileOp> ops, KernelSpec spec) : ops_(std::move(ops)), spec_(std::move(spec)) {}
  std::vector<TensorDecl> tensors() const override { return {{TensorId::Q, 1, 64, 64, 2}}; }
  std::vector<KernelSpec> kernels() const override { return {spec_}; }
  void emit_whole_cta(std::size_t, std::int64_t, std::vector<TileOp>& out) const override {
    out.insert(out.end(), ops_.begin(), ops_.end());
  }

 private:
  std::vector<TileOp> ops_;
  KernelSpec spec_;
};

}  // namespace iosim::test
