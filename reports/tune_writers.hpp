#pragma once
// Writers of `iosim tune` results: they only format what tune() produced. Each writes the `top`
// fastest feasible points (0: all) and every infeasible point (the table: their count and the
// first few reasons).
//
// JSON (schemas/tune.schema.json):
//   { "schema_version": 1, "profile", "algorithm", "l2": "on"|"off", "problem": {as iosim run's},
//     "space": { "block_q": [...], "block_kv": [...], "stages": [...], "threads": [...] },
//              (0 in a list: the algorithm's own choice)
//     "points", "feasible", "infeasible": counts, "tie_band": fraction, "best_time_s",
//     "ranked": [ { "rank", "point", "block_q", "block_kv", "stages", "threads", "time_s",
//                   "time_over_best", "within_tie_band", "bound", "ctas_per_sm", "waves",
//                   "hbm_total_bytes", "registers_per_thread", "smem_bytes_per_cta" } ... ],
//     "default": { the tiling the algorithm picks, "feasible", "time_s", "rank" or null, ... },
//     "infeasible_points": [ { "point", "block_q", "block_kv", "stages", "threads",
//                              "infeasible_reason" } ... ] }
// The ranked points' tiling is the one resolved; an infeasible point's is as resolved where the
// plan got that far, else as asked (0: left to the algorithm).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "api/tune.hpp"

namespace iosim {

/// The ranked list (the tie band's points marked), the algorithm's default and the infeasible
/// points' count with the first reasons.
std::string tune_table(const TuneResult& result, std::size_t top);

/// The documented object above.
nlohmann::json tune_to_json(const TuneResult& result, std::size_t top);

/// One row per ranked point, then one per infeasible point (rank empty, its reason), header first.
std::string tune_csv(const TuneResult& result, std::size_t top);

}  // namespace iosim
