// ConfigError's message is well-formed UTF-8 whatever bytes it quotes (sim/base/errors.hpp), and
// an input file's bytes reach no message cut short (sim/base/text_file.hpp).
#include "sim/base/errors.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "sim/base/text_file.hpp"

using namespace iosim;

namespace {

// Whether `s` is well-formed UTF-8 (RFC 3629), decoded code point by code point: a second
// reading of the rule valid_utf8() applies.
bool well_formed(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    unsigned cp = b(0);
    std::size_t len = 1;
    if (cp >= 0x80) {
      len = cp >= 0xF0 ? 4 : cp >= 0xE0 ? 3 : cp >= 0xC0 ? 2 : 0;
      if (len == 0 || i + len > s.size()) return false;
      cp &= 0x7Fu >> len;
      for (std::size_t k = 1; k < len; ++k) {
        if ((b(k) & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (b(k) & 0x3Fu);
      }
      const unsigned least[] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    }
    i += len;
  }
  return true;
}

std::string utf8_of(unsigned cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace

// Issue #50's third probe: a block table holding 0xff gave a message Python could not decode
// (UnicodeDecodeError in place of ConfigError) and the CLI wrote the raw byte to the terminal.
TEST_CASE("errors: a ConfigError's message is well-formed UTF-8, valid text kept as it is") {
  std::mt19937 rng(50);
  for (int trial = 0; trial < 2000; ++trial) {
    // Random bytes: the message is well-formed, and escaping it again changes nothing.
    std::string bytes(rng() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 256);
    const std::string msg = ConfigError("file 'x' line 1: '" + bytes + "'").what();
    CHECK(well_formed(msg));
    CHECK(valid_utf8(msg) == msg);
    // Random code points (no surrogates): kept byte for byte.
    std::string text;
    for (auto n = static_cast<unsigned>(rng() % 20); n > 0; --n) {
      auto cp = static_cast<unsigned>(rng() % 0x110000);
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'a';
      text += utf8_of(cp == 0 ? 1 : cp);
    }
    REQUIRE(well_formed(text));
    CHECK(std::string(ConfigError(text).what()) == text);
  }
  CHECK(valid_utf8("'\xff"
                   "7'") == "'\\xff7'");
  CHECK(valid_utf8("\xc0\xaf") == "\\xc0\\xaf");                    // an overlong '/'
  CHECK(valid_utf8("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // a surrogate
  CHECK(valid_utf8("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  CHECK(valid_utf8("caf\xc3\xa9 \xe2\x82\xac") == "caf\xc3\xa9 \xe2\x82\xac");
  CHECK(valid_utf8("cut \xe2\x82") == "cut \\xe2\\x82");  // a sequence cut short
}

// Issue #50's fourth probe: a NUL byte inside a value cut the readers' messages off before their
// cause ("iosim: n.csv:3: '67108"), and one in a column no reader reads passed into a report.
TEST_CASE(
    "text files: a NUL byte anywhere is refused by line and column; others read as they are") {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / "iosim_errors_test_nul.txt";
  std::mt19937 rng(51);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    for (auto n = rng() % 200; n > 0; --n) {
      text += rng() % 8 == 0 ? '\n' : static_cast<char>('0' + rng() % 10);
    }
    const auto write = [&](const std::string& bytes) {
      std::ofstream(file, std::ios::binary) << bytes;
    };
    write(text);
    CHECK(read_text_file(file, "pattern file", kMaxDataFileBytes) == text);
    const std::size_t at = rng() % (text.size() + 1);
    std::string with = text;
    with.insert(at, 1, '\0');
    write(with);
    // Line and column of byte `at`, counted here on their own.
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    try {
      read_text_file(file, "pattern file", kMaxDataFileBytes);
      FAIL("a NUL byte was read");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()) ==
            "pattern file '" + file.string() + "' holds a NUL byte (line " + std::to_string(line) +
                ", column " + std::to_string(column) + "): not a text file; is it the right file?");
    }
  }
  std::filesystem::remove(file);
}
