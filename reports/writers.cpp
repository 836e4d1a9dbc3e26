#include "reports/writers.hpp"

#include <fmt/format.h>

#include <cmath>

#include "api/schema_version.hpp"
#include "sim/base/csv_field.hpp"
#include "sim/schedule/block_mask.hpp"
#include "sim/schedule/block_table.hpp"

namespace iosim {
namespace {

using nlohmann::json;

json counters_json(const Counters& c) {
  json per_tensor = json::object();
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    const std::uint64_t v[] = {c.hbm.read_bytes[i], c.hbm.write_bytes[i], c.l2.read_bytes[i],
                               c.l2.write_bytes[i], c.l2_dirty_at_end[i]};
    if (v[0] + v[1] + v[2] + v[3] + v[4] == 0) continue;
    // The lines of a tensor still dirty in the L2 at the end are its HBM writes still to come:
    // beside its writes during the run (which Nsight Compute's DRAM counters see), not in them.
    per_tensor[std::string(tensor_name(static_cast<TensorId>(i)))] = {
        {"hbm_read_bytes", v[0]},
        {"hbm_write_bytes", v[1]},
        {"hbm_write_dirty_at_end_bytes", v[4]},
        {"l2_read_bytes", v[2]},
        {"l2_write_bytes", v[3]}};
  }
  return {{"hbm_read_bytes", c.hbm.read_total()},
          {"hbm_write_bytes", c.hbm.write_total()},
          {"hbm_write_dirty_at_end_bytes", c.l2_dirty_at_end_bytes},
          {"hbm_total_bytes", c.hbm_total_bytes()},
          {"l2_read_bytes", c.l2.read_total()},
          {"l2_write_bytes", c.l2.write_total()},
          {"smem_read_bytes", c.smem_read_bytes},
          {"smem_write_bytes", c.smem_write_bytes},
          {"flops", c.flops()},
          {"tensor_flops", c.tensor_flops},
          {"fp32_flops", c.fp32_flops},
          {"sfu_ops", c.sfu_ops},
          {"int32_ops", c.int32_ops},
          {"per_tensor", per_tensor}};
}

std::string grid_text(const Dim3& g) {
  return fmt::format("{}x{}x{}", g.x, g.y, g.z);
}

// How a column's value is written in CSV.
enum class Csv {
  plain,   // bools true/false, numbers as fmt's {} writes them, text through csv_field (quoted
           // when it holds a comma, a quote or a line break)
  reason,  // always quoted, its quotes turned into apostrophes
  g9,      // 9 significant digits
  g6,      // 6 significant digits
};

// Which rows have a value in a column.
enum class When {
  always,
  feasible,    // feasible runs only
  infeasible,  // infeasible runs only
  not_null,    // a null value is an empty CSV field and no JSON key (others: JSON null)
};

// One CSV column, and the same value in report_to_json(): key `name` of the JSON object
// `object` ("" for the top level). Where a row has no value the CSV field is empty and the JSON
// has no key.
struct Column {
  const char* name;
  const char* object;
  When when;
  Csv csv;
  json (*value)(const Report&);
};

const AttentionProblem& problem(const Report& r) {
  return r.request.problem;
}
const Counters& total(const Report& r) {
  return r.engine.total;
}
// The run's time by the resource that bound it (sim/engine/time_attribution.hpp), its largest
// row marked: the run's bound.
std::string time_attribution_text(const TimeAttribution& a) {
  const double total = a.total();
  std::string s = fmt::format("\n{:<22} {:>10} {:>7}\n", "where the time goes", "time", "share");
  for (TimeRow row : kAllTimeRows) {
    s += fmt::format(
        "{:<22} {:>10} {:>6.1f}%{}\n", time_row_label(row), human_seconds(a[row]),
        total > 0 ? 100.0 * a[row] / total : 0.0,
        row == a.largest() ? fmt::format("  <- largest: {}-bound", bound_of(row)) : std::string());
  }
  return s;
}

json or_null(bool given, json v) {
  return given ? v : json(nullptr);
}
// `part` over `whole`, 0 without a whole.
double fraction(double part, double whole) {
  return whole > 0 ? part / whole : 0.0;
}

// The CSV columns in order; new ones go after infeasible_reason, so that scripts reading the
// first columns by position keep working. Adding one here adds it to `iosim run --format csv`, the
// sweep's CSV and, at its place, the JSON.
const Column kColumns[] = {
    {"profile", "", When::always, Csv::plain, [](const Report& r) -> json { return r.profile; }},
    {"algorithm", "", When::always, Csv::plain,
     [](const Report& r) -> json { return r.request.algorithm; }},
    {"batch", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return problem(r).batch; }},
    {"heads", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return problem(r).heads; }},
    {"seq", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return problem(r).seq; }},
    {"seq_kv", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return problem(r).seq_kv; }},
    {"head_dim", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return problem(r).head_dim; }},
    {"dtype", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return std::string(dtype_name(problem(r).dtype)); }},
    {"causal", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return problem(r).causal; }},
    {"mask", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return problem(r).mask; }},
    {"dropout", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return problem(r).dropout; }},
    {"block_q", "tiling", When::always, Csv::plain,
     [](const Report& r) -> json { return r.tiling.block_q; }},
    {"block_kv", "tiling", When::always, Csv::plain,
     [](const Report& r) -> json { return r.tiling.block_kv; }},
    {"l2", "", When::always, Csv::plain,
     [](const Report& r) -> json { return r.request.engine.l2_enabled ? "on" : "off"; }},
    {"feasible", "", When::always, Csv::plain,
     [](const Report& r) -> json { return r.feasible(); }},
    {"hbm_read_bytes", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).hbm.read_total(); }},
    {"hbm_write_bytes", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).hbm.write_total(); }},
    {"l2_read_bytes", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).l2.read_total(); }},
    {"l2_write_bytes", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).l2.write_total(); }},
    {"flops", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).flops(); }},
    {"tensor_flops", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).tensor_flops; }},
    {"time_s", "", When::feasible, Csv::g9,
     [](const Report& r) -> json { return r.engine.time_s; }},
    {"bound", "", When::feasible, Csv::plain, [](const Report& r) -> json { return r.bound; }},
    {"compulsory_bytes", "bounds", When::feasible, Csv::plain,
     [](const Report& r) -> json { return r.bounds.compulsory_bytes; }},
    {"closed_form_bytes", "bounds", When::feasible, Csv::plain,
     [](const Report& r) -> json { return r.bounds.closed_form_bytes; }},
    {"lower_bound_bytes", "bounds", When::feasible, Csv::plain,
     [](const Report& r) -> json { return r.bounds.lower_bound_bytes; }},
    {"max_abs_error", "numerics", When::feasible, Csv::g6,
     [](const Report& r) -> json {
       return or_null(r.numerics.max_abs_error.has_value(), r.numerics.max_abs_error.value_or(0));
     }},
    {"infeasible_reason", "", When::infeasible, Csv::reason,
     [](const Report& r) -> json { return r.infeasible_reason; }},
    {"pass", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return pass_name(problem(r).pass); }},
    {"kv_heads", "problem", When::always, Csv::plain,
     [](const Report& r) -> json { return problem(r).kv_head_count(); }},
    {"pattern", "problem", When::always, Csv::plain,
     [](const Report& r) -> json {
       return problem(r).pattern ? json(problem(r).pattern->spec) : json(nullptr);
     }},
    {"page_tokens", "problem", When::always, Csv::plain,
     [](const Report& r) -> json {
       return or_null(problem(r).page_tokens > 0, problem(r).page_tokens);
     }},
    {"block_table", "problem", When::always, Csv::plain,
     [](const Report& r) -> json {
       return problem(r).block_table ? json(problem(r).block_table->source) : json(nullptr);
     }},
    {"splits", "tiling", When::not_null, Csv::plain,  // split-KV decoding
     [](const Report& r) -> json { return or_null(r.tiling.splits > 0, r.tiling.splits); }},
    // Written back after the run ends: part of hbm_total_bytes, not of hbm_write_bytes.
    {"hbm_write_dirty_at_end_bytes", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).l2_dirty_at_end_bytes; }},
    {"hbm_total_bytes", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).hbm_total_bytes(); }},
    {"lower_bound_formula_bytes", "bounds", When::feasible, Csv::plain,
     [](const Report& r) -> json { return r.bounds.lower_bound_formula_bytes; }},
    {"sm_clock_mhz", "", When::always, Csv::g6,
     [](const Report& r) -> json { return r.sm_clock_mhz; }},
    // Every other swept axis and counter, so that sweep rows differ in their columns.
    {"threads", "tiling", When::always, Csv::plain,
     [](const Report& r) -> json { return r.tiling.threads; }},
    {"pipeline_stages", "tiling", When::always, Csv::plain,
     [](const Report& r) -> json { return r.tiling.pipeline_stages; }},
    {"warpgroups", "tiling", When::not_null, Csv::plain,  // flash3's --warpgroups, when given
     [](const Report& r) -> json {
       const auto& w = r.request.tiling.warpgroups;
       return !w ? json(nullptr) : json(*w == PipeOverlap::pingpong ? "pingpong" : "cooperative");
     }},
    {"pack_gqa", "tiling", When::not_null, Csv::plain,  // --pack-gqa on or off, when given
     [](const Report& r) -> json {
       const GqaPacking g = problem(r).pack_gqa;
       return g == GqaPacking::automatic ? json(nullptr) : json(g == GqaPacking::on ? "on" : "off");
     }},
    {"sram_bytes", "tiling", When::always, Csv::plain,
     [](const Report& r) -> json { return r.sram_bytes; }},
    {"density", "tiling", When::not_null, Csv::g9,  // block-sparse: s, the blocks computed
     [](const Report& r) -> json { return r.density ? json(*r.density) : json(nullptr); }},
    {"cold_l2", "", When::always, Csv::plain,
     [](const Report& r) -> json { return r.request.engine.flush_l2_between_kernels; }},
    {"seed", "", When::always, Csv::plain, [](const Report& r) -> json { return r.request.seed; }},
    {"executed", "numerics", When::feasible, Csv::plain,
     [](const Report& r) -> json { return r.numerics.executed; }},
    {"smem_read_bytes", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).smem_read_bytes; }},
    {"smem_write_bytes", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).smem_write_bytes; }},
    {"fp32_flops", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).fp32_flops; }},
    {"sfu_ops", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).sfu_ops; }},
    {"int32_ops", "counters", When::feasible, Csv::plain,
     [](const Report& r) -> json { return total(r).int32_ops; }},
    // What the run achieved against the machine's peaks at its clock (Report::Achieved).
    {"tensor_tflops", "achieved", When::feasible, Csv::g6,
     [](const Report& r) -> json { return r.achieved.tensor_tflops; }},
    {"tensor_peak_fraction", "achieved", When::feasible, Csv::g6,
     [](const Report& r)
         -> json { return fraction(r.achieved.tensor_tflops, r.achieved.tensor_peak_tflops); }},
    {"hbm_gbps", "achieved", When::feasible, Csv::g6,
     [](const Report& r) -> json { return r.achieved.hbm_gbps; }},
    {"hbm_peak_fraction", "achieved", When::feasible, Csv::g6,
     [](const Report& r)
         -> json { return fraction(r.achieved.hbm_gbps, r.achieved.hbm_peak_gbps); }},
    {"l2_gbps", "achieved", When::feasible, Csv::g6,
     [](const Report& r) -> json { return r.achieved.l2_gbps; }},
    {"l2_peak_fraction", "achieved", When::feasible, Csv::g6,
     [](const Report& r) -> json { return fraction(r.achieved.l2_gbps, r.achieved.l2_peak_gbps); }},
    {"smem_gbps", "achieved", When::feasible, Csv::g6,
     [](const Report& r) -> json { return r.achieved.smem_gbps; }},
    {"smem_peak_fraction", "achieved", When::feasible, Csv::g6,
     [](const Report& r)
         -> json { return fraction(r.achieved.smem_gbps, r.achieved.smem_peak_gbps); }},
    {"l2_read_hit_rate", "achieved", When::feasible, Csv::g6,
     [](const Report& r) -> json { return r.achieved.l2_read_hit_rate; }},
    // flash3 --pass fwdbwd: the backward's own tiles, a swept axis (--backward-block-q/-kv) that
    // a sweep report's best tile names. Before clock_given, which older CSVs end with.
    {"backward_block_q", "tiling", When::not_null, Csv::plain,
     [](const Report& r)
         -> json { return or_null(r.tiling.backward_block_q > 0, r.tiling.backward_block_q); }},
    {"backward_block_kv", "tiling", When::not_null, Csv::plain,
     [](const Report& r)
         -> json { return or_null(r.tiling.backward_block_kv > 0, r.tiling.backward_block_kv); }},
    // --window W, when given (a sweep axis of models with local layers). Before clock_given too.
    {"window", "problem", When::not_null, Csv::plain,
     [](const Report& r) -> json { return or_null(problem(r).window > 0, problem(r).window); }},
    // --kv-dtype, when given: the type K and V are stored in (an FP8 K/V cache). Before
    // clock_given too.
    {"kv_dtype", "problem", When::not_null, Csv::plain,
     [](const Report& r) -> json {
       const auto& t = problem(r).kv_dtype;
       return t ? json(std::string(dtype_name(*t))) : json(nullptr);
     }},
    // --latent-dim, when given: V's (and O's) columns of a latent K cache (multi-head latent
    // attention). Before clock_given too.
    {"latent_dim", "problem", When::not_null, Csv::plain,
     [](const Report& r) -> json {
       return or_null(problem(r).latent(), problem(r).latent_dim);
     }},
    // On a profile with a power section: whether --sm-clock-mhz set the clock (else the power
    // model chose it). `iosim report` groups a sweep's CSV rows by the clock asked for with it.
    {"clock_given", "power", When::not_null, Csv::plain,
     [](const Report& r)
         -> json { return r.power ? json(r.request.engine.sm_clock_mhz > 0) : json(nullptr); }},
};

bool has_value(const Column& c, const Report& r) {
  return c.when == When::always || c.when == When::not_null ||
         (c.when == When::feasible) == r.feasible();
}

std::string csv_text(Csv style, const json& v) {
  switch (v.type()) {
    case json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
      return fmt::format("{}", v.get<std::int64_t>());
    case json::value_t::number_unsigned:
      return fmt::format("{}", v.get<std::uint64_t>());
    case json::value_t::number_float: {
      const double x = v.get<double>();
      return style == Csv::g9   ? fmt::format("{:.9g}", x)
             : style == Csv::g6 ? fmt::format("{:.6g}", x)
                                : fmt::format("{}", x);
    }
    case json::value_t::string: {
      std::string text = v.get<std::string>();
      if (style != Csv::reason) return csv_field(text);
      for (char& ch : text)
        if (ch == '"') ch = '\'';
      return "\"" + text + "\"";
    }
    default:  // null
      return "";
  }
}

// What a feasible run's JSON holds beyond kColumns: its kernels, all its counters (written as
// A time attribution as JSON: each row's seconds by its key, and the largest row's key.
json time_attribution_json(const TimeAttribution& a) {
  json seconds = json::object();
  for (TimeRow row : kAllTimeRows) seconds[std::string(time_row_key(row))] = a[row];
  return {{"seconds", seconds}, {"largest", std::string(time_row_key(a.largest()))}};
}

// each kernel's; the counter columns are among them), the rest of the bounds, ...
void add_run_json(json& j, const Report& r) {
  json kernels = json::array();
  for (const KernelResult& k : r.engine.kernels) {
    kernels.push_back({{"name", k.spec.name},
                       {"grid", {k.spec.grid.x, k.spec.grid.y, k.spec.grid.z}},
                       {"ctas", k.spec.grid.count()},
                       {"threads_per_cta", k.spec.threads_per_cta},
                       {"registers_per_thread", k.spec.registers_per_thread},
                       {"smem_bytes_per_cta", k.spec.smem_bytes_per_cta},
                       {"pipeline_stages", k.spec.pipeline_stages},
                       {"ctas_per_sm", k.occupancy.ctas_per_sm},
                       {"occupancy_limiter", k.occupancy.limiter},
                       {"waves", k.waves},
                       {"idle_sm_fraction", k.idle_sm_fraction},
                       {"time_s", k.time_s},
                       {"launch_s", k.launch_s},
                       {"tail_s", k.tail_s},
                       {"bound", k.bound},
                       {"achieved_hbm_gbps", k.achieved_hbm_gbps},
                       {"achieved_l2_gbps", k.achieved_l2_gbps},
                       {"achieved_tensor_tflops", k.achieved_tensor_tflops},
                       {"time_attribution", time_attribution_json(k.time_attribution)},
                       {"counters", counters_json(k.counters)}});
  }
  j["kernels"] = kernels;
  j["counters"] = counters_json(r.engine.total);
  j["bounds"] = {{"closed_form_read_bytes", r.bounds.closed_form_read_bytes},
                 {"closed_form_write_bytes", r.bounds.closed_form_write_bytes},
                 {"lower_bound_formula", r.bounds.lower_bound_formula}};
  if (const Extrapolation& e = r.engine.extrapolation; e.applied()) {
    // Only when something was left out: --exact runs, and runs where nothing repeated, write
    // what they always did.
    j["extrapolated"] = {{"ctas_simulated", e.ctas_simulated},
                         {"ctas_extrapolated", e.ctas_extrapolated},
                         {"parts_simulated", e.parts_simulated},
                         {"parts_extrapolated", e.parts_extrapolated},
                         {"time_extrapolated_s", e.time_extrapolated_s},
                         {"tolerance", detail::kTolerance}};
  }
  if (r.power) {
    j["power"] = {{"limit_w", r.power->limit_w},
                  {"predicted_w", r.power->watts},
                  {"clock_mhz", r.power->clock_mhz},
                  {"binding", r.power->binding},
                  {"clock_given", r.request.engine.sm_clock_mhz > 0},
                  {"engine_runs", r.power->engine_runs}};
  }
  j["simulation_wall_s"] = r.simulation_wall_s;
}

}  // namespace

json report_to_json(const Report& r) {
  json j = {{"schema_version", kSchemaVersion}};
  if (r.feasible()) add_run_json(j, r);
  // A run of a kernel description says what it ran: the description with its mechanisms resolved.
  if (r.request.kernel) j["kernel_description"] = kernel_description_json(*r.request.kernel);
  for (const Column& c : kColumns) {
    if (!has_value(c, r)) continue;
    json v = c.value(r);
    if (c.when == When::not_null && v.is_null()) continue;
    (*c.object != '\0' ? j[c.object] : j)[c.name] = std::move(v);
  }
  // A ragged batch's lengths (JSON only: a sweep, whose CSV has a column per field, refuses one).
  if (const AttentionProblem p = with_defaults(r.request.problem); p.ragged()) {
    j["problem"]["seq_lens"] = *p.seq_lens;
    j["problem"]["seq_kv_lens"] = *p.seq_kv_lens;
  }
  return j;
}

// --stages counts shared-memory buffers (Capabilities::forward_stages); the engine times a main
// kernel's copies as deep as its KernelSpec::pipeline_stages, which is deeper for one K/V buffer
// pair (kv_pipeline_depth: the K and V copies alternate with the two products). Said where it
// differs: "--stages 1" reported as 1 beside a kernel timed 2 deep read as a flag raised behind
// the user's back.
std::string copy_depth_text(const Report& r) {
  std::string s;
  for (const KernelResult& k : r.engine.kernels) {
    const int depth = k.spec.pipeline_stages;
    if (!k.spec.main_loop || depth == r.tiling.pipeline_stages) continue;
    s += fmt::format(
        "copies   {} is timed {} tile{} deep at stages={}: {}\n", k.spec.name, depth,
        depth == 1 ? "" : "s", r.tiling.pipeline_stages,
        depth > r.tiling.pipeline_stages
            ? "one K/V buffer pair, whose K and V copies alternate with the two products "
              "(FlashAttention's), keeps the next tile in flight"
            : "each copy waits for the compute");
  }
  // --threads is one main kernel's CTA; a backward after a forward runs its own warps.
  for (const KernelResult& k : r.engine.kernels) {
    if (!k.spec.main_loop || k.spec.threads_per_cta == r.tiling.threads) continue;
    s += fmt::format("threads  {} runs {} threads per CTA; threads={} is the forward's\n",
                     k.spec.name, k.spec.threads_per_cta, r.tiling.threads);
  }
  return s;
}

std::string format_table(const Report& r) {
  const AttentionProblem& p = r.request.problem;
  std::string s =
      fmt::format("iosim: {} on {} ({}), L2 {}\n", r.request.algorithm, r.profile_description,
                  r.profile, r.request.engine.l2_enabled ? "on" : "off (two-level model)");
  s += "problem  " + problem_text(p) + "\n";
  if (p.page_tokens > 0) {
    s += fmt::format("pages    {} tokens per page, block table {}\n", p.page_tokens,
                     p.block_table ? p.block_table->source : "-");
  }
  s += fmt::format(
      "tiling   block_q={} block_kv={} threads={} stages={}{}{}{}{}  (M = {} B of SRAM per CTA)\n",
      r.tiling.block_q, r.tiling.block_kv, r.tiling.threads, r.tiling.pipeline_stages,
      r.tiling.splits > 0 ? fmt::format(" splits={}", r.tiling.splits) : "",
      !r.request.tiling.warpgroups                            ? ""
      : *r.request.tiling.warpgroups == PipeOverlap::pingpong ? " warpgroups=pingpong"
                                                              : " warpgroups=cooperative",
      p.pack_gqa == GqaPacking::automatic
          ? ""
          : fmt::format(" pack-gqa={}{}", p.pack_gqa == GqaPacking::on ? "on" : "off",
                        p.packs_query_group()
                            ? fmt::format(" ({} rows per head group)", p.group() * p.seq)
                            : ""),
      r.tiling.backward_block_q > 0
          ? fmt::format(" backward={}x{}", r.tiling.backward_block_q, r.tiling.backward_block_kv)
          : "",
      r.sram_bytes);
  s += copy_depth_text(r);
  if (r.density) {
    s += fmt::format("blocks   pattern {}, density s = {:.4g} of the blocks computed\n",
                     p.pattern ? p.pattern->spec : "all", *r.density);
  }
  if (!r.feasible()) return s + "infeasible: " + r.infeasible_reason + "\n";
  const bool l2 = r.request.engine.l2_enabled;
  // "dirty@end": lines a kernel left dirty in L2, written to HBM after it (by a later kernel's
  // evictions or after the run); the total line counts the run's last ones as HBM writes.
  s += fmt::format("\n{:<12} {:>14} {:>9} {:>7} {:>9} {:>10} {:>8} {:>10} {:>10}{} {:>10} {:>10}\n",
                   "kernel", "grid", "CTAs/SM", "waves", "idle SMs", "time", "bound", "HBM read",
                   "HBM write", l2 ? fmt::format(" {:>10}", "dirty@end") : "", "L2 read",
                   "L2 write");
  for (const KernelResult& k : r.engine.kernels) {
    const Counters& c = k.counters;
    s += fmt::format(
        "{:<12} {:>14} {:>9} {:>7.2f} {:>8.0f}% {:>10} {:>8} {:>10} {:>10}{} {:>10} {:>10}\n",
        k.spec.name, grid_text(k.spec.grid), k.occupancy.ctas_per_sm, k.waves,
        100.0 * k.idle_sm_fraction, human_seconds(k.time_s), k.bound,
        human_bytes(static_cast<double>(c.hbm.read_total())),
        human_bytes(static_cast<double>(c.hbm.write_total())),
        l2 ? fmt::format(" {:>10}", human_bytes(static_cast<double>(c.l2_dirty_at_end_bytes))) : "",
        human_bytes(static_cast<double>(c.l2.read_total())),
        human_bytes(static_cast<double>(c.l2.write_total())));
  }
  s += time_attribution_text(r.engine.time_attribution);
  const Counters& t = r.engine.total;
  s += fmt::format("\ntotal    time {} ({}-bound), HBM {}{}, L2 {}, smem {}\n",
                   human_seconds(r.engine.time_s), r.bound,
                   human_bytes(static_cast<double>(t.hbm_total_bytes())),
                   l2 ? " incl. dirty at the end" : "",
                   human_bytes(static_cast<double>(t.l2.read_total() + t.l2.write_total())),
                   human_bytes(static_cast<double>(t.smem_read_bytes + t.smem_write_bytes)));
  s += fmt::format("         HBM read {} + write {} during the run ({:.0f} GB/s){}\n",
                   human_bytes(static_cast<double>(t.hbm.read_total())),
                   human_bytes(static_cast<double>(t.hbm.write_total())), r.achieved.hbm_gbps,
                   l2 ? fmt::format(" + dirty in L2 at the end, written back later, {}",
                                    human_bytes(static_cast<double>(t.l2_dirty_at_end_bytes)))
                      : "");
  if (const Extrapolation& e = r.engine.extrapolation; e.applied()) {
    s += fmt::format(
        "         extrapolated from a steady state (within {:g}%): {} of {} CTAs, {} of {} CTA "
        "steps (--exact: none)\n",
        100 * detail::kTolerance, e.ctas_extrapolated, e.ctas_extrapolated + e.ctas_simulated,
        e.parts_extrapolated, e.parts_extrapolated + e.parts_simulated);
  }
  if (r.power) {
    const PowerSolution& w = *r.power;
    s += fmt::format("power    {:.0f} W predicted at {:.0f} MHz, limit {:.0f} W: {}\n", w.watts,
                     w.clock_mhz, w.limit_w,
                     r.request.engine.sm_clock_mhz > 0 ? "clock given (--sm-clock-mhz)"
                     : w.binding                       ? "the limit sets the clock"
                                                       : "under the limit at the boost clock");
  }
  s += fmt::format("         FLOPs {:.4g} G (tensor-core {:.4g} G, FP32 {:.4g} G, SFU {:.4g} G)\n",
                   static_cast<double>(t.flops()) / 1e9, static_cast<double>(t.tensor_flops) / 1e9,
                   static_cast<double>(t.fp32_flops) / 1e9, static_cast<double>(t.sfu_ops) / 1e9);
  const Report::Achieved& a = r.achieved;
  s += fmt::format(
      "achieved tensor {:.4g} TFLOP/s = {:.1f}% of {:.4g} at {:.0f} MHz; HBM {:.4g} GB/s = {:.1f}% "
      "of {:.4g}; L2 {:.4g} GB/s = {:.1f}% of {:.4g}\n",
      a.tensor_tflops, 100 * fraction(a.tensor_tflops, a.tensor_peak_tflops), a.tensor_peak_tflops,
      r.sm_clock_mhz, a.hbm_gbps, 100 * fraction(a.hbm_gbps, a.hbm_peak_gbps), a.hbm_peak_gbps,
      a.l2_gbps, 100 * fraction(a.l2_gbps, a.l2_peak_gbps), a.l2_peak_gbps);
  s += fmt::format(
      "         shared memory {:.0f} GB/s = {:.1f}% of {:.0f}{}\n", a.smem_gbps,
      100 * fraction(a.smem_gbps, a.smem_peak_gbps), a.smem_peak_gbps,
      l2 ? fmt::format("; L2 hit rate of reads {:.1f}%", 100 * a.l2_read_hit_rate) : "");
  s += fmt::format("bounds   compulsory {}, closed form (two-level) {}\n",
                   human_bytes(static_cast<double>(r.bounds.compulsory_bytes)),
                   human_bytes(static_cast<double>(r.bounds.closed_form_bytes)));
  // The bound is of the two-level model's count (HBM <-> SRAM, no L2): with the L2 on, the HBM
  // figure above can be below it (the L2 serves reused K/V), so the line says whose bound it is.
  s += fmt::format("         lower bound{} {} = max(compulsory {}, {} = {}){}\n",
                   l2 ? " (two-level count, --l2 off)" : "",
                   human_bytes(static_cast<double>(r.bounds.lower_bound_bytes)),
                   human_bytes(static_cast<double>(r.bounds.compulsory_bytes)),
                   r.bounds.lower_bound_formula,
                   human_bytes(static_cast<double>(r.bounds.lower_bound_formula_bytes)),
                   p.pass == Pass::fwdbwd ? " per pass, summed" : "");
  // dirty@end: a tensor's lines still dirty in the L2 at the end, its HBM writes to come (the
  // output's bytes, often): the kernel table's column, by tensor.
  s += fmt::format("\n{:<13} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "tensor", "HBM read",
                   "HBM write", "dirty@end", "L2 read", "L2 write");
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    const std::uint64_t v[] = {t.hbm.read_bytes[i], t.hbm.write_bytes[i], t.l2_dirty_at_end[i],
                               t.l2.read_bytes[i], t.l2.write_bytes[i]};
    if (v[0] + v[1] + v[2] + v[3] + v[4] == 0) continue;
    s +=
        fmt::format("{:<13} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
                    tensor_name(static_cast<TensorId>(i)), human_bytes(static_cast<double>(v[0])),
                    human_bytes(static_cast<double>(v[1])), human_bytes(static_cast<double>(v[2])),
                    human_bytes(static_cast<double>(v[3])), human_bytes(static_cast<double>(v[4])));
  }
  if (r.numerics.executed) {
    s += fmt::format("\nnumerics max |O - O_ref| and |L - L_ref|{} = {:.3g}\n",
                     p.pass == Pass::fwd   ? ""
                     : p.pass == Pass::bwd ? " (gradients dQ, dK, dV)"
                                           : ", dQ, dK, dV",
                     r.numerics.max_abs_error.value_or(NAN));
  }
  return s;
}

std::string csv_header() {
  std::string s;
  for (const Column& c : kColumns) {
    if (&c != kColumns) s += ',';
    s += c.name;
  }
  return s;
}

std::string csv_row(const Report& r) {
  std::string s;
  for (const Column& c : kColumns) {
    if (&c != kColumns) s += ',';
    if (has_value(c, r)) s += csv_text(c.csv, c.value(r));
  }
  return s;
}

std::string format_comparison(const std::vector<Report>& two_level,
                              const std::vector<Report>& three_level) {
  std::string s = fmt::format("{:<10} {:>14} {:>10} {:>14} {:>12} {:>10} {:>10} {:>8}\n",
                              "algorithm", "HBM (2-level)", "vs std", "HBM (L2 on)", "L2 traffic",
                              "GFLOPs", "time", "bound");
  double standard_bytes = 0;
  for (std::size_t i = 0; i < two_level.size() && i < three_level.size(); ++i) {
    const Report& a = two_level[i];
    const Report& b = three_level[i];
    if (!a.feasible() || !b.feasible()) {
      s += fmt::format("{:<10} infeasible: {}\n", a.request.algorithm, a.infeasible_reason);
      continue;
    }
    const double two =
        static_cast<double>(a.engine.total.hbm.read_total() + a.engine.total.hbm.write_total());
    if (builtin_registry().get(a.request.algorithm).capabilities.materializes_scores) {
      standard_bytes = two;
    }
    const Counters& t = b.engine.total;
    s += fmt::format("{:<10} {:>14} {:>10} {:>14} {:>12} {:>10.1f} {:>10} {:>8}\n",
                     a.request.algorithm, human_bytes(two),
                     standard_bytes > 0 ? fmt::format("{:.2f}x", standard_bytes / two) : "-",
                     human_bytes(static_cast<double>(t.hbm_total_bytes())),
                     human_bytes(static_cast<double>(t.l2.read_total() + t.l2.write_total())),
                     static_cast<double>(t.flops()) / 1e9, human_seconds(b.engine.time_s), b.bound);
  }
  return s;
}

}  // namespace iosim
