#pragma once
// Where each global tensor lives in the L2 model's address space. Bases are aligned to 1 MiB so
// that no L2 region spans two tensors and per-tensor write-back attribution is exact.
//
// Matrices whose rows are 4 KiB or longer (S, P and their gradients from N = 2048 in 16 bits)
// are laid out in blocks of kBlockRows rows x kBlockChunk bytes, each block one 4 KiB L2 region,
// instead of one region per piece of a row. The L2 model replaces whole 4 KiB regions
// (sim/memory/l2_cache.hpp) where the GPU replaces 128-byte lines; the tiles that read and write
// such matrices (GEMM tiles of 128 rows, 64 to 512 bytes of each) touch a short piece of many rows.
// With row-major regions every piece takes a region of its own, which it fills to 1/16 to 1/64:
// that region occupies L2 capacity the GPU would not spend, and costs a lookup per row (the
// standard-attention sweep's dominant cost). With blocks a tile's pieces of 4 consecutive rows
// share one region, filled 4x denser. Sectors map one to one, so every byte count at sector
// granularity is unchanged; only which sectors share recency differs. Row-wise passes (softmax)
// then touch a row in kBlockChunk pieces, whose blocks the neighbouring rows fill, running on
// other SMs at the same time.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/memory/l2_system.hpp"
#include "sim/schedule/tensor.hpp"
#include "sim/schedule/tile_op.hpp"

namespace iosim::detail {

class AddressMap {
 public:
  static constexpr std::uint64_t kBlockRows = 4;
  static constexpr std::uint64_t kBlockChunk = 1024;

  explicit AddressMap(const std::vector<TensorDecl>& decls);

  // Calls visit(run) for the tile's byte ranges (L2System::Run: a range, or pieces of
  // consecutive rows at a fixed stride) in ascending address order within a block row; returns
  // the tile's exact bytes.
  template <typename Visit>
  std::uint64_t for_each_run(const TileRef& t, Visit&& visit) const {
    const auto& slot = slots_[index_of(t.tensor)];
    // The checks run for every tile the engine moves; the message is built only on failure.
    if (!slot.has_value()) [[unlikely]] {
      ensure(false, "tile of undeclared tensor {}", tensor_name(t.tensor));
    }
    const TensorDecl& d = slot->decl;
    // In unsigned arithmetic, with no branch per bound: 0 <= matrix < matrices,
    // 0 <= row0 < rows, 1 <= rows <= d.rows - row0, and the same for columns (d.rows and
    // d.cols are positive: the constructor checked).
    auto u = [](std::int64_t x) { return static_cast<std::uint64_t>(x); };
    const unsigned inside = bit(u(t.matrix) < u(d.matrices)) & bit(u(t.row0) < u(d.rows)) &
                            bit(u(t.rows) - 1 < u(d.rows - t.row0)) & bit(u(t.col0) < u(d.cols)) &
                            bit(u(t.cols) - 1 < u(d.cols - t.col0));
    if (inside == 0) [[unlikely]] {
      out_of_bounds(t, d);
    }
    const auto eb = static_cast<std::uint64_t>(d.elem_bytes);
    const std::uint64_t pitch = slot->pitch;
    const std::uint64_t origin =
        slot->base + static_cast<std::uint64_t>(t.matrix) * slot->matrix_span;
    const std::uint64_t run = static_cast<std::uint64_t>(t.cols) * eb;
    const auto row0 = static_cast<std::uint64_t>(t.row0);
    const auto rows = static_cast<std::uint64_t>(t.rows);
    if (slot->blocked) {
      visit_blocked(origin, pitch, row0, rows, static_cast<std::uint64_t>(t.col0) * eb, run, visit);
    } else if (run == pitch) {  // whole rows: one contiguous range
      visit(L2System::Run{origin + row0 * pitch, run * rows});
    } else {  // a piece of each row
      visit(L2System::Run{origin + row0 * pitch + static_cast<std::uint64_t>(t.col0) * eb, run,
                          rows, pitch});
    }
    return run * rows;
  }

 private:
  // A comparison's outcome as 0 or 1, to combine several with & and | instead of && and ||:
  // no short-circuit branches in the simulator's hot checks.
  static constexpr unsigned bit(bool b) { return static_cast<unsigned>(b); }

  struct Placed {
    TensorDecl decl;
    std::uint64_t base = 0;
    std::uint64_t pitch = 0;        // bytes per row
    std::uint64_t matrix_span = 0;  // bytes per matrix in the address space (padded if blocked)
    bool blocked = false;           // laid out in kBlockRows x kBlockChunk blocks
  };

  // Bytes [col_byte, col_byte + len) of rows [row0, row0 + rows) of a blocked matrix: per block
  // row, per chunk, the rows' pieces (one strided run), in ascending addresses. Ranges that
  // follow each other are joined into one (a tile of whole blocks of full rows is one range),
  // single pieces of equal length at a fixed stride into one strided run (a row's chunks).
  template <typename Visit>
  static void visit_blocked(std::uint64_t origin, std::uint64_t pitch, std::uint64_t row0,
                            std::uint64_t rows, std::uint64_t col_byte, std::uint64_t len,
                            Visit& visit) {
    const std::uint64_t end_row = row0 + rows, end_byte = col_byte + len;
    const std::uint64_t chunk = col_byte / kBlockChunk;
    if ((end_byte - 1) / kBlockChunk == chunk) {
      // Within one chunk (GEMM tiles): the pieces of a block's rows are `count` at kBlockChunk
      // apart, and whole blocks of rows repeat that at kBlockRows rows apart: one run for all
      // whole blocks, one for a part block at either end.
      const std::uint64_t column =
          origin + chunk * kBlockRows * kBlockChunk + col_byte % kBlockChunk;
      auto part = [&](std::uint64_t r, std::uint64_t n) {  // rows [r, r + n) of one block
        const std::uint64_t a =
            column + r / kBlockRows * kBlockRows * pitch + r % kBlockRows * kBlockChunk;
        return len == kBlockChunk ? L2System::Run{a, n * kBlockChunk}
                                  : L2System::Run{a, len, n, kBlockChunk};
      };
      std::uint64_t r = row0;
      const std::uint64_t head_end =
          std::min(end_row, (row0 + kBlockRows - 1) / kBlockRows * kBlockRows);
      if (r < head_end) {
        visit(part(r, head_end - r));
        r = head_end;
      }
      if (const std::uint64_t whole = (end_row - r) / kBlockRows; whole > 0) {
        L2System::Run run = part(r, kBlockRows);
        run.blocks = whole;
        run.block_stride = kBlockRows * pitch;
        visit(run);
        r += whole * kBlockRows;
      }
      if (r < end_row) visit(part(r, end_row - r));
      return;
    }
    // Several chunks (row-wise passes): per block row, a partial first chunk, the whole chunks,
    // a partial last chunk, in ascending addresses.
    L2System::Run pending{0, 0, 0, 0, 1, 0};
    auto emit = [&](const L2System::Run& run) {
      if (pending.count == 1 && run.count == 1) {
        if (pending.addr + pending.len == run.addr) {  // contiguous
          pending.len += run.len;
          return;
        }
        if (pending.len == run.len && run.addr > pending.addr + pending.len) {
          pending.stride = run.addr - pending.addr;
          pending.count = 2;
          return;
        }
      } else if (pending.count > 1 && run.count == 1 && pending.len == run.len &&
                 run.addr == pending.addr + pending.count * pending.stride) {
        ++pending.count;
        return;
      }
      if (pending.count != 0) visit(pending);
      pending = run;
    };
    constexpr std::uint64_t kBlockBytes = kBlockRows * kBlockChunk;
    const std::uint64_t c_first = col_byte / kBlockChunk, c_last = (end_byte - 1) / kBlockChunk;
    // Chunks [w_first, w_last] are whole; the first and the last may be partial.
    const std::uint64_t w_first = col_byte % kBlockChunk == 0 ? c_first : c_first + 1;
    const std::uint64_t w_last = end_byte % kBlockChunk == 0 ? c_last : c_last - 1;
    for (std::uint64_t g = row0 / kBlockRows; g * kBlockRows < end_row; ++g) {
      const std::uint64_t r_first = std::max(row0, g * kBlockRows);
      const std::uint64_t r_last = std::min(end_row, (g + 1) * kBlockRows);
      const std::uint64_t n = r_last - r_first;
      // Where chunk c's rows of this block row start.
      const std::uint64_t rows_start =
          origin + g * kBlockRows * pitch + (r_first % kBlockRows) * kBlockChunk;
      auto partial = [&](std::uint64_t c) {  // rows' pieces of a partial chunk, 1 KiB apart
        const std::uint64_t b0 = std::max(col_byte, c * kBlockChunk);
        const std::uint64_t b1 = std::min(end_byte, (c + 1) * kBlockChunk);
        emit({rows_start + c * kBlockBytes + b0 % kBlockChunk, b1 - b0, n, kBlockChunk});
      };
      if (w_first > c_first) partial(c_first);
      if (w_first <= w_last) {
        // Whole chunks of consecutive rows are contiguous, kBlockBytes apart, and adjacent
        // when the rows fill their blocks: one run, as emitting them one by one would join.
        const std::uint64_t whole = w_last - w_first + 1;
        const std::uint64_t first = rows_start + w_first * kBlockBytes;
        if (n == kBlockRows) {
          emit({first, whole * kBlockBytes, 1, 0});
        } else {
          emit({first, n * kBlockChunk, whole, whole > 1 ? kBlockBytes : 0});
        }
      }
      if (w_last < c_last) partial(c_last);
    }
    if (pending.count != 0) visit(pending);
  }

  [[noreturn, gnu::noinline]] static void out_of_bounds(const TileRef& t, const TensorDecl& d);
  std::array<std::optional<Placed>, kTensorCount> slots_{};
};

}  // namespace iosim::detail
