#pragma once
// A ragged (varlen) batch (AttentionProblem::seq_lens): sequences of different lengths packed end
// to end in one kernel launch, as FlashAttention-2's varlen forward (cu_seqlens) runs them. The
// batch is the union of its sequences' batch-1 problems (sequence_problem()), each planned by the
// algorithm's own planner; the launch is the varlen kernel's grid over the longest sequence.
#include <string>

#include "algorithms/algorithm.hpp"

namespace iosim {

struct KernelDescription;  // algorithms/kernel_description.hpp

/// Throws ConfigError unless `kernel` (the run's description: a preset's or the user's) can run
/// the ragged batch `p`: the query-stationary forward with no block mask, --pass fwd.
void check_ragged_kernel(const AttentionProblem& p, const KernelDescription& kernel);

/// Plans ragged `p` with `algorithm`: one schedule per distinct (N_b, N_kv_b), batch 1, through
/// algorithm.plan, under one tiling (a tiling that differs between sequences is infeasible), and
/// the launch of them all. The varlen grid is FlashAttention-2's, (ceil(max N / block_q), B, H)
/// with x fastest (QueryView::grid's order); a CTA whose query block lies past its sequence's end
/// emits nothing and still takes its launch slot (on the GPU it returns at once).
Planned plan_ragged(const Algorithm& algorithm, const AttentionProblem& p,
                    const HardwareProfile& hw, const TilingRequest& req);

/// The closed form of ragged `p`: the sum over its sequences of the algorithm's batch-1 closed
/// forms, for the tiling the plan resolved.
ReadWriteBytes ragged_closed_form(const Algorithm& algorithm, const AttentionProblem& p,
                                  const Tiling& t);

/// The bounds of ragged `p`: each sequence's (compulsory bytes, closed form, lower bound), summed.
IoBounds ragged_io_bounds(const Algorithm& algorithm, const AttentionProblem& p, const Tiling& t,
                          std::int64_t sram_bytes);

}  // namespace iosim
