// Where the bytes go, by tensor, on the run page: HBM reads, HBM writes during the run and the
// lines left dirty in the L2 at the end. The dirty lines are a tensor's writes still to come (the
// output's, often all of them in a run that fits the L2): drawn apart, hatched, so the output has
// a bar and the writes Nsight Compute's DRAM counters see during the run stay what they are.
#include "reports/run_page_tensors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "reports/svg_chart.hpp"
#include "sim/base/html_text.hpp"
#include "sim/base/human_units.hpp"

namespace iosim::run_page_detail {
namespace {

struct TensorBytes {
  TensorId id;
  std::uint64_t hbm_read, hbm_write, dirty, l2_read, l2_write;
  std::uint64_t hbm() const { return hbm_read + hbm_write + dirty; }
};

std::vector<TensorBytes> tensor_rows(const Counters& c) {
  std::vector<TensorBytes> out;
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    const TensorBytes t{static_cast<TensorId>(i), c.hbm.read_bytes[i], c.hbm.write_bytes[i],
                        c.l2_dirty_at_end[i],     c.l2.read_bytes[i],  c.l2.write_bytes[i]};
    if (t.hbm() + t.l2_read + t.l2_write > 0) out.push_back(t);
  }
  return out;
}

std::string bytes_text(std::uint64_t b) {
  return human_bytes(static_cast<double>(b));
}

constexpr double kLeft = 110, kBarWidth = 640, kTop = 40, kRow = 26;

std::string chart(const Report& r, const std::vector<TensorBytes>& rows) {
  std::uint64_t most = 0;
  for (const TensorBytes& t : rows) most = std::max(most, t.hbm());
  std::string s = svg_text(20, 24,
                           "Where the bytes go: HBM bytes by tensor (read, written during the run, "
                           "dirty in L2 at the end)",
                           "title", "start");
  s += "<defs><pattern id=\"iosim-dirty\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fbd0c8\"/>"
       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d7191c\" stroke-width=\"2\"/>"
       "</pattern></defs>\n";
  double y = kTop;
  for (const TensorBytes& t : rows) {
    const std::string name(tensor_name(t.id));
    s += fmt::format(
        "<g class=\"tensor\" data-tensor=\"{}\" data-read-bytes=\"{}\" data-write-bytes=\"{}\" "
        "data-dirty-bytes=\"{}\">\n",
        name, t.hbm_read, t.hbm_write, t.dirty);
    s += svg_text(kLeft - 8, y + 15, name, "box-name", "end");
    double x = kLeft;
    const struct {
      std::uint64_t bytes;
      const char* fill;
      const char* what;
    } parts[] = {{t.hbm_read, "#2c7bb6", "read"},
                 {t.hbm_write, "#d7191c", "written during the run"},
                 {t.dirty, "url(#iosim-dirty)", "dirty in L2 at the end, written back after"}};
    for (const auto& p : parts) {
      const double w =
          most > 0 ? kBarWidth * static_cast<double>(p.bytes) / static_cast<double>(most) : 0.0;
      if (w <= 0) continue;
      s += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"20\" fill=\"{}\">"
          "<title>{} {}: {}</title></rect>\n",
          x, y, std::max(w, 0.5), p.fill, name, p.what, bytes_text(p.bytes));
      x += w;
    }
    s += svg_text(
        x + 8, y + 15,
        t.hbm() == 0
            ? std::string("no HBM bytes (L2 only)")
            : fmt::format(
                  "read {}, write {}{}", bytes_text(t.hbm_read), bytes_text(t.hbm_write),
                  t.dirty > 0 ? fmt::format(" + {} dirty at end", bytes_text(t.dirty)) : ""),
        "small", "start");
    s += "</g>\n";
    y += kRow;
  }
  s += svg_text(20, y + 16,
                r.request.engine.l2_enabled
                    ? "Blue: read from HBM. Red: written to HBM during the run. Hatched: lines "
                      "still dirty in the L2 when the run ends, written to HBM after it."
                    : "Blue: read from HBM. Red: written to HBM (the two-level model: no L2, "
                      "nothing left dirty).",
                "small", "start");
  return s;
}

}  // namespace

std::string tensor_bytes_section(const Report& r, const std::string& style) {
  const std::vector<TensorBytes> rows = tensor_rows(r.engine.total);
  const double height = kTop + kRow * static_cast<double>(rows.size()) + 30;
  std::string s = "<section><h2>Where the bytes go</h2>\n";
  s += svg_open(kChartWidth, height, "chart tensors");
  s += style + chart(r, rows) + "</svg>\n";
  s += "<table id=\"tensors\">\n<thead><tr><th>tensor</th><th>HBM read</th><th>HBM write</th>"
       "<th>dirty in L2 at end</th><th>HBM (incl. dirty at end)</th><th>L2 read</th>"
       "<th>L2 write</th></tr></thead>\n<tbody>\n";
  for (const TensorBytes& t : rows) {
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        html_escape(std::string(tensor_name(t.id))), bytes_text(t.hbm_read),
        bytes_text(t.hbm_write), bytes_text(t.dirty), bytes_text(t.hbm()), bytes_text(t.l2_read),
        bytes_text(t.l2_write));
  }
  s += "</tbody></table>\n";
  s += "<p class=\"note\">A tensor's HBM writes are those during the run (what Nsight Compute's "
       "DRAM counters count, and what the accuracy tables compare) plus its lines still dirty in "
       "the L2 when the run ends: written to HBM after it, by eviction or the next kernel. The "
       "three sum to the run's HBM bytes incl. dirty at end (docs/model.md, \"Where the bytes "
       "go\").</p>\n</section>\n";
  return s;
}

}  // namespace iosim::run_page_detail
