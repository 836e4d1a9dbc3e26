#pragma once
// The vocabulary of compute ops: one row per ComputeKind (sim/schedule/tile_op.hpp), the one place
// where what each kind means is written. sim/ carries the kind as a tag the engine never reads: it
// times an op from its FLOP fields. What asks for an op's meaning reads its row here: the numeric
// executor (numerics/cta_interpreter.cpp, which refuses the kinds without a numeric meaning and
// carries out the others, a case each), explain's trace (the buffers an op writes, what its
// numbers show: teach/trace.cpp) and explain's words (teach/describe.cpp).
// A new op is its enumerator, its row in compute_ops.cpp and its case in CtaInterpreter::compute().
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/schedule/tensor.hpp"
#include "sim/schedule/tile_op.hpp"

namespace iosim {

/// Whether the numeric executor carries a kind out.
enum class NumericMeaning : std::uint8_t {
  executed,  // its case in CtaInterpreter::compute() (numerics/cta_interpreter.cpp)
  none,      // a transformer layer's op (transformer/): never in an attention schedule, the only
             // schedules the executor runs; it refuses them by this row
};

/// A few on-chip buffers, named by tensor, in a fixed order.
struct Buffers {
  std::array<TensorId, 4> ids{};
  std::size_t count = 0;
  constexpr Buffers(std::initializer_list<TensorId> list) {
    for (TensorId t : list) ids[count++] = t;
  }
  constexpr const TensorId* begin() const { return ids.data(); }
  constexpr const TensorId* end() const { return ids.data() + count; }
};

/// What one ComputeKind is. An op's tile is the score tile (query rows x key columns) unless the
/// formula says otherwise.
struct ComputeOpDef {
  ComputeKind kind{};
  std::string_view name;     // the enumerator's name: "online_softmax"
  std::string_view formula;  // what it computes on the CTA's on-chip buffers, and its tile
  // The line `iosim explain` prints for it, before the FLOPs (teach/describe.cpp), with fields
  // filled by narrate(): {query_rows} ("query rows 0:16"), {score_tile} ("query rows 0:16 x key
  // columns 16:32"), {rows} ("rows 0:16", the tile's) and {tensor} (the tile's tensor).
  std::string_view narration;
  // The on-chip buffers it writes, in the order explain shows them (teach/trace.cpp).
  Buffers writes{};
  bool writes_own_tile = false;  // it writes the buffer of its tile's tensor (`writes` is empty)
  // It moves the running max m and rescales O and l by e^(m_old - m_new): explain shows m before
  // and the factor.
  bool rescales = false;
  bool fills_constants = false;  // it writes constants only: explain shows no numbers for it
  NumericMeaning numeric = NumericMeaning::executed;
};

/// Every row, in the enumerators' order: compute_op_defs()[k] is kind k's.
std::span<const ComputeOpDef> compute_op_defs();

/// The row of `kind`.
const ComputeOpDef& compute_op_def(ComputeKind kind);

/// The on-chip buffers compute op `op` writes, in its row's order.
std::vector<TensorId> written_by(const TileOp& op);

/// The row's narration of compute op `op`, its fields filled from the op's tile.
std::string narrate(const TileOp& op);

}  // namespace iosim
