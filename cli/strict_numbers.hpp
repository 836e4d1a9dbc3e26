#pragma once
// Numbers on the command line mean one thing in every flag. CLI11 reads integers with strtoll's
// base 0, so `--layers 010` was 8 (octal) and `--seq 0x100` 256 in the flags it parsed, while the
// flags iosim parsed itself (sweep's lists) read "010" as 10; it clamps a value past its type's
// range to the nearest limit and reads "-1" as 2^64 - 1 for an unsigned flag; and its floating
// options took "nan".
#include <CLI/CLI.hpp>

namespace iosim::cli {

/// Every integer option of `app` and of its subcommands (CLI11's type names INT and UINT) is read
/// as a whole decimal number in range ("010" is 10; "0x10", "12abc", "1e3" are refused, the
/// message echoing what was typed); every FLOAT option refuses NaN and anything but a decimal
/// number. Call once every option is added.
void make_numbers_strict(CLI::App& app);

/// Every text option of `app` and of its subcommands refuses an empty value: `--warpgroups ''`,
/// `--pattern ''` or `--kernel ''` meant "not given" (the default) without a word, while `--algo
/// ''` was refused. Call once every option is added.
void refuse_empty_values(CLI::App& app);

}  // namespace iosim::cli
