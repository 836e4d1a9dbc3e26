// The columns of `iosim report`'s tables: the problem fields and tiling axes in which the rows
// differ, a tile's text, and the Markdown table.
#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "reports/sweep_report_detail.hpp"

namespace iosim::sweep_report_detail {
namespace {

// The problem fields beside profile, algorithm, d and N.
const OtherField kOtherFields[] = {
    {"B", [](const SweepRow& r) { return std::to_string(r.batch); }},
    {"H", [](const SweepRow& r) { return std::to_string(r.heads); }},
    {"N_kv",
     [](const SweepRow& r) {
       return r.seq_kv == r.seq ? std::string("= N") : std::to_string(r.seq_kv);
     }},
    {"H_kv", [](const SweepRow& r) { return std::to_string(r.kv_heads); }},
    {"splits",
     [](const SweepRow& r) { return r.splits > 0 ? std::to_string(r.splits) : std::string("-"); }},
    {"page tokens",
     [](const SweepRow& r) {
       return r.page_tokens > 0 ? std::to_string(r.page_tokens) : std::string("-");
     }},
    {"dtype", [](const SweepRow& r) { return r.dtype; }},
    {"K/V dtype",
     [](const SweepRow& r) { return r.kv_dtype.empty() ? std::string("-") : r.kv_dtype; }},
    {"latent",
     [](const SweepRow& r) {
       return r.latent_dim > 0 ? std::to_string(r.latent_dim) : std::string("-");
     }},
    {"pass", [](const SweepRow& r) { return r.pass; }},
    {"causal", [](const SweepRow& r) { return std::string(r.causal ? "yes" : "no"); }},
    {"window",
     [](const SweepRow& r) { return r.window > 0 ? std::to_string(r.window) : std::string("-"); }},
    {"mask", [](const SweepRow& r) { return std::string(r.mask ? "yes" : "no"); }},
    {"dropout", [](const SweepRow& r) { return fmt::format("{}", r.dropout); }},
    {"pattern",
     [](const SweepRow& r) { return r.pattern.empty() ? std::string("all") : r.pattern; }},
    {"L2", [](const SweepRow& r) { return r.l2 + (r.cold_l2 ? " (cold)" : ""); }},
    {"SM MHz",
     [](const SweepRow& r) {
       return r.requested_clock_mhz > 0 ? fmt::format("{}", r.requested_clock_mhz)
                                        : std::string("power limit");
     }},
};

std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string blocks_text(const SweepRow& r) {
  return fmt::format("{} x {}", r.block_q, r.block_kv);
}

}  // namespace

// A point whose swept flag does not apply to its algorithm (--splits for flash2, --pattern for
// flash1, ...; algorithms/registry.cpp's not_applicable()): not a problem that "none fits" but
// one the sweep's product made up; the report leaves it out and says so once per message.
bool inapplicable(const SweepRow& r) {
  const std::string& m = r.infeasible_reason;
  return !r.feasible && m.find(" to --algo ") != std::string::npos &&
         (m.find(" applies to ") != std::string::npos || m.find(" apply to ") != std::string::npos);
}

std::vector<const OtherField*> varying_fields(const SweepData& data) {
  std::vector<const OtherField*> out;
  for (const OtherField& f : kOtherFields) {
    std::set<std::string> values;
    for (const SweepRow& r : data.rows) {
      if (!inapplicable(r)) values.insert(f.text(r));
    }
    if (values.size() > 1) out.push_back(&f);
  }
  return out;
}

// Tiling axes beside Br x Bc. Rows of one problem that differ in them compete for its best tile
// (sweep_best_tiles.cpp's problem_key), so a tile names each one in which some problem's rows
// differ: a sweep over stages that reported its best as "192 x 128" hid which stage count won.
const OtherField kTilingFields[] = {
    {"stages", [](const SweepRow& r) { return std::to_string(r.stages); }},
    {"threads", [](const SweepRow& r) { return std::to_string(r.threads); }},
    {"warpgroups",
     [](const SweepRow& r) {
       return r.warpgroups.empty() ? std::string("default") : r.warpgroups;
     }},
    {"pack-gqa",
     [](const SweepRow& r) { return r.pack_gqa.empty() ? std::string("auto") : r.pack_gqa; }},
    {"backward",
     [](const SweepRow& r) {
       return r.backward_block_q > 0
                  ? fmt::format("{} x {}", r.backward_block_q, r.backward_block_kv)
                  : std::string("-");
     }},
};

// The tiling axes in which the rows of some problem differ; `feasible_only`: among the rows that
// ran (the ones a best tile is chosen from).
std::vector<const OtherField*> varying_tiling(const SweepData& data, bool feasible_only) {
  const std::vector<BestBlock> problems = best_blocks(data);
  std::vector<const OtherField*> out;
  for (const OtherField& f : kTilingFields) {
    for (const BestBlock& b : problems) {
      std::set<std::string> values;
      for (const std::size_t i : b.rows) {
        const SweepRow& r = data.rows[i];
        if ((r.feasible || !feasible_only) && !inapplicable(r)) values.insert(f.text(r));
      }
      if (values.size() > 1) {
        out.push_back(&f);
        break;
      }
    }
  }
  return out;
}

// Br x Bc and the other tiling axes that vary: "192 x 128, stages 3".
std::string tile_text(const SweepRow& r, const std::vector<const OtherField*>& axes) {
  std::string s = blocks_text(r);
  for (const OtherField* f : axes) s += fmt::format(", {} {}", f->name, f->text(r));
  return s;
}

// The tiling axes but Br x Bc of a heatmap's cell: " (stages 3)", or "" when none vary.
std::string axes_suffix(const SweepRow& r, const std::vector<const OtherField*>& axes) {
  std::string s;
  for (const OtherField* f : axes)
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", f->name, f->text(r));
  return s.empty() ? s : fmt::format(" ({})", s);
}

// A table header naming the tile's axes: "Br x Bc, stages".
std::string tile_header(const std::vector<const OtherField*>& axes) {
  std::string s = "Br x Bc";
  for (const OtherField* f : axes) s += fmt::format(", {}", f->name);
  return s;
}

std::string markdown_table(const std::vector<std::vector<std::string>>& t) {
  std::string s;
  for (std::size_t i = 0; i < t.size(); ++i) {
    s += "|";
    for (const std::string& c : t[i]) s += fmt::format(" {} |", md_escape(c));
    s += "\n";
    if (i == 0) {
      s += "|";
      for (std::size_t k = 0; k < t[0].size(); ++k) s += " --- |";
      s += "\n";
    }
  }
  return s;
}

}  // namespace iosim::sweep_report_detail
