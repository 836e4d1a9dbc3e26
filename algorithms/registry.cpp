#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "algorithms/algorithm.hpp"
#include "algorithms/dataflow.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/suggest.hpp"

namespace iosim {

// The dataflows, one file each (with their schedules). Adding one: write its entry in its file,
// add its line here; its name is then a description's to use (the schema's enum and
// docs/kernels.md name it too: tests/kernel_description_test.cpp holds them to this table).
Dataflow unfused_forward_dataflow();          // standard.cpp
Dataflow kv_stationary_dataflow();            // flash1.cpp
Dataflow query_stationary_dataflow();         // query_stationary.cpp
Dataflow split_kv_dataflow();                 // flash_decoding.cpp
Dataflow paged_dataflow();                    // paged.cpp
Dataflow unfused_backward_dataflow();         // standard.cpp
Dataflow kv_stationary_dq_in_hbm_dataflow();  // flash1.cpp
Dataflow kv_stationary_atomic_dq_dataflow();  // flash2.cpp
Dataflow kv_stationary_reduce_dq_dataflow();  // flash3.cpp
Dataflow two_pass_dataflow();                 // two_pass_backward.cpp

const std::vector<Dataflow>& dataflows() {
  static const std::vector<Dataflow> table = [] {
    std::vector<Dataflow> t;
    for (auto make : {unfused_forward_dataflow, kv_stationary_dataflow, query_stationary_dataflow,
                      split_kv_dataflow, paged_dataflow, unfused_backward_dataflow,
                      kv_stationary_dq_in_hbm_dataflow, kv_stationary_atomic_dq_dataflow,
                      kv_stationary_reduce_dq_dataflow, two_pass_dataflow}) {
      t.push_back(make());
    }
    return t;
  }();
  return table;
}

namespace {

std::vector<const Dataflow*> dataflows_of(Pass pass) {
  std::vector<const Dataflow*> out;
  for (const Dataflow& d : dataflows()) {
    if (d.pass == pass) out.push_back(&d);
  }
  return out;
}

}  // namespace

const std::vector<const Dataflow*>& forward_dataflows() {
  static const std::vector<const Dataflow*> list = dataflows_of(Pass::fwd);
  return list;
}

const std::vector<const Dataflow*>& backward_dataflows() {
  static const std::vector<const Dataflow*> list = dataflows_of(Pass::bwd);
  return list;
}

const Dataflow* find_dataflow(const std::vector<const Dataflow*>& list, const std::string& name) {
  for (const Dataflow* d : list) {
    if (name == d->name) return d;
  }
  return nullptr;
}

// The built-in algorithms are the presets, descriptions of dataflows (kernel_presets()), planned
// as any description is.
void register_builtin_algorithms(Registry& registry) {
  for (const KernelDescription& preset : kernel_presets()) {
    registry.add(described_algorithm(preset));
  }
}

void Registry::add(Algorithm algorithm) {
  ensure(!algorithm.name.empty() && algorithm.plan && algorithm.closed_form,
         "algorithm '{}' registered without a name, a plan or a closed form", algorithm.name);
  for (const auto& a : algorithms_) {
    ensure(a.name != algorithm.name, "algorithm registered twice: {}", algorithm.name);
  }
  algorithms_.push_back(std::move(algorithm));
}

const Algorithm& Registry::get(const std::string& name) const {
  for (const auto& a : algorithms_) {
    if (a.name == name) return a;
  }
  const std::vector<std::string> valid = names();
  throw ConfigError(fmt::format("unknown algorithm '{}'; valid algorithms: {}{}", name,
                                fmt::join(valid, ", "), did_you_mean(name, valid)));
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const auto& a : algorithms_) out.push_back(a.name);
  return out;
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

// What the simulator spends its time on is L2 lookups: the tiled schedules make a few dozen per
// tile they visit. Only the order of a sweep's points and its progress bar depend on this.
double tiled_estimated_work(const AttentionProblem& p, const TilingRequest& requested) {
  const auto at_least_1 = [](std::int64_t v) {
    return static_cast<double>(std::max<std::int64_t>(v, 1));
  };
  const double bh = at_least_1(p.bh()), n = at_least_1(p.seq);
  const std::int64_t block_kv = requested.block_kv.value_or(128);
  // A sliding window's rows each visit the blocks of about W keys (2 W without --causal), and
  // one block more at each edge.
  const std::int64_t window_keys = (p.causal ? 1 : 2) * p.window + 2 * block_kv;
  const double n_kv = at_least_1(p.window > 0 ? std::min(p.seq_kv, window_keys) : p.seq_kv);
  const std::int64_t block_q = requested.block_q.value_or(128);
  const double passes = p.pass == Pass::fwd ? 1.0 : p.pass == Pass::bwd ? 3.0 : 4.0;
  return passes * 20.0 * bh * std::ceil(n / static_cast<double>(block_q)) *
         std::ceil(n_kv / static_cast<double>(block_kv));
}

double estimated_work(const Algorithm& algorithm, const AttentionProblem& p,
                      const TilingRequest& requested) {
  return algorithm.estimated_work ? algorithm.estimated_work(p, requested)
                                  : tiled_estimated_work(p, requested);
}

namespace {

// The names of the algorithms in `registry` that have `capability`.
std::vector<std::string> names_with(const Registry& registry, bool Capabilities::*capability) {
  std::vector<std::string> out;
  for (const std::string& n : registry.names()) {
    if (registry.get(n).capabilities.*capability) out.push_back(n);
  }
  return out;
}

// "--splits applies to --algo flash-decoding and paged, not 'flash2'".
[[noreturn]] void not_applicable(const std::string& flags, const Algorithm& algorithm,
                                 const Registry& registry, bool Capabilities::*capability) {
  throw ConfigError(fmt::format("{} {} to --algo {}, not '{}'", flags,
                                flags.find(" and ") == std::string::npos ? "applies" : "apply",
                                fmt::join(names_with(registry, capability), " and "),
                                algorithm.name));
}

// --kv-dtype beside an algorithm that reads K/V in --dtype's type: the built-in algorithms and
// the dataflows (a kernel description's dataflow.forward) that convert on chip.
[[noreturn]] void kv_dtype_not_applicable(const AttentionProblem& p, const Algorithm& algorithm,
                                          const Registry& registry) {
  std::vector<std::string> flows;
  for (const Dataflow* d : forward_dataflows()) {
    if (d->capabilities.kv_dtype) flows.push_back(d->name);
  }
  throw ConfigError(fmt::format(
      "--kv-dtype {} (K and V stored in another type than --dtype {}) applies to --algo {} (a "
      "kernel description's dataflow.forward {}), not '{}': only a decode kernel converts its "
      "K/V tiles on chip; leave --kv-dtype out",
      dtype_name(p.kv_type()), dtype_name(p.dtype),
      fmt::join(names_with(registry, &Capabilities::kv_dtype), " and "), fmt::join(flows, " or "),
      algorithm.name));
}

// --latent-dim beside an algorithm whose forward loads a V tensor of its own: the built-in
// algorithms and the dataflows that read V from the latent K cache.
[[noreturn]] void latent_not_applicable(const AttentionProblem& p, const Algorithm& algorithm,
                                        const Registry& registry) {
  std::vector<std::string> flows;
  for (const Dataflow* d : forward_dataflows()) {
    if (d->capabilities.latent) flows.push_back(d->name);
  }
  throw ConfigError(fmt::format(
      "--latent-dim {} (multi-head latent attention: V is the first {} columns of a latent K "
      "cache) applies to --algo {} (a kernel description's dataflow.forward {}), not '{}': only "
      "a split-KV decode kernel reads a latent cache here; leave --latent-dim out",
      p.latent_dim, p.latent_dim, fmt::join(names_with(registry, &Capabilities::latent), " and "),
      fmt::join(flows, " or "), algorithm.name));
}

}  // namespace

// A CTA runs whole warps: --threads 100 launched 4 warps while the schedules counted 3 (and the
// registers of 100 threads), so what ran was neither.
void check_whole_warps(int threads) {
  if (threads % 32 == 0) return;
  const int below = threads / 32 * 32;
  throw ConfigError(fmt::format("--threads {}: a CTA runs whole warps of 32 threads; use {}",
                                threads,
                                below > 0 ? fmt::format("{} or {}", below, below + 32) : "32"));
}

void check_applicable(const Algorithm& algorithm, const AttentionProblem& p,
                      const TilingRequest& requested, const Registry& registry) {
  const Capabilities& c = algorithm.capabilities;
  const auto positive = [](const auto& v) { return !v || *v > 0; };
  if (!positive(requested.block_q) || !positive(requested.block_kv) ||
      !positive(requested.threads) || !positive(requested.pipeline_stages) ||
      !positive(requested.registers_per_thread)) {
    throw ConfigError("block sizes, threads and pipeline stages must be positive");
  }
  if (requested.threads) check_whole_warps(*requested.threads);
  if (p.pattern && !c.block_pattern) {
    not_applicable("--pattern", algorithm, registry, &Capabilities::block_pattern);
  }
  if (requested.splits && *requested.splits < 1) {
    throw ConfigError(fmt::format("--splits {} must be positive", *requested.splits));
  }
  if (requested.splits && !c.splits) {
    not_applicable("--splits", algorithm, registry, &Capabilities::splits);
  }
  if (p.dtype == Dtype::fp8 && !c.fp8) {
    not_applicable("--dtype fp8", algorithm, registry, &Capabilities::fp8);
  }
  if (p.dtype == Dtype::fp8 && p.pass != Pass::fwd) {
    throw ConfigError(fmt::format(
        "--dtype fp8 with --pass {}: fp8 is modelled for the forward only", pass_name(p.pass)));
  }
  if (p.dtype == Dtype::fp8 && p.dropout > 0) {
    throw ConfigError("--dtype fp8 with --dropout: FlashAttention-3's FP8 forward has no dropout");
  }
  if (p.kv_converted() && !c.kv_dtype) kv_dtype_not_applicable(p, algorithm, registry);
  if (p.kv_converted() && p.pass != Pass::fwd) {
    throw ConfigError(fmt::format(
        "--kv-dtype {} with --pass {}: a K/V cache in another type is read by a decode forward "
        "only; use --pass fwd",
        dtype_name(p.kv_type()), pass_name(p.pass)));
  }
  if (p.latent() && !c.latent) latent_not_applicable(p, algorithm, registry);
  if (p.latent() && p.pass != Pass::fwd) {
    throw ConfigError(fmt::format(
        "--latent-dim {} with --pass {}: a latent K/V cache is read by a decode forward only "
        "(multi-head latent attention's absorbed form); use --pass fwd",
        p.latent_dim, pass_name(p.pass)));
  }
  if (requested.backward_block_q || requested.backward_block_kv) {
    if (!c.flags_tile_forward) {
      not_applicable("--backward-block-q and --backward-block-kv", algorithm, registry,
                     &Capabilities::flags_tile_forward);
    }
    if (p.pass != Pass::fwdbwd) {
      throw ConfigError(fmt::format(
          "--backward-block-q and --backward-block-kv tile the backward of --pass fwdbwd; with "
          "--pass {} use --block-q and --block-kv",
          pass_name(p.pass)));
    }
    if (!positive(requested.backward_block_q) || !positive(requested.backward_block_kv)) {
      throw ConfigError("block sizes, threads and pipeline stages must be positive");
    }
  }
  if (p.pack_gqa == GqaPacking::on && !c.packs_gqa) {
    not_applicable("--pack-gqa on", algorithm, registry, &Capabilities::packs_gqa);
  }
  if (p.pack_gqa == GqaPacking::on && p.pass == Pass::bwd) {
    throw ConfigError("--pack-gqa on packs a forward kernel's query group; --pass bwd has none");
  }
  if (requested.warpgroups && !c.warpgroups) {
    not_applicable("--warpgroups", algorithm, registry, &Capabilities::warpgroups);
  }
  if (p.pass != Pass::fwd && !c.backward) {
    throw ConfigError(fmt::format("--pass {}: {} has only a forward pass (with a backward: {})",
                                  pass_name(p.pass), algorithm.name,
                                  fmt::join(names_with(registry, &Capabilities::backward), ", ")));
  }
  if ((p.page_tokens > 0 || p.block_table) && !c.pages) {
    not_applicable("--page-tokens and --block-table", algorithm, registry, &Capabilities::pages);
  }
  if (p.window > 0 && !c.window) {
    not_applicable("--window", algorithm, registry, &Capabilities::window);
  }
  if (p.window > 0 && p.pass != Pass::fwd && !c.window_backward) {
    throw ConfigError(fmt::format(
        "--window with --pass {}: {}'s backward does not model a sliding window (with one: {}); "
        "use --pass fwd",
        pass_name(p.pass), algorithm.name,
        fmt::join(names_with(registry, &Capabilities::window_backward), ", ")));
  }
}

}  // namespace iosim
