#pragma once
// Numbers as people read them in tables and messages: bytes with a decimal unit, seconds with a
// unit. The run table, the sweep report and validation's tables all use these.
#include <string>

namespace iosim {

/// Bytes with a decimal unit ("1.23 GB").
std::string human_bytes(double bytes);
/// Seconds with a unit ("1.23 ms").
std::string human_seconds(double s);

}  // namespace iosim
