#pragma once
// Checks a JSON document read back from a file against the JSON Schema that describes it
// (schemas/*.schema.json, embedded in the binary), so that a value of the wrong type is refused
// with its key's path wherever it sits, not only in the keys a reader happens to use (issue #50:
// a sweep row whose per-tensor bytes read `null` or `"12"` was accepted; a measured file's keys
// that `iosim validate` does not read took any type).
//
// The subset of JSON Schema (2020-12) our schemas use: type, enum, const, properties, required,
// additionalProperties, minProperties, maxProperties, items, minItems, maxItems, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern, allOf, anyOf, oneOf, not,
// if/then/else and $ref (within a document, or `other.schema.json#/pointer` to another of the set).
// Annotations (description, title, format, default, $id, $schema, $defs) are not checked. A keyword
// outside this list is an error of the schema, found by the test that checks every schema is
// covered.
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace iosim {

class JsonSchemas {
 public:
  /// `documents`: file name (run.schema.json) -> its text.
  explicit JsonSchemas(const std::map<std::string, std::string>& documents);

  /// The schemas of the files iosim reads back (schemas/run.schema.json, sweep.schema.json, the
  /// kernel.schema.json a run's kernel description refers to, and measurements.schema.json of
  /// `iosim validate`'s measured files), embedded at build time.
  static const JsonSchemas& embedded();

  /// "" when `value` conforms to the schema of file `schema` (e.g. "sweep.schema.json"); else the
  /// first disagreement: the value's path (`rows[3].counters.hbm_read_bytes`) and what the schema
  /// asks there.
  std::string first_error(const nlohmann::json& value, const std::string& schema) const;

  /// Every keyword that `schema` uses and this checker does not know ("" when none): the test
  /// that keeps the embedded schemas within the subset above.
  std::string unknown_keywords(const std::string& schema) const;

  /// Every `$ref` of `schema` that names a document not in this set or a pointer not in its
  /// document ("" when all resolve): a schema that refers to another must embed it too.
  std::string unresolved_refs(const std::string& schema) const;

 private:
  std::map<std::string, nlohmann::json> documents_;
};

}  // namespace iosim
