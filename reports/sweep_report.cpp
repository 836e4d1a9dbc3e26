#include "reports/sweep_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "reports/writers.hpp"
#include "sim/errors.hpp"

namespace iosim {
namespace {

using nlohmann::json;

const char* const kPageStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 auto; max-width: 1400px; padding: 0 16px 32px; color: #222; }
h1 { margin: 16px 0 4px; }
h2 { margin: 28px 0 4px; font-size: 18px; border-bottom: 1px solid #ddd; }
.meta, .note { color: #555; margin: 4px 0; }
#controls { position: sticky; top: 0; background: #f7f7f7; border: 1px solid #ddd; padding: 6px 10px;
            display: flex; flex-wrap: wrap; gap: 16px; z-index: 2; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(430px, 1fr)); gap: 12px; }
.chart { position: relative; height: 330px; border: 1px solid #e4e4e4; padding: 4px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; }
td:first-child, td:nth-child(2) { text-align: left; }
#infeasible td:last-child { text-align: left; }
)css";

// Runs before Chart.js so that errors while it loads are recorded too.
const char* const kErrorCapture = R"js(
window.iosimErrors = [];
window.iosimNote = function (message) {
  window.iosimErrors.push(String(message));
  if (window.iosimUpdateStatus) window.iosimUpdateStatus();
};
window.addEventListener('error', function (e) { window.iosimNote(e.message || e); });
(function () {
  var consoleError = console.error;
  console.error = function () {
    window.iosimNote(Array.prototype.map.call(arguments, String).join(' '));
    consoleError.apply(console, arguments);
  };
})();
)js";

const char* const kPageScript = R"js(
(function () {
  'use strict';
  var errors = window.iosimErrors;
  var note = window.iosimNote;
  window.iosimUpdateStatus = updateStatus;

  // <body> data-* attributes tell an automated check whether every chart drew.
  function updateStatus() {
    var canvases = Array.prototype.slice.call(document.querySelectorAll('canvas'));
    var drawn = canvases.filter(function (c) { return c.dataset.drawn === '1'; }).length;
    var b = document.body;
    b.dataset.chartsExpected = canvases.length;
    b.dataset.chartsDrawn = drawn;
    b.dataset.errors = errors.length;
    if (errors.length) b.dataset.errorText = errors.join(' | ').slice(0, 1000);
    b.dataset.status = errors.length ? 'error'
        : (canvases.length > 0 && drawn === canvases.length ? 'ok' : 'pending');
  }

  // A canvas counts as drawn once it holds ink (any non-transparent pixel).
  Chart.register({
    id: 'iosimDrawn',
    afterRender: function (chart) {
      var c = chart.canvas;
      if (c.dataset.drawn === '1' || !c.width || !c.height) return;
      var d = chart.ctx.getImageData(0, 0, c.width, c.height).data;
      for (var i = 3; i < d.length; i += 4 * 7) {
        if (d[i] !== 0) { c.dataset.drawn = '1'; break; }
      }
    }
  });

  var DATA = JSON.parse(document.getElementById('iosim-data').textContent);
  var ROWS = DATA.rows;
  var COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
                '#7f7f7f', '#bcbd22', '#17becf', '#393b79', '#ad494a'];
  var TENSOR_ORDER = ['Q', 'K', 'V', 'O', 'S', 'P', 'L', 'm', 'l', 'dO', 'dQ', 'dK', 'dV',
                      'partial_O', 'partial_lse', 'block_table'];
  function color(i) { return COLORS[i % COLORS.length]; }
  function uniq(xs) { return xs.filter(function (x, i) { return xs.indexOf(x) === i; }); }
  function numeric(xs) { return uniq(xs).sort(function (a, b) { return a - b; }); }

  function human(v, units) {
    if (!isFinite(v)) return '';
    var i = 0;
    while (Math.abs(v) >= 1000 && i < units.length - 1) { v /= 1000; i++; }
    return (i === 0 ? String(Math.round(v * 100) / 100) : v.toPrecision(3)) + ' ' + units[i];
  }
  function bytes(v) { return human(v, ['B', 'KB', 'MB', 'GB', 'TB', 'PB']); }
  function flopRate(v) { return human(v, ['FLOP/s', 'KFLOP/s', 'MFLOP/s', 'GFLOP/s', 'TFLOP/s', 'PFLOP/s']); }
  function seconds(s) {
    if (s >= 1) return s.toPrecision(3) + ' s';
    if (s >= 1e-3) return (s * 1e3).toPrecision(3) + ' ms';
    return (s * 1e6).toPrecision(3) + ' us';
  }
  // Log-axis labels only at 1, 2 and 5 times a power of ten.
  function logLabel(format) {
    return function (v) {
      var m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
      return [1, 2, 5].some(function (k) { return Math.abs(m - k) < 1e-6; }) ? format(v) : '';
    };
  }
  // A log axis with ticks exactly at `values` (sequence lengths, block sizes).
  function ticksAt(values) {
    return function (axis) { axis.ticks = values.map(function (v) { return { value: v }; }); };
  }

  var anyNkv = ROWS.some(function (r) { return r.Nkv !== r.N; });
  ROWS.forEach(function (r) {
    var parts = ['B=' + r.B, 'H=' + r.H, r.dt, r.pass];
    if (anyNkv) parts.push('N_kv=' + r.Nkv);
    if (r.causal) parts.push('causal');
    if (r.mask) parts.push('mask');
    if (r.drop > 0) parts.push('dropout=' + r.drop);
    if (r.pat) parts.push('pattern ' + r.pat);
    parts.push('L2 ' + r.l2 + (r.cold ? ' (cold)' : ''));
    if (r.clk > 0) parts.push(r.clk + ' MHz');
    r.variant = parts.join(' ');
  });

  var state = {};
  var charts = [];

  function fillSelect(id, values, labels, current) {
    var el = document.getElementById(id);
    el.innerHTML = '';
    values.forEach(function (v, i) {
      var o = document.createElement('option');
      o.value = String(v);
      o.textContent = labels ? labels[i] : String(v);
      el.appendChild(o);
    });
    var keep = values.map(String).indexOf(String(current));
    el.value = String(keep >= 0 ? values[keep] : values[0]);
    return el;
  }

  function makeChart(parent, title, config) {
    var box = document.createElement('div');
    box.className = 'chart';
    var canvas = document.createElement('canvas');
    box.appendChild(canvas);
    parent.appendChild(box);
    config.options = config.options || {};
    var o = config.options;
    o.animation = false;
    o.responsive = true;
    o.maintainAspectRatio = false;
    o.plugins = o.plugins || {};
    o.plugins.title = { display: true, text: title };
    o.plugins.legend = o.plugins.legend || { labels: { boxWidth: 12, font: { size: 11 } } };
    charts.push(new Chart(canvas, config));
  }

  function logAxis(title, format, values) {
    var axis = { type: 'logarithmic', title: { display: true, text: title },
                 ticks: { callback: values ? format : logLabel(format) } };
    if (values && values.length) axis.afterBuildTicks = ticksAt(values);
    return axis;
  }

  function selected() {
    return ROWS.filter(function (r) {
      return r.p === state.profile && String(r.d) === state.d && r.variant === state.variant;
    });
  }

  // The row of one problem to plot: at the chosen block_kv, or the best by `key`.
  function pick(rows, key, block) {
    var ok = rows.filter(function (r) {
      return r.ok && (block === 'best' || String(r.bkv) === block);
    });
    var best = null;
    ok.forEach(function (r) {
      if (best === null || r[key] < best[key] ||
          (r[key] === best[key] && (key === 't' ? r.hbm < best.hbm : r.t < best.t))) best = r;
    });
    return best;
  }

  function byBlockCharts(rows, algos, ns) {
    var parent = document.getElementById('by-block');
    var blocks = numeric(rows.map(function (r) { return r.bkv; }));
    algos.forEach(function (a) {
      var datasets = [];
      ns.forEach(function (n, k) {
        var hbm = [], l2 = [];
        blocks.forEach(function (bkv) {
          var r = pick(rows.filter(function (x) {
            return x.a === a && x.N === n && x.bkv === bkv;
          }), 'hbm', 'best');
          hbm.push({ x: bkv, y: r ? r.hbm : null });
          l2.push({ x: bkv, y: r ? r.l2b : null });
        });
        datasets.push({ label: 'N=' + n + ' HBM', data: hbm, borderColor: color(k),
                        backgroundColor: color(k), spanGaps: false });
        datasets.push({ label: 'N=' + n + ' L2', data: l2, borderColor: color(k),
                        backgroundColor: '#fff', borderDash: [5, 4], spanGaps: false });
      });
      makeChart(parent, a + ': bytes vs block_kv (Bc)', {
        type: 'line', data: { datasets: datasets },
        options: { parsing: false, scales: { x: logAxis('block_kv (Bc)', String, blocks),
                                             y: logAxis('bytes', bytes) },
                   plugins: { tooltip: { callbacks: { label: function (c) {
                     return c.dataset.label + ': ' + bytes(c.parsed.y); } } } } }
      });
    });
  }

  function byNCharts(rows, algos, ns) {
    var parent = document.getElementById('by-n');
    var datasets = [], times = [];
    var comp = [], lb = [];
    algos.forEach(function (a, k) {
      var hbm = [], l2 = [], t = [];
      ns.forEach(function (n) {
        var group = rows.filter(function (x) { return x.a === a && x.N === n; });
        var r = pick(group, 'hbm', state.block);
        if (r) {
          hbm.push({ x: n, y: r.hbm });
          l2.push({ x: n, y: r.l2b });
          if (!comp.some(function (p) { return p.x === n; })) {
            comp.push({ x: n, y: r.comp });
            lb.push({ x: n, y: r.lb });
          }
        }
        var rt = pick(group, 't', state.block);
        if (rt) t.push({ x: n, y: rt.t });
      });
      datasets.push({ label: a + ' HBM', data: hbm, borderColor: color(k), backgroundColor: color(k) });
      datasets.push({ label: a + ' L2', data: l2, borderColor: color(k), backgroundColor: '#fff',
                      borderDash: [5, 4] });
      times.push({ label: a, data: t, borderColor: color(k), backgroundColor: color(k) });
    });
    var sortX = function (a, b) { return a.x - b.x; };
    datasets.push({ label: 'compulsory', data: comp.sort(sortX), borderColor: '#000',
                    backgroundColor: '#000', borderDash: [2, 3], pointRadius: 0 });
    datasets.push({ label: 'lower bound', data: lb.sort(sortX), borderColor: '#888',
                    backgroundColor: '#888', borderDash: [8, 4], pointRadius: 0 });
    makeChart(parent, 'Bytes vs N (log-log)', {
      type: 'line', data: { datasets: datasets },
      options: { parsing: false, scales: { x: logAxis('N (sequence length)', String, ns),
                                           y: logAxis('bytes', bytes) },
                 plugins: { tooltip: { callbacks: { label: function (c) {
                   return c.dataset.label + ': ' + bytes(c.parsed.y); } } } } }
    });
    makeChart(parent, 'Simulated time vs N (log-log)', {
      type: 'line', data: { datasets: times },
      options: { parsing: false, scales: { x: logAxis('N (sequence length)', String, ns),
                                           y: logAxis('time', seconds) },
                 plugins: { tooltip: { callbacks: { label: function (c) {
                   return c.dataset.label + ': ' + seconds(c.parsed.y); } } } } }
    });
  }

  function tensorCharts(rows, algos) {
    var parent = document.getElementById('by-tensor');
    var n = Number(state.tensorN);
    var picked = algos.map(function (a) {
      return pick(rows.filter(function (x) { return x.a === a && x.N === n; }), 'hbm', state.block);
    });
    var names = [];
    picked.forEach(function (r) { if (r) names = names.concat(Object.keys(r.pt)); });
    names = uniq(names).sort(function (a, b) {
      var ia = TENSOR_ORDER.indexOf(a), ib = TENSOR_ORDER.indexOf(b);
      return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || (a < b ? -1 : 1);
    });
    [['HBM', 0], ['L2', 1]].forEach(function (level) {
      var datasets = names.map(function (t, k) {
        return { label: t, backgroundColor: color(k), stack: 'bytes',
                 data: picked.map(function (r) { return r && r.pt[t] ? r.pt[t][level[1]] : 0; }) };
      });
      makeChart(parent, level[0] + ' bytes per tensor at N=' + n, {
        type: 'bar',
        data: { labels: algos.map(function (a, i) {
          return picked[i] ? a + ' (' + picked[i].bq + 'x' + picked[i].bkv + ')' : a + ' (none fits)';
        }), datasets: datasets },
        options: { scales: { x: { stacked: true },
                             y: { stacked: true, title: { display: true, text: level[0] + ' bytes' },
                                  ticks: { callback: bytes } } },
                   plugins: { tooltip: { callbacks: { label: function (c) {
                     return c.dataset.label + ': ' + bytes(c.parsed.y); } } } } }
      });
    });
  }

  function rooflineCharts() {
    var parent = document.getElementById('roofline');
    uniq(ROWS.map(function (r) { return r.p; })).forEach(function (p) {
      var rows = ROWS.filter(function (r) { return r.p === p && r.ok && r.hbm > 0 && r.t > 0; });
      var prof = DATA.profiles[p] || {};
      var datasets = uniq(rows.map(function (r) { return r.a; })).map(function (a, k) {
        return { type: 'scatter', label: a, borderColor: color(k), backgroundColor: color(k),
                 data: rows.filter(function (r) { return r.a === a; }).map(function (r) {
                   return { x: r.fl / r.hbm, y: r.fl / r.t, N: r.N, d: r.d, bkv: r.bkv };
                 }) };
      });
      var xs = rows.map(function (r) { return r.fl / r.hbm; });
      var xmin = Math.min.apply(null, xs.concat([1])) / 2, xmax = Math.max.apply(null, xs.concat([10])) * 2;
      uniq(rows.map(function (r) { return r.dt; })).forEach(function (dt) {
        var peak = ((prof.tensor_tflops || {})[dt] || 0) * 1e12;
        [['HBM', prof.hbm_gbps, []], ['L2', prof.l2_gbps, [6, 4]]].forEach(function (roof) {
          var bw = (roof[1] || 0) * 1e9;
          if (!(peak > 0 && bw > 0)) return;
          var ridge = peak / bw;
          var pts = [{ x: xmin, y: bw * xmin }];
          if (ridge > xmin && ridge < xmax) pts.push({ x: ridge, y: peak });
          pts.push({ x: xmax, y: Math.min(peak, bw * xmax) });
          datasets.push({ type: 'line', label: roof[0] + ' roof (' + dt + ')', data: pts,
                          borderColor: roof[0] === 'HBM' ? '#000' : '#888', borderDash: roof[2],
                          pointRadius: 0, borderWidth: 1.5 });
        });
      });
      makeChart(parent, 'Roofline: ' + (prof.description || p), {
        type: 'scatter', data: { datasets: datasets },
        options: { parsing: false, scales: {
            x: logAxis('arithmetic intensity (FLOPs / HBM byte)', String),
            y: logAxis('achieved FLOP/s', flopRate) },
          plugins: { tooltip: { callbacks: { label: function (c) {
            var r = c.raw;
            return c.dataset.label + (r.N ? ' N=' + r.N + ' d=' + r.d + ' Bc=' + r.bkv : '') +
                ': ' + r.x.toPrecision(3) + ' FLOP/B, ' + flopRate(r.y); } } } } }
      });
    });
  }

  function validationCharts() {
    var parent = document.getElementById('validation');
    if (!parent || !DATA.validation) return;
    var cases = DATA.validation;
    [['bytes', ['dram_read', 'dram_write', 'l2_read', 'l2_write'], bytes],
     ['time', ['time'], seconds]].forEach(function (group) {
      var all = [];
      var datasets = group[1].map(function (m, k) {
        var pts = cases.filter(function (c) { return c.m[m][1] > 0 && c.m[m][0] > 0; })
            .map(function (c) { all.push(c.m[m][0], c.m[m][1]);
                                return { x: c.m[m][1], y: c.m[m][0], id: c.id }; });
        return { label: m, data: pts, borderColor: color(k), backgroundColor: color(k) };
      });
      if (all.length) {
        var lo = Math.min.apply(null, all), hi = Math.max.apply(null, all);
        datasets.push({ type: 'line', label: 'predicted = measured', data: [{ x: lo, y: lo }, { x: hi, y: hi }],
                        borderColor: '#888', borderDash: [4, 4], pointRadius: 0 });
      }
      makeChart(parent, 'Predicted vs measured ' + group[0], {
        type: 'scatter', data: { datasets: datasets },
        options: { parsing: false, scales: { x: logAxis('measured ' + group[0], group[2]),
                                             y: logAxis('predicted ' + group[0], group[2]) },
                   plugins: { tooltip: { callbacks: { label: function (c) {
                     return (c.raw.id || c.dataset.label) + ': measured ' + group[2](c.raw.x) +
                         ', predicted ' + group[2](c.raw.y); } } } } }
      });
    });
  }

  function drawSelection() {
    charts.forEach(function (c) {
      var box = c.canvas.parentNode;
      var grid = box.parentNode;
      if (grid.id === 'roofline' || grid.id === 'validation') return;
      c.destroy();
      grid.removeChild(box);
    });
    charts = charts.filter(function (c) { return c.canvas && c.canvas.parentNode; });
    var rows = selected();
    var algos = uniq(rows.map(function (r) { return r.a; }));
    var ns = numeric(rows.map(function (r) { return r.N; }));
    byBlockCharts(rows, algos, ns);
    byNCharts(rows, algos, ns);
    fillSelect('sel-tensor-n', ns, null, state.tensorN || ns[ns.length - 1]);
    state.tensorN = document.getElementById('sel-tensor-n').value;
    tensorCharts(rows, algos);
    updateStatus();
  }

  function readControls() {
    ['profile', 'd', 'variant', 'block'].forEach(function (k) {
      state[k] = document.getElementById('sel-' + k).value;
    });
  }

  function setUp() {
    var profiles = uniq(ROWS.map(function (r) { return r.p; }));
    fillSelect('sel-profile', profiles, profiles.map(function (p) {
      return DATA.profiles[p] && DATA.profiles[p].description ? p + ' (' + DATA.profiles[p].description + ')' : p;
    }));
    fillSelect('sel-d', numeric(ROWS.map(function (r) { return r.d; })));
    fillSelect('sel-variant', uniq(ROWS.map(function (r) { return r.variant; })));
    var blocks = numeric(ROWS.map(function (r) { return r.bkv; }));
    fillSelect('sel-block', ['best'].concat(blocks),
               ['best'].concat(blocks.map(function (b) { return 'block_kv = ' + b; })));
    readControls();
    ['profile', 'd', 'variant', 'block'].forEach(function (k) {
      document.getElementById('sel-' + k).addEventListener('change', function () {
        readControls();
        drawSelection();
      });
    });
    document.getElementById('sel-tensor-n').addEventListener('change', function (e) {
      state.tensorN = e.target.value;
      drawSelection();
    });
    rooflineCharts();
    validationCharts();
    drawSelection();
  }

  // #selftest: draw every combination of the selects, then report on <body> whether each
  // drew without a script error (tests/browser_test.sh).
  function selfTest() {
    var ids = ['sel-profile', 'sel-d', 'sel-variant', 'sel-block'];
    var options = ids.map(function (id) {
      return Array.prototype.map.call(document.getElementById(id).options, function (o) { return o.value; });
    });
    var combos = 0, failed = 0;
    (function visit(k) {
      if (k === ids.length) {
        readControls();
        drawSelection();
        combos++;
        if (document.body.dataset.status !== 'ok') failed++;
        return;
      }
      options[k].forEach(function (v) {
        document.getElementById(ids[k]).value = v;
        visit(k + 1);
      });
    })(0);
    ids.forEach(function (id, k) { document.getElementById(id).value = options[k][0]; });
    readControls();
    drawSelection();
    document.body.dataset.selftest = (failed === 0 && errors.length === 0 ? 'ok' : 'failed') +
        ' ' + combos + ' selections, ' + failed + ' failed';
  }

  try {
    setUp();
    if (window.location.hash === '#selftest') selfTest();
  } catch (e) {
    note(e && e.stack ? e.stack : e);
  }
  updateStatus();
})();
)js";

// Problem fields that are not always shown: a column appears only when the rows differ in it.
struct OtherField {
  const char* name;
  std::string (*text)(const SweepRow&);
};

const OtherField kOtherFields[] = {
    {"B", [](const SweepRow& r) { return std::to_string(r.batch); }},
    {"H", [](const SweepRow& r) { return std::to_string(r.heads); }},
    {"N_kv",
     [](const SweepRow& r) {
       return r.seq_kv == r.seq ? std::string("= N") : std::to_string(r.seq_kv);
     }},
    {"dtype", [](const SweepRow& r) { return r.dtype; }},
    {"pass", [](const SweepRow& r) { return r.pass; }},
    {"causal", [](const SweepRow& r) { return std::string(r.causal ? "yes" : "no"); }},
    {"mask", [](const SweepRow& r) { return std::string(r.mask ? "yes" : "no"); }},
    {"dropout", [](const SweepRow& r) { return fmt::format("{}", r.dropout); }},
    {"pattern",
     [](const SweepRow& r) { return r.pattern.empty() ? std::string("all") : r.pattern; }},
    {"L2", [](const SweepRow& r) { return r.l2 + (r.cold_l2 ? " (cold)" : ""); }},
    {"SM MHz",
     [](const SweepRow& r) {
       return r.sm_clock_mhz > 0 ? fmt::format("{}", r.sm_clock_mhz) : std::string("boost");
     }},
};

std::vector<const OtherField*> varying_fields(const SweepData& data) {
  std::vector<const OtherField*> out;
  for (const OtherField& f : kOtherFields) {
    std::set<std::string> values;
    for (const SweepRow& r : data.rows) values.insert(f.text(r));
    if (values.size() > 1) out.push_back(&f);
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

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

std::string ratio_text(double a, double b) {
  return b > 0 ? fmt::format("{:.2f}x", a / b) : std::string("-");
}

// The best-block table as rows of cells; the header first.
std::vector<std::vector<std::string>> best_table(const SweepData& data) {
  const std::vector<const OtherField*> other = varying_fields(data);
  std::vector<std::string> header = {"profile", "algorithm", "d", "N"};
  for (const OtherField* f : other) header.push_back(f->name);
  for (const char* h : {"best Br x Bc (HBM)", "HBM bytes", "HBM / lower bound", "L2 bytes",
                        "best Br x Bc (time)", "time", "bound", "feasible / tried"}) {
    header.push_back(h);
  }
  std::vector<std::vector<std::string>> table = {header};
  for (const BestBlock& b : best_blocks(data)) {
    const SweepRow& f = data.rows[b.first];
    std::vector<std::string> row = {f.profile, f.algorithm, std::to_string(f.head_dim),
                                    std::to_string(f.seq)};
    for (const OtherField* o : other) row.push_back(o->text(f));
    if (b.feasible == 0) {
      row.push_back("none fits");
      for (int i = 0; i < 6; ++i) row.push_back("-");
    } else {
      const SweepRow& h = data.rows[b.by_hbm];
      const SweepRow& t = data.rows[b.by_time];
      row.push_back(blocks_text(h));
      row.push_back(human_bytes(h.hbm_bytes()));
      row.push_back(ratio_text(h.hbm_bytes(), h.lower_bound_bytes));
      row.push_back(human_bytes(h.l2_bytes()));
      row.push_back(blocks_text(t));
      row.push_back(human_seconds(t.time_s));
      row.push_back(t.bound);
    }
    row.push_back(fmt::format("{} / {}", b.feasible, b.tried));
    table.push_back(std::move(row));
  }
  return table;
}

// Infeasible points: header first.
std::vector<std::vector<std::string>> infeasible_table(const SweepData& data) {
  std::vector<std::vector<std::string>> table = {
      {"profile", "algorithm", "B", "H", "N", "N_kv", "d", "Br x Bc", "reason"}};
  for (const SweepRow& r : data.rows) {
    if (r.feasible) continue;
    table.push_back({r.profile, r.algorithm, std::to_string(r.batch), std::to_string(r.heads),
                     std::to_string(r.seq), std::to_string(r.seq_kv), std::to_string(r.head_dim),
                     blocks_text(r), r.infeasible_reason});
  }
  return table;
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

std::string html_table(const std::vector<std::vector<std::string>>& t, const char* id) {
  std::string s = fmt::format("<table id=\"{}\">\n<thead><tr>", id);
  for (const std::string& c : t[0]) s += fmt::format("<th>{}</th>", html_escape(c));
  s += "</tr></thead>\n<tbody>\n";
  for (std::size_t i = 1; i < t.size(); ++i) {
    s += "<tr>";
    for (const std::string& c : t[i]) s += fmt::format("<td>{}</td>", html_escape(c));
    s += "</tr>\n";
  }
  return s + "</tbody></table>\n";
}

std::string sources_text(const SweepData& data) {
  std::string s;
  for (const std::string& f : data.sources) s += (s.empty() ? "" : ", ") + f;
  return s;
}

std::size_t feasible_count(const SweepData& data) {
  return static_cast<std::size_t>(std::count_if(data.rows.begin(), data.rows.end(),
                                                [](const SweepRow& r) { return r.feasible; }));
}

// The page's data: short keys because a large sweep embeds many rows.
json page_data(const SweepData& data, const ValidationResult* validation) {
  json rows = json::array();
  for (const SweepRow& r : data.rows) {
    json j = {
        {"p", r.profile},     {"a", r.algorithm},  {"dt", r.dtype},         {"pass", r.pass},
        {"l2", r.l2},         {"cold", r.cold_l2}, {"clk", r.sm_clock_mhz}, {"B", r.batch},
        {"H", r.heads},       {"N", r.seq},        {"Nkv", r.seq_kv},       {"d", r.head_dim},
        {"causal", r.causal}, {"mask", r.mask},    {"drop", r.dropout},     {"pat", r.pattern},
        {"bq", r.block_q},    {"bkv", r.block_kv}, {"ok", r.feasible}};
    if (r.feasible) {
      j["hbm"] = r.hbm_bytes();
      j["l2b"] = r.l2_bytes();
      j["fl"] = r.flops;
      j["t"] = r.time_s;
      j["bound"] = r.bound;
      j["comp"] = r.compulsory_bytes;
      j["cf"] = r.closed_form_bytes;
      j["lb"] = r.lower_bound_bytes;
      json pt = json::object();
      for (const auto& [name, v] : r.per_tensor) pt[name] = {v[0] + v[1], v[2] + v[3]};
      j["pt"] = pt;
    }
    rows.push_back(std::move(j));
  }
  json profiles = json::object();
  for (const auto& [name, p] : data.profiles) {
    profiles[name] = {{"description", p.description},
                      {"hbm_gbps", p.hbm_gbps},
                      {"l2_gbps", p.l2_gbps},
                      {"tensor_tflops", p.tensor_tflops}};
  }
  json cases = nullptr;
  if (validation != nullptr) {
    cases = json::array();
    for (const CaseResult& c : validation->cases) {
      if (!c.skipped_reason.empty()) continue;
      json m = json::object();
      for (int i = 0; i < kMetricCount; ++i) {
        m[metric_name(kMetrics[i])] = {c.metrics[i].predicted, c.metrics[i].measured};
      }
      cases.push_back({{"id", c.id}, {"schedule", c.schedule}, {"profile", c.profile}, {"m", m}});
    }
  }
  return {{"rows", rows}, {"profiles", profiles}, {"validation", cases}};
}

// JSON inside <script> must not contain "</" (it could close the element).
std::string script_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') out += '\\';
  }
  return out;
}

std::string validation_html(const ValidationResult& v) {
  std::vector<std::vector<std::string>> t = {{"schedule", "cases"}};
  for (Metric m : kMetrics) t[0].push_back(std::string(metric_name(m)) + " median |err|");
  for (const Summary& s : v.summaries) {
    std::vector<std::string> row = {s.schedule, std::to_string(s.cases)};
    for (int i = 0; i < kMetricCount; ++i) {
      row.push_back(s.median_abs_error[i] ? fmt::format("{:.1f}%", *s.median_abs_error[i] * 100)
                                          : "-");
    }
    t.push_back(std::move(row));
  }
  return html_table(t, "validation-summary");
}

}  // namespace

std::string sweep_report_markdown(const SweepData& data, const ValidationResult* validation) {
  std::string s = "# iosim sweep report\n\n";
  s += fmt::format("Sources: {}. {} rows, {} feasible, {} infeasible", sources_text(data),
                   data.rows.size(), feasible_count(data), data.rows.size() - feasible_count(data));
  s += data.duplicate_rows > 0
           ? fmt::format(", {} duplicate rows dropped.\n\n", data.duplicate_rows)
           : ".\n\n";
  for (const std::string& c : data.coverage) s += fmt::format("- {}\n", c);
  s += "\n## Best block size per (N, d, profile, algorithm)\n\n";
  s += "Best by HBM bytes (ties: less time) and by simulated time (ties: fewer HBM bytes); "
       "the lower bound is the two-level Omega(N N_kv d^2 / M) of the theory.\n\n";
  s += markdown_table(best_table(data));
  if (validation != nullptr) {
    s += "\n## Predicted vs measured\n\n";
    s += validation_markdown(*validation);
  }
  const auto infeasible = infeasible_table(data);
  if (infeasible.size() > 1) {
    s += fmt::format("\n## Infeasible points ({})\n\n", infeasible.size() - 1);
    s += markdown_table(infeasible);
  }
  s += "\nCharts: the HTML report of the same sweep (`iosim report ... --html FILE`).\n";
  return s;
}

std::string sweep_report_html(const SweepData& data, const ValidationResult* validation,
                              const std::string& chartjs_source) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>iosim sweep report</title>\n<style>\n";
  s += kPageStyle;
  s += "</style>\n<script>\n";
  s += kErrorCapture;
  s += "</script>\n<script>\n";
  s += script_safe(chartjs_source);
  s += "\n</script>\n</head>\n<body data-status=\"pending\">\n<h1>iosim sweep report</h1>\n";
  s += fmt::format("<p class=\"meta\">Sources: {}. {} rows, {} feasible, {} infeasible{}.</p>\n",
                   html_escape(sources_text(data)), data.rows.size(), feasible_count(data),
                   data.rows.size() - feasible_count(data),
                   data.duplicate_rows > 0
                       ? fmt::format(", {} duplicate rows dropped", data.duplicate_rows)
                       : "");
  s += "<ul class=\"meta\">";
  for (const std::string& c : data.coverage) s += fmt::format("<li>{}</li>", html_escape(c));
  s += "</ul>\n";
  s += R"(<div id="controls">
<label>profile <select id="sel-profile"></select></label>
<label>head dim d <select id="sel-d"></select></label>
<label>configuration <select id="sel-variant"></select></label>
<label>block size <select id="sel-block"></select></label>
</div>
<section><h2>HBM and L2 bytes vs block size</h2>
<p class="note">One chart per algorithm, one colour per N: HBM (DRAM) bytes solid, L2 (SM&lt;-&gt;L2) bytes dashed.
Gaps are infeasible block sizes. Several block_q for one block_kv: the one with fewest HBM bytes.</p>
<div id="by-block" class="grid"></div></section>
<section><h2>Bytes and time vs N</h2>
<p class="note">Each algorithm at the chosen block size ("best": fewest HBM bytes for bytes, least time for time).
Compulsory: read Q, K, V and write O once. Lower bound: the two-level IO lower bound for this GPU's SRAM.</p>
<div id="by-n" class="grid"></div></section>
<section><h2>Per-tensor bytes</h2>
<p class="note">At <label>N <select id="sel-tensor-n"></select></label>, each algorithm at the chosen block size (reads + writes).</p>
<div id="by-tensor" class="grid"></div></section>
<section><h2>Roofline</h2>
<p class="note">Every feasible point of each profile: arithmetic intensity (FLOPs per HBM byte) against achieved FLOP/s.
Roofs: peak tensor-core FLOP/s and the achievable HBM bandwidth (solid), L2 bandwidth (dashed).</p>
<div id="roofline" class="grid"></div></section>
)";
  if (validation != nullptr) {
    s += R"(<section><h2>Predicted vs measured</h2>
<p class="note">Each measured case re-predicted as it was measured (cold L2, the measured SM clock); on the diagonal the model is exact.</p>
<div id="validation" class="grid"></div>
)";
    s += validation_html(*validation);
    s += "</section>\n";
  }
  s += "<section><h2>Best block size per (N, d, profile, algorithm)</h2>\n";
  s += html_table(best_table(data), "best-blocks");
  s += "</section>\n";
  const auto infeasible = infeasible_table(data);
  if (infeasible.size() > 1) {
    s += fmt::format("<section><h2>Infeasible points ({})</h2>\n", infeasible.size() - 1);
    s += html_table(infeasible, "infeasible");
    s += "</section>\n";
  }
  s += "<p class=\"meta\">Charts drawn by Chart.js (MIT licence), inlined in this file.</p>\n";
  s += "<script type=\"application/json\" id=\"iosim-data\">";
  s += script_safe(page_data(data, validation).dump());
  s += "</script>\n<script>\n";
  s += kPageScript;
  s += "</script>\n</body>\n</html>\n";
  return s;
}

std::string load_chartjs(const std::string& path) {
  std::string file = path;
  if (file.empty()) {
    const char* env = std::getenv("IOSIM_CHARTJS");
    file = env != nullptr && *env != '\0' ? env : kDebianChartJs;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw ConfigError(fmt::format(
        "Chart.js not found at '{}': install Debian's libjs-chart.js (scripts/install_deps.sh) "
        "or pass --chartjs FILE",
        file));
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string js = text.str();
  if (js.find("Chart") == std::string::npos) {
    throw ConfigError(fmt::format("'{}' does not look like Chart.js", file));
  }
  return js;
}

}  // namespace iosim
