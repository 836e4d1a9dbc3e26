#include "reports/compare_writers.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "api/schema_version.hpp"
#include "reports/writers.hpp"
#include "sim/base/human_units.hpp"

namespace iosim {
// Not anonymous: the reports library is a unity build, whose sources share one anonymous
// namespace (writers.cpp has its own fraction()).
namespace compare_writers {

double over(double part, double whole) {
  return whole > 0 ? part / whole : 0.0;
}

// A row of one quantity: `text` of each run's value, the values the ratio divides.
template <class Value, class Text>
CompareRow quantity(const std::vector<Report>& reports, std::string label, Value value, Text text,
                    bool ratio = true) {
  CompareRow row{std::move(label), {}, {}};
  for (const Report& r : reports) {
    const double v = value(r);
    row.cells.push_back(text(r, v));
    if (ratio) row.values.push_back(v);
  }
  return row;
}

CompareRow bytes_row(const std::vector<Report>& reports, std::string label,
                     double (*value)(const Report&)) {
  return quantity(reports, std::move(label), value,
                  [](const Report&, double v) { return human_bytes(v); });
}

double as_double(std::uint64_t v) {
  return static_cast<double>(v);
}

}  // namespace compare_writers

std::string CompareRow::ratio(std::size_t i) const {
  if (values.size() <= i || !(values[0] > 0)) return "-";
  return fmt::format("{:.2f}x", values[i] / values[0]);
}

std::vector<CompareRow> compare_rows(const std::vector<Report>& reports) {
  using namespace compare_writers;
  using R = const Report&;
  std::vector<CompareRow> rows;
  const auto heading = [&](const char* label) { rows.push_back({label, {}, {}}); };
  const auto text = [&](std::string label, auto cell) {
    rows.push_back(quantity(
        reports, std::move(label), [](R) { return 0.0; },
        [&](R r, double) { return std::string(cell(r)); }, false));
  };
  const bool l2 = !reports.empty() && reports.front().request.engine.l2_enabled;
  heading("run");
  text("tiling (block_q x block_kv)",
       [](R r) { return fmt::format("{}x{}", r.tiling.block_q, r.tiling.block_kv); });
  text("threads, stages",
       [](R r) { return fmt::format("{}, {}", r.tiling.threads, r.tiling.pipeline_stages); });
  // What only some kernels have (split-KV decoding's splits, paged attention's pages), where any
  // kernel of the comparison has it: the problem line is the first kernel's.
  if (std::any_of(reports.begin(), reports.end(), [](R r) { return r.tiling.splits > 0; })) {
    text("K/V splits",
         [](R r) { return r.tiling.splits > 0 ? std::to_string(r.tiling.splits) : "-"; });
  }
  if (std::any_of(reports.begin(), reports.end(),
                  [](R r) { return r.request.problem.page_tokens > 0; })) {
    text("tokens per K/V page", [](R r) {
      const std::int64_t t = r.request.problem.page_tokens;
      return t > 0 ? std::to_string(t) : "-";
    });
  }
  text("SRAM per CTA (M)", [](R r) { return human_bytes(static_cast<double>(r.sram_bytes)); });
  text("GPU kernels", [](R r) { return std::to_string(r.engine.kernels.size()); });
  text("SM clock", [](R r) { return fmt::format("{:.0f} MHz", r.sm_clock_mhz); });
  if (std::any_of(reports.begin(), reports.end(), [](R r) { return r.power.has_value(); })) {
    text("power", [](R r) { return r.power ? fmt::format("{:.0f} W", r.power->watts) : "-"; });
  }
  heading("time");
  rows.push_back(quantity(
      reports, "total", [](R r) { return r.engine.time_s; },
      [](R, double v) { return human_seconds(v); }));
  text("bound", [](R r) { return r.bound; });
  heading("where the time goes");
  for (TimeRow t : kAllTimeRows) {
    rows.push_back(quantity(
        reports, fmt::format("  {}", time_row_label(t)),
        [t](R r) { return r.engine.time_attribution[t]; },
        [t](R r, double v) {
          const TimeAttribution& a = r.engine.time_attribution;
          return fmt::format("{} {:.1f}%{}", human_seconds(v), 100 * over(v, a.total()),
                             t == a.largest() ? " *" : "");
        }));
  }
  heading("bytes");
  const auto total = [](R r) -> const Counters& { return r.engine.total; };
  rows.push_back(bytes_row(reports, "HBM read",
                           [](R r) { return as_double(r.engine.total.hbm.read_total()); }));
  rows.push_back(bytes_row(reports, "HBM write",
                           [](R r) { return as_double(r.engine.total.hbm.write_total()); }));
  if (l2) {
    rows.push_back(bytes_row(reports, "HBM dirty in L2 at end",
                             [](R r) { return as_double(r.engine.total.l2_dirty_at_end_bytes); }));
  }
  rows.push_back(bytes_row(reports, "HBM total",
                           [](R r) { return as_double(r.engine.total.hbm_total_bytes()); }));
  if (l2) {
    rows.push_back(bytes_row(reports, "L2 read",
                             [](R r) { return as_double(r.engine.total.l2.read_total()); }));
    rows.push_back(bytes_row(reports, "L2 write",
                             [](R r) { return as_double(r.engine.total.l2.write_total()); }));
  }
  rows.push_back(bytes_row(reports, "shared memory read",
                           [](R r) { return as_double(r.engine.total.smem_read_bytes); }));
  rows.push_back(bytes_row(reports, "shared memory write",
                           [](R r) { return as_double(r.engine.total.smem_write_bytes); }));
  rows.push_back(bytes_row(reports, "lower bound (two-level)",
                           [](R r) { return as_double(r.bounds.lower_bound_bytes); }));
  heading("HBM bytes per tensor");
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    const std::string name(tensor_name(static_cast<TensorId>(i)));
    for (const bool read : {true, false}) {
      const auto bytes = [&total, i, read](R r) {
        const auto& hbm = total(r).hbm;
        return as_double(read ? hbm.read_bytes[i] : hbm.write_bytes[i]);
      };
      // A tensor no run moves is left out, as the single run's table leaves it out.
      if (std::none_of(reports.begin(), reports.end(), [&](R r) { return bytes(r) > 0; })) {
        continue;
      }
      rows.push_back(quantity(reports, fmt::format("  {} {}", name, read ? "read" : "write"), bytes,
                              [](R, double v) { return human_bytes(v); }));
    }
  }
  heading("work and rates");
  const auto giga = [](R, double v) { return fmt::format("{:.4g} G", v / 1e9); };
  rows.push_back(quantity(
      reports, "FLOPs", [&total](R r) { return as_double(total(r).flops()); }, giga));
  rows.push_back(quantity(
      reports, "tensor-core FLOPs", [&total](R r) { return as_double(total(r).tensor_flops); },
      giga));
  const auto rate = [&](std::string label, double Report::Achieved::*v,
                        double Report::Achieved::*peak, const char* unit) {
    rows.push_back(quantity(
        reports, std::move(label), [v](R r) { return r.achieved.*v; },
        [peak, unit](R r, double x) {
          // Four digits, whole numbers from 1000 on (the run page's GB/s): "1.448e+04" read badly.
          return fmt::format("{} {} {:.1f}%",
                             x >= 1000 ? fmt::format("{:.0f}", x) : fmt::format("{:.4g}", x), unit,
                             100 * over(x, r.achieved.*peak));
        }));
  };
  using A = Report::Achieved;
  rate("tensor cores (of peak)", &A::tensor_tflops, &A::tensor_peak_tflops, "TFLOP/s");
  rate("HBM (of peak)", &A::hbm_gbps, &A::hbm_peak_gbps, "GB/s");
  if (l2) rate("L2 (of peak)", &A::l2_gbps, &A::l2_peak_gbps, "GB/s");
  rate("shared memory (of peak)", &A::smem_gbps, &A::smem_peak_gbps, "GB/s");
  if (l2) {
    text("L2 hit rate of reads",
         [](R r) { return fmt::format("{:.1f}%", 100 * r.achieved.l2_read_hit_rate); });
  }
  if (std::any_of(reports.begin(), reports.end(), [](R r) { return r.numerics.executed; })) {
    text("numerics max abs error", [](R r) {
      return r.numerics.max_abs_error ? fmt::format("{:.3g}", *r.numerics.max_abs_error) : "-";
    });
  }
  return rows;
}

std::string compare_table(const std::vector<Report>& reports) {
  if (reports.empty()) return "";
  const Report& first = reports.front();
  const bool l2 = first.request.engine.l2_enabled;
  std::string s =
      fmt::format("iosim: {} kernels side by side on {} ({}), L2 {}\n", reports.size(),
                  first.profile_description, first.profile, l2 ? "on" : "off (two-level model)");
  s += "problem  " + problem_text(first.request.problem) + "\n";
  const std::vector<CompareRow> rows = compare_rows(reports);
  std::vector<std::string> headers;
  for (const Report& r : reports) headers.push_back(r.request.algorithm);
  for (std::size_t i = 1; i < reports.size(); ++i) {
    headers.push_back(
        fmt::format("{} / {}", reports[i].request.algorithm, first.request.algorithm));
  }
  // Each column as wide as its widest cell; the label column as its widest label.
  std::size_t label_width = 0;
  std::vector<std::size_t> widths(headers.size());
  for (std::size_t c = 0; c < headers.size(); ++c) widths[c] = headers[c].size();
  for (const CompareRow& row : rows) {
    label_width = std::max(label_width, row.label.size());
    for (std::size_t c = 0; c < row.cells.size(); ++c) {
      widths[c] = std::max(widths[c], row.cells[c].size());
    }
  }
  s += fmt::format("\n{:<{}}", "", label_width);
  for (std::size_t c = 0; c < headers.size(); ++c)
    s += fmt::format("  {:>{}}", headers[c], widths[c]);
  s += "\n";
  for (const CompareRow& row : rows) {
    if (row.cells.empty()) {
      s += row.label + "\n";
      continue;
    }
    std::string line = fmt::format("{:<{}}", row.label, label_width);
    for (std::size_t c = 0; c < row.cells.size(); ++c) {
      line += fmt::format("  {:>{}}", row.cells[c], widths[c]);
    }
    for (std::size_t i = 1; i < reports.size(); ++i) {
      line += fmt::format("  {:>{}}", row.values.empty() ? "" : row.ratio(i),
                          widths[reports.size() + i - 1]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    s += line + "\n";
  }
  s += fmt::format(
      "\n* the largest share of each run's time: its bound. Ratios: each kernel's value over "
      "{}'s.\n",
      first.request.algorithm);
  for (const Report& r : reports) {
    if (const Extrapolation& e = r.engine.extrapolation; e.applied()) {
      s += fmt::format("{}: extrapolated from a steady state: {} of {} CTAs (--exact: none)\n",
                       r.request.algorithm, e.ctas_extrapolated,
                       e.ctas_extrapolated + e.ctas_simulated);
    }
  }
  return s;
}

nlohmann::json compare_to_json(const std::vector<Report>& reports) {
  nlohmann::json names = nlohmann::json::array();
  nlohmann::json runs = nlohmann::json::array();
  for (const Report& r : reports) {
    names.push_back(r.request.algorithm);
    runs.push_back(report_to_json(r));
  }
  return {{"schema_version", kSchemaVersion},
          {"compare", {{"kernels", names}, {"baseline", reports.empty() ? "" : names.front()}}},
          {"runs", runs}};
}

std::string compare_csv(const std::vector<Report>& reports) {
  std::string s = csv_header() + "\n";
  for (const Report& r : reports) s += csv_row(r) + "\n";
  return s;
}

}  // namespace iosim
