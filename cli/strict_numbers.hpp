#pragma once
// Numbers on the command line mean one thing in every flag. CLI11 reads integers with strtoll's
// base 0, so `--layers 010` was 8 (octal) and `--seq 0x100` 256 in the flags it parsed, while the
// flags iosim parsed itself (sweep's lists) read "010" as 10; it clamps a value past its type's
// range to the nearest limit and reads "-1" as 2^64 - 1 for an unsigned flag; and its floating
// options took "nan".
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <utility>

namespace iosim::cli {

/// Every integer option of `app` and of its subcommands (CLI11's type names INT and UINT) is read
/// as a whole decimal number in range ("010" is 10; "0x10", "12abc", "1e3" are refused, the
/// message echoing what was typed); every FLOAT option refuses NaN and anything but a decimal
/// number; every switch (`--causal`) takes a boolean word as its value or none (`--causal=2` is
/// refused). Call once every option is added.
void make_numbers_strict(CLI::App& app);

/// The valid values of an integer option `o`: its flag's range where `flag_lo`..`flag_hi` is given
/// (the bound its command checks), and what its field holds (an `int` field: int's range). A value
/// past either is refused at parsing naming the flag's range, not int64's ("--seq
/// 99999999999999999999 is out of range: it must be in [1, 16777216]"), or CLI11's "Could not
/// convert" for an `int` field. Call before make_numbers_strict.
void declare_integer_range(const CLI::Option* o, std::int64_t field_lo, std::int64_t field_hi,
                           std::optional<std::pair<std::int64_t, std::int64_t>> flag_range);

/// Every text option of `app` and of its subcommands refuses an empty value: `--warpgroups ''`,
/// `--pattern ''` or `--kernel ''` meant "not given" (the default) without a word, while `--algo
/// ''` was refused. Call once every option is added.
void refuse_empty_values(CLI::App& app);

}  // namespace iosim::cli
