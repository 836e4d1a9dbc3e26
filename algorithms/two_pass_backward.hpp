#pragma once
// The two-pass backward dataflow (a kernel description's `backward: two_pass`): one main kernel
// whose CTA x first computes dK_x and dV_x for key block x looping over the query blocks (K_x, V_x
// loaded once; Q_i, dO_i, L_i, D_i streamed; S and P recomputed; dV += P^T dO, dP = dO V^T,
// dS = P o (dP - D), dK += scale dS^T Q; dK_x, dV_x written once), then dQ_x for query block x
// looping over the key blocks (Q_x, dO_x, L_x, D_x loaded once; K_j, V_j streamed; S, P, dP and dS
// recomputed; dQ += scale dS K; dQ_x written once). A pre-pass writes D = rowsum(dO o O). No
// atomics and no fp32 dQ accumulator in HBM: each gradient is written once, at the price of
// computing S, P, dP and dS twice.
#include <cstdint>
#include <memory>
#include <string>

#include "algorithms/algorithm.hpp"

namespace iosim {

/// Plans the two-pass backward (p.pass == bwd): tiles from `req`, else 64 x 128 (d <= 64:
/// 128 x 128) with 2 stages of the streamed tiles and 128 threads; `name` names its kernel
/// ("<name>_bwd") and messages.
Planned plan_two_pass_backward(const AttentionProblem& p, const HardwareProfile& hw,
                               const TilingRequest& req, const std::string& name);

/// Shared memory of its main kernel per CTA: the larger pass's tiles (stationary operands, the
/// streamed ones `stages` deep, the P/dS tile), bytes.
std::int64_t two_pass_backward_smem_bytes(const AttentionProblem& p, const Tiling& t);

/// The closed form (algorithms/io_formulas.hpp) of the two-pass backward (p.pass == bwd), per
/// (batch, head): a pre-pass reads O and dO and writes D; pass 1 reads each key block's K and V
/// once and, per query step (query_step rows) meeting it, that step's Q, dO (element type) and L,
/// D (fp32), and writes dK, dV once; pass 2 reads each query block's Q, dO, L, D once and, per key
/// step (key_step rows) meeting it, K and V, and writes dQ once. Steps of 0 are the blocks.
ReadWriteBytes two_pass_backward_closed_form(const AttentionProblem& p, std::int64_t block_q,
                                             std::int64_t block_kv, std::int64_t query_step,
                                             std::int64_t key_step);

}  // namespace iosim
