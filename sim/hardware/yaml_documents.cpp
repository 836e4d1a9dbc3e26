#include "sim/hardware/yaml_documents.hpp"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>

#include "sim/base/errors.hpp"
#include "sim/base/text_file.hpp"
#include "sim/base/yaml_reader.hpp"

namespace iosim {
namespace {

// Counts a YAML text's documents without building them. yaml-cpp 0.7's LoadAll never returns,
// allocating until memory runs out, when a ',' stands at a document's top level (", a", "[a], b",
// "\"x\", b"; found by tests/fuzz/fuzz_profile.cpp): its parser ends an empty document at the
// ',' without consuming it and starts the next one there, for ever. Two documents that start at
// the same place are that loop, and the token there is what the user must fix.
class DocumentCounter final : public YAML::EventHandler {
 public:
  DocumentCounter(std::vector<YAML::Mark>& starts, const std::string& origin,
                  const std::string& what)
      : starts_(starts), origin_(origin), what_(what) {}
  void OnDocumentStart(const YAML::Mark& mark) override { starts_.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { refuse(mark, anchor); }
  // The parser's own anchors and aliases, where the text check of load_yaml_documents() does not
  // see them (an alias after an apostrophe in a plain scalar, `[it's, *a]`, counted as quoted):
  // yaml-cpp shares an alias's node, so nine lines of them made 10^9 leaves for the tag and key
  // walks (no exit, issue #50's fifth probe).
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { refuse(mark, 1, '*'); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    refuse(mark, anchor);
    // A control character from an escape ("a\0b", "\x01"): the raw byte is refused as not text,
    // the escaped one went on into names and tables (issue #50's fifth probe).
    if (const int c = first_control_character(value); c >= 0) {
      throw ConfigError(fmt::format(
          "{}:{}: a string holds the control character U+{:04X} (from an escape such as \\0, "
          "\\x00 or \\u0000): not text; a {} holds none",
          origin_, mark.line + 1, c, what_));
    }
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    refuse(mark, anchor);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    refuse(mark, anchor);
  }
  void OnMapEnd() override {}

 private:
  void refuse(const YAML::Mark& mark, YAML::anchor_t anchor, char c = '&') const {
    if (anchor == YAML::NullAnchor) return;
    throw ConfigError(fmt::format("{}:{}: YAML anchors and aliases ('{}') are not allowed in a {}",
                                  origin_, mark.line + 1, c, what_));
  }

  std::vector<YAML::Mark>& starts_;
  const std::string& origin_;
  const std::string& what_;
};

// The number of documents in yaml_text; a top-level token that would stop yaml-cpp's parser for
// ever, or an anchor or alias, is a ConfigError naming its line (and column). Parse errors
// propagate as YAML exceptions.
std::size_t count_documents(const std::string& yaml_text, const std::string& origin,
                            const std::string& what) {
  std::istringstream in(yaml_text);
  YAML::Parser parser(in);
  std::vector<YAML::Mark> starts;
  DocumentCounter counter(starts, origin, what);
  while (parser.HandleNextDocument(counter)) {
    if (starts.size() >= 2 && starts[starts.size() - 1].pos == starts[starts.size() - 2].pos) {
      const YAML::Mark& at = starts.back();
      const auto pos = static_cast<std::size_t>(std::max(at.pos, 0));
      const char c = pos < yaml_text.size() ? yaml_text[pos] : ' ';
      throw ConfigError(fmt::format(
          "{}:{}:{}: YAML syntax error: '{}' cannot stand at the top level of a document (a "
          "profile is a map of 'key: value' lines)",
          origin, at.line + 1, at.column + 1, c));
    }
  }
  return starts.size();
}

// The line and offset of the first byte that is not text (UTF-8 without control characters
// other than tab, CR and LF), or 0 when all is text. yaml-cpp can take minutes and gigabytes on
// such bytes (a 206-byte file with 0xff bytes, found by tests/fuzz/fuzz_profile.cpp).
std::pair<std::size_t, std::size_t> first_non_text(const std::string& text) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t extra = 0;
    if (c == '\n') ++line;
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return {line, i + 1};
    } else if ((c & 0xe0) == 0xc0 && c >= 0xc2) {
      extra = 1;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
    } else if ((c & 0xf8) == 0xf0 && c <= 0xf4) {
      extra = 3;
    } else {
      return {line, i + 1};
    }
    for (std::size_t k = 1; k <= extra; ++k) {
      if (i + k >= text.size() || (static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) {
        return {line, i + 1};
      }
    }
    i += extra + 1;
  }
  return {0, 0};
}

// No YAML type tag is read: `!!str 132` ran as the number 132 and `!!binary aGVsbG8=` as its
// text, neither decoded nor refused (issue #50 S10). The tags yaml-cpp gives untagged nodes
// ("?" plain, "!" quoted) pass. Past 64 levels the walk stops: the readers refuse such depth.
void refuse_tags(const YAML::Node& node, const std::string& origin, int depth) {
  if (depth > 64) return;
  const std::string& tag = node.Tag();
  if (!tag.empty() && tag != "?" && tag != "!") {
    throw ConfigError(
        fmt::format("{}:{}: a YAML tag ('{}'): iosim reads none; write the value "
                    "without it",
                    origin, node.Mark().line + 1, tag));
  }
  if (node.IsMap()) {
    for (const auto& entry : node) {
      refuse_tags(entry.first, origin, depth + 1);
      refuse_tags(entry.second, origin, depth + 1);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) refuse_tags(item, origin, depth + 1);
  }
}

// A problem at a place in the file: its message is complete (origin and line), so
// read_yaml_json() passes it on as it is.
struct LocatedError : ConfigError {
  using ConfigError::ConfigError;
};

std::string where(const std::string& path) {
  return path.empty() ? "the top level" : "'" + path + "'";
}

// A YAML node as JSON: maps as objects, sequences as arrays, scalars as numbers where they read
// as one whole, true/false as booleans, null as null, anything else as a string.
// Map keys are checked as the profile loader checks them (profile_reader.hpp's check_map()): a
// key that is not a plain name ("? [a]") made yaml-cpp's "bad conversion", and a duplicate key
// silently replaced the first (issue #50, I1 and S1).
nlohmann::json to_json(const YAML::Node& node, int depth, const std::string& origin,
                       const std::string& path) {
  if (depth > 32) throw ConfigError("nested deeper than 32 levels");
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      std::map<std::string, int> lines;
      for (const auto& entry : node) {
        const YAML::Node& key_node = entry.first;
        const int line = key_node.Mark().line + 1;
        if (!key_node.IsScalar()) {
          throw LocatedError(fmt::format("{}:{}: keys must be plain names, got {} in {}", origin,
                                         line, key_node.IsMap() ? "a map" : "a list", where(path)));
        }
        const std::string& key = key_node.Scalar();
        const std::string full = path.empty() ? key : path + "." + key;
        if (const auto [it, fresh] = lines.emplace(key, line); !fresh) {
          throw LocatedError(fmt::format("{}:{}: duplicate key '{}' (first at line {})", origin,
                                         line, full, it->second));
        }
        out[key] = to_json(entry.second, depth + 1, origin, full);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      std::size_t i = 0;
      for (const auto& item : node) {
        out.push_back(to_json(item, depth + 1, origin, fmt::format("{}[{}]", path, i++)));
      }
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string text = node.Scalar();
      if (node.Tag() != "!") {  // unquoted
        if (text == "true") return true;
        if (text == "false") return false;
        if (text == "null" || text == "~") return nullptr;
        char* end = nullptr;
        errno = 0;
        const long long i = std::strtoll(text.c_str(), &end, 10);
        if (!text.empty() && end == text.c_str() + text.size() && errno == 0) return i;
        errno = 0;
        const double d = std::strtod(text.c_str(), &end);
        if (!text.empty() && end == text.c_str() + text.size() && errno == 0) return d;
      }
      return text;
    }
    default:
      return nullptr;
  }
}

}  // namespace

// The YAML documents of `yaml_text` (none or one), after the checks every YAML input gets: UTF-8
// text, no anchors or aliases, at most one document. `what` names the kind of file ("profile").
std::vector<YAML::Node> load_yaml_documents(const std::string& yaml_text, const std::string& origin,
                                            const std::string& what) {
  if (const auto [line, offset] = first_non_text(yaml_text); line != 0) {
    throw ConfigError(
        fmt::format("{}:{}: not a text file: byte {} (0x{:02x}) is not UTF-8 text; a {} is YAML",
                    origin, line, offset, static_cast<unsigned char>(yaml_text[offset - 1]), what));
  }
  // Anchors and aliases: a profile needs none, and yaml-cpp can take minutes on a few hundred
  // bytes of malformed ones (found by tests/fuzz/fuzz_profile.cpp). A '&' or '*' that starts a
  // node (after a space, '[', '{', ',' or ':' or at a line's start) outside a quoted string or a
  // comment is refused. So is a double-quoted string left open at the end of its line: YAML lets
  // it run on, so a missing closing quote swallowed the lines after it and the message named a
  // key "missing" that the file has (issue #50); every file iosim reads keeps a string on one line.
  {
    std::size_t line = 1;
    char quote = 0, prev = '\n';
    bool comment = false, escaped = false;
    for (const char c : yaml_text) {
      if (c == '\n') {
        if (quote == '"') {
          throw ConfigError(fmt::format(
              "{}:{}: YAML syntax error: a double-quoted string is not closed on its line (a "
              "closing '\"' is missing; strings in a {} stay on one line)",
              origin, line, what));
        }
        ++line;
        quote = 0;
        comment = false;
        escaped = false;
      } else if (escaped) {
        escaped = false;
      } else if (quote == '"' && c == '\\') {
        escaped = true;
      } else if (!comment && quote == 0 && (c == '"' || c == '\'')) {
        quote = c;
      } else if (!comment && quote != 0 && c == quote) {
        quote = 0;
      } else if (quote == 0 && c == '#' && (prev == ' ' || prev == '\n' || prev == '\t')) {
        comment = true;
      } else if (!comment && quote == 0 && (c == '&' || c == '*') &&
                 std::string_view(" \t\n[{,:").find(prev) != std::string_view::npos) {
        throw ConfigError(
            fmt::format("{}:{}: YAML anchors and aliases ('{}') are not allowed in a {}", origin,
                        line, c, what));
      }
      prev = c;
    }
    if (quote == '"') {
      throw ConfigError(fmt::format(
          "{}:{}: YAML syntax error: a double-quoted string is not closed (a closing '\"' is "
          "missing)",
          origin, line));
    }
  }
  std::vector<YAML::Node> documents;
  try {
    const std::size_t count = count_documents(yaml_text, origin, what);
    if (count > 1) {
      throw ConfigError(
          fmt::format("{}: holds {} YAML documents; a {} is exactly one", origin, count, what));
    }
    if (count == 1) {
      documents.push_back(YAML::Load(yaml_text));
      refuse_tags(documents.back(), origin, 0);
    }
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's message is "bad file", at a line the text may not have (the seventh probe: a
    // one-line file of 1,000 nested lists was "deep.yaml:2:1: YAML syntax error: bad file").
    throw ConfigError(fmt::format(
        "{}: YAML nested too deep: lists and maps more than {} levels deep (the parser's "
        "limit); a {} is a few levels deep",
        origin, e.depth(), what));
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", origin, e.mark.line + 1,
                                  e.mark.column + 1, e.msg));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: cannot parse YAML: {}", origin, e.what()));
  }
  return documents;
}

nlohmann::json read_yaml_json(const std::string& yaml_text, const std::string& origin,
                              const std::string& what) {
  const std::vector<YAML::Node> documents = load_yaml_documents(yaml_text, origin, what);
  if (documents.empty()) return nullptr;
  try {
    return to_json(documents[0], 0, origin, "");
  } catch (const LocatedError&) {
    throw;
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", origin, e.what()));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: cannot read YAML: {}", origin, e.what()));
  }
}

}  // namespace iosim
