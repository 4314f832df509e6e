// The ribbon timeline on a canvas: every thread of the run, one row per ribbon (cluster group),
// each cluster's occurrences as coloured intervals, outliers as red marks over them, and the
// embedded exact instances as solid bars once zoomed in far enough to see them.
//
// Cost is bounded by what is drawn, never by the run's length: occurrences come aggregated in
// time bins (the analyzer's bounded-resolution timeline), and every bin is one rectangle at least
// a pixel wide, so a run of 100 million events draws as fast as one of a thousand.
'use strict';

ST.Timeline = class {
  static kGutter = 210;      // label column
  static kAxis = 26;         // time axis height
  static kThreadH = 22;      // thread header row
  static kRibbonH = 16;      // one ribbon row
  static kThreadGap = 6;
  static kMinSpanNs = 50;    // deepest zoom: about one short call across the screen

  constructor(canvas, model, handlers) {
    this.canvas = canvas;
    this.handlers = handlers; // { hover(hit), click(hit), view(start, end) }
    this.highlight = null;    // cluster drawn emphasised
    this.selected = null;     // instance shown below (outlined)
    this.mergeRecursion = true; // a recursion's levels drawn as one row (the toolbar's switch)
    this.setModel(model, true);
    this.listen();
  }

  setModel(model, resetView) {
    const old = this.model;
    const following = old && this.view && this.view.end >= old.t1 - 1;
    const showedAll = old && this.view && this.view.start <= old.t0 + 1 && following;
    this.model = model;
    if (resetView || !this.view || showedAll) {
      // Live: a view of the whole run keeps showing the whole run as it grows.
      this.view = { start: model.t0, end: model.t1 };
    } else if (following) {
      // Live: a zoomed view that showed the end keeps showing the end.
      const span = this.view.end - this.view.start;
      this.view = { start: model.t1 - span, end: model.t1 };
    }
    this.layoutRows();
    this.resize();
  }

  setMergeRecursion(merge) {
    this.mergeRecursion = merge;
    this.layoutRows();
    this.resize();
  }

  // Rows from top to bottom: per thread a header, then its ribbons (a recursion's levels merged
  // into one row unless the user asked to see them apart).
  layoutRows() {
    const T = ST.Timeline;
    this.rows = [];
    let y = T.kAxis;
    for (const thread of this.model.threads) {
      this.rows.push({ kind: 'thread', thread, y, h: T.kThreadH });
      y += T.kThreadH;
      for (const ribbon of this.mergeRecursion ? thread.foldedRibbons : thread.ribbons) {
        this.rows.push({ kind: 'ribbon', thread, ribbon, y, h: T.kRibbonH });
        y += T.kRibbonH;
      }
      y += T.kThreadGap;
    }
    this.height = Math.max(y + 4, 120);
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const width = this.canvas.parentElement.clientWidth || 800;
    this.width = width;
    this.font = getComputedStyle(document.body).fontFamily; // read once: style look-ups are slow
    this.canvas.style.height = `${this.height}px`;
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(this.height * dpr);
    this.ctx = this.canvas.getContext('2d');
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.draw();
  }

  // Time <-> x in CSS pixels.
  x(t) {
    const T = ST.Timeline;
    return T.kGutter + (t - this.view.start) / (this.view.end - this.view.start) * (this.width - T.kGutter - 8);
  }
  t(x) {
    const T = ST.Timeline;
    return this.view.start + (x - T.kGutter) / (this.width - T.kGutter - 8) * (this.view.end - this.view.start);
  }

  setView(start, end) {
    const T = ST.Timeline, m = this.model;
    const full = m.t1 - m.t0;
    let span = Math.min(Math.max(end - start, T.kMinSpanNs), full * 1.05);
    start = Math.max(Math.min(start, m.t1 - span * 0.5), m.t0 - span * 0.5);
    this.view = { start, end: start + span };
    this.draw();
    if (this.handlers.view) this.handlers.view(this.view.start, this.view.end);
  }
  zoom(factor, atX) {
    const pivot = this.t(atX ?? (ST.Timeline.kGutter + this.width) / 2);
    this.setView(pivot - (pivot - this.view.start) * factor, pivot + (this.view.end - pivot) * factor);
  }
  fit() { this.setView(this.model.t0, this.model.t1); }

  draw() {
    const ctx = this.ctx;
    if (!ctx) return;
    ctx.clearRect(0, 0, this.width, this.height);
    ctx.font = '12px ' + this.font;
    for (const row of this.rows) this.drawRow(row);
    this.drawAxis();
  }

  drawRow(row) {
    const ctx = this.ctx, T = ST.Timeline, m = this.model;
    if (row.kind === 'thread') {
      ctx.fillStyle = '#f1f3f4';
      ctx.fillRect(0, row.y, this.width, row.h);
      const font = this.font;
      ctx.font = `11px ${font}`;
      ctx.fillStyle = '#636c76';
      const info = `${ST.fmt.count(row.thread.calls, true)} calls`;
      const infoWidth = ctx.measureText(info).width;
      ctx.fillText(info, T.kGutter - 8 - infoWidth, row.y + 15);
      ctx.fillStyle = '#1f2328';
      ctx.font = `600 12px ${font}`;
      ctx.fillText(this.clip(row.thread.label, T.kGutter - 24 - infoWidth), 8, row.y + 15);
      this.drawOutlierMarks(row);
      return;
    }
    // Ribbon label and guide line.
    ctx.font = `11px ${this.font}`;
    ctx.fillStyle = '#636c76';
    ctx.fillText(this.clip(row.ribbon.label, T.kGutter - 28), 20, row.y + 12);
    ctx.strokeStyle = '#eef0f2';
    ctx.beginPath();
    ctx.moveTo(T.kGutter, row.y + row.h - 0.5);
    ctx.lineTo(this.width, row.y + row.h - 0.5);
    ctx.stroke();

    ctx.save();
    ctx.beginPath();
    ctx.rect(T.kGutter, row.y, this.width - T.kGutter, row.h);
    ctx.clip();
    // Counts already written on this row: a cluster's label never covers another's.
    const written = [];
    for (const entry of row.ribbon.clusters) this.drawCells(row, entry, written);
    ctx.globalAlpha = 1;
    this.drawInstances(row);
    this.drawOutlierSpans(row);
    ctx.restore();
  }

  // One cluster's occurrence cells on a ribbon, aggregated per pixel column: each column takes the
  // fullest bin that touches it, and runs of columns at the same (quantised) fill become one
  // rectangle. So the cost is bounded by the screen's width, whatever the number of bins.
  drawCells(row, entry, written) {
    const ctx = this.ctx, T = ST.Timeline, m = this.model, bin = m.binNs;
    const c = m.clusters[entry.cluster];
    const dim = this.highlight !== null && this.highlight !== entry.cluster;
    const cells = entry.cells;
    const first = Math.floor(this.view.start / bin) - 1, last = Math.ceil(this.view.end / bin) + 1;
    // Binary search for the first cell in view: cells are in bin order.
    let lo = 0, hi = cells.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cells[mid][0] < first) lo = mid + 1; else hi = mid;
    }
    const width = Math.ceil(this.width);
    if (!this.columns || this.columns.length < width + 1) this.columns = new Float32Array(width + 1);
    const columns = this.columns;
    columns.fill(0);
    const labels = [];
    for (let i = lo; i < cells.length && cells[i][0] <= last; ++i) {
      const [b, count, busy] = cells[i];
      const x0 = Math.max(T.kGutter, this.x(b * bin)), x1 = Math.min(width, this.x((b + 1) * bin));
      if (x1 <= x0 && x0 >= width) continue;
      // Opacity shows how much of the bin the cluster's calls fill; never invisible.
      const fill = 0.35 + 0.65 * Math.min(1, busy / bin);
      const p1 = Math.max(Math.floor(x0) + 1, Math.ceil(x1));
      for (let p = Math.floor(x0); p < p1 && p < width; ++p) if (fill > columns[p]) columns[p] = fill;
      if (count && x1 - x0 > 60) labels.push([x0, `${ST.fmt.count(count, true)}×`]);
    }
    ctx.fillStyle = c.color;
    const level = (v) => (v === 0 ? 0 : Math.ceil(v * 8));
    for (let p = T.kGutter; p < width;) {
      const l = level(columns[p]);
      let q = p + 1;
      while (q < width && level(columns[q]) === l) ++q;
      if (l) {
        ctx.globalAlpha = (dim ? 0.18 : 1) * (l / 8);
        ctx.fillRect(p, row.y + 2, q - p, row.h - 4);
      }
      p = q;
    }
    ctx.globalAlpha = 1;
    if (!dim) {
      ctx.fillStyle = '#1f2328';
      for (const [x, text] of labels) {
        const from = x + 3, to = from + ctx.measureText(text).width + 4;
        if (written.some(([a, b]) => from < b && a < to)) continue;
        written.push([from, to]);
        ctx.fillText(text, from, row.y + 12);
      }
    }
  }

  // Exact instances of this ribbon's clusters: solid bars with a dark edge, visible once they are
  // at least two pixels wide.
  drawInstances(row) {
    const ctx = this.ctx;
    for (const inst of row.thread.instances) {
      if (!row.ribbon.clusterSet.has(inst.cluster)) continue;
      if (inst.endNs < this.view.start || inst.start_ns > this.view.end) continue;
      const x0 = this.x(inst.start_ns), x1 = this.x(inst.endNs);
      if (x1 - x0 < 2 && inst !== this.selected) continue;
      ctx.fillStyle = this.model.clusters[inst.cluster].color;
      ctx.fillRect(x0, row.y + 1, Math.max(2, x1 - x0), row.h - 2);
      ctx.strokeStyle = inst === this.selected ? '#1a73e8' : 'rgba(0,0,0,0.55)';
      ctx.lineWidth = inst === this.selected ? 2 : 1;
      ctx.strokeRect(x0 + 0.5, row.y + 1.5, Math.max(2, x1 - x0) - 1, row.h - 3);
      ctx.lineWidth = 1;
      if (x1 - x0 > 50) {
        ctx.fillStyle = '#fff';
        ctx.fillText(this.clip(ST.fmt.leafName(this.model.functionName(inst.function)), x1 - x0 - 6),
          x0 + 3, row.y + 12);
      }
    }
  }

  // Outliers over their cluster's ribbon: a red outline of the call's exact interval.
  drawOutlierSpans(row) {
    const ctx = this.ctx;
    ctx.strokeStyle = ST.color.outlier;
    ctx.lineWidth = 1.5;
    for (const o of row.thread.outliers) {
      if (o.cluster === null || !row.ribbon.clusterSet.has(o.cluster)) continue;
      const end = o.start_ns + o.duration_ns;
      if (end < this.view.start || o.start_ns > this.view.end) continue;
      const x0 = this.x(o.start_ns), x1 = this.x(end);
      ctx.strokeRect(x0, row.y + 1, Math.max(2, x1 - x0), row.h - 2);
    }
    ctx.lineWidth = 1;
  }

  // Outliers on the thread header: a red triangle at the call's start, taller for larger scores.
  drawOutlierMarks(row) {
    const ctx = this.ctx;
    ctx.fillStyle = ST.color.outlier;
    for (const o of row.thread.outliers) {
      if (o.start_ns < this.view.start || o.start_ns > this.view.end) continue;
      const x = this.x(o.start_ns);
      ctx.beginPath();
      ctx.moveTo(x - 4, row.y + 3);
      ctx.lineTo(x + 4, row.y + 3);
      ctx.lineTo(x, row.y + row.h - 3);
      ctx.closePath();
      ctx.fill();
    }
  }

  drawAxis() {
    const ctx = this.ctx, T = ST.Timeline;
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, this.width, T.kAxis);
    ctx.strokeStyle = '#dde1e6';
    ctx.beginPath();
    ctx.moveTo(0, T.kAxis - 0.5);
    ctx.lineTo(this.width, T.kAxis - 0.5);
    ctx.stroke();
    const span = this.view.end - this.view.start;
    const target = span / Math.max(1, (this.width - T.kGutter) / 110);
    const pow = Math.pow(10, Math.floor(Math.log10(target)));
    const step = [1, 2, 5, 10].map((k) => k * pow).find((s) => s >= target);
    const origin = this.model.t0;
    ctx.font = `11px ${this.font}`;
    for (let t = Math.ceil((this.view.start - origin) / step) * step; t <= this.view.end - origin; t += step) {
      const x = this.x(origin + t);
      if (x < T.kGutter) continue;
      ctx.strokeStyle = '#eef0f2';
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, T.kAxis);
      ctx.lineTo(Math.round(x) + 0.5, this.height);
      ctx.stroke();
      ctx.strokeStyle = '#9aa0a6';
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, T.kAxis - 6);
      ctx.lineTo(Math.round(x) + 0.5, T.kAxis);
      ctx.stroke();
      ctx.fillStyle = '#3c4043';
      ctx.fillText(ST.fmt.tick(t, step), x + 3, 15);
    }
    ctx.fillStyle = '#636c76';
    ctx.fillText(`bin ${ST.fmt.ns(this.model.binNs)}`, 8, 15);
  }

  clip(text, width) {
    if (this.ctx.measureText(text).width <= width) return text;
    let lo = 0, hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.ctx.measureText(text.slice(0, mid) + '…').width <= width) lo = mid; else hi = mid - 1;
    }
    return text.slice(0, lo) + '…';
  }

  // What is under (x, y) in CSS pixels: the row, the time, and the cluster, outlier or exact
  // instance there (within a few pixels, so thin intervals stay easy to hit).
  hitTest(x, y) {
    const T = ST.Timeline, m = this.model;
    const row = this.rows.find((r) => y >= r.y && y < r.y + r.h);
    if (!row || x < T.kGutter) return null;
    const t = this.t(x);
    const slack = (this.view.end - this.view.start) / (this.width - T.kGutter) * 3;
    const hit = { row, thread: row.thread, t, cluster: null, outlier: null, instance: null };
    const near = (start, end) => start - slack <= t && t <= end + slack;
    hit.outlier = row.thread.outliers.find((o) =>
      (row.kind === 'thread' || row.ribbon.clusterSet.has(o.cluster)) && near(o.start_ns, o.start_ns + o.duration_ns)) || null;
    if (row.kind === 'thread') {
      if (hit.outlier) hit.cluster = hit.outlier.cluster;
      return hit;
    }
    hit.instance = row.thread.instances.find((i) =>
      row.ribbon.clusterSet.has(i.cluster) && near(i.start_ns, i.endNs)) || null;
    if (hit.instance) { hit.cluster = hit.instance.cluster; return hit; }
    const bin = m.binNs;
    let best = null, bestDistance = Infinity;
    for (const entry of row.ribbon.clusters)
      for (const cell of entry.cells) {
        const d = Math.max(0, cell[0] * bin - t, t - (cell[0] + 1) * bin);
        if (d < bestDistance) { best = { entry, cell }; bestDistance = d; }
        if (cell[0] * bin > t + slack) break;
      }
    if (best && bestDistance <= slack) {
      hit.cluster = best.entry.cluster;
      hit.cell = best.cell;
    } else if (hit.outlier) {
      hit.cluster = hit.outlier.cluster;
    }
    return hit;
  }

  // A point inside a drawn occurrence of `clusterId` (page coordinates), for tests and for
  // "show me" links: the middle of its busiest visible bin.
  locate(clusterId) {
    const rect = this.canvas.getBoundingClientRect();
    for (const row of this.rows) {
      if (row.kind !== 'ribbon' || !row.ribbon.clusterSet.has(clusterId)) continue;
      const entry = row.ribbon.clusters.find((e) => e.cluster === clusterId);
      let best = null;
      for (const cell of entry.cells) {
        const x0 = this.x(cell[0] * this.model.binNs), x1 = this.x((cell[0] + 1) * this.model.binNs);
        if (x1 < ST.Timeline.kGutter || x0 > this.width) continue;
        if (!best || cell[2] > best.cell[2]) best = { cell, x: Math.max(x0, ST.Timeline.kGutter) + Math.max(0.5, Math.min(x1 - x0, 1) / 2) };
      }
      if (best) return { x: rect.left + best.x, y: rect.top + row.y + row.h / 2, thread: row.thread.key };
    }
    return null;
  }

  listen() {
    const c = this.canvas;
    let drag = null;
    const pos = (e) => {
      const r = c.getBoundingClientRect();
      return { x: e.clientX - r.left, y: e.clientY - r.top };
    };
    c.addEventListener('wheel', (e) => {
      e.preventDefault();
      const p = pos(e);
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        const dt = (e.deltaX || e.deltaY) / (this.width - ST.Timeline.kGutter) * (this.view.end - this.view.start);
        this.setView(this.view.start + dt, this.view.end + dt);
      } else {
        this.zoom(Math.exp(e.deltaY * 0.0015), p.x);
      }
    }, { passive: false });
    c.addEventListener('mousedown', (e) => {
      drag = { x: e.clientX, start: this.view.start, end: this.view.end, moved: false };
    });
    window.addEventListener('mousemove', (e) => {
      if (drag) {
        const dx = e.clientX - drag.x;
        if (Math.abs(dx) > 3) { drag.moved = true; c.classList.add('dragging'); }
        if (drag.moved) {
          const dt = dx / (this.width - ST.Timeline.kGutter) * (drag.end - drag.start);
          this.setView(drag.start - dt, drag.end - dt);
        }
        return;
      }
      if (e.target !== c) return;
      const p = pos(e);
      this.handlers.hover(this.hitTest(p.x, p.y), e);
    });
    window.addEventListener('mouseup', (e) => {
      if (!drag) return;
      const wasDrag = drag.moved;
      drag = null;
      c.classList.remove('dragging');
      if (!wasDrag && e.target === c) {
        const p = pos(e);
        this.handlers.click(this.hitTest(p.x, p.y));
      }
    });
    c.addEventListener('mouseleave', () => { if (!drag) this.handlers.hover(null); });
    window.addEventListener('resize', () => this.resize());
  }
};

ST.views.register({
  id: 'timeline',
  order: 10,
  mount: (app) => new ST.Timeline(document.getElementById('timeline'), app.model, {
    hover: (hit, event) => app.onHover(hit, event),
    click: (hit) => app.onClick(hit),
    view: () => app.showRange(),
  }),
  // A live update keeps the user's zoom (or keeps following the end of the run).
  update: (view, model) => view.setModel(model, false),
});
