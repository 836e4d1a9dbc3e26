#include "algorithms/paper_steps.hpp"

namespace iosim::paper {
namespace {

using CK = ComputeKind;
using T = TensorId;

bool is(const TileOp& op, OpKind kind, T tensor) {
  return op.kind == kind && op.tile.tensor == tensor;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

bool backward_kernel(const std::string& kernel) {
  return ends_with(kernel, "_bwd") || kernel.rfind("gemm_d", 0) == 0 || kernel == "dot_do_o" ||
         kernel == "convert_dq";
}

// FlashAttention, Algorithm 0: S = QK^T (line 1), P = softmax(S) (line 2), O = PV (line 3), each
// through HBM.
PaperStep standard_forward(const std::string& kernel) {
  const std::string alg = "FlashAttention, Algorithm 0 (standard attention)";
  if (kernel == "gemm_qk") return {alg, "line 1", ""};
  if (kernel == "gemm_pv") return {alg, "line 3", ""};
  return {alg, "line 2", kernel == "softmax" ? "" : "the mask / dropout pass before the softmax"};
}

// FlashAttention, Algorithm 3 (appendix B): dV = P^T dO (1), dP = dO V^T (2), dS (3), dQ = dS K
// (4), dK = dS^T Q (5).
PaperStep standard_backward(const std::string& kernel) {
  const std::string alg = "FlashAttention, Algorithm 3 (standard attention backward)";
  if (kernel == "gemm_dv") return {alg, "line 1", ""};
  if (kernel == "gemm_dp") return {alg, "line 2", ""};
  if (kernel == "softmax_bwd") return {alg, "line 3", ""};
  if (kernel == "gemm_dq") return {alg, "line 4", ""};
  if (kernel == "gemm_dk") return {alg, "line 5", ""};
  return {alg, "", "the dropout / mask gradient pass"};
}

// FlashAttention, Algorithm 1: for each K/V block j (line 5: load K_j, V_j, line 6), for each Q
// block i (line 7): load Q_i, O_i, l_i, m_i (8), S_ij = Q_i K_j^T (9), block statistics and the
// new m, l (10-11), O_i written (12), l_i, m_i written (13).
PaperStep flash1_forward(const TileOp& op) {
  const PaperStep alg{"FlashAttention, Algorithm 1", "", ""};
  auto at = [&](const char* line, const char* note = "") {
    return PaperStep{alg.algorithm, line, note};
  };
  if (op.kind == OpKind::load) {
    if (op.tile.tensor == T::K || op.tile.tensor == T::V) return at("line 6");
    return at("line 8");
  }
  if (op.kind == OpKind::store) return at(op.tile.tensor == T::O ? "line 12" : "line 13");
  switch (op.compute) {
    case CK::init_state:
      return at("line 2", "initialized on chip at the first K/V block instead of read from HBM");
    case CK::scores:
      return at("line 9");
    case CK::apply_mask:
      return at("", "the mask of Algorithm 2, line 11");
    case CK::flash1_update:
      return at("lines 10-12");
    default:
      return alg;
  }
}

// FlashAttention-2, Algorithm 1: for each Q block i (line 3): load Q_i (4), initialize O, l, m
// (5); for each K/V block j (6): load K_j, V_j (7), S = Q_i K_j^T (8), m, P~, l (9), O rescaled
// plus P~ V_j (10); O / l (12), L = m + log l (13), write O_i (14) and L_i (15).
PaperStep flash2_forward(const TileOp& op, const std::string& alg) {
  auto at = [&](const char* line, const char* note = "") { return PaperStep{alg, line, note}; };
  if (op.kind == OpKind::load) return at(op.tile.tensor == T::Q ? "line 4" : "line 7");
  if (is(op, OpKind::store, T::O)) return at("line 14");
  if (is(op, OpKind::store, T::L)) return at("line 15");
  if (op.kind != OpKind::compute) return at("");
  switch (op.compute) {
    case CK::init_state:
      return at("line 5");
    case CK::scores:
      return at("line 8");
    case CK::online_softmax:
      return at("line 9", "O's rescaling of line 10 is done here, before P~ V_j is added");
    case CK::accumulate_pv:
      return at("line 10");
    case CK::finalize:
      return at("lines 12-13");
    case CK::apply_mask:
      return at("", "the causal / index mask, before line 9");
    default:
      return at("");
  }
}

// FlashAttention, Algorithm 4 (appendix B): for each K/V block j (6): load K_j, V_j (7), dK~, dV~
// := 0 (8); for each Q block i (9): load Q_i, O_i, dO_i, dQ_i, l_i, m_i (10), S (11), mask (12),
// P (13), dropout (14-15), dV~ += P^T dO (16), dP = dO V^T (17-18), D = rowsum(dO o O) (19),
// dS (20), dQ_i += dS K_j written (21), dK~ += dS^T Q_i (22); write dK_j, dV_j (24).
PaperStep flash1_backward(const TileOp& op) {
  const std::string alg = "FlashAttention, Algorithm 4 (backward)";
  auto at = [&](const char* line) { return PaperStep{alg, line, ""}; };
  if (op.kind == OpKind::load) {
    return at(op.tile.tensor == T::K || op.tile.tensor == T::V ? "line 7" : "line 10");
  }
  if (op.kind == OpKind::store) return at(op.tile.tensor == T::dQ ? "line 21" : "line 24");
  switch (op.compute) {
    case CK::zero_grad:
      return at("line 8");
    case CK::scores:
      return at("line 11");
    case CK::apply_mask:
      return at("line 12");
    case CK::recompute_p_ml:
      return at("line 13");
    case CK::apply_dropout:
      return at("lines 14-15");
    case CK::accumulate_dv:
      return at("line 16");
    case CK::grad_p:
      return at("line 17");
    case CK::dropout_grad:
      return at("line 18");
    case CK::row_dot:
      return at("line 19");
    case CK::grad_s:
      return at("line 20");
    case CK::accumulate_dq:
      return at("line 21");
    case CK::accumulate_dk:
      return at("line 22");
    default:
      return at("");
  }
}

// FlashAttention-2, Algorithm 2: D = rowsum(dO o O) (line 4, its own kernel); for each K/V block j
// (5): load K_j, V_j (6), dK, dV := 0 (7); for each Q block i (8): load Q_i, O_i, dO_i, dQ_i, L_i,
// D_i (9), S (10), P = exp(S - L) (11), dV += P^T dO (12), dP = dO V^T (13), dS (14), dQ_i += dS
// K_j in HBM (15), dK += dS^T Q_i (16); write dK_j, dV_j (18).
PaperStep flash2_backward(const std::string& kernel, const TileOp& op) {
  const std::string alg = "FlashAttention-2, Algorithm 2 (backward)";
  auto at = [&](const char* line, const char* note = "") { return PaperStep{alg, line, note}; };
  if (kernel == "dot_do_o") return at("line 4");
  if (kernel == "convert_dq") {
    return at("", "dQ, accumulated in fp32 by line 15's atomic adds, converted to the input type");
  }
  if (op.kind == OpKind::load) {
    return at(op.tile.tensor == T::K || op.tile.tensor == T::V ? "line 6" : "line 9");
  }
  if (op.kind == OpKind::reduce) return at("line 15", "an fp32 atomic add done in L2");
  if (op.kind == OpKind::store) return at("line 18");
  switch (op.compute) {
    case CK::zero_grad:
      return at("line 7");
    case CK::scores:
      return at("line 10");
    case CK::recompute_p:
      return at("line 11");
    case CK::accumulate_dv:
      return at("line 12");
    case CK::grad_p:
      return at("line 13");
    case CK::grad_s:
      return at("line 14");
    case CK::dq_partial:
      return at("line 15");
    case CK::accumulate_dk:
      return at("line 16");
    default:
      return at("");
  }
}

// Flash-Decoding (a blog post) and PagedAttention number no lines; each split of K/V runs
// FlashAttention-2's inner loop, and the reduce kernel combines the splits' partials.
PaperStep split_kv(const std::string& kernel, const TileOp& op) {
  if (ends_with(kernel, "_reduce")) return {};
  const std::string alg = "FlashAttention-2, Algorithm 1, on one split of K/V";
  const char* partial = "as a partial O and log-sum-exp, which the reduce kernel combines";
  if (op.kind == OpKind::compute && op.compute == CK::finalize_partial) {
    return {alg, "lines 12-13", partial};
  }
  if (is(op, OpKind::store, T::partial_O)) return {alg, "line 14", partial};
  if (is(op, OpKind::store, T::partial_lse)) return {alg, "line 15", partial};
  return flash2_forward(op, alg);
}

}  // namespace iosim::paper
