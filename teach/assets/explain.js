// The stepper of `iosim explain --html`: reads the trace (JSON in #trace) and draws one step at a
// time. #selftest clicks through every step and records the outcome on <body> (the browser test).
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) {
    errors.push(String(e.message || e));
    document.body.setAttribute('data-errors', String(errors.length));
  });
  var $ = function (id) { return document.getElementById(id); };
  var trace = JSON.parse($('trace').textContent);
  var steps = trace.steps;
  var n = steps.length;
  var current = 0;
  var COLORS = { load: '#1f8fc0', store: '#c03fa8', reduce: '#e08000', compute: '#c8a800' };
  var LIGHT = { read: '#cde8f5', write: '#f3d3ec' };
  var CHIP = { smem: '#d8ecd0', reg: '#efe6c8' };  // a buffer's fill: shared memory, registers
  var HELD = '#2a7a2a';  // dashed outline in HBM: what this CTA holds on chip
  var UNSEEN = '\u2014';  // a value that means "no score seen yet" (m at -inf, its rescale 0)

  $('header').textContent = trace.header;
  $('summary').textContent = trace.summary;
  var slider = $('slider');
  slider.max = String(n);

  function human(b) {
    if (b < 10240) return b + ' B';
    if (b < 10485760) return (b / 1024).toFixed(1) + ' KiB';
    return (b / 1048576).toFixed(1) + ' MiB';
  }
  function number(v) {
    return typeof v === 'number' ? v.toFixed(3) : String(v);  // "-inf" comes as a string
  }
  function cellSize(rows, cols) {
    return Math.max(2, Math.min(12, Math.floor(224 / Math.max(rows, cols, 1))));
  }
  // A column (m, l, L: one value a row) is drawn wider than its cells are high, so it is not a
  // sliver beside the matrices.
  function cellWidth(cols, cell) {
    return cols === 1 ? Math.max(cell, 20) : cell;
  }

  // HBM: one canvas per matrix of each tensor the schedule touches.
  var hbm = {};
  trace.tensors.forEach(function (t) {
    var box = document.createElement('div');
    box.className = 'tensor';
    var label = document.createElement('div');
    label.textContent = t.name + ' (' + (t.matrices > 1 ? t.matrices + ' x ' : '') + t.rows + ' x ' +
      t.cols + ')';
    box.appendChild(label);
    // Several matrices (heads, pages) side by side, each smaller.
    var cell = Math.max(2, Math.floor(cellSize(t.rows, t.cols) / (t.matrices > 1 ? 2 : 1)));
    var cw = cellWidth(t.cols, cell);
    var list = [];
    for (var m = 0; m < t.matrices; m++) {
      var c = document.createElement('canvas');
      c.width = t.cols * cw + 1;
      c.height = t.rows * cell + 1;
      box.appendChild(c);
      list.push(c);
    }
    hbm[t.name] = { canvases: list, cell: cell, cw: cw, info: t };
    $('hbm').appendChild(box);
  });

  // The legend: every colour and outline the panels use, from the same constants.
  function swatch(style, words) {
    return '<span class="swatch" style="' + style + '"></span>' + words;
  }
  $('legend').innerHTML =
    '<div><b>HBM:</b> this step ' + swatch('background:' + COLORS.load, 'read') +
    swatch('background:' + COLORS.store, 'written') +
    swatch('background:' + COLORS.reduce, 'added into (a reduce)') +
    ' &nbsp;earlier steps ' + swatch('background:' + LIGHT.read, 'read') +
    swatch('background:' + LIGHT.write, 'written or added into') +
    swatch('border:2px dashed ' + HELD, 'held on chip by this CTA now') + '</div>' +
    '<div><b>On chip:</b> ' + swatch('background:' + CHIP.smem, 'shared memory') +
    swatch('background:' + CHIP.reg, 'registers') +
    swatch('border:3px solid #e0a000', 'filled or computed by this step') +
    ' &nbsp;(a column such as m or l: one value per query row)</div>' +
    '<div><b>Step text:</b> <span class="kind load">load</span>, ' +
    '<span class="kind store">store</span>, <span class="kind reduce">reduce</span>, ' +
    '<span class="kind compute">compute</span>. <b>Bytes so far:</b> bars on one scale, the ' +
    'run\'s largest total.' +
    (steps.some(function (s) { return s.numbers.length > 0; })
      ? ' <b>Numbers:</b> ' + UNSEEN + ' where a row has seen no score yet (m starts at ' +
        '&minus;&infin;, l at 0).' : '') + '</div>';

  function fill(tile, color) {
    var h = hbm[tile.t];
    if (!h || tile.m >= h.canvases.length) return;
    var ctx = h.canvases[tile.m].getContext('2d');
    ctx.fillStyle = color;
    ctx.fillRect(tile.c0 * h.cw + 1, tile.r0 * h.cell + 1, tile.nc * h.cw - 1,
      tile.nr * h.cell - 1);
  }
  // cw: the cells' width, where it is not their height (a column).
  function grid(canvas, rows, cols, cell, cw) {
    cw = cw || cell;
    var ctx = canvas.getContext('2d');
    ctx.fillStyle = '#fafafa';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.strokeStyle = '#e4e4e4';
    ctx.lineWidth = 1;
    var every = Math.max(1, Math.round(8 / cell)) * (cell >= 8 ? 1 : 4);
    ctx.beginPath();
    for (var r = 0; r <= rows; r += every) { ctx.moveTo(0, r * cell + 0.5); ctx.lineTo(canvas.width, r * cell + 0.5); }
    for (var c = 0; c <= cols; c += every) { ctx.moveTo(c * cw + 0.5, 0); ctx.lineTo(c * cw + 0.5, canvas.height); }
    ctx.stroke();
  }
  function drawHbm(k) {
    Object.keys(hbm).forEach(function (name) {
      var h = hbm[name];
      h.canvases.forEach(function (c) { grid(c, h.info.rows, h.info.cols, h.cell, h.cw); });
    });
    for (var i = 0; i < k; i++) {
      var s = steps[i];
      if (s.kind === 'load') fill(s.tile, LIGHT.read);
      if (s.kind === 'store' || s.kind === 'reduce') fill(s.tile, LIGHT.write);
    }
    var now = steps[k];
    if (now.kind !== 'compute') fill(now.tile, COLORS[now.kind]);
    // Dashed: the regions of HBM tensors this CTA holds on chip now.
    now.chip.forEach(function (held) {
      held.pieces.forEach(function (t) {  // a gathered tile: each page it came from
        var h = hbm[t.t];
        if (!h || t.m >= h.canvases.length) return;
        var ctx = h.canvases[t.m].getContext('2d');
        ctx.setLineDash([3, 2]);
        ctx.strokeStyle = HELD;
        ctx.lineWidth = 2;
        ctx.strokeRect(t.c0 * h.cw + 1, t.r0 * h.cell + 1, t.nc * h.cw - 1, t.nr * h.cell - 1);
        ctx.setLineDash([]);
      });
    });
  }

  function drawChip(k) {
    var s = steps[k];
    var box = $('chip');
    box.innerHTML = '';
    if (s.chip.length === 0) box.textContent = 'nothing on chip';
    s.chip.forEach(function (t) {
      var div = document.createElement('div');
      div.className = 'chiptile' + (s.changed.indexOf(t.t) >= 0 ? ' changed' : '');
      div.textContent = (t.where === 'smem' ? 's' : 'r') + t.t + '[' + t.r0 + ':' + (t.r0 + t.nr) +
        ', ' + t.c0 + ':' + (t.c0 + t.nc) + '] ' + (t.where === 'smem' ? 'shared' : 'registers');
      var cell = Math.max(2, Math.min(5, Math.floor(96 / Math.max(t.nr, t.nc, 1))));
      var cw = cellWidth(t.nc, cell);
      var c = document.createElement('canvas');
      c.width = t.nc * cw + 1;
      c.height = t.nr * cell + 1;
      grid(c, t.nr, t.nc, cell, cw);
      var ctx = c.getContext('2d');
      ctx.fillStyle = CHIP[t.where];
      ctx.fillRect(1, 1, c.width - 2, c.height - 2);
      div.appendChild(c);
      box.appendChild(div);
    });
  }

  var finals = steps.length ? steps[n - 1].total : [0, 0, 0];
  var NAMES = ['HBM, two-level model (paper)', 'L2 requests (L2 on)', 'DRAM (L2 on)'];
  function drawCounters(k) {
    var s = steps[k];
    var box = $('counters');
    box.innerHTML = '';
    var most = Math.max(finals[0], finals[1], finals[2], 1);
    for (var i = 0; i < 3; i++) {
      var row = document.createElement('div');
      row.className = 'counter';
      var name = document.createElement('span');
      name.className = 'name';
      name.textContent = NAMES[i];
      var bar = document.createElement('span');
      bar.className = 'bar';
      bar.style.width = Math.round(240 * s.total[i] / most) + 'px';
      var value = document.createElement('span');
      value.className = 'value';
      value.id = 'counter-' + i;
      value.textContent = human(s.total[i]) + (s.bytes[i] ? ' (+' + human(s.bytes[i]) + ')' : '');
      row.appendChild(name);
      row.appendChild(bar);
      row.appendChild(value);
      box.appendChild(row);
    }
  }

  function drawNumbers(k) {
    var s = steps[k];
    var box = $('numbers');
    box.innerHTML = '';
    $('numbers-section').style.display = s.numbers.length || s.error !== undefined ? '' : 'none';
    s.numbers.forEach(function (t) {
      var table = document.createElement('table');
      table.className = 'numbers';
      var cap = table.createCaption();
      cap.textContent = t.name + ' (' + t.rows + ' x ' + t.cols +
        (t.sr < t.rows || t.sc < t.cols ? ', first ' + t.sr + ' x ' + t.sc : '') + ')';
      for (var i = 0; i < t.sr; i++) {
        var tr = table.insertRow();
        for (var j = 0; j < t.sc; j++) {
          var td = tr.insertCell();
          if (t.unseen && t.unseen[i * t.sc + j]) {
            td.textContent = UNSEEN;
            td.className = 'unseen';
            td.title = 'no score of this row seen yet (the trace holds ' + number(t.v[i * t.sc + j]) + ')';
          } else {
            td.textContent = number(t.v[i * t.sc + j]);
          }
        }
      }
      box.appendChild(table);
      if (t.note) {
        var note = document.createElement('div');
        note.className = 'note';
        note.textContent = t.note.replace(/^'-'/, UNSEEN).replace(/-inf/g, '\u2212\u221e');
        box.appendChild(note);
      }
    });
    if (s.error !== undefined) {
      var p = document.createElement('div');
      p.textContent = 'max |' + s.tile.t + ' - exact| over this tile: ' + s.error.toExponential(2);
      box.appendChild(p);
    }
  }

  function show(k) {
    current = Math.max(0, Math.min(n - 1, k));
    var s = steps[current];
    slider.value = String(current + 1);
    $('position').textContent = 'step ' + (current + 1) + ' / ' + n;
    $('where').textContent = s.kernel + ', CTA ' + s.cta + ' on SM ' + s.sm +
      (s.last ? ' (its last operation)' : '');
    $('text').textContent = s.text;
    $('text').className = s.kind;
    $('paper').textContent = s.paper + (s.note ? ' (' + s.note + ')' : '');
    drawHbm(current);
    drawChip(current);
    drawCounters(current);
    drawNumbers(current);
    $('back').disabled = current === 0;
    $('forward').disabled = current === n - 1;
  }

  $('back').addEventListener('click', function () { show(current - 1); });
  $('forward').addEventListener('click', function () { show(current + 1); });
  slider.addEventListener('input', function () { show(Number(slider.value) - 1); });
  document.addEventListener('keydown', function (e) {
    if (e.key === 'ArrowRight') show(current + 1);
    else if (e.key === 'ArrowLeft') show(current - 1);
    else if (e.key === 'Home') show(0);
    else if (e.key === 'End') show(n - 1);
    else return;
    e.preventDefault();
  });

  // Clicks through every step and checks what the page shows against the trace.
  function selftest() {
    var failures = [];
    for (var k = 1; k < n; k++) {
      $('forward').click();
      if ($('position').textContent !== 'step ' + (k + 1) + ' / ' + n) failures.push('position at ' + k);
      if ($('counter-0').textContent.indexOf(human(steps[k].total[0])) !== 0) failures.push('counter at ' + k);
      var unseen = 0;
      steps[k].numbers.forEach(function (t) {
        (t.unseen || []).forEach(function (u) { unseen += u ? 1 : 0; });
      });
      if ($('numbers').querySelectorAll('td.unseen').length !== unseen) failures.push('unseen at ' + k);
    }
    if (!$('legend').textContent) failures.push('legend');
    $('back').click();
    if (n > 1 && current !== n - 2) failures.push('back');
    document.dispatchEvent(new KeyboardEvent('keydown', { key: 'Home' }));
    if (current !== 0) failures.push('Home key');
    document.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight' }));
    if (n > 1 && current !== 1) failures.push('right arrow');
    document.body.setAttribute('data-selftest',
      failures.length ? 'failed: ' + failures.slice(0, 5).join(', ') : 'ok ' + n + ' steps');
  }

  if (n === 0) {
    document.body.setAttribute('data-status', 'empty');
    return;
  }
  // #step=K opens the page at step K (a link to a step, a slide's screenshot).
  var asked = /^#step=(\d+)$/.exec(window.location.hash);
  show(asked ? Number(asked[1]) - 1 : 0);
  if (window.location.hash === '#selftest') selftest();
  document.body.setAttribute('data-steps', String(n));
  document.body.setAttribute('data-errors', String(errors.length));
  document.body.setAttribute('data-status', 'ok');
})();
