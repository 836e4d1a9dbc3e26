#pragma once
// The schema of a kernel description (algorithms/kernel_description.hpp's KernelDescription, a
// YAML file of `iosim run --kernel FILE`, a Python dict): each key declared once, in one row: its
// section, the kind of value it takes (text, a dataflow of the registry, an integer and its
// bounds, a boolean, one of an enum's names), the member it fills (whose type says the enum), one
// line of doc, the value the writer leaves out, and the checks across keys in words. Everything
// else reads the rows: the parser's allowed keys and its reading and range checks
// (kernel_description.cpp), the writer (`iosim kernels --show`, the run's "kernel_description"),
// docs/kernels.md's key table (`iosim kernels --keys --format md`, checked by
// scripts/readme_tables.sh) and schemas/kernel.schema.json (`iosim kernels --schema`, checked by
// tests/schema_test.sh), both written in kernel_docs.cpp, as model_schema.hpp's rows are for
// model files.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "algorithms/kernel_description.hpp"

namespace iosim::kernel_yaml {

// An enum's names in its order: the value read is the enum at the name's position.
inline constexpr std::array<const char*, 3> kMmaNames{"mma_sync", "wgmma_ss", "wgmma_rs"};
inline constexpr std::array<const char*, 3> kLoadNames{"plain", "cp_async", "tma"};
inline constexpr std::array<const char*, 3> kWarpRolesNames{"uniform", "producer_consumer",
                                                            "pingpong"};
inline constexpr std::array<const char*, 2> kMmaWaitNames{"step", "next_step"};
inline constexpr std::array<const char*, 2> kKvOrderNames{"ascending", "descending"};

// The names are positional: an enumerator added or moved must move its name too.
static_assert(int(MmaFamily::wgmma_rs) == 2 && int(LoadPath::tma) == 2 &&
              int(WarpRoles::pingpong) == 2 && int(MmaWait::next_step) == 1 &&
              int(KvOrder::descending) == 1);

inline std::span<const char* const> enum_names(MmaFamily) {
  return kMmaNames;
}
inline std::span<const char* const> enum_names(LoadPath) {
  return kLoadNames;
}
inline std::span<const char* const> enum_names(WarpRoles) {
  return kWarpRolesNames;
}
inline std::span<const char* const> enum_names(MmaWait) {
  return kMmaWaitNames;
}
inline std::span<const char* const> enum_names(KvOrder) {
  return kKvOrderNames;
}

// The kind of value a key takes. `text` is a name of 1 to 200 characters; `forward` and
// `backward` a dataflow of the registry's lists (algorithms/registry.cpp), checked against them
// with their own message; `choice` one of the member's enum's names.
enum class Kind { text, forward, backward, integer, boolean, choice };

// The member a key fills: of the description, of its tiles and launch facts (TilingRequest) or of
// its mechanisms. A std::optional member is unset where the description leaves the key out.
using Member =
    std::variant<std::string KernelDescription::*, bool KernelDescription::*,
                 KvOrder KernelDescription::*, std::optional<std::int64_t> KernelDescription::*,
                 std::optional<std::int64_t> TilingRequest::*, std::optional<int> TilingRequest::*,
                 std::optional<MmaFamily> Mechanisms::*, std::optional<LoadPath> Mechanisms::*,
                 std::optional<WarpRoles> Mechanisms::*, std::optional<MmaWait> Mechanisms::*,
                 std::optional<bool> Mechanisms::*>;

// The checks across keys that the parser writes out (kernel_description.cpp,
// check_across()), each named for what it needs; the row's `across` says it in words.
enum class Across {
  none,
  // After dataflow.block_mask: the section names a dataflow (forward, backward or both), and a
  // block mask only with a forward that takes one (query_stationary).
  block_mask,
  kv_order,     // only with a forward that takes an order (query_stationary)
  score_chunk,  // only with a backward that chunks its scores (two_pass); after the section
  pass_steps,   // only with a backward that steps its passes (two_pass); after the section
  whole_warps,  // a multiple of 32
  spills,       // only a forward that models spills (query_stationary), without a backward
};

// The checks of `a` in words, for the docs' table and the schema's descriptions (nullptr: none).
inline const char* across_text(Across a) {
  switch (a) {
    case Across::none:
      return nullptr;
    case Across::block_mask:
      return "true: with the query_stationary forward only";
    case Across::kv_order:
      return "with the query_stationary forward only";
    case Across::score_chunk:
    case Across::pass_steps:
      return "with the two_pass backward only";
    case Across::whole_warps:
      return "a multiple of 32";
    case Across::spills:
      return "above 0: with the query_stationary forward alone (no backward) only";
  }
  return nullptr;
}

// A section of the description: a map of its rows' keys under a top-level key (rows of section ""
// are top-level keys themselves, as `name`). `required`: the
// words of the problem when the section is left out (nullptr: optional). `comment`: the line the
// YAML writer puts after its key. `always_written`: the writer writes it even empty.
// `schema_extra`: what the JSON Schema says of it beyond its keys (JSON text of further keywords).
struct Section {
  const char* name;
  const char* required;
  const char* comment;
  const char* doc;
  bool always_written = false;
  const char* schema_extra = nullptr;
};

inline constexpr std::array<Section, 4> kSections{{
    {"dataflow", "a map with forward and/or backward",
     "what each CTA does to which tiles: decides the bytes",
     "what each CTA does to which tiles in what order: decides the bytes; names forward, backward "
     "or both",
     true, R"({"minProperties": 1})"},
    {"tiles", nullptr, "left out: the dataflow's defaults for this problem and GPU",
     "the tiles; a key left out takes the dataflow's default for the problem and GPU, a CLI flag "
     "replaces one given"},
    {"mechanisms", nullptr, "how the hardware is driven: with the dataflow, decides the time",
     "how the hardware is driven; a key left out takes the dataflow's own (its kernels')"},
    {"launch", nullptr, "facts from compiling the kernel; left out: iosim's estimates",
     "facts from compiling the kernel (`ptxas -v`, the launch); they replace iosim's estimates "
     "and so set occupancy"},
}};

// One row. `lo`, `hi`: an integer's range. `required`: the words of the problem when the key is
// left out (nullptr: optional). `omitted`: the value, as the YAML writes it, that the writer
// leaves out (the default; nullptr: every value set is written).
struct Key {
  const char* section;  // "" for the top level
  const char* key;
  Kind kind;
  Member member;
  const char* doc;
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  const char* required = nullptr;
  const char* omitted = nullptr;
  Across across = Across::none;
};

inline constexpr std::int64_t kMaxBlock = 1 << 16;

// The order is the order keys are read and checked in (and so the order of a description's
// problems), listed in the messages, written by the writer, the schema and the docs' table.
inline const std::array<Key, 23> kKeys{{
    {"", "name", Kind::text, &KernelDescription::name,
     "shown as the run's algorithm and in the main kernel's name (`<name>_fwd`)", 0, 0,
     "the kernel's name"},
    {"dataflow", "forward", Kind::forward, &KernelDescription::forward,
     "the forward's loop order (below); left out: `--pass fwd` is refused"},
    {"dataflow", "backward", Kind::backward, &KernelDescription::backward,
     "the backward's; left out: `--pass bwd` and `fwdbwd` are refused"},
    {"dataflow", "block_mask", Kind::boolean, &KernelDescription::block_mask,
     "only a block mask's nonzero blocks (`--pattern`)", 0, 0, nullptr, "false",
     Across::block_mask},
    {"dataflow", "kv_order", Kind::choice, &KernelDescription::kv_order,
     "the order a CTA visits its K/V blocks (below)", 0, 0, nullptr, "ascending", Across::kv_order},
    {"tiles", "block_q", Kind::integer, &TilingRequest::block_q,
     "Br: query rows of a tile; left out: the dataflow's default for the problem "
     "(FlashAttention-3's table for warp-specialized kernels, FlashAttention-2's otherwise)",
     1, kMaxBlock},
    {"tiles", "block_kv", Kind::integer, &TilingRequest::block_kv,
     "Bc: key rows of a tile; left out: the dataflow's default, as `block_q`", 1, kMaxBlock},
    {"tiles", "stages", Kind::integer, &TilingRequest::pipeline_stages,
     "shared-memory buffers of the streamed operand (1 with `plain` loads)", 1, 64},
    {"tiles", "splits", Kind::integer, &TilingRequest::splits,
     "split_kv, paged: K/V chunks per query tile", 1, 1 << 20},
    {"tiles", "score_chunk", Kind::integer, &TilingRequest::score_chunk,
     "columns of a score tile a warp holds in registers at a time (the kernel's "
     "register budget decides it); each chunk re-reads the warp's rows of the row operand from "
     "shared memory. Left out: the whole tile at once",
     1, kMaxBlock, nullptr, nullptr, Across::score_chunk},
    {"tiles", "query_step", Kind::integer, &TilingRequest::query_step,
     "the query rows pass 1 streams a step past the key block of `block_kv` rows it "
     "keeps. Left out: `block_q`",
     1, kMaxBlock, nullptr, nullptr, Across::pass_steps},
    {"tiles", "key_step", Kind::integer, &TilingRequest::key_step,
     "the key rows pass 2 streams a step past the query block of `block_q` rows it "
     "keeps. Left out: `block_kv`",
     1, kMaxBlock, nullptr, nullptr, Across::pass_steps},
    {"tiles", "backward_block_q", Kind::integer, &TilingRequest::backward_block_q,
     "a description with both passes: the backward's `block_q`", 1, kMaxBlock},
    {"tiles", "backward_block_kv", Kind::integer, &TilingRequest::backward_block_kv,
     "a description with both passes: the backward's `block_kv`", 1, kMaxBlock},
    {"mechanisms", "mma", Kind::choice, &Mechanisms::mma,
     "warp-level `mma.sync`, or Hopper's `wgmma` with the A operand from shared memory or "
     "registers"},
    {"mechanisms", "load", Kind::choice, &Mechanisms::load, "how tiles reach shared memory"},
    {"mechanisms", "warp_roles", Kind::choice, &Mechanisms::warp_roles,
     "every warp loads and computes; a producer warpgroup copies while consumer warpgroups "
     "compute; consumers that also take turns on the tensor cores"},
    {"mechanisms", "persistent", Kind::boolean, &Mechanisms::persistent,
     "a persistent grid with a tile scheduler"},
    {"mechanisms", "mma_wait", Kind::choice, &Mechanisms::mma_wait,
     "when a step waits for the last `wgmma` it issued: in the step, or in the next one (Triton's "
     "pipelined `wgmma`), which holds a K/V buffer a step longer (below)",
     0, 0, nullptr, "step"},
    {"launch", "threads", Kind::integer, &TilingRequest::threads,
     "threads per CTA, as your launch says; replaces iosim's estimate and so sets occupancy", 32,
     1024, nullptr, nullptr, Across::whole_warps},
    {"launch", "registers_per_thread", Kind::integer, &TilingRequest::registers_per_thread,
     "registers per thread, as `ptxas -v` says; replaces iosim's estimate and so sets occupancy",
     16, 255},
    {"launch", "local_bytes_per_thread", Kind::integer, &TilingRequest::local_bytes_per_thread,
     "local memory per thread (`cudaFuncGetAttributes`' `localSizeBytes`, "
     "`ptxas -v`'s spill stores; Triton's `n_spills` times 4): spilled registers. The warps store "
     "and reload them every step through the L1, and a spilling kernel's `wgmma` are serialized "
     "(ptxas warning C7512): each waits for its own result. Left out: 0",
     0, 512 * 1024, nullptr, nullptr, Across::spills},
    {"launch", "smem_bytes_per_cta", Kind::integer, &KernelDescription::smem_bytes_per_cta,
     "shared memory per CTA; replaces iosim's estimate and so sets occupancy. The static bytes "
     "(`ptxas -v`'s `smem`) plus the dynamic bytes of the launch: a description "
     "of the dynamic bytes alone can let one CTA too many fit on an SM",
     0, 1 << 30},
}};

// The type a member holds a value of: T of a std::optional<T>.
template <typename T>
struct Unwrap {
  using type = T;
};
template <typename T>
struct Unwrap<std::optional<T>> {
  using type = T;
};

template <typename C, typename T>
std::span<const char* const> member_choices(T C::*) {
  using E = typename Unwrap<T>::type;
  if constexpr (std::is_enum_v<E>) {
    return enum_names(E{});
  } else {
    return {};
  }
}

// The names a choice key's value must be one of (its member's enum's); empty for any other key.
inline std::span<const char* const> choices(const Key& k) {
  return std::visit([](auto member) { return member_choices(member); }, k.member);
}

}  // namespace iosim::kernel_yaml

namespace iosim {

/// The keys of a kernel description, from their rows: a line of values and checks and one of doc
/// each, or, `markdown`, docs/kernels.md's table (`iosim kernels --keys [--format md]`).
std::string kernel_key_table(bool markdown);

/// The mechanisms section's keys and the values each takes, one line (`iosim kernels`'s summary):
/// "mechanisms: mma mma_sync | wgmma_ss | wgmma_rs; load ...", from the rows.
std::string kernel_mechanisms_line();

/// The JSON Schema of a kernel description (schemas/kernel.schema.json, `iosim kernels --schema`).
std::string kernel_json_schema();

}  // namespace iosim
