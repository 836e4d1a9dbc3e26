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
    // Per chart, in page order: its data points and its opaque pixels inside the axes.
    b.dataset.chartPoints = canvases.map(function (c) { return c.dataset.points || 0; }).join(',');
    b.dataset.chartInk = canvases.map(function (c) { return c.dataset.ink || 0; }).join(',');
    // Per chart: title | x axis title | y axis type | dataset labels (;), charts joined by ' ## '.
    b.dataset.chartInfo = canvases.map(function (c) {
      var ch = Chart.getChart(c);
      if (!ch) return '';
      var sc = ch.options.scales || {};
      return [ch.options.plugins.title.text, sc.x && sc.x.title ? sc.x.title.text : '',
              sc.y ? sc.y.type || 'linear' : '',
              ch.data.datasets.map(function (d) { return d.label; }).join(';')].join(' | ');
    }).join(' ## ');
    // Per chart: the text labels drawn on it (iosimLabels), joined by ';', charts by ' ## '.
    b.dataset.chartLabels = canvases.map(function (c) { return c.dataset.labels || ''; }).join(' ## ');
    b.dataset.heatmapsShown = Array.prototype.filter.call(document.querySelectorAll('.heatmap'),
        function (h) { return h.style.display !== 'none'; }).length;
    b.dataset.errors = errors.length;
    if (errors.length) b.dataset.errorText = errors.join(' | ').slice(0, 1000);
    b.dataset.status = errors.length ? 'error'
        : (canvases.length > 0 && drawn === canvases.length ? 'ok' : 'pending');
  }

  // A canvas counts as drawn once it has data and shows it: its datasets hold finite points
  // (reference lines without point markers, such as rooflines or y = x, do not count), and the
  // plot area, inside the axes, holds opaque ink (grid lines are 10% black; axes, ticks, title
  // and legend lie outside it). Axes alone, or an empty dataset, are not a chart.
  function dataPoints(chart) {
    var n = 0;
    chart.data.datasets.forEach(function (ds) {
      if (ds.pointRadius === 0 && ds.type !== 'bar' && chart.config.type !== 'bar') return;
      (ds.data || []).forEach(function (v) {
        var y = v !== null && typeof v === 'object' ? v.y : v;
        if (typeof y === 'number' && isFinite(y)) n++;
      });
    });
    return n;
  }
  function plotInk(chart) {
    var a = chart.chartArea;
    if (!a) return 0;
    var r = window.devicePixelRatio || 1, inset = 3;
    var x0 = Math.ceil((a.left + inset) * r), y0 = Math.ceil((a.top + inset) * r);
    var w = Math.floor((a.right - a.left - 2 * inset) * r), h = Math.floor((a.bottom - a.top - 2 * inset) * r);
    if (w <= 0 || h <= 0) return 0;
    var d = chart.ctx.getImageData(x0, y0, w, h).data, ink = 0;
    for (var i = 3; i < d.length; i += 4) if (d[i] >= 200) ink++;
    return ink;
  }
  Chart.register({
    id: 'iosimDrawn',
    afterRender: function (chart) {
      var c = chart.canvas;
      if (!c.width || !c.height) return;
      var points = dataPoints(chart), ink = plotInk(chart);
      c.dataset.points = points;
      c.dataset.ink = ink;
      c.dataset.drawn = points > 0 && ink > 0 ? '1' : '0';
    }
  });

  // Text beside the points that carry one (a data point's `lbl`; below it with `lblBelow`): the
  // roofline's best and slowest points, the ends of the bound lines. A white halo keeps it
  // readable over lines; it stays inside the plot area.
  Chart.register({
    id: 'iosimLabels',
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx, a = chart.chartArea, drawn = [], placed = [];
      chart.data.datasets.forEach(function (ds, i) {
        var meta = chart.getDatasetMeta(i);
        if (meta.hidden || !chart.isDatasetVisible(i)) return;
        (ds.data || []).forEach(function (v, j) {
          var el = meta.data[j];
          if (!v || typeof v !== 'object' || !v.lbl || !el || !isFinite(el.x) || !isFinite(el.y)) return;
          ctx.save();
          ctx.font = 'bold 11px system-ui, sans-serif';
          var w = ctx.measureText(v.lbl).width, h = 11;
          // Candidate places around the point (its preferred side first); the first inside the
          // plot area that overlaps no label drawn before wins, else the first inside it.
          var above = el.y - 7, below = el.y + 15, right = el.x + 6, left = el.x - 6 - w;
          var tries = (v.lblBelow ? [[right, below], [left, below], [right, above], [left, above]]
                                  : [[right, above], [left, above], [right, below], [left, below]])
              .concat([[right, above - 2 * h], [left, above - 2 * h], [right, below + 2 * h], [left, below + 2 * h]]);
          var inside = tries.filter(function (t) {
            return t[0] >= a.left + 2 && t[0] + w <= a.right - 2 && t[1] - h >= a.top && t[1] <= a.bottom - 2;
          });
          var free = inside.filter(function (t) {
            return !placed.some(function (r) {
              return t[0] < r[0] + r[2] && r[0] < t[0] + w && t[1] - h < r[1] && r[1] - h < t[1];
            });
          });
          var at = free[0] || inside[0] || tries[0];
          var x = at[0], y = at[1];
          placed.push([x, y, w]);
          ctx.lineWidth = 3;
          ctx.strokeStyle = 'rgba(255, 255, 255, 0.9)';
          ctx.strokeText(v.lbl, x, y);
          ctx.fillStyle = ds.borderColor || '#000';
          ctx.fillText(v.lbl, x, y);
          ctx.restore();
          drawn.push(v.lbl);
        });
      });
      chart.canvas.dataset.labels = drawn.join(';');
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

  // Decoding sweeps (one query length, several K/V lengths) are drawn against N_kv.
  var XKEY = numeric(ROWS.map(function (r) { return r.N; })).length === 1 &&
      numeric(ROWS.map(function (r) { return r.Nkv; })).length > 1 ? 'Nkv' : 'N';
  var XNAME = XKEY === 'Nkv' ? 'N_kv' : 'N';
  var XTITLE = XKEY === 'Nkv' ? 'N_kv (K/V length)' : 'N (sequence length)';
  var anyNkv = XKEY === 'N' && ROWS.some(function (r) { return r.Nkv !== r.N; });
  var anyHkv = ROWS.some(function (r) { return r.hkv !== r.H; });
  var anyPage = numeric(ROWS.map(function (r) { return r.pgt; })).length > 1;
  // Split counts (flash-decoding, paged) are series of their own where an algorithm has several.
  var splitCounts = {};
  ROWS.forEach(function (r) { if (r.S > 0) (splitCounts[r.a] = splitCounts[r.a] || {})[r.S] = true; });
  // Every row carries the clock the sweep asked for (clk: --sm-clock-mhz, 0 where the profile's
  // power limit chose it; the clock it ran at is r.ran, a value): it names a configuration only
  // when one profile was asked for several clocks, else each profile's rows would form a
  // configuration of their own and the other profiles' charts would be drawn empty under it.
  var clocks = {};
  ROWS.forEach(function (r) { (clocks[r.p] = clocks[r.p] || {})[r.clk] = true; });
  var anyClock = Object.keys(clocks).some(function (p) { return Object.keys(clocks[p]).length > 1; });
  ROWS.forEach(function (r) {
    var parts = ['B=' + r.B, 'H=' + r.H, r.dt, r.pass];
    if (anyNkv) parts.push('N_kv=' + r.Nkv);
    if (anyHkv) parts.push('H_kv=' + r.hkv);
    if (anyPage && r.pgt > 0) parts.push('page ' + r.pgt + ' tokens');
    if (r.causal) parts.push('causal');
    if (r.mask) parts.push('mask');
    if (r.drop > 0) parts.push('dropout=' + r.drop);
    if (r.pat) parts.push('pattern ' + r.pat);
    parts.push('L2 ' + r.l2 + (r.cold ? ' (cold)' : ''));
    if (anyClock && r.clk > 0) parts.push(r.clk + ' MHz');
    r.variant = parts.join(' ');
    r.x = r[XKEY];
    r.s = r.a + (r.S > 0 && Object.keys(splitCounts[r.a]).length > 1 ? ' S=' + r.S : '');
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
    // iosimDrawn reads the plot area back after every render: say so, or Chromium warns.
    canvas.getContext('2d', { willReadFrequently: true });
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
            return x.s === a && x.x === n && x.bkv === bkv;
          }), 'hbm', 'best');
          hbm.push({ x: bkv, y: r ? r.hbm : null });
          l2.push({ x: bkv, y: r ? r.l2b : null });
        });
        datasets.push({ label: XNAME + '=' + n + ' HBM', data: hbm, borderColor: color(k),
                        backgroundColor: color(k), spanGaps: false });
        datasets.push({ label: XNAME + '=' + n + ' L2', data: l2, borderColor: color(k),
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
        var group = rows.filter(function (x) { return x.s === a && x.x === n; });
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
        if (rt) t.push({ x: n, y: rt.t, ran: rt.ran });
      });
      datasets.push({ label: a + ' HBM', data: hbm, borderColor: color(k), backgroundColor: color(k) });
      datasets.push({ label: a + ' L2', data: l2, borderColor: color(k), backgroundColor: '#fff',
                      borderDash: [5, 4] });
      times.push({ label: a, data: t, borderColor: color(k), backgroundColor: color(k) });
    });
    var sortX = function (a, b) { return a.x - b.x; };
    comp.sort(sortX);
    lb.sort(sortX);
    // Drawn on top of the algorithms' lines (order -1; flash2's HBM line runs along them) and
    // named at their right end: compulsory below its line, the lower bound above. The bound is the
    // two-level model's (no L2): L2-on bytes may fall below it, so its name says whose it is.
    if (comp.length) { comp[comp.length - 1].lbl = 'compulsory'; comp[comp.length - 1].lblBelow = true; }
    if (lb.length) lb[lb.length - 1].lbl = 'two-level lower bound';
    datasets.push({ label: 'compulsory', data: comp, borderColor: '#000', backgroundColor: '#000',
                    borderDash: [3, 3], borderWidth: 2.5, pointRadius: 0, order: -1 });
    datasets.push({ label: 'two-level lower bound', data: lb, borderColor: '#6a3d9a', backgroundColor: '#6a3d9a',
                    borderDash: [10, 5], borderWidth: 2.5, pointRadius: 0, order: -2 });
    makeChart(parent, 'Bytes vs ' + XNAME + ' (log-log)', {
      type: 'line', data: { datasets: datasets },
      options: { parsing: false, scales: { x: logAxis(XTITLE, String, ns),
                                           y: logAxis('bytes', bytes) },
                 plugins: { tooltip: { callbacks: { label: function (c) {
                   return c.dataset.label + ': ' + bytes(c.parsed.y); } } } } }
    });
    makeChart(parent, 'Simulated time vs ' + XNAME + ' (log-log)', {
      type: 'line', data: { datasets: times },
      options: { parsing: false, scales: { x: logAxis(XTITLE, String, ns),
                                           y: logAxis('time', seconds) },
                 plugins: { tooltip: { callbacks: { label: function (c) {
                   var ran = c.raw && c.raw.ran ? ' at ' + Math.round(c.raw.ran) + ' MHz' : '';
                   return c.dataset.label + ': ' + seconds(c.parsed.y) + ran; } } } } }
    });
  }

  function tensorCharts(rows, algos) {
    var parent = document.getElementById('by-tensor');
    var n = Number(state.tensorN);
    var picked = algos.map(function (a) {
      return pick(rows.filter(function (x) { return x.s === a && x.x === n; }), 'hbm', state.block);
    });
    var names = [];
    picked.forEach(function (r) { if (r) names = names.concat(Object.keys(r.pt)); });
    if (names.length === 0) {
      // A report of a sweep's CSV: per-tensor counts are in the sweep's JSON only.
      var p = document.createElement('p');
      p.className = 'note';
      p.textContent = 'No per-tensor bytes: the sweep file holds none (a sweep\'s CSV has only ' +
          'the totals; report the sweep\'s JSON for them).';
      parent.appendChild(p);
      return;
    }
    names = uniq(names).sort(function (a, b) {
      var ia = TENSOR_ORDER.indexOf(a), ib = TENSOR_ORDER.indexOf(b);
      return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || (a < b ? -1 : 1);
    });
    [['HBM', 0], ['L2', 1]].forEach(function (level) {
      var value = function (r, t) { return r && r.pt[t] ? r.pt[t][level[1]] : 0; };
      // Bars that differ by orders of magnitude (a decode's K/V against its partials, standard's
      // S and P against Q) go on a log axis, side by side: stacked on a linear one the small
      // ones vanish.
      var positive = [];
      picked.forEach(function (r) {
        names.forEach(function (t) { if (value(r, t) > 0) positive.push(value(r, t)); });
      });
      var log = positive.length > 1 &&
          Math.max.apply(null, positive) / Math.min.apply(null, positive) > 100;
      var datasets = names.map(function (t, k) {
        var data = picked.map(function (r) { var v = value(r, t); return log && !(v > 0) ? null : v; });
        var ds = { label: t, backgroundColor: color(k), data: data };
        if (!log) ds.stack = 'bytes';
        return ds;
      });
      var y = log ? logAxis(level[0] + ' bytes (log)', bytes)
                  : { stacked: true, title: { display: true, text: level[0] + ' bytes' },
                      ticks: { callback: bytes } };
      makeChart(parent, level[0] + ' bytes per tensor at ' + XNAME + '=' + n, {
        type: 'bar',
        data: { labels: algos.map(function (a, i) {
          return picked[i] ? a + ' (' + picked[i].tile + ')' : a + ' (none fits)';
        }), datasets: datasets },
        options: { scales: { x: { stacked: !log }, y: y },
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
      // Each point knows its algorithm, shape and tile (the tooltip); the fastest point of
      // each algorithm (highest FLOP/s) and the slowest of the chart get a visible label.
      var slowest = null;
      var datasets = uniq(rows.map(function (r) { return r.a; })).map(function (a, k) {
        var best = null;
        var data = rows.filter(function (r) { return r.a === a; }).map(function (r) {
          var pt = { x: r.fl / r.hbm, y: r.fl / r.t, a: a, shape: r.variant + ' ' + XNAME + '=' + r.x + ' d=' + r.d,
                     tile: r.tile, ran: r.ran,
                     short: a + ' ' + XNAME + '=' + r.x + ' d=' + r.d + ' ' + r.tile };
          if (best === null || pt.y > best.y) best = pt;
          if (slowest === null || pt.y < slowest.y) slowest = pt;
          return pt;
        });
        if (best) best.lbl = best.short;
        return { type: 'scatter', label: a, borderColor: color(k), backgroundColor: color(k), data: data };
      });
      if (slowest && !slowest.lbl) { slowest.lbl = slowest.short; slowest.lblBelow = true; }
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
            if (!r.a) return c.dataset.label;
            return [r.a + ', ' + r.shape, 'tile ' + r.tile,
                    r.x.toPrecision(3) + ' FLOP/B, ' + flopRate(r.y) +
                    (r.ran ? ' at ' + Math.round(r.ran) + ' MHz' : '')]; } } } } }
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
    Array.prototype.forEach.call(document.querySelectorAll('.heatmap'), function (h) {
      h.style.display = h.dataset.profile === state.profile && h.dataset.d === state.d ? '' : 'none';
    });
    var rows = selected();
    // Series in algorithm order, then by split count.
    var order = uniq(rows.map(function (r) { return r.a; }));
    var algos = uniq(rows.slice().sort(function (p, q) {
      return order.indexOf(p.a) - order.indexOf(q.a) || p.S - q.S;
    }).map(function (r) { return r.s; }));
    var ns = numeric(rows.map(function (r) { return r.x; }));
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
    var tensorSelect = document.getElementById('sel-tensor-n');
    if (tensorSelect.previousSibling) tensorSelect.previousSibling.textContent = XNAME + ' ';
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
