#pragma once
#include <string_view>

namespace iosim {

/// "X.Y.Z (git COMMIT)": the project version and the commit it was built from ("-dirty" with
/// uncommitted changes, "unknown" outside a git checkout). Written at build time.
std::string_view version_text();

/// "X.Y.Z", the project version alone.
std::string_view version_number();

}  // namespace iosim
