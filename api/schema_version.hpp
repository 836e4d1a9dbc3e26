#pragma once
// The version of every JSON document iosim writes (run, sweep, validate, kvcache), described by
// schemas/*.schema.json. It goes up when a key is removed or changes meaning; adding keys keeps
// it, so a reader that checks it and ignores keys it does not know keeps working.

namespace iosim {

inline constexpr int kSchemaVersion = 1;

}  // namespace iosim
