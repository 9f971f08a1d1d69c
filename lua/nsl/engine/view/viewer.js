/* viewer.js -- the page of `nsl view` (and of viewers in notebook reports).
 * Decodes the data lua/nsl/view.lua embeds in each <div class="nsl-view">
 * and draws an interactive timeline on a canvas: zoom, pan, hover details,
 * search by name, the NVTX stack at a point or over a selection, and the
 * findings.  It fetches nothing and holds no analysis: every number it
 * shows was computed by nsl.
 *
 * Data (view.lua): times are ns relative to `base` (the trace's first
 * event, a decimal string: exact beyond 2^53), as doubles (exact below
 * 2^53).  events: columns row, sub (nesting sub-row), start, dur, cls
 * (class: data.classes), name (index into data.strings), each base64 of a
 * little-endian typed array.  lod: levels of detail, coarsest first, level
 * k with `bins` equal bins over [0, span) (4 times those of level k - 1,
 * bin b under bin b >> 2 of the level above): per (row, bin) busy ns (the
 * union of the row's events) and events starting in it, as n sparse cells
 * (index row * bins + bin, ascending, each the gap from the one before;
 * busy folded: 2 * busy, or 2 * (bin width - busy) + 1 for a bin more than
 * half busy), each column base64 of unsigned LEB128 varints; past level 0 a bin left out is full
 * (wholly busy, none starting) when its parent is full, else empty.
 *
 * #selftest[=TERM] in the URL: zooms, pans and searches as a user would and
 * writes what it drew into <pre class="nsl-selftest"> (JSON), for tests. */
(function () {
  'use strict';
  if (window.NslView) { window.NslView.initAll(); return; }

  var ROW_H = 14, GAP = 4, AXIS_H = 26, LABEL_W = 210, MIN_SPAN = 10;
  var LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

  // ---- decoding ----------------------------------------------------------------------

  /* The bytes of a base64 string. */
  function bytesOf(b64) {
    var bin = atob(b64 || ''), u = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
    return u;
  }

  /* A typed array (Type) from base64 of little-endian values. */
  function typed(b64, Type) {
    var u = bytesOf(b64), w = Type.BYTES_PER_ELEMENT, n = u.length / w;
    if (LITTLE || w === 1) return new Type(u.buffer, 0, n);
    var dv = new DataView(u.buffer), out = new Type(n);   // a big-endian host: read each value
    var get = {Float64Array: 'getFloat64', Float32Array: 'getFloat32', Uint32Array: 'getUint32',
               Int32Array: 'getInt32', Uint16Array: 'getUint16'}[Type.name];
    for (var i = 0; i < n; i++) out[i] = dv[get](i * w, true);
    return out;
  }

  /* n unsigned LEB128 varints from base64 (nsl.pack "uv"), as doubles (exact below 2^53). */
  function varints(b64, n) {
    var u = bytesOf(b64), out = new Float64Array(n), p = 0;
    for (var i = 0; i < n; i++) {
      var v = 0, m = 1, c;
      do { c = u[p++]; v += (c & 127) * m; m *= 128; } while (c & 128);
      out[i] = v;
    }
    return out;
  }

  function decode(d) {
    var e = d.events, n = e.n || 0;
    var ev = {n: n, row: typed(e.row, Uint32Array), sub: typed(e.sub, Uint16Array),
              start: typed(e.start, Float64Array), dur: typed(e.dur, Float64Array),
              cls: typed(e.cls, Uint8Array), name: typed(e.name, Uint32Array)};
    var nrows = d.rows.length, i;
    var levels = d.lod.map(function (lv) {
      var cell = varints(lv.cell, lv.n), busy = varints(lv.busy, lv.n);
      for (var j = 0; j < cell.length; j++) {
        if (j > 0) cell[j] += cell[j - 1];   // gaps to cells
        var v = busy[j], half = Math.floor(v / 2);
        if (v % 2) {   // folded: the bin's width less half
          var b = cell[j] % lv.bins;
          busy[j] = edge(d.span, lv.bins, b + 1) - edge(d.span, lv.bins, b) - half;
        } else busy[j] = half;
      }
      return {bins: lv.bins, cell: cell, busy: busy, starts: varints(lv.starts, lv.n)};
    });
    var byRow = [];   // each row's events, for hover and the NVTX stack
    for (i = 0; i < nrows; i++) byRow.push([]);
    for (i = 0; i < n; i++) byRow[ev.row[i]].push(i);
    // drawing order: memset, memcpy, then kernels on top (where they share a pixel, the kernels show), each by start
    var layer = [2, 2, 1, 1, 1, 0, 3], order = new Uint32Array(n);
    for (i = 0; i < n; i++) order[i] = i;
    order.sort(function (p, q) { return layer[ev.cls[p]] - layer[ev.cls[q]] || ev.start[p] - ev.start[q]; });
    ev.layer = layer;
    return {ev: ev, levels: levels, byRow: byRow, order: order};
  }

  // ---- units -------------------------------------------------------------------------

  /* A duration in the unit that fits: 1.234 ms. */
  function dur(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(3) + ' µs';
    if (a < 1e9) return (ns / 1e6).toFixed(3) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }

  /* Edge b of the level-of-detail bins (as nsl.bin_edges: floor(span * b /
   * bins)), exact while span < 2^53 and bins <= 2^20: span = q * bins + r
   * (both exact in doubles), so the edge is q * b + floor(r * b / bins). */
  function edge(span, bins, b) {
    var r = span % bins, q = (span - r) / bins;
    return q * b + Math.floor(r * b / bins);
  }

  /* The first index of the ascending array a whose value is >= v. */
  function lowerBound(a, v) {
    var lo = 0, hi = a.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < v) lo = m + 1; else hi = m; }
    return lo;
  }

  /* The bin of level lv (of `levels`, span ns) holding time t. */
  function binAt(span, lv, t) {
    var nb = lv.bins, b = Math.min(nb - 1, Math.max(0, Math.floor(t / span * nb)));
    while (b > 0 && edge(span, nb, b) > t) b--;
    while (b < nb - 1 && edge(span, nb, b + 1) <= t) b++;
    return b;
  }

  /* Busy ns and events starting in bin b of level k for row r: the cell
   * stored, else full when the parent bin is, else empty. */
  function lodCell(levels, span, k, r, b) {
    var lv = levels[k], key = r * lv.bins + b, i = lowerBound(lv.cell, key);
    if (i < lv.cell.length && lv.cell[i] === key) return {busy: lv.busy[i], starts: lv.starts[i]};
    if (k > 0) {
      var p = lodCell(levels, span, k - 1, r, b >> 2), up = levels[k - 1].bins;
      if (p.starts === 0 && p.busy > 0 && p.busy === edge(span, up, (b >> 2) + 1) - edge(span, up, b >> 2)) {
        return {busy: edge(span, lv.bins, b + 1) - edge(span, lv.bins, b), starts: 0};
      }
    }
    return {busy: 0, starts: 0};
  }

  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }

  function el(tag, cls, parent, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  // ---- one viewer --------------------------------------------------------------------

  function Viewer(root, data) {
    var self = this;
    this.root = root;
    this.d = data;
    this.x = decode(data);
    this.base = BigInt(data.base);
    this.colors = data.classes.map(function (c) { return c.color; });
    this.view = [data.from, data.to];
    this.sel = null;          // [a, b]: a selection (shift-drag)
    this.cursor = null;       // a clicked time
    this.term = '';           // the search
    this.matchName = null;    // Uint8Array over strings: 1 when the name matches
    this.mark = null;         // a row index highlighted by a finding
    this.layout();
    this.build();
    this.draw();
    window.addEventListener('resize', function () { self.draw(); });
  }

  /* y of every row (CSS px, below the axis) and the canvas height. */
  Viewer.prototype.layout = function () {
    var y = AXIS_H, rows = this.d.rows;
    this.rowY = [];
    for (var r = 0; r < rows.length; r++) {
      if (r > 0 && rows[r].kind !== rows[r - 1].kind) y += 2 * GAP;
      this.rowY.push(y);
      y += rows[r].sub * ROW_H + GAP;
    }
    this.height = y + 4;
  };

  Viewer.prototype.build = function () {
    var self = this, d = this.d, root = this.root;
    var bar = el('div', 'nv-bar', root);
    el('span', 'nv-title', bar, d.title);
    function button(text, title, fn) {
      var b = el('button', '', bar, text);
      b.title = title;
      b.addEventListener('click', fn);
    }
    button('whole trace', 'show the whole trace (a)', function () { self.setView(0, d.span); });
    button('detail window', 'show the window whose events are all embedded (0)', function () {
      self.setView(d.from, d.to);
    });
    button('+', 'zoom in (+, wheel)', function () { self.zoom(0.5); });
    button('\u2212', 'zoom out (-, wheel)', function () { self.zoom(2); });
    this.search = el('input', 'nv-search', bar);
    this.search.placeholder = 'search names (Enter: next)';
    this.search.addEventListener('input', function () { self.find(self.search.value); });
    this.search.addEventListener('keydown', function (e) {
      if (e.key === 'Enter') self.next();
      e.stopPropagation();
    });
    this.status = el('span', 'nv-status', bar);
    var legend = el('div', 'nv-legend', root);
    d.classes.forEach(function (c) {
      var s = el('span', '', legend);
      el('i', '', s).style.background = c.color;
      s.appendChild(document.createTextNode(c.label));
    });
    el('span', 'nv-note', legend, 'all events in ' + dur(d.to - d.from) + ' from ' + dur(d.from) +
       ' (' + d.events.n + '); elsewhere busy time per bin, ' + d.lod.length + ' levels of ' +
       dur(d.span / d.lod[0].bins) + ' to ' + dur(d.span / d.lod[d.lod.length - 1].bins));
    this.hint = el('div', 'nv-hint', root);
    this.wrap = el('div', 'nv-canvas', root);
    this.canvas = el('canvas', '', this.wrap);
    this.canvas.tabIndex = 0;
    this.tip = el('div', 'nv-tip', this.wrap);
    var panes = el('div', 'nv-panes', root);
    var pf = el('div', 'nv-pane', panes);
    el('h4', '', pf, 'Findings (diagnose)');
    this.findingsBox = el('div', 'nv-findings', pf);
    var ps = el('div', 'nv-pane', panes);
    el('h4', '', ps, 'NVTX stack');
    this.stackBox = el('div', 'nv-stack', ps, 'Click the timeline for the NVTX ranges enclosing a time; ' +
                       'shift-drag for those enclosing a selection.');
    var pr = el('div', 'nv-pane', panes);
    el('h4', '', pr, 'Search');
    this.foundBox = el('div', 'nv-found', pr, 'Type a name above.');
    this.fillFindings();
    this.bindInput();
  };

  Viewer.prototype.fillFindings = function () {
    var self = this, list = this.d.findings || [];
    if (!list.length && !(this.d.notes || []).length) el('p', 'nv-muted', this.findingsBox, 'No findings.');
    list.forEach(function (f) {
      var item = el('div', 'nv-finding ' + f.severity, self.findingsBox);
      item.textContent = f.text;
      item.title = f.from !== undefined ? 'click: show its place on the timeline' : '';
      item.addEventListener('click', function () { self.goFinding(f); });
    });
    (this.d.notes || []).forEach(function (n) { el('p', 'nv-muted', self.findingsBox, n); });
  };

  /* Shows a finding's place: its window (with a margin) and its row. */
  Viewer.prototype.goFinding = function (f) {
    var rows = this.d.rows;
    this.mark = null;
    for (var r = 0; r < rows.length; r++) {
      var w = rows[r];
      if (f.report !== undefined && w.report !== f.report) continue;
      if (f.device !== undefined && w.kind === 'gpu' && w.device === f.device &&
          (f.stream === undefined || w.stream === f.stream)) { this.mark = r; break; }
      if (f.tid !== undefined && w.kind === 'nvtx' && w.tid === f.tid) { this.mark = r; break; }
    }
    if (f.from !== undefined && f.to !== undefined) {
      var pad = Math.max((f.to - f.from) * 0.1, 1000);
      this.sel = [f.from, f.to];
      this.setView(f.from - pad, f.to + pad);
    } else this.draw();
    if (this.mark !== null) this.wrap.scrollTop = this.rowY[this.mark] - AXIS_H;
  };

  // ---- view changes (the same calls for the mouse, the keys and the self-test) ---------

  Viewer.prototype.setView = function (a, b) {
    var span = this.d.span;
    if (b - a < MIN_SPAN) { var m = (a + b) / 2; a = m - MIN_SPAN / 2; b = m + MIN_SPAN / 2; }
    var pad = span * 0.05;
    if (b - a > span + 2 * pad) { a = -pad; b = span + pad; }
    this.view = [a, b];
    this.draw();
  };

  /* Zooms by factor (< 1: in) around time t (default: the middle). */
  Viewer.prototype.zoom = function (factor, t) {
    var a = this.view[0], b = this.view[1];
    if (t === undefined) t = (a + b) / 2;
    this.setView(t - (t - a) * factor, t + (b - t) * factor);
  };

  /* Pans by a fraction of the visible width (> 0: later). */
  Viewer.prototype.pan = function (fraction) {
    var w = this.view[1] - this.view[0];
    this.setView(this.view[0] + w * fraction, this.view[1] + w * fraction);
  };

  Viewer.prototype.timeAt = function (px) {
    var w = this.width - LABEL_W;
    return this.view[0] + (px - LABEL_W) / w * (this.view[1] - this.view[0]);
  };

  Viewer.prototype.xOf = function (t) {
    return LABEL_W + (t - this.view[0]) / (this.view[1] - this.view[0]) * (this.width - LABEL_W);
  };

  /* The row and sub-row at y (CSS px), or null. */
  Viewer.prototype.rowAt = function (y) {
    var rows = this.d.rows;
    for (var r = 0; r < rows.length; r++) {
      var y0 = this.rowY[r];
      if (y >= y0 && y < y0 + rows[r].sub * ROW_H) return {row: r, sub: Math.floor((y - y0) / ROW_H)};
    }
    return null;
  };

  Viewer.prototype.bindInput = function () {
    var self = this, c = this.canvas, drag = null;
    c.addEventListener('wheel', function (e) {
      var r = c.getBoundingClientRect();
      if (e.clientX - r.left < LABEL_W) return;
      e.preventDefault();
      if (e.shiftKey) self.pan(e.deltaY / 1000);
      else self.zoom(Math.pow(1.0015, e.deltaY), self.timeAt(e.clientX - r.left));
    }, {passive: false});
    c.addEventListener('mousedown', function (e) {
      var r = c.getBoundingClientRect();
      drag = {x: e.clientX - r.left, view: self.view.slice(), select: e.shiftKey, moved: false};
      c.focus();
    });
    window.addEventListener('mouseup', function (e) {
      if (!drag) return;
      var r = c.getBoundingClientRect(), x = e.clientX - r.left;
      if (!drag.moved && x >= LABEL_W) {   // a click: the NVTX stack at that time
        self.cursor = self.timeAt(x);
        self.sel = null;
        self.showStack(self.cursor, self.cursor);
        self.draw();
      } else if (drag.select && self.sel) self.showStack(self.sel[0], self.sel[1]);
      drag = null;
    });
    c.addEventListener('mousemove', function (e) {
      var r = c.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
      if (drag) {
        if (Math.abs(x - drag.x) > 2) drag.moved = true;
        if (!drag.moved) return;
        var k = (drag.view[1] - drag.view[0]) / (self.width - LABEL_W);
        if (drag.select) {
          var t0 = drag.view[0] + (drag.x - LABEL_W) * k, t1 = drag.view[0] + (x - LABEL_W) * k;
          self.sel = [Math.min(t0, t1), Math.max(t0, t1)];
          self.draw();
        } else {
          var dt = (x - drag.x) * k;
          self.setView(drag.view[0] - dt, drag.view[1] - dt);
        }
        return;
      }
      self.hover(x, y);
    });
    c.addEventListener('mouseleave', function () { self.tip.style.display = 'none'; });
    c.addEventListener('keydown', function (e) {
      var keys = {'+': function () { self.zoom(0.5); }, '=': function () { self.zoom(0.5); },
                  '-': function () { self.zoom(2); }, 'ArrowLeft': function () { self.pan(-0.2); },
                  'ArrowRight': function () { self.pan(0.2); }, 'a': function () { self.setView(0, self.d.span); },
                  '0': function () { self.setView(self.d.from, self.d.to); },
                  '/': function () { self.search.focus(); }};
      if (keys[e.key]) { keys[e.key](); e.preventDefault(); }
    });
  };

  // ---- drawing -----------------------------------------------------------------------

  Viewer.prototype.draw = function () {
    var d = this.d, x = this.x, ev = x.ev, rows = d.rows;
    var cssW = Math.max(600, this.wrap.clientWidth || 1000), dpr = window.devicePixelRatio || 1;
    this.width = cssW;
    var c = this.canvas;
    c.width = Math.round(cssW * dpr);
    c.height = Math.round(this.height * dpr);
    c.style.width = cssW + 'px';
    c.style.height = this.height + 'px';
    var g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = '#fff';
    g.fillRect(0, 0, cssW, this.height);
    var v0 = this.view[0], v1 = this.view[1], W = cssW - LABEL_W;
    var k = W / (v1 - v0);
    // rows: shading and labels
    g.font = '11px sans-serif';
    g.textBaseline = 'middle';
    for (var r = 0; r < rows.length; r++) {
      var h = rows[r].sub * ROW_H;
      if (r % 2 === 1) { g.fillStyle = '#f4f4f4'; g.fillRect(0, this.rowY[r] - 1, cssW, h + 2); }
      if (r === this.mark) { g.fillStyle = '#fff3c4'; g.fillRect(0, this.rowY[r] - 1, cssW, h + 2); }
      g.fillStyle = rows[r].kind === 'gpu' ? '#222' : '#666';
      g.fillText(clip(g, rows[r].label, LABEL_W - 8), 4, this.rowY[r] + ROW_H / 2);
    }
    g.save();
    g.beginPath();
    g.rect(LABEL_W, AXIS_H, W, this.height - AXIS_H);
    g.clip();
    // outside the detail window: the level-of-detail summary
    var lodDrawn = this.drawLod(g, k);
    // inside it: every event, tiny ones merged per sub-row and pixel
    var dimmed = !!this.matchName;
    var drawn = new Array(rows.length).fill(0), lastPx = {}, labels = 0;
    for (var j = 0; j < ev.n; j++) {
      var i = x.order[j], s = ev.start[i], e = s + ev.dur[i];
      if (!(s < v1 && e > v0)) continue;
      var row = ev.row[i];
      drawn[row]++;
      var x0 = LABEL_W + (s - v0) * k, x1 = LABEL_W + (e - v0) * k;
      var y = this.rowY[row] + ev.sub[i] * ROW_H;
      var match = dimmed && this.matchName[ev.name[i]];
      if (x1 - x0 < 1) {
        var key = (row * 65536 + ev.sub[i]) * 4 + ev.layer[ev.cls[i]], px = Math.floor(x0);
        if (lastPx[key] === px && !match) continue;
        lastPx[key] = px;
        x1 = x0 + 1;
      }
      g.globalAlpha = dimmed && !match ? 0.2 : 1;
      g.fillStyle = this.colors[ev.cls[i]];
      g.fillRect(x0, y + 1, x1 - x0, ROW_H - 2);
      if (match && x1 - x0 >= 3) { g.strokeStyle = '#000'; g.strokeRect(x0 + 0.5, y + 1.5, x1 - x0 - 1, ROW_H - 3); }
      if (x1 - x0 > 40 && labels < 4000) {
        var a = Math.max(x0, LABEL_W) + 2, b = Math.min(x1, cssW) - 2;
        if (b - a > 20) {
          g.fillStyle = ev.cls[i] === 0 || ev.cls[i] === 1 || ev.cls[i] === 3 ? '#fff' : '#111';
          g.fillText(clip(g, d.strings[ev.name[i]], b - a), a, y + ROW_H / 2);
          labels++;
        }
      }
    }
    g.globalAlpha = 1;
    // the selection and the cursor
    if (this.sel) {
      g.fillStyle = 'rgba(0, 114, 178, 0.15)';
      g.fillRect(LABEL_W + (this.sel[0] - v0) * k, AXIS_H, Math.max(1, (this.sel[1] - this.sel[0]) * k), this.height);
    }
    if (this.cursor !== null) {
      g.fillStyle = '#d55e00';
      g.fillRect(LABEL_W + (this.cursor - v0) * k, AXIS_H, 1, this.height);
    }
    g.restore();
    this.drawAxis(g, k, cssW);
    this.drawn = drawn;
    this.lodDrawn = lodDrawn;
    // from the trace's start, as every output counts (d.shift: the page's first event from it)
    this.status.textContent = dur(v0 + (d.shift || 0)) + ' \u2013 ' + dur(v1 + (d.shift || 0)) + ' from the start  (' +
      dur(v1 - v0) + ' shown)';
    // outside the detail window only the summary shows: the command that embeds every event of this view
    var a = Math.max(0, Math.floor(v0)), b = Math.min(d.span, Math.ceil(v1));
    this.hint.textContent = (v0 < d.from || v1 > d.to) && b > a && b - a < (d.to - d.from) * 4 ?   // never an empty window
      'every event here: nsl view TRACE --from ' + (a + (d.shift || 0)) + ' --to ' + (b + (d.shift || 0)) +
      ' (ns from the first event)' : '';
  };

  /* The level of detail that fits the view: the coarsest whose bins are
   * at most a pixel wide, else the finest. */
  Viewer.prototype.lodLevel = function () {
    var levels = this.x.levels, px = (this.view[1] - this.view[0]) / Math.max(1, this.width - LABEL_W);
    for (var k = 0; k < levels.length; k++) if (this.d.span / levels[k].bins <= px) return k;
    return levels.length - 1;
  };

  /* The level-of-detail bins in view outside the detail window, from the
   * level that fits the view: per row and pixel column, the busy fraction
   * as opacity.  Returns per row the bins drawn, and keeps them per row in
   * this.lodBins ([from, to, busy, starts] of each part drawn) for the
   * self-test. */
  Viewer.prototype.drawLod = function (g, k) {
    var d = this.d, x = this.x, rows = d.rows, span = d.span, lk = this.lodLevel(), nb = x.levels[lk].bins;
    var v0 = this.view[0], v1 = this.view[1], from = d.from, to = d.to;
    var b0 = binAt(span, x.levels[lk], Math.max(0, v0)), b1 = binAt(span, x.levels[lk], Math.min(span, v1));
    var out = new Array(rows.length).fill(0), bins = [];
    this.lodShown = lk;
    for (var r = 0; r < rows.length; r++) {
      var color = rows[r].kind === 'gpu' ? this.colors[0] : this.colors[6];
      var y = this.rowY[r], h = rows[r].kind === 'gpu' ? ROW_H - 2 : Math.min(rows[r].sub, 2) * ROW_H - 2;
      var px = null, busy = 0, width = 0, list = [];
      var flush = function () {
        if (px !== null && busy > 0) {
          g.globalAlpha = Math.max(0.15, Math.min(1, busy / width));
          g.fillStyle = color;
          g.fillRect(px.a, y + 1, Math.max(1, px.b - px.a), h);
        }
      };
      bins.push(list);
      for (var b = b0; b <= b1; b++) {
        var s = edge(span, nb, b), e = edge(span, nb, b + 1);
        if (e <= v0 || s >= v1 || e <= s) continue;
        // the parts outside the detail window only
        if (s >= from && e <= to) continue;
        var cell = lodCell(x.levels, span, lk, r, b);
        list.push([s, e, cell.busy, cell.starts]);
        if (!cell.busy && !cell.starts) continue;
        var parts = [[s, Math.min(e, from)], [Math.max(s, to), e]];
        for (var p = 0; p < 2; p++) {
          var ps = parts[p][0], pe = parts[p][1];
          if (pe <= ps) continue;
          var frac = (pe - ps) / (e - s);
          var xa = LABEL_W + (ps - v0) * k, xb = LABEL_W + (pe - v0) * k;
          if (px && Math.floor(xa) <= Math.floor(px.b)) px.b = xb;   // the same pixel column: merge
          else { flush(); px = {a: xa, b: xb}; busy = 0; width = 0; }
          busy += cell.busy * frac;
          width += pe - ps;
          out[r]++;
        }
      }
      flush();
    }
    g.globalAlpha = 1;
    this.lodBins = bins;
    return out;
  };

  Viewer.prototype.drawAxis = function (g, k, cssW) {
    var v0 = this.view[0], v1 = this.view[1], d = this.d;
    g.fillStyle = '#fff';
    g.fillRect(0, 0, cssW, AXIS_H);
    // the detail window on the axis
    g.fillStyle = '#e8f1f8';
    var xa = Math.max(LABEL_W, this.xOf(d.from)), xb = Math.min(cssW, this.xOf(d.to));
    if (xb > xa) g.fillRect(xa, 0, xb - xa, AXIS_H - 4);
    var target = (cssW - LABEL_W) / 110, raw = (v1 - v0) / target;
    var p = Math.pow(10, Math.floor(Math.log10(raw))), step = p;
    [1, 2, 5, 10].some(function (m) { step = m * p; return m * p >= raw; });
    g.strokeStyle = '#999';
    g.fillStyle = '#333';
    g.font = '11px sans-serif';
    g.textBaseline = 'top';
    for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      var x = this.xOf(t);
      if (x < LABEL_W) continue;
      g.fillRect(x, AXIS_H - 8, 1, 6);
      g.fillText(dur(t), x + 2, 3);
    }
    g.fillRect(LABEL_W, AXIS_H - 2, cssW - LABEL_W, 1);
    g.fillStyle = '#666';
    g.fillText('time from the first event', 4, 3);
  };

  /* s cut to fit w px, with an ellipsis. */
  function clip(g, s, w) {
    s = s === undefined || s === null ? '' : String(s);
    if (g.measureText(s).width <= w) return s;
    var lo = 0, hi = s.length;
    while (lo < hi) {
      var m = (lo + hi + 1) >> 1;
      if (g.measureText(s.slice(0, m) + '\u2026').width <= w) lo = m; else hi = m - 1;
    }
    return lo ? s.slice(0, lo) + '\u2026' : '';
  }

  // ---- hover, NVTX stack, search -----------------------------------------------------------

  Viewer.prototype.hover = function (x, y) {
    var at = this.rowAt(y), tip = this.tip;
    if (!at || x < LABEL_W) { tip.style.display = 'none'; return; }
    var t = this.timeAt(x), slack = 3 * (this.view[1] - this.view[0]) / (this.width - LABEL_W);
    var ev = this.x.ev, list = this.x.byRow[at.row], best = -1, d = this.d;
    for (var j = 0; j < list.length; j++) {
      var i = list[j];
      if (ev.sub[i] !== at.sub) continue;
      if (ev.start[i] - slack <= t && t <= ev.start[i] + ev.dur[i] + slack &&
          (best < 0 || ev.dur[i] < ev.dur[best])) best = i;
    }
    var html, row = d.rows[at.row];
    if (best >= 0) {
      html = '<b>' + esc(d.strings[ev.name[best]]) + '</b><br>' + esc(d.classes[ev.cls[best]].label) + ', ' +
             esc(row.label) + (row.kind === 'nvtx' ? ', depth ' + ev.sub[best] : '') +
             '<br>start ' + dur(ev.start[best]) + ', duration ' + dur(ev.dur[best]);
    } else if (t < d.from || t >= d.to) {
      var lk = this.lodLevel(), nb = this.x.levels[lk].bins, b = binAt(d.span, this.x.levels[lk], t);
      var cell = lodCell(this.x.levels, d.span, lk, at.row, b), w = edge(d.span, nb, b + 1) - edge(d.span, nb, b);
      html = '<b>' + esc(row.label) + '</b><br>' + dur(edge(d.span, nb, b)) + ' \u2013 ' +
             dur(edge(d.span, nb, b + 1)) + ': busy ' + dur(cell.busy) + ' (' +
             (w > 0 ? (100 * cell.busy / w).toFixed(1) : '0') + '%), ' + cell.starts + ' events start';
    }
    if (!html) { tip.style.display = 'none'; return; }
    tip.innerHTML = html;
    tip.style.display = 'block';
    tip.style.left = Math.min(x + 12, this.width - 320) + 'px';
    tip.style.top = (y + 14) + 'px';
  };

  /* The NVTX ranges enclosing [a, b] on every thread, outermost first. */
  Viewer.prototype.stackAt = function (a, b) {
    var ev = this.x.ev, rows = this.d.rows, res = [];
    for (var r = 0; r < rows.length; r++) {
      if (rows[r].kind !== 'nvtx') continue;
      var list = this.x.byRow[r], found = [];
      for (var j = 0; j < list.length; j++) {
        var i = list[j], s = ev.start[i], e = s + ev.dur[i];
        if (s <= a && (a === b ? e > b : e >= b)) found.push(i);
      }
      found.sort(function (p, q) { return ev.sub[p] - ev.sub[q] || ev.start[p] - ev.start[q]; });
      if (found.length) res.push({row: r, ranges: found});
    }
    return res;
  };

  Viewer.prototype.showStack = function (a, b) {
    var box = this.stackBox, d = this.d, ev = this.x.ev;
    box.innerHTML = '';
    el('p', 'nv-muted', box, a === b ? 'at ' + dur(a) : 'enclosing ' + dur(a) + ' \u2013 ' + dur(b));
    var stack = this.stackAt(a, b);
    if (!stack.length) el('p', 'nv-muted', box, 'no NVTX range' + (a < d.from || b > d.to ?
                          ' (outside the detail window: run nsl view with --from/--to there)' : ''));
    stack.forEach(function (s) {
      el('div', 'nv-thread', box, d.rows[s.row].label);
      s.ranges.forEach(function (i) {
        var line = el('div', 'nv-range', box, d.strings[ev.name[i]] + '  ' + dur(ev.dur[i]));
        line.style.paddingLeft = (8 + 12 * ev.sub[i]) + 'px';
      });
    });
  };

  /* Marks the names that contain term (case-insensitive) and lists them. */
  Viewer.prototype.find = function (term) {
    var d = this.d, ev = this.x.ev, box = this.foundBox;
    this.term = term = (term || '').toLowerCase();
    this.hit = -1;
    box.innerHTML = '';
    if (!term) { this.matchName = null; this.found = []; this.draw(); return; }
    var m = new Uint8Array(d.strings.length), per = new Uint32Array(d.strings.length);
    for (var s = 0; s < d.strings.length; s++) m[s] = d.strings[s].toLowerCase().indexOf(term) >= 0 ? 1 : 0;
    var hits = [];
    for (var i = 0; i < ev.n; i++) if (m[ev.name[i]]) { per[ev.name[i]]++; hits.push(i); }
    hits.sort(function (p, q) { return ev.start[p] - ev.start[q]; });
    this.matchName = m;
    this.hits = hits;
    var names = [];
    for (s = 0; s < d.strings.length; s++) if (per[s]) names.push(s);
    names.sort(function (p, q) { return per[q] - per[p]; });
    this.found = names.map(function (s) { return d.strings[s]; });
    el('p', 'nv-muted', box, hits.length + ' events, ' + names.length + ' names (Enter: next)');
    var self = this;
    names.slice(0, 100).forEach(function (s) {
      var line = el('div', 'nv-name', box, per[s] + '\u00d7 ' + d.strings[s]);
      line.addEventListener('click', function () {
        self.find(d.strings[s]);
        self.search.value = d.strings[s];
        self.next();
      });
    });
    this.draw();
  };

  /* Centres the next search hit after the view's middle. */
  Viewer.prototype.next = function () {
    if (!this.hits || !this.hits.length) return;
    var ev = this.x.ev, mid = (this.view[0] + this.view[1]) / 2, hits = this.hits, h = 0;
    while (h < hits.length && ev.start[hits[h]] <= mid + 1) h++;
    if (h === hits.length) h = 0;
    var i = hits[h], w = Math.max(this.view[1] - this.view[0], 0), c = ev.start[i] + ev.dur[i] / 2;
    if (ev.dur[i] * 3 > w) w = ev.dur[i] * 3;
    this.setView(c - w / 2, c + w / 2);
  };

  // ---- self-test ---------------------------------------------------------------------------

  /* Zooms in 4x, pans a quarter to the right and searches term, through the
   * same calls as the mouse and the keys, then writes what was drawn. */
  Viewer.prototype.selftest = function (term) {
    var d = this.d;
    this.setView(d.from, d.to);
    this.zoom(0.25);
    this.pan(0.25);
    this.setView(Math.round(this.view[0]), Math.round(this.view[1]));
    var shown = this.view.slice(), drawn = this.drawn.slice();
    // hovering the middle of the first row: the event under the pointer (within 3 px)
    var hx = Math.round(this.xOf(Math.round((shown[0] + shown[1]) / 2))), hy = this.rowY[0] + ROW_H / 2;
    this.hover(hx, hy);
    var hovered = {at: (this.base + BigInt(Math.round(this.timeAt(hx)))).toString(),
                   slack: 3 * (shown[1] - shown[0]) / (this.width - LABEL_W),
                   text: this.tip.style.display === 'none' ? null : this.tip.textContent};
    this.tip.style.display = 'none';
    // the NVTX stack at the middle (a click) and over a selection from there (shift-drag)
    var ev = this.x.ev, mid = Math.round((shown[0] + shown[1]) / 2);
    var sel = [mid, mid + Math.round((shown[1] - shown[0]) / 50)];
    var stacks = [[mid, mid], sel].map(function (ab) {
      this.showStack(ab[0], ab[1]);
      return this.stackAt(ab[0], ab[1]).map(function (st) {
        return {pid: d.rows[st.row].pid, tid: d.rows[st.row].tid,
                names: st.ranges.map(function (i) { return d.strings[ev.name[i]]; })};
      });
    }, this);
    this.find(term);
    var found = this.found.slice().sort(), hits = this.hits ? this.hits.length : 0;
    var painted = 0, g = this.canvas.getContext('2d');
    var px = g.getImageData(Math.round(LABEL_W * (window.devicePixelRatio || 1)), 0,
                            this.canvas.width - Math.round(LABEL_W * (window.devicePixelRatio || 1)),
                            this.canvas.height).data;
    for (var i = 0; i < px.length; i += 4) if (px[i] < 235 || px[i + 1] < 235 || px[i + 2] < 235) painted++;
    // past the detail window: the hint names the command that embeds every event there
    this.find('');
    this.setView(d.to, d.to + (d.to - d.from) / 2);
    var hint = this.hint.textContent;
    this.setView(d.span + 10, d.span + 1000);   // wholly past the last event: no hint (it would name an empty window)
    var hintPastEnd = this.hint.textContent;
    var abs = function (t) { return (this.base + BigInt(t)).toString(); }.bind(this);
    // zoomed in 16x in the middle of what lies past the detail window: the bins drawn there per row, from
    // the level that fits
    var outside = null;
    if (d.span - d.to >= 64) {
      var ow = Math.round((d.span - d.to) / 16), om = Math.round((d.to + d.span) / 2);
      this.setView(om - Math.round(ow / 2), om - Math.round(ow / 2) + ow);
      outside = {from: abs(this.view[0]), to: abs(this.view[1]), level: this.lodShown,
                 bins: this.x.levels[this.lodShown].bins, levels: this.x.levels.length,
                 rows: this.lodBins.map(function (list) {
                   return list.map(function (c) { return [abs(c[0]), abs(c[1]), c[2], c[3]]; });
                 })};
    }
    // the whole trace: the coarsest level, whose bins are all stored
    this.setView(0, d.span);
    var lodCount = [], lodBusy = [], top = this.x.levels[0];
    for (var r = 0; r < d.rows.length; r++) {
      var n = 0, busy = 0;
      var i0 = lowerBound(top.cell, r * top.bins), i1 = lowerBound(top.cell, (r + 1) * top.bins);
      for (var i = i0; i < i1; i++) { n += top.starts[i]; busy += top.busy[i]; }
      lodCount.push(n);
      lodBusy.push(busy);
    }
    // the first finding with a place: clicking it shows that window and its row
    var placed = (d.findings || []).filter(function (f) { return f.from !== undefined && f.to !== undefined; });
    var went = null;
    if (placed.length) {
      var f = placed[0];
      this.goFinding(f);
      went = {id: f.id, from: abs(f.from), to: abs(f.to), shows: this.view[0] <= f.from && this.view[1] >= f.to,
              row: this.mark === null ? null : d.rows[this.mark].label};
    }
    var fetched = performance.getEntriesByType('resource').map(function (e) { return e.name; })
                  .filter(function (u) { return u.indexOf('data:') !== 0; });
    var report = {
      window: {from: abs(shown[0]), to: abs(shown[1])},
      detail: {from: abs(d.from), to: abs(d.to), events: d.events.n},
      rows: d.rows.map(function (row, r) {
        return {label: row.label, kind: row.kind, report: row.report, device: row.device, stream: row.stream,
                pid: row.pid, tid: row.tid, drawn: drawn[r], lod_events: lodCount[r], lod_busy: lodBusy[r],
                lod_drawn: this.lodDrawn[r]};
      }, this),
      hover: hovered, hint: hint, hint_past_end: hintPastEnd, outside: outside,
      stack: {at: (this.base + BigInt(mid)).toString(), threads: stacks[0]},
      selection: {from: (this.base + BigInt(sel[0])).toString(), to: (this.base + BigInt(sel[1])).toString(),
                  threads: stacks[1]},
      term: term, found: found, found_events: hits, painted: painted, went: went, fetched: fetched,
      findings: (d.findings || []).map(function (f) {
        return {id: f.id, severity: f.severity, from: f.from === undefined ? null : abs(f.from),
                to: f.to === undefined ? null : abs(f.to)};
      })
    };
    return report;
  };

  function init(root) {
    if (root.getAttribute('data-ready')) return;
    root.setAttribute('data-ready', '1');
    var script = root.querySelector('script.nsl-view-data');
    var v = new Viewer(root, JSON.parse(script.textContent));
    root.setAttribute('data-ready-ms', performance.now().toFixed(1));   // page start to the first drawing (benchmarks)
    var m = /^#selftest(?:=(.*))?$/.exec(window.location.hash);
    if (m) {
      var out = el('pre', 'nsl-selftest', root);
      out.textContent = JSON.stringify(v.selftest(decodeURIComponent(m[1] || 'a')));
    }
  }

  window.NslView = {
    initAll: function () { Array.prototype.forEach.call(document.querySelectorAll('div.nsl-view'), init); },
    Viewer: Viewer
  };
  window.NslView.initAll();
})();
