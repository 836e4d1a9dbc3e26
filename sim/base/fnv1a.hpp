#pragma once
// FNV-1a, 64 bits: a short, stable fingerprint of bytes (a sweep's axes, a journal row). Not a
// cryptographic hash: it tells apart what differs by accident, not by design.
#include <cstdint>
#include <string_view>

namespace iosim {

inline std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace iosim
