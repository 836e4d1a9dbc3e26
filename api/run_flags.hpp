#pragma once
// One attention call spelled as flags: each field as a user types it, the table of the flags
// (name, help, the field each sets) and the checks that turn them into a RunRequest. The CLI binds
// the table to its options (cli/flag_options.hpp) and the Python package to keyword arguments
// (python/iosim_module.cpp), so that both check and default a run alike.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "api/iosim.hpp"

namespace iosim {

struct RunFlags {
  std::string profile = "h100-sxm5-80gb";
  std::string algorithm = "flash2";
  std::string kernel;  // --kernel FILE|PRESET: a kernel description, in place of --algo
  std::int64_t batch = 1, heads = 1, seq = 0, seq_kv = 0, head_dim = 64;
  std::string dtype = "fp16";
  std::string kv_dtype;  // --kv-dtype: K/V's stored type (empty: --dtype's)
  // Tiling as typed: 0 is the CLI's spelling of "the algorithm's default" (sweep lists use it).
  std::int64_t block_q = 0, block_kv = 0;
  int threads = 0, stages = 0;
  std::string pass = "fwd";
  std::string
      pattern;  // block-sparse: local:W | strided:S | random:DENSITY:SEED | causal | file:PATH
  bool causal = false, mask = false, execute = false, cold_l2 = false;
  bool exact = false;  // no steady-state extrapolation
  double dropout = 0.0, sm_clock_mhz = 0.0;
  std::string l2 = "on";
  std::uint64_t seed = 1;
  // Decoding; left out: the default applies.
  std::optional<std::int64_t> kv_heads, splits, page_tokens;
  std::optional<std::int64_t> window;  // --window W: sliding window of W keys (left out: none)
  // --latent-dim C: multi-head latent attention's latent cache, V its first C columns (left out:
  // none); with it --kv-heads defaults to 1.
  std::optional<std::int64_t> latent_dim;
  std::string block_table;  // --block-table FILE (paged)
  // A ragged batch (--seq-lens 512,1024,3000; --seq-kv-lens, default --seq-lens): one length per
  // sequence, as typed (empty: none).
  std::string seq_lens, seq_kv_lens;
  std::string pack_gqa;          // --pack-gqa auto|on|off (empty: auto)
  std::string warpgroups;        // --warpgroups pingpong|cooperative (flash3; empty: its default)
  std::vector<std::string> set;  // --set KEY=VALUE: profile what-ifs (load_profile's overrides)
  // flash3 --pass fwdbwd: the backward's blocks (left out: FlashAttention-3's).
  std::optional<std::int64_t> backward_block_q, backward_block_kv;
};

/// One flag of an attention call: its name, its help, and the RunFlags field it sets. `run`,
/// `demo` and `sweep` all build their flags from problem_flags() (sweep reads each as a list), as
/// the Python package does its keyword arguments.
struct ProblemFlag {
  using Field = std::variant<std::string RunFlags::*, std::int64_t RunFlags::*, int RunFlags::*,
                             double RunFlags::*, std::optional<std::int64_t> RunFlags::*,
                             bool RunFlags::*, std::uint64_t RunFlags::*>;
  std::string name;  // "--batch"
  std::string help;
  Field field;
  bool required = false;
  // A sweep that leaves it out runs one point with run's default and records no axis for it, so
  // that a sweep file names only the optional flags its sweep used.
  bool unrecorded_when_absent = false;
};

/// Every problem, tiling and model flag, in the order of a sweep's axes (outermost first).
const std::vector<ProblemFlag>& problem_flags();

/// The fixed range its command checks integer flag `flag` against ("--seq" -> [1, 16777216]), or
/// none where the bound depends on other flags or the GPU. The CLI and the Python package name it
/// when a value is past what the flag's field holds (int64's range is no flag's).
std::optional<std::pair<std::int64_t, std::int64_t>> problem_flag_range(const std::string& flag);

/// "512,1024,3000" as one length per sequence (--seq-lens's list; `iosim layer`'s too). Throws
/// ConfigError naming `flag` for an item that is not a decimal integer or is past [1, kMaxSeq].
std::shared_ptr<const std::vector<std::int64_t>> parse_lengths(const std::string& flag,
                                                               const std::string& text);

/// --latent-dim as given: at least 1 (0 or less is a mistake, not "none": leave the flag out for
/// separate K and V); `iosim run`'s and `iosim kvcache`'s check, one message.
void check_latent_dim_flag(std::int64_t latent_dim);

/// Checks the flags and turns them into a request; throws ConfigError naming a bad flag.
RunRequest to_request(const RunFlags& f);

/// The kernel description --kernel names: inline ("{...}"), a file (anything that exists or
/// contains '/' or '.'), or else a built-in preset's name. Throws ConfigError as their readers do.
std::shared_ptr<const KernelDescription> kernel_flag_description(const std::string& text);

/// --kv-dtype's type; throws ConfigError "--kv-dtype: ..." for a name that is no dtype.
Dtype parse_kv_dtype(const std::string& text);

/// The checks to_request() makes last, of the request's values: the SM clock's range and each
/// problem size's (check_problem_values()). A request built typed (`iosim layer`'s attention)
/// runs them as one built from flags does, so that both refuse a value alike.
void check_request_values(const RunRequest& r);

}  // namespace iosim
