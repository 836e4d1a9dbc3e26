#include "cli/strict_numbers.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace iosim::cli {
namespace {

// Reads `text` as a decimal T and writes it back without leading zeros, which CLI11's strtoll
// (base 0) would take for octal. The message echoes what was typed.
template <typename T>
CLI::Validator decimal_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        T v{};
        const char* begin = text.data() + (text.size() > 1 && text[0] == '+' ? 1 : 0);
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(begin, end, v);
        if (ec == std::errc::result_out_of_range) {
          return fmt::format("{} is out of range: it must be in [{}, {}]", text,
                             std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
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

}  // namespace

void make_numbers_strict(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    if (type == "INT") {
      o->transform(decimal_integer<std::int64_t>());
    } else if (type == "UINT") {
      o->transform(decimal_integer<std::uint64_t>());
    } else if (type == "FLOAT") {
      o->transform(decimal_float());
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
