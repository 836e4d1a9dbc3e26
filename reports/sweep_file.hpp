#pragma once
// Sweep files: what `iosim sweep` writes (JSON or CSV, one row per point) and what `iosim report`
// reads back and merges (the shards of one sweep, or several sweeps).
//
// JSON layout (keys sorted, so equal sweeps give byte-identical files):
//   { "format": "iosim-sweep", "version": 1,
//     "sweep": { "id": "<hash of the axes>", "axes": { "--seq": ["512", ...], ... },
//                "points": <points of the whole sweep>, "shard": "K/N" },
//     "profiles": { "<name>": { peak rates and sizes the report's roofline needs } },
//     "rows": [ { "point": i, <report_to_json() of the point without simulation_wall_s>,
//                 "cold_l2": bool } ... ] }        // in point order
// A row of an infeasible point has "feasible": false and its "infeasible_reason".
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "api/iosim.hpp"
#include "api/sweep.hpp"

namespace iosim {

/// One swept flag and its values as the user would type them.
struct SweepAxis {
  std::string flag;
  std::vector<std::string> values;
};

/// What a sweep file records about the sweep it belongs to.
struct SweepDescription {
  std::vector<SweepAxis> axes;
  std::size_t total_points = 0;
  Shard shard;
};

/// The JSON sweep file of `reports[i]` for `points[i]`. `profiles` is keyed like the points.
std::string sweep_json(const SweepDescription& description, const std::vector<SweepPoint>& points,
                       const std::vector<Report>& reports,
                       const std::map<std::string, HardwareProfile>& profiles);

/// sweep_json() in pieces, for writing a sweep file row by row: `head`, the rows joined by
/// ",\n", `tail`; `empty` is the whole file when there are no rows.
struct SweepJsonFrame {
  std::string head, tail, empty;
};
SweepJsonFrame sweep_json_frame(const SweepDescription& description,
                                const std::map<std::string, HardwareProfile>& profiles);
/// One row of sweep_json(), indented as it appears there, without the separator.
std::string sweep_json_row(const SweepPoint& point, const Report& report);

/// The CSV header line and one row line (each ending in a newline) of sweep_csv().
std::string sweep_csv_header();
std::string sweep_csv_row(const SweepPoint& point, const Report& report);

/// The CSV sweep file: a "point" column, then csv_header()'s columns.
std::string sweep_csv(const std::vector<SweepPoint>& points, const std::vector<Report>& reports);

/// A profile's peaks as a sweep file records them (what a roofline needs).
struct ProfilePeaks {
  std::string description;
  double hbm_gbps = 0.0;  // achievable: peak times the achievable fraction
  double hbm_peak_gbps = 0.0;
  double l2_gbps = 0.0;
  std::int64_t l2_size_bytes = 0;
  std::int64_t sram_bytes_per_cta = 0;
  std::map<std::string, double> tensor_tflops;  // by dtype name
  double fp32_tflops = 0.0;
};

/// One row of a sweep file, as a report needs it.
struct SweepRow {
  std::string source;  // file it came from
  std::size_t point = 0;
  std::string profile, algorithm, dtype, pass, l2;
  std::string pattern;  // block-sparse pattern spec; "" for dense attention
  std::int64_t batch = 0, heads = 0, seq = 0, seq_kv = 0, head_dim = 0;
  std::int64_t kv_heads = 0;     // = heads without grouped-query attention
  std::int64_t page_tokens = 0;  // paged: tokens per K/V page; 0 for the other schedules
  std::int64_t splits = 0;       // flash-decoding, paged: K/V splits as run; 0 for the others
  std::int64_t window = 0;       // --window: keys of the sliding window; 0 for none
  std::string kv_dtype;          // --kv-dtype: K/V's stored type, when given; "" for none
  std::int64_t latent_dim = 0;   // --latent-dim: a latent cache's V columns; 0 for none
  bool causal = false, mask = false, cold_l2 = false;
  double dropout = 0.0;
  double sm_clock_mhz = 0.0;  // the clock the point ran at
  // The clock the sweep asked for (--sm-clock-mhz); 0 where the profile's power limit chose it.
  // Rows group by this one: grouped by the clock each ran at, the points of a power-limited
  // profile (each at its own clock) fell apart into one-point series.
  double requested_clock_mhz = 0.0;
  bool has_power = false;  // the row says whether its clock was given (feasible rows do)
  std::int64_t block_q = 0, block_kv = 0, threads = 0, stages = 0;  // resolved tiling
  std::string warpgroups, pack_gqa;  // --warpgroups, --pack-gqa as given; "" when not given
  std::int64_t backward_block_q = 0, backward_block_kv = 0;  // flash3 fwdbwd's; 0: none of its own
  bool feasible = false;
  std::string infeasible_reason;
  double hbm_read_bytes = 0, hbm_write_bytes = 0, l2_read_bytes = 0, l2_write_bytes = 0;
  double hbm_dirty_at_end_bytes = 0;  // left dirty in L2 at the end; written back after the run
  double flops = 0, tensor_flops = 0, time_s = 0;
  std::string bound;
  double compulsory_bytes = 0, closed_form_bytes = 0, lower_bound_bytes = 0;
  /// Per tensor: HBM read, HBM write, L2 read, L2 write bytes, and left dirty in L2 at the end
  /// (0 in sweeps written before it was counted by tensor).
  std::map<std::string, std::array<double, 5>> per_tensor;

  /// HBM bytes with the lines dirty in L2 at the end counted as written (hbm_total_bytes).
  double hbm_bytes() const { return hbm_read_bytes + hbm_write_bytes + hbm_dirty_at_end_bytes; }
  double l2_bytes() const { return l2_read_bytes + l2_write_bytes; }
};

/// Several sweep files merged.
struct SweepData {
  std::vector<std::string> sources;
  std::vector<SweepRow> rows;  // file order, then point order; duplicates dropped
  std::map<std::string, ProfilePeaks> profiles;
  std::size_t duplicate_rows = 0;     // rows seen twice (e.g. one shard passed twice)
  std::vector<std::string> coverage;  // one line per sweep: points present of points swept
};

/// Reads and merges sweep files: JSON (sweep --out FILE.json) or CSV (sweep --format csv, --out
/// FILE.csv). A CSV records no profile peaks and no sweep axes: its profiles are loaded by the
/// name in its "profile" column (a built-in profile, with the --set overrides its name records),
/// and its coverage line says that the points swept are unknown. Throws ConfigError naming the
/// file for unreadable, malformed or non-sweep input, and naming what a CSV lacks.
SweepData load_sweeps(const std::vector<std::filesystem::path>& files);

// The best tile and the heatmap of each problem (sweep_best_tiles.cpp).

/// The best tiling of one problem: rows that differ only in block sizes, threads or stages.
struct BestBlock {
  std::size_t first = 0;          // a row of the group (for its problem fields)
  std::size_t by_hbm = 0;         // fewest HBM bytes (ties: less time)
  std::size_t by_time = 0;        // least time (ties: fewer HBM bytes)
  int tried = 0;                  // rows in the group
  int feasible = 0;               // feasible rows; by_hbm and by_time are meaningless when 0
  std::vector<std::size_t> rows;  // every row of the group
};

/// One entry per problem, ordered by profile, algorithm, head dim, N, then the other fields.
std::vector<BestBlock> best_blocks(const SweepData& data);

/// One tile (block_q x block_kv) of a problem in its time-vs-tile heatmap.
struct TileCell {
  bool tried = false;     // some row of the problem has this tile
  bool feasible = false;  // some row of the tile ran
  std::size_t row = 0;    // the tile's fastest row (ties: fewer HBM bytes), else one infeasible
};

/// The time of each tile of one problem (the rows of a BestBlock): block_q down, block_kv across.
struct TileHeatmap {
  BestBlock best;                     // best.by_time is the row of the best cell
  std::vector<std::int64_t> block_q;  // ascending
  std::vector<std::int64_t> block_kv;
  std::vector<TileCell> cells;  // block_q.size() x block_kv.size(), row-major
  const TileCell& at(std::size_t q, std::size_t kv) const {
    return cells[q * block_kv.size() + kv];
  }
};

/// One heatmap per problem, in best_blocks() order.
std::vector<TileHeatmap> tile_heatmaps(const SweepData& data);

}  // namespace iosim
