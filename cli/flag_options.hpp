#pragma once
// The flag tables of api/run_flags.hpp, api/kvcache_flags.hpp and api/layer_flags.hpp as CLI11
// options: what the command adds to them (parsing, --help's defaults, required flags) and nothing
// the Python package needs.
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "api/kvcache_flags.hpp"
#include "api/layer_flags.hpp"
#include "api/run_flags.hpp"

namespace iosim::cli {

/// The help of `--set`, shared by run and sweep.
inline constexpr const char* kSetHelp =
    "what-if hardware: replace a number of the profile, KEY=VALUE (e.g. l2.size_bytes=20e6; "
    "the keys: iosim profiles --template), checked as the YAML is; repeatable";

/// Adds the flags of problem_flags() named in `names` (all when empty) to `cmd`, bound to `f`.
void add_problem_flags(CLI::App& cmd, RunFlags& f, const std::vector<std::string>& names = {});
/// Makes `cmd`'s required --seq optional when --seq-lens is given (a ragged batch's lengths say
/// it; to_request() checks --seq against their sum).
void seq_not_required_with_lens(CLI::App& cmd);

/// Refuses --kernel given with --algo (ConfigError): the description runs in place of --algo, so
/// one of the two would be dropped without a word. Call in the action of a command that has both.
void check_kernel_or_algo(const CLI::App& cmd);

/// `--max-seconds`: a wall-time budget (exit 3 when it runs out; 0, the default, none), as run,
/// sweep, tune, layer, kvcache, validate and demo take it. add_to() adds the option; apply()
/// checks the value and sets run_control's budget, in the command's action, before its work.
struct MaxSecondsFlag {
  double seconds = 0.0;
  void add_to(CLI::App& cmd);
  void apply() const;
};

/// Adds kvcache_flags() to `cmd`, bound to `f`.
void add_kvcache_flags(CLI::App& cmd, KvCacheFlags& f);

/// Adds layer_flags() to `cmd`, bound to `f`; the axis flags (layer_axis_flags()) are read as
/// text into `lists` (flag -> text) instead, for layer_sweep().
void add_layer_flags(CLI::App& cmd, LayerFlags& f, std::map<std::string, std::string>& lists);

}  // namespace iosim::cli
