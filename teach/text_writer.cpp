#include "teach/text_writer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

#include "sim/base/errors.hpp"

namespace iosim::teach {
namespace {

struct Paint {
  bool on;
  std::string operator()(const char* code, const std::string& text) const {
    return on ? fmt::format("\033[{}m{}\033[0m", code, text) : text;
  }
};
constexpr const char* kBold = "1";
constexpr const char* kDim = "2";
constexpr const char* kLoad = "36";     // cyan
constexpr const char* kStore = "35";    // magenta
constexpr const char* kCompute = "33";  // yellow
constexpr const char* kPaper = "32";    // green

std::string problem_line(const Report& r) {
  const AttentionProblem& p = r.request.problem;
  std::string s = fmt::format("B={} H={} N={}", p.batch, p.heads, p.seq);
  if (p.seq_kv != p.seq) s += fmt::format(" N_kv={}", p.seq_kv);
  // A ragged batch: B sequences of their own lengths, N and N_kv the longest.
  if (p.ragged()) {
    s += fmt::format(" (ragged: --seq-lens {} --seq-kv-lens {})", fmt::join(*p.seq_lens, ","),
                     fmt::join(p.seq_kv_lens ? *p.seq_kv_lens : *p.seq_lens, ","));
  }
  s += fmt::format(" {} {}", head_dim_text(p), dtype_text(p));
  if (p.causal) s += " causal";
  if (p.window > 0) s += fmt::format(" window={}", p.window);
  if (p.mask) s += " mask";
  if (p.dropout > 0) s += fmt::format(" dropout={}", p.dropout);
  return s;
}

std::string pass_words(Pass p) {
  return p == Pass::fwd ? "forward pass" : p == Pass::bwd ? "backward pass" : "forward + backward";
}

void write_numbers(std::ostream& out, const NumberTile& t) {
  if (t.shown_rows == 0) {
    out << fmt::format("      {}: (none yet)\n", t.name);
    return;
  }
  constexpr std::int64_t kRows = 4, kCols = 8;
  auto value = [](double v) { return fmt::format(" {:8.4f}", v); };
  if (t.cols == 1) {  // a column vector (m, l, L, a rescale factor): one line
    std::string line;
    for (std::size_t i = 0; i < static_cast<std::size_t>(std::min(t.shown_rows, kCols)); ++i) {
      line += i < t.unseen.size() && t.unseen[i] ? fmt::format(" {:>8}", "-") : value(t.values[i]);
    }
    out << fmt::format("      {}{}:{}{}\n", t.name,
                       t.rows > kCols ? fmt::format(" (first {} of {} rows)", kCols, t.rows) : "",
                       line, t.rows > kCols ? " ..." : "");
    if (!t.note.empty()) out << fmt::format("      ({})\n", t.note);
    return;
  }
  const std::int64_t rows = std::min(t.shown_rows, kRows), cols = std::min(t.shown_cols, kCols);
  out << fmt::format("      {} ({} x {}{}):\n", t.name, t.rows, t.cols,
                     t.rows > rows || t.cols > cols
                         ? fmt::format(", first {} rows x {} columns", rows, cols)
                         : "");
  for (std::int64_t i = 0; i < rows; ++i) {
    std::string line;
    for (std::int64_t j = 0; j < cols; ++j) {
      line += value(t.values[static_cast<std::size_t>(i * t.shown_cols + j)]);
    }
    out << "      " << line << (t.cols > cols ? " ..." : "") << "\n";
  }
}

// "FlashAttention-2, Algorithm 1, on one split of K/V" -> "FlashAttention-2, Algorithm 1".
std::string short_name(const std::string& algorithm) {
  std::string s = algorithm.substr(0, algorithm.find(',', algorithm.find(',') + 1));
  return s.substr(0, s.find(" ("));
}

void write_step(std::ostream& out, const Trace& trace, std::size_t i, const Paint& paint) {
  const TraceStep& s = trace.steps[i];
  std::string head = fmt::format("step {}/{}  {} CTA {} on SM {}", i + 1, trace.steps.size(),
                                 trace.kernels[s.kernel].name, s.cta, s.sm);
  out << paint(kBold, head);
  if (!s.paper.line.empty()) {
    out << "  "
        << paint(kPaper, fmt::format("[{}, {}]", short_name(s.paper.algorithm), s.paper.line));
  }
  out << "\n";
  const char* color = s.op.kind == OpKind::load      ? kLoad
                      : s.op.kind == OpKind::compute ? kCompute
                                                     : kStore;
  out << "  " << paint(color, describe(s)) << "\n";
  if (!s.paper.note.empty()) out << "  " << paint(kDim, fmt::format("({})", s.paper.note)) << "\n";
  std::string smem, reg;
  for (const OnChipTile& h : s.on_chip) {
    const TileRef& t = h.tile;
    std::string& list = h.where == OnChip::smem ? smem : reg;
    list += t.cols == 1 && t.col0 == 0
                ? fmt::format(" {}[{}:{}]", tensor_name(t.tensor), t.row0, t.row0 + t.rows)
                : fmt::format(" {}[{}:{}, {}:{}]", tensor_name(t.tensor), t.row0, t.row0 + t.rows,
                              t.col0, t.col0 + t.cols);
  }
  out << "  shared memory:" << (smem.empty() ? " -" : smem)
      << "  registers:" << (reg.empty() ? " -" : reg) << "\n";
  if (s.last_of_cta) out << "  (the CTA's last operation: its buffers are freed)\n";
  auto level = [](const char* name, std::uint64_t delta, std::uint64_t total) {
    return fmt::format("{} {} ({})", name, human_bytes(total),
                       delta > 0 ? fmt::format("+{}", human_bytes(delta)) : "+0");
  };
  out << "  bytes so far: " << level("HBM2", s.bytes.hbm_two_level, s.total.hbm_two_level) << ", "
      << level("L2", s.bytes.l2, s.total.l2) << ", " << level("DRAM", s.bytes.hbm, s.total.hbm)
      << "\n";
  for (const NumberTile& t : s.numbers) write_numbers(out, t);
  if (s.max_error) {
    out << fmt::format("      max |{} - exact| over this tile: {:.2e}\n",
                       tensor_name(s.op.tile.tensor), *s.max_error);
  }
}

void write_header(std::ostream& out, const Trace& trace, const Paint& paint) {
  const Report& r = trace.report;
  out << paint(kBold, fmt::format("iosim explain: {}, {}, {} on {}", r.request.algorithm,
                                  pass_words(r.request.problem.pass), problem_line(r), r.profile))
      << "\n";
  std::string paper;
  for (const TraceStep& s : trace.steps) {
    if (!s.paper.algorithm.empty() && paper.find(s.paper.algorithm) == std::string::npos) {
      if (!paper.empty()) paper += "; ";
      paper += s.paper.algorithm;
    }
  }
  const AttentionProblem& p = r.request.problem;
  out << fmt::format("tiling: block_q (Br) = {}, block_kv (Bc) = {}", r.tiling.block_q,
                     r.tiling.block_kv);
  if (!r.request.tiling.block_q && !r.request.tiling.block_kv && r.tiling.block_q >= p.seq &&
      r.tiling.block_kv >= p.seq_kv) {
    out << " (the defaults cover the whole problem in one block: try --block-q 16 --block-kv 16)";
  }
  if (r.tiling.splits > 0) out << fmt::format(", {} K/V splits", r.tiling.splits);
  out << "\n";
  if (!paper.empty()) out << "follows: " << paint(kPaper, paper) << "\n";
  if (p.latent()) {
    out << fmt::format(
        "latent: multi-head latent attention, V = the first {} of K's {} columns (no V is loaded: "
        "O += P V reads the K tile on chip), O {} columns wide\n",
        p.latent_dim, p.head_dim, p.value_dim());
  }
  for (const KernelResult& k : r.engine.kernels) {
    out << fmt::format("kernel {}: {} CTAs, {} of shared memory per CTA, {} CTA(s) per SM\n",
                       k.spec.name, k.spec.grid.count(),
                       human_bytes(static_cast<std::uint64_t>(k.spec.smem_bytes_per_cta)),
                       k.occupancy.ctas_per_sm);
  }
  out << paint(kDim,
               "bytes: HBM2 = the paper's two-level model (HBM <-> SRAM, as --l2 off);\n"
               "       L2 = what the SMs request from the L2; DRAM = HBM traffic with the L2 on\n"
               "       (misses and write-backs). Steps are in the order the engine ran them.")
      << "\n\n";
}

void write_summary(std::ostream& out, const Trace& trace, const Paint& paint) {
  const Report& r = trace.report;
  const Report& two_level = r.request.engine.l2_enabled ? trace.other : r;
  const Report& three_level = r.request.engine.l2_enabled ? r : trace.other;
  const Counters& c2 = two_level.engine.total;
  const Counters& c3 = three_level.engine.total;
  const std::uint64_t hbm2 = c2.hbm.read_total() + c2.hbm.write_total();
  const IoBounds& b = r.bounds;
  out << paint(kBold,
               fmt::format("{} steps, {} kernel(s)", trace.steps.size(), trace.kernels.size()))
      << "\n";
  out << fmt::format("  HBM, two-level model: {} B ({} read, {} written)", thousands(hbm2),
                     thousands(c2.hbm.read_total()), thousands(c2.hbm.write_total()));
  out << (hbm2 == b.closed_form_bytes
              ? "  = the closed form for these blocks"
              : fmt::format("  (closed form: {} B)", thousands(b.closed_form_bytes)))
      << "\n";
  out << fmt::format("  compulsory (each input read once, each output written once): {} B\n",
                     thousands(b.compulsory_bytes));
  // The bound is the larger of its two terms; print both so the formula's value is not read as
  // the bound when compulsory traffic dominates. It bounds the two-level count above it, not the
  // L2-on DRAM bytes below, which may fall under it: the line says which.
  out << fmt::format("  lower bound (two-level): {} B = max(compulsory {} B, {} = {} B)\n",
                     thousands(b.lower_bound_bytes), thousands(b.compulsory_bytes),
                     b.lower_bound_formula, thousands(b.lower_bound_formula_bytes));
  // DRAM traffic includes the lines still dirty in the L2 when the kernels end: they reach DRAM
  // later, and leaving them out would print less than the compulsory bytes.
  const std::uint64_t dirty = three_level.engine.total.l2_dirty_at_end_bytes;
  out << fmt::format(
      "  with the L2 on: L2 requests {} B, DRAM {} B incl. dirty at the end ({} read, {} written "
      "back, {} still dirty in the L2)\n",
      thousands(c3.l2.read_total() + c3.l2.write_total()),
      thousands(c3.hbm.read_total() + c3.hbm.write_total() + dirty), thousands(c3.hbm.read_total()),
      thousands(c3.hbm.write_total()), thousands(dirty));
  if (trace.max_error) {
    out << fmt::format("  --execute: max |error| against an FP64 reference: {:.2e}\n",
                       *trace.max_error);
  }
}

}  // namespace

void check_text_options(const Trace& trace, const TextOptions& o) {
  const std::size_t n = trace.steps.size();
  for (const auto& [flag, k] : {std::pair{"--step", o.step}, std::pair{"--until", o.until}}) {
    if (k && (*k < 1 || *k > n)) {
      throw ConfigError(fmt::format("{} {}: the trace has steps 1 to {}", flag, *k, n));
    }
  }
  if (o.focus_cta) {
    const bool any = std::any_of(trace.steps.begin(), trace.steps.end(),
                                 [&](const TraceStep& s) { return s.cta == *o.focus_cta; });
    if (!any) {
      std::int64_t most = 0;
      for (const KernelSpec& k : trace.kernels) most = std::max(most, k.grid.count());
      throw ConfigError(
          fmt::format("--focus cta:{}: the kernels have CTAs 0 to {}", *o.focus_cta, most - 1));
    }
  }
}

void write_trace(std::ostream& out, const Trace& trace, const TextOptions& o) {
  check_text_options(trace, o);
  const std::size_t n = trace.steps.size();
  const Paint paint{o.color};
  write_header(out, trace, paint);
  const std::size_t first = o.step ? *o.step - 1 : 0;
  const std::size_t last = o.step ? *o.step : o.until ? *o.until : n;
  for (std::size_t i = first; i < last; ++i) {
    if (o.focus_cta && trace.steps[i].cta != *o.focus_cta) continue;
    write_step(out, trace, i, paint);
  }
  if (last < n || first > 0) {
    out << paint(kDim, fmt::format("(steps {} to {} of {} shown)", first + 1, last, n)) << "\n";
  }
  out << "\n";
  write_summary(out, trace, paint);
}

void write_trace_header(std::ostream& out, const Trace& trace, bool color) {
  write_header(out, trace, Paint{color});
}

void write_trace_summary(std::ostream& out, const Trace& trace, bool color) {
  write_summary(out, trace, Paint{color});
}

std::vector<CompareRow> compare_rows(const std::vector<Trace>& traces) {
  std::vector<LevelBytes> totals;
  for (const Trace& t : traces) totals.push_back(run_totals(t));
  std::vector<CompareRow> rows;
  auto row = [&](std::string label, auto cell) {
    CompareRow r{std::move(label), {}};
    for (std::size_t i = 0; i < traces.size(); ++i) r.cells.push_back(cell(traces[i], totals[i]));
    rows.push_back(std::move(r));
  };
  row("", [](const Trace& t, const LevelBytes&) { return t.report.request.algorithm; });
  row("block_q x block_kv", [](const Trace& t, const LevelBytes&) {
    return fmt::format("{} x {}", t.report.tiling.block_q, t.report.tiling.block_kv);
  });
  row("kernels",
      [](const Trace& t, const LevelBytes&) { return std::to_string(t.kernels.size()); });
  row("steps (tile operations)",
      [](const Trace& t, const LevelBytes&) { return std::to_string(t.steps.size()); });
  row("HBM bytes, two-level model",
      [](const Trace&, const LevelBytes& b) { return thousands(b.hbm_two_level); });
  row("L2 bytes requested (L2 on)",
      [](const Trace&, const LevelBytes& b) { return thousands(b.l2); });
  row("DRAM bytes (L2 on, incl. dirty at end)",
      [](const Trace&, const LevelBytes& b) { return thousands(b.hbm); });
  row("closed form (two-level)", [](const Trace& t, const LevelBytes&) {
    return thousands(t.report.bounds.closed_form_bytes);
  });
  row("lower bound (two-level)", [](const Trace& t, const LevelBytes&) {
    return thousands(t.report.bounds.lower_bound_bytes);
  });
  return rows;
}

std::string compare_title(const std::vector<Trace>& traces) {
  ensure(traces.size() >= 2, "compare: {} trace(s), it compares two or more", traces.size());
  std::vector<std::string> names;
  for (const Trace& t : traces) names.push_back(t.report.request.algorithm);
  const Report& r = traces.front().report;
  return fmt::format("iosim explain --compare {}: {}, {} on {}", fmt::join(names, ","),
                     pass_words(r.request.problem.pass), problem_line(r), r.profile);
}

void write_compare(std::ostream& out, const std::vector<Trace>& traces, bool color) {
  const Paint paint{color};
  out << paint(kBold, compare_title(traces)) << "\n\n";
  const std::vector<CompareRow> rows = compare_rows(traces);
  std::size_t label_width = 0, cell_width = 16;
  for (const CompareRow& r : rows) {
    label_width = std::max(label_width, r.label.size());
    for (const std::string& c : r.cells) cell_width = std::max(cell_width, c.size() + 1);
  }
  for (const CompareRow& r : rows) {
    std::string line = fmt::format("  {:<{}}", r.label, label_width);
    for (const std::string& c : r.cells) line += fmt::format(" {:>{}}", c, cell_width);
    out << line << "\n";
  }
  out << "\n";
  write_compare_notes(out, traces, color);
}

void write_compare_notes(std::ostream& out, const std::vector<Trace>& traces, bool color) {
  ensure(traces.size() >= 2, "compare: {} trace(s), it compares two or more", traces.size());
  const Paint paint{color};
  // Each schedule against the one that moves the fewest HBM bytes (the first of them on a tie).
  std::vector<std::uint64_t> hbm2;
  for (const Trace& t : traces) hbm2.push_back(run_totals(t).hbm_two_level);
  const std::size_t fewest =
      static_cast<std::size_t>(std::min_element(hbm2.begin(), hbm2.end()) - hbm2.begin());
  for (std::size_t i = 0; i < traces.size(); ++i) {
    if (i == fewest || hbm2[fewest] == 0) continue;
    out << paint(kBold,
                 fmt::format("  {} moves {:.2f}x the HBM bytes of {} (two-level model)",
                             traces[i].report.request.algorithm,
                             static_cast<double>(hbm2[i]) / static_cast<double>(hbm2[fewest]),
                             traces[fewest].report.request.algorithm))
        << "\n";
  }
  const Report& ra = traces.front().report;
  const AttentionProblem& p = ra.request.problem;
  const double n = static_cast<double>(p.seq), d = static_cast<double>(p.head_dim);
  const double m_elems = static_cast<double>(ra.sram_bytes) / static_cast<double>(p.elem_bytes());
  out << fmt::format(
      "  Theorem 2 (FlashAttention, Dao et al. 2022): standard attention makes Theta(Nd + N^2) "
      "HBM\n"
      "  accesses, FlashAttention Theta(N^2 d^2 / M), M = SRAM in elements. Per head here:\n"
      "    Nd + N^2     = {:.0f} + {:.0f} = {:.0f} elements\n"
      "    N^2 d^2 / M  = {:.0f} * {:.0f} / {:.0f} = {:.1f} elements (M = {} B / {} B)\n",
      n * d, n * n, n * d + n * n, n * n, d * d, m_elems, n * n * d * d / m_elems, ra.sram_bytes,
      p.elem_bytes());
  if (n * d <= m_elems) {
    out << "  M >= Nd here: a whole head's K and V fit on chip, so the fused kernels read each\n"
           "  input about once (the Theta(Nd) compulsory traffic) and the N^2 d^2 / M term is\n"
           "  below it; standard attention still writes and reads the N^2 scores.\n";
  }
}

}  // namespace iosim::teach
