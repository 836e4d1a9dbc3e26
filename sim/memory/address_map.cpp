#include "sim/memory/address_map.hpp"

#include <fmt/format.h>

namespace iosim::detail {

AddressMap::AddressMap(const std::vector<TensorDecl>& decls) {
  constexpr std::uint64_t kAlign = 1ULL << 20;
  std::uint64_t cursor = kAlign;
  for (const TensorDecl& d : decls) {
    ensure(d.matrices > 0 && d.rows > 0 && d.cols > 0 && d.elem_bytes > 0,
           "tensor {} declared with an empty shape", tensor_name(d.id));
    auto& slot = slots_[index_of(d.id)];
    ensure(!slot.has_value(), "tensor {} declared twice", tensor_name(d.id));
    const std::uint64_t pitch =
        static_cast<std::uint64_t>(d.cols) * static_cast<std::uint64_t>(d.elem_bytes);
    const bool blocked = pitch >= kBlockRows * kBlockChunk && pitch % kBlockChunk == 0;
    const auto rows = static_cast<std::uint64_t>(d.rows);
    // A blocked matrix is padded to whole blocks of rows.
    const std::uint64_t matrix_span =
        (blocked ? (rows + kBlockRows - 1) / kBlockRows * kBlockRows : rows) * pitch;
    slot = Placed{d, cursor, pitch, matrix_span, blocked};
    const std::uint64_t span = static_cast<std::uint64_t>(d.matrices) * matrix_span;
    cursor += (span + kAlign - 1) / kAlign * kAlign;
  }
}

void AddressMap::out_of_bounds(const TileRef& t, const TensorDecl& d) {
  throw InternalError(
      fmt::format("tile of {} out of bounds: matrix {} rows [{}, {}) cols [{}, {}) of [{}][{}][{}]",
                  tensor_name(t.tensor), t.matrix, t.row0, t.row0 + t.rows, t.col0, t.col0 + t.cols,
                  d.matrices, d.rows, d.cols));
}

}  // namespace iosim::detail
