#pragma once
// What-if hardware: a built-in or user profile with some numbers replaced on the command line
// (`--set l2.size_bytes=20e6`), checked exactly as the YAML is; and the keys a profile has.
#include <string>
#include <vector>

#include "sim/hardware/profile.hpp"

namespace iosim {

/// One `--set KEY=VALUE`: a profile key path ("l2.size_bytes") and its new value as typed.
struct ProfileOverride {
  std::string key;
  std::string value;
};

/// Splits "KEY=VALUE" texts. Throws ConfigError naming every text without '=' or with an empty
/// side.
std::vector<ProfileOverride> parse_profile_overrides(const std::vector<std::string>& texts);

/// load_profile() with `overrides` applied to the YAML before it is read: the same checks, all
/// problems reported at once. Unknown keys get a "did you mean"; a value must be a number (10e6
/// is fine for an integer key when it is a whole number). With overrides the profile's name
/// becomes "NAME[key=value;...]" (values as read), so that runs and sweep rows tell them apart.
HardwareProfile load_profile(const std::string& name_or_path,
                             const std::vector<ProfileOverride>& overrides);

/// Every numeric key of a profile, "section.key", in file order.
std::vector<std::string> profile_keys();

/// The keys of a profile section ("sm", "power", ...; "all": every section), one row each from
/// its schema row (profile_schema.hpp): key, type, unit, the checks validate() makes, and its doc
/// line. `markdown`: hwprofiles/README.md's table, | key | type | unit | meaning | check |; else
/// plain text, two lines a key. Throws ConfigError for a section no profile has.
std::string profile_key_table(const std::string& section, bool markdown);

/// The JSON Schema of a profile read as JSON (schemas/profile.schema.json: each key's type,
/// bounds, unit and doc from its schema row); `iosim profiles --schema`.
std::string profile_json_schema();

/// A YAML profile with every key, values 0 and sources to fill in (`iosim profiles --template`).
std::string profile_template();

}  // namespace iosim
