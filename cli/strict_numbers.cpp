#include "cli/strict_numbers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <type_traits>

namespace iosim::cli {
namespace {

struct IntegerRange {
  std::int64_t field_lo = 0, field_hi = 0;
  std::optional<std::pair<std::int64_t, std::int64_t>> flag;
};

std::map<const CLI::Option*, IntegerRange>& declared_ranges() {
  static std::map<const CLI::Option*, IntegerRange> ranges;
  return ranges;
}

// Reads `text` as a decimal T and writes it back without leading zeros, which CLI11's strtoll
// (base 0) would take for octal. The message echoes what was typed. A value past T (or past the
// field of `o`) names the flag's own range where declared: int64's, [-9223372036854775808,
// 9223372036854775807], is no flag's.
template <typename T>
CLI::Validator decimal_integer(const CLI::Option* o) {
  return CLI::Validator(
      [o](std::string& text) -> std::string {
        T v{};
        const char* begin = text.data() + (text.size() > 1 && text[0] == '+' ? 1 : 0);
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(begin, end, v);
        const auto declared = declared_ranges().find(o);
        const bool past_field = ec == std::errc() && declared != declared_ranges().end() &&
                                (static_cast<long double>(v) < declared->second.field_lo ||
                                 static_cast<long double>(v) > declared->second.field_hi);
        if (ec == std::errc::result_out_of_range || past_field) {
          if (declared == declared_ranges().end()) {
            return fmt::format("{} is out of range: it must be in [{}, {}]", text,
                               std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
          }
          const IntegerRange& r = declared->second;
          const auto [lo, hi] = r.flag.value_or(std::pair{r.field_lo, r.field_hi});
          return fmt::format("{} is out of range: it must be in [{}, {}]", text, lo, hi);
        }
        if (ec != std::errc() || ptr != end) {
          return fmt::format("'{}' is not {}", text,
                             std::is_signed_v<T> ? "an integer" : "an integer >= 0");
        }
        text = std::to_string(v);
        return "";
      },
      "", "decimal integer");
}

// A decimal floating-point number, or an infinity (--max-seconds inf is no budget); not NaN, not
// hexadecimal.
CLI::Validator decimal_float() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        const char* begin = text.data() + (text.size() > 1 && text[0] == '+' ? 1 : 0);
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(begin, end, v, std::chars_format::general);
        if (ec == std::errc::result_out_of_range) {
          return fmt::format("{} is out of range for a number", text);
        }
        if (ec != std::errc() || ptr != end || std::isnan(v)) {
          return fmt::format("'{}' is not a number", text);
        }
        return "";
      },
      "", "decimal number");
}

// A switch's value (`--causal=VALUE`): a boolean word only. CLI11 read any integer, so
// `--causal=2` and `--causal=99999999999999999999` were on and `--causal=-1` off, without a word
// (issue #50's sixth probe); what a bare switch stores is "true".
CLI::Validator switch_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string word = text;
        std::transform(word.begin(), word.end(), word.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        for (const char* ok : {"true", "false", "on", "off", "yes", "no", "1", "0"}) {
          if (word == ok) return "";
        }
        return fmt::format(
            "'{}' is not a switch's value: give the switch alone (on), or true or false", text);
      },
      "");  // (no name: --help shows the switch as it did)
}

}  // namespace

void declare_integer_range(const CLI::Option* o, std::int64_t field_lo, std::int64_t field_hi,
                           std::optional<std::pair<std::int64_t, std::int64_t>> flag_range) {
  declared_ranges()[o] = IntegerRange{field_lo, field_hi, flag_range};
}

void make_numbers_strict(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    if (type == "INT") {
      o->transform(decimal_integer<std::int64_t>(o));
    } else if (type == "UINT") {
      o->transform(decimal_integer<std::uint64_t>(o));
    } else if (type == "FLOAT") {
      o->transform(decimal_float());
    } else if (o->get_expected_max() == 0 && o->get_type_name().empty()) {
      o->check(switch_value());  // a switch, --causal
    }
  }
  for (CLI::App* sub : app.get_subcommands({})) make_numbers_strict(*sub);
}

void refuse_empty_values(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    if (o->get_type_name().rfind("TEXT", 0) != 0) continue;
    o->check(CLI::Validator(
        [](std::string& value) {
          return value.empty() ? std::string("an empty value; give one, or leave the flag out")
                               : std::string();
        },
        ""));  // (no name: --help keeps showing TEXT)
  }
  for (CLI::App* sub : app.get_subcommands({})) refuse_empty_values(*sub);
}

}  // namespace iosim::cli
