#include "cli/flag_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <variant>

#include "cli/strict_numbers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/run_control.hpp"

namespace iosim::cli {

namespace {

// The range a command checks an integer flag against, where it is a fixed one (api/'s flag
// tables); cli_test.sh (section contract) holds each to its command's own check.
std::optional<std::pair<std::int64_t, std::int64_t>> flag_range(const std::string& command,
                                                                const std::string& flag) {
  return command == "layer"     ? layer_flag_range(flag)
         : command == "kvcache" ? kvcache_flag_range(flag)
                                : problem_flag_range(flag);
}

// Declares the range of the option `o` of `cmd` bound to a field of type T (an integer field).
template <class T>
void declare_range(const CLI::App& cmd, const CLI::Option* o, const std::string& flag) {
  using V = std::conditional_t<std::is_same_v<T, std::optional<std::int64_t>>, std::int64_t, T>;
  if constexpr (std::is_integral_v<V> && std::is_signed_v<V> && !std::is_same_v<V, bool>) {
    declare_integer_range(o, std::numeric_limits<V>::min(), std::numeric_limits<V>::max(),
                          flag_range(cmd.get_name(), flag));
  }
}

}  // namespace

void add_problem_flags(CLI::App& cmd, RunFlags& f, const std::vector<std::string>& names) {
  for (const ProblemFlag& flag : problem_flags()) {
    if (!names.empty() && std::find(names.begin(), names.end(), flag.name) == names.end()) {
      continue;
    }
    std::visit(
        [&](auto field) {
          using T = std::remove_reference_t<decltype(f.*field)>;
          if constexpr (std::is_same_v<T, bool>) {
            cmd.add_flag(flag.name, f.*field, flag.help);
          } else {
            // Integers are read as decimal by make_numbers_strict (cli/strict_numbers.hpp).
            CLI::Option* o = cmd.add_option(flag.name, f.*field, flag.help);
            declare_range<T>(cmd, o, flag.name);
            // A command that picks flags (demo) gives them defaults instead.
            const bool required = flag.required && names.empty();
            if (required) o->required();
            if constexpr (!std::is_same_v<T, std::optional<std::int64_t>>) {
              if (!required) o->capture_default_str();
            }
          }
        },
        flag.field);
  }
  seq_not_required_with_lens(cmd);
}

void seq_not_required_with_lens(CLI::App& cmd) {
  // An option's callback runs before CLI11 checks the required ones.
  CLI::Option* seq = cmd.get_option_no_throw("--seq");
  CLI::Option* lens = cmd.get_option_no_throw("--seq-lens");
  if (seq != nullptr && lens != nullptr && seq->get_required()) {
    lens->each([seq](const std::string&) { seq->required(false); });
  }
}

void check_kernel_or_algo(const CLI::App& cmd) {
  const CLI::Option* algo = cmd.get_option_no_throw("--algo");
  const CLI::Option* kernel = cmd.get_option_no_throw("--kernel");
  if (algo == nullptr || kernel == nullptr || algo->count() == 0 || kernel->count() == 0) return;
  // `run --kernel flash2 --algo flash1` ran flash2 and said nothing of --algo.
  throw ConfigError(fmt::format(
      "--kernel {} and --algo {}: give one of them; --kernel runs its description in place of "
      "--algo (a built-in algorithm's description: --kernel NAME, iosim kernels)",
      kernel->as<std::string>(), algo->as<std::string>()));
}

namespace {

// Adds one flag of a table (an entry with name, help, field, required, show_default) to `cmd`,
// bound to `f`.
template <class Flag, class Flags>
void add_table_flag(CLI::App& cmd, const Flag& flag, Flags& f) {
  std::visit(
      [&](auto field) {
        CLI::Option* o = cmd.add_option(flag.name, f.*field, flag.help);
        declare_range<std::remove_reference_t<decltype(f.*field)>>(cmd, o, flag.name);
        if (flag.required) o->required();
        if (flag.show_default && !flag.required) o->capture_default_str();
      },
      flag.field);
}

}  // namespace

void add_kvcache_flags(CLI::App& cmd, KvCacheFlags& f) {
  for (const KvCacheFlag& flag : kvcache_flags()) add_table_flag(cmd, flag, f);
}

void add_layer_flags(CLI::App& cmd, LayerFlags& f, std::map<std::string, std::string>& lists) {
  const std::vector<std::string>& axes = layer_axis_flags();
  for (const LayerFlag& flag : layer_flags()) {
    if (std::find(axes.begin(), axes.end(), flag.name) == axes.end()) {
      add_table_flag(cmd, flag, f);
      continue;
    }
    CLI::Option* o =
        cmd.add_option(flag.name, lists[flag.name],
                       flag.help + "; a list (512,1024) or range (512:4096:x2) sweeps it");
    o->type_name("INT[,INT...]");
    if (flag.required) o->required();
  }
}

void MaxSecondsFlag::add_to(CLI::App& cmd) {
  cmd.add_option("--max-seconds", seconds,
                 "stop with exit 3 after this much wall time (0: no limit)");
}

void MaxSecondsFlag::apply() const {
  if (!(seconds >= 0)) throw ConfigError(fmt::format("--max-seconds {} must be >= 0", seconds));
  run_control::set_budget(seconds, "--max-seconds");
}

}  // namespace iosim::cli
