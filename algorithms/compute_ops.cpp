#include "algorithms/compute_ops.hpp"

#include <fmt/format.h>

#include <iterator>
#include <type_traits>

#include "sim/base/errors.hpp"

namespace iosim {
namespace {

using CK = ComputeKind;
using T = TensorId;
constexpr NumericMeaning kNoNumbers = NumericMeaning::none;

// One row a kind, in the enumerators' order (compute_op_def() indexes it by the kind).
constexpr ComputeOpDef kDefs[] = {
    {.kind = CK::init_state,
     .name = "init_state",
     .formula = "O := 0, m := -inf, l := 0 for the tile's query rows",
     .narration = "O := 0, m := -inf, l := 0 for {query_rows}",
     .writes = {T::O, T::m, T::l},
     .fills_constants = true},
    {.kind = CK::scores,
     .name = "scores",
     .formula = "S := scale * Q K^T",
     .narration = "S = scale * Q K^T for {score_tile}",
     .writes = {T::S}},
    {.kind = CK::scores_accumulate,
     .name = "scores_accumulate",
     .formula = "S += scale * Q K^T (a further chunk of the head dimension)",
     .narration = "S += scale * Q K^T (a further slice of the head dimension) for {score_tile}",
     .writes = {T::S}},
    {.kind = CK::apply_mask,
     .name = "apply_mask",
     .formula = "S := -inf where the causal / index mask hides a score",
     .narration = "mask: S := -inf where a score is hidden, {score_tile}",
     .writes = {T::S}},
    {.kind = CK::softmax_rows,
     .name = "softmax_rows",
     .formula = "P := softmax(S) over complete rows (unfused kernel)",
     .narration = "P = softmax(S) over whole rows, {query_rows}",
     .writes = {T::P}},
    {.kind = CK::apply_dropout,
     .name = "apply_dropout",
     .formula = "P_drop := P * keep / (1 - p); also fills the dropout_mask buffer",
     .narration = "dropout: P_drop = P * keep / (1 - p), {score_tile}",
     .writes = {T::P_drop, T::dropout_mask}},
    {.kind = CK::online_softmax,
     .name = "online_softmax",
     .formula = "FA2: m, l updated; P := exp(S - m_new); O rescaled",
     .narration = "online softmax: m_new = max(m, rowmax S), P = e^(S - m_new), "
                  "l = e^(m - m_new) l + rowsum P, O *= e^(m - m_new); {score_tile}",
     .writes = {T::m, T::l, T::P, T::O},
     .rescales = true},
    {.kind = CK::accumulate_pv,
     .name = "accumulate_pv",
     .formula = "O += X V (X: P_drop with dropout, else P)",
     .narration = "O += P V, {score_tile}",
     .writes = {T::O}},
    {.kind = CK::finalize,
     .name = "finalize",
     .formula = "FA2: O := O / l; L := m + log l",
     .narration = "O := O / l, L := m + log l for {query_rows}",
     .writes = {T::O, T::L}},
    {.kind = CK::flash1_update,
     .name = "flash1_update",
     .formula = "FA1 Algorithm 1 lines 9-13: combine (O, l, m) with this K/V block",
     .narration = "combine with this K/V block: m_new = max(m, rowmax S), "
                  "l_new = e^(m - m_new) l + rowsum e^(S - m_new), "
                  "O = (l e^(m - m_new) O + e^(S - m_new) V) / l_new; {score_tile}",
     .writes = {T::m, T::l, T::O},
     .rescales = true},
    // Backward pass. With dropout, X below is P_drop (P o keep / (1 - p)), else P.
    {.kind = CK::zero_grad,
     .name = "zero_grad",
     .formula = "buffer of the tile's tensor := 0, tile.rows x d (dQ, dK, dV, dQaccum)",
     .narration = "{tensor} := 0 on chip, {rows}",
     .writes = {},
     .writes_own_tile = true,
     .fills_constants = true},
    {.kind = CK::row_dot,
     .name = "row_dot",
     .formula = "D := rowsum(dO o O) for the tile's query rows (tile: O rows)",
     .narration = "D = rowsum(dO * O) for {query_rows}",
     .writes = {T::D}},
    {.kind = CK::recompute_p,
     .name = "recompute_p",
     .formula = "P := exp(S - L) (FA2: from the saved log-sum-exp)",
     .narration = "P = e^(S - L), recomputed from the saved log-sum-exp, {score_tile}",
     .writes = {T::P}},
    {.kind = CK::recompute_p_ml,
     .name = "recompute_p_ml",
     .formula = "P := exp(S - m) / l (FA1 Algorithm 4: from the saved max and sum)",
     .narration = "P = e^(S - m) / l, recomputed from the saved m and l, {score_tile}",
     .writes = {T::P}},
    {.kind = CK::accumulate_dv,
     .name = "accumulate_dv",
     .formula = "dV += X^T dO",
     .narration = "dV += P^T dO, {score_tile}",
     .writes = {T::dV}},
    {.kind = CK::grad_p,
     .name = "grad_p",
     .formula = "dP := dO V^T (over the head-dimension chunk on chip)",
     .narration = "dP = dO V^T, {score_tile}",
     .writes = {T::dP}},
    {.kind = CK::grad_p_accumulate,
     .name = "grad_p_accumulate",
     .formula = "dP += dO V^T (a further chunk of the head dimension)",
     .narration = "dP += dO V^T (a further slice of the head dimension), {score_tile}",
     .writes = {T::dP}},
    {.kind = CK::dropout_grad,
     .name = "dropout_grad",
     .formula = "dP := dP o keep / (1 - p), keep from the mask on chip or regenerated",
     .narration = "dP := dP * keep / (1 - p), {score_tile}",
     .writes = {T::dP}},
    {.kind = CK::grad_s,
     .name = "grad_s",
     .formula = "dS := P o (dP - D) (D from the pre-pass or computed on chip)",
     .narration = "dS = P * (dP - D), {score_tile}",
     .writes = {T::dS}},
    {.kind = CK::softmax_grad_rows,
     .name = "softmax_grad_rows",
     .formula = "dS := P o (dP - rowsum(P o dP)) over complete rows (unfused kernel)",
     .narration = "dS = P * (dP - rowsum(P * dP)) over whole rows, {query_rows}",
     .writes = {T::dS}},
    {.kind = CK::mask_grad,
     .name = "mask_grad",
     .formula = "dS := 0 where the causal / index mask hides a score",
     .narration = "dS := 0 where a score is hidden, {score_tile}",
     .writes = {T::dS}},
    {.kind = CK::accumulate_dq,
     .name = "accumulate_dq",
     .formula = "dQ += scale * dS K",
     .narration = "dQ += scale * dS K, {score_tile}",
     .writes = {T::dQ}},
    {.kind = CK::dq_partial,
     .name = "dq_partial",
     .formula = "dQaccum := scale * dS K (this K/V block's share, fp32, for a reduce)",
     .narration = "dQaccum = scale * dS K (this K/V block's share), {score_tile}",
     .writes = {T::dQaccum}},
    {.kind = CK::accumulate_dk,
     .name = "accumulate_dk",
     .formula = "dK += scale * dS^T Q",
     .narration = "dK += scale * dS^T Q, {score_tile}",
     .writes = {T::dK}},
    {.kind = CK::convert_dq,
     .name = "convert_dq",
     .formula = "dQ := dQaccum, dK := dKaccum, dV := dVaccum (fp32 to the element type; tile: "
                "the gradient's rows)",
     .narration = "{tensor} := {tensor}accum (fp32 to the element type), {rows}",
     .writes = {},
     .writes_own_tile = true},
    // Split-KV decoding (flash-decoding, paged).
    {.kind = CK::finalize_partial,
     .name = "finalize_partial",
     .formula = "partial_O := O / l, partial_lse := m + log l (a split that saw no key: 0, -inf); "
                "tile: the O tile (query rows x d)",
     .narration = "partial_O = O / l, partial_lse = m + log l for {query_rows}",
     .writes = {T::partial_O, T::partial_lse}},
    {.kind = CK::combine_partial,
     .name = "combine_partial",
     .formula = "one split's partial_O, partial_lse on chip: m := max(m, lse), then "
                "l := l e^(m_old - m) + e^(lse - m), O := O e^(m_old - m) + e^(lse - m) "
                "partial_O; tile: the O tile (query rows x d)",
     .narration = "combine a split: m_new = max(m, lse), O and l rescaled by e^(m - m_new) and "
                  "the split's e^(lse - m_new) partial_O added, {query_rows}",
     .writes = {T::O, T::m, T::l},
     .rescales = true},
    // The ops of a transformer layer around attention (transformer/). The tile is the output
    // tile. explain does not trace them; their narration is there for completeness.
    {.kind = CK::matmul,
     .name = "matmul",
     .formula = "Y := X W^T over a chunk of K (tile: Y rows x cols)",
     .narration = "Y = X W^T, {rows}",
     .writes = {T::Y},
     .numeric = kNoNumbers},
    {.kind = CK::matmul_accumulate,
     .name = "matmul_accumulate",
     .formula = "Y += X W^T (a further chunk of K)",
     .narration = "Y += X W^T (a further chunk of K), {rows}",
     .writes = {T::Y},
     .numeric = kNoNumbers},
    {.kind = CK::norm_rows,
     .name = "norm_rows",
     .formula = "Y := norm(X) row by row, scaled by the weight vector W",
     .narration = "Y = norm(X) * W, {rows}",
     .writes = {T::Y},
     .numeric = kNoNumbers},
    {.kind = CK::residual_add,
     .name = "residual_add",
     .formula = "Y := X + R",
     .narration = "Y = X + R, {rows}",
     .writes = {T::Y},
     .numeric = kNoNumbers},
    {.kind = CK::activation,
     .name = "activation",
     .formula = "Y := act(X) or, gated, SiLU(X gate half) * (X up half)",
     .narration = "Y = act(X), {rows}",
     .writes = {T::Y},
     .numeric = kNoNumbers},
    {.kind = CK::splitk_reduce,
     .name = "splitk_reduce",
     .formula = "Y := the sum of a split-K GEMM's Y_partial slices (+ bias)",
     .narration = "Y = sum of the split-K partials, {rows}",
     .writes = {T::Y},
     .numeric = kNoNumbers},
};
static_assert(std::extent_v<decltype(kDefs)> == kComputeKindCount,
              "every ComputeKind has its row in kDefs");

}  // namespace

std::span<const ComputeOpDef> compute_op_defs() {
  return kDefs;
}

const ComputeOpDef& compute_op_def(ComputeKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  ensure(i < kComputeKindCount && kDefs[i].kind == kind,
         "compute kind {} has no row of its own in algorithms/compute_ops.cpp", i);
  return kDefs[i];
}

std::vector<TensorId> written_by(const TileOp& op) {
  const ComputeOpDef& def = compute_op_def(op.compute);
  if (def.writes_own_tile) return {op.tile.tensor};
  return {def.writes.begin(), def.writes.end()};
}

std::string narrate(const TileOp& op) {
  const TileRef& t = op.tile;
  const std::string rows = fmt::format("rows {}:{}", t.row0, t.row0 + t.rows);
  const std::string query_rows = "query " + rows;
  return fmt::format(
      fmt::runtime(compute_op_def(op.compute).narration), fmt::arg("query_rows", query_rows),
      fmt::arg("score_tile",
               fmt::format("{} x key columns {}:{}", query_rows, t.col0, t.col0 + t.cols)),
      fmt::arg("rows", rows), fmt::arg("tensor", tensor_name(t.tensor)));
}

}  // namespace iosim
