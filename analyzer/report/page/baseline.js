// The comparison view (`shapetrace report NEW --baseline BASE`, analyzer/report/comparison.h): what
// changed between the two runs in the diff's sentences, every cluster's activity over BASE and over
// NEW side by side (matched clusters on one row, new and vanished ones marked), and the
// differential flame graph: NEW's calling-context tree with NEW's widths, each frame coloured by
// the change of its time per second of run against the same stack in BASE (red: more, blue: less;
// Brendan Gregg's differential flame graphs), stacks only BASE has listed apart.
'use strict';

ST.baseline = {
  // Per NEW flame node: [new, base] time per second of run, self or inclusive.
  rates(tree, flame, diff, inclusive) {
    const n = tree.parent.length;
    const newS = diff.new.seconds || 1, baseS = diff.base.seconds || 1;
    const now = new Float64Array(n), base = new Float64Array(n);
    for (let i = 0; i < n; ++i) {
      now[i] = (inclusive ? tree.weight[i] : tree.self[i]) / newS;
      base[i] = (inclusive ? flame.base_total_ns[i] : flame.base_self_ns[i]) / baseS;
    }
    return { now, base };
  },
  // Change -> colour: white at 0, red for more time, blue for less, saturated at |max|.
  colour(delta, max, isNew) {
    if (isNew) return 'rgb(200,30,30)';
    const s = max > 0 ? Math.min(1, Math.abs(delta) / max) : 0;
    const fade = Math.round(255 - 175 * s);
    return delta >= 0 ? `rgb(255,${fade},${fade})` : `rgb(${fade},${fade},255)`;
  },
};

ST.BaselineView = class {
  constructor(app) {
    this.app = app;
    this.section = document.createElement('section');
    this.section.className = 'panel baseline-panel';
    this.section.id = 'baseline-panel';
    this.section.innerHTML = `
      <div class="panel-title">Compared with a baseline run <span class="sub" id="baseline-source"></span></div>
      <div class="notice baseline-filtering" id="baseline-filtering" hidden></div>
      <ol class="baseline-explanations" id="baseline-explanations"></ol>
      <div class="baseline-section">
        <div class="section-title">Clusters side by side <span class="baseline-hint">activity over each run (left BASE, right NEW) · hover: statistics · click: open the cluster</span></div>
        <div class="toolbar"><label><input type="checkbox" id="baseline-all"> every cluster</label><span id="baseline-count" class="baseline-hint"></span></div>
        <div class="baseline-ribbons-wrap"><canvas id="baseline-ribbons"></canvas></div>
      </div>
      <div class="baseline-section">
        <div class="section-title">Differential flame graph <span class="baseline-hint">widths: NEW · colour: change of time per second against BASE (red more, blue less; deep red: a stack BASE does not have) · click: zoom</span></div>
        <div class="toolbar"><select id="baseline-measure"><option value="self">colour by exclusive time</option><option value="inclusive">colour by inclusive time</option></select><span id="baseline-crumbs" class="flame-crumbs"></span></div>
        <div class="baseline-flame"><canvas id="baseline-flame"></canvas></div>
        <div class="baseline-gone" id="baseline-gone"></div>
      </div>`;
    const anchor = document.getElementById('instance-panel');
    anchor.parentNode.insertBefore(this.section, anchor);
    const $ = (id) => this.section.querySelector(`#${id}`);
    this.$ = $;
    this.ribbons = $('baseline-ribbons');
    this.ribbons.addEventListener('mousemove', (e) => this.hoverRow(this.rowAt(e), e));
    this.ribbons.addEventListener('mouseleave', () => this.hoverRow(null));
    this.ribbons.addEventListener('click', (e) => {
      const row = this.rowAt(e);
      if (row && row.change.new_cluster !== null) this.app.openCluster(row.change.new_cluster);
    });
    $('baseline-all').addEventListener('change', () => this.drawRibbons());
    this.flame = new ST.FlameCanvas($('baseline-flame'), this, { up: true, rowHeight: 18, hue: () => '#eee', fill: (r) => this.fill(r) });
    $('baseline-measure').addEventListener('change', () => { this.colourScale(); this.drawFlame(); });
    this.setModel(app.model);
  }

  name(fn) { return fn < 0 ? '(all)' : this.model.functionName(fn); }

  setModel(model) {
    this.model = model;
    this.data = model.data.baseline ?? null;
    this.section.hidden = !this.data;
    if (!this.data) return;
    const d = this.data.diff, f = ST.fmt;
    this.$('baseline-source').textContent =
      `BASE ${this.data.source}: ${f.count(d.base.calls)} calls in ${f.sig(d.base.seconds)} s · NEW: ${f.count(d.new.calls)} calls in ${f.sig(d.new.seconds)} s · ${f.count(d.shared_functions)} functions in common`;
    // Runs that left different functions out: their shapes differ by what was recorded.
    const filtering = this.$('baseline-filtering'), warning = d.filtering?.warning ?? '';
    filtering.hidden = !warning;
    filtering.textContent = warning;
    const list = this.$('baseline-explanations');
    list.innerHTML = d.explanations.length
      ? d.explanations.map((text) => `<li>${f.html(text)}</li>`).join('')
      : '<li class="baseline-none">No significant change: every matched shape and function has the same frequency and durations within the diff\'s thresholds.</li>';
    this.buildRows();
    this.drawRibbons();
    this.buildFlame();
  }

  // One row per cluster change: its activity on each side and its movement of time per second.
  buildRows() {
    const d = this.data.diff, act = this.data.activity;
    const series = (side) => new Map(side.clusters.map((c) => [c.cluster, c.busy_ns]));
    const base = series(act.base), now = series(act.new);
    const rate = (stats, seconds) => Number(stats.sum_ns) / (seconds || 1);
    this.rows = d.clusters.map((change) => ({
      change,
      base: change.base_cluster === null ? null : base.get(change.base_cluster) ?? null,
      now: change.new_cluster === null ? null : now.get(change.new_cluster) ?? null,
      impact: rate(change.new, d.new.seconds) - rate(change.base, d.base.seconds),
      // Matched without a shared shape: the function's only cluster on each side, its work changed.
      status: change.base_cluster === null ? 'new' : change.new_cluster === null ? 'vanished'
        : change.shared === 0 ? 'reshaped'
        : change.significant ? (change.relative_change > 0 ? 'slower' : 'faster') : '',
    }));
    // Changes first (new, vanished, significant), then by the time they moved.
    this.rows.sort((a, b) => (b.status !== '') - (a.status !== '') || Math.abs(b.impact) - Math.abs(a.impact));
    let max = 0;
    for (const r of this.rows) for (const s of [r.base, r.now]) if (s) for (const v of s) max = Math.max(max, v);
    this.maxBusy = max || 1;
  }

  drawRibbons() {
    const all = this.$('baseline-all').checked;
    const rows = all ? this.rows : this.rows.slice(0, 25);
    this.shown = rows;
    this.$('baseline-count').textContent = `${rows.length} of ${this.rows.length} clusters`;
    const c = this.ribbons, H = 20, label = 300, gap = 12, change = 210;
    const width = c.parentElement.clientWidth || 1000;
    const lane = Math.max(80, (width - label - change - 2 * gap) / 2);
    const height = rows.length * H + 18;
    const dpr = window.devicePixelRatio || 1;
    c.style.width = `${width}px`; c.style.height = `${height}px`;
    c.width = Math.round(width * dpr); c.height = Math.round(height * dpr);
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    g.font = '11px sans-serif';
    g.fillStyle = '#636c76';
    g.fillText('BASE', label, 12);
    g.fillText('NEW', label + lane + gap, 12);
    const f = ST.fmt;
    this.layout = { H, top: 18 };
    rows.forEach((r, i) => {
      const y = 18 + i * H, ch = r.change;
      const cluster = ch.new_cluster !== null ? this.model.clusters[ch.new_cluster] : null;
      const colour = cluster?.color ?? '#9aa0a6';
      g.fillStyle = '#1f2328';
      const text = `${f.shortName(ch.function)} ${ch.base_cluster ?? '–'}→${ch.new_cluster ?? '–'}`;
      g.fillText(text.length > 44 ? `${text.slice(0, 43)}…` : text, 4, y + 13);
      this.drawLane(g, r.base, label, y + 3, lane, H - 6, ch.base_cluster === null ? null : colour);
      this.drawLane(g, r.now, label + lane + gap, y + 3, lane, H - 6, ch.new_cluster === null ? null : colour);
      const badge = { new: '#188038', vanished: '#80868b', reshaped: '#b06000', slower: '#d93025', faster: '#1a73e8' }[r.status];
      const x = label + 2 * lane + 2 * gap;
      if (badge) { g.fillStyle = badge; g.fillText(r.status, x, y + 13); }
      g.fillStyle = '#636c76';
      const moved = `${r.impact >= 0 ? '+' : '−'}${f.ns(Math.abs(r.impact))}/s`;
      const pct = ch.base_cluster !== null && ch.new_cluster !== null ? ` ${ch.relative_change >= 0 ? '+' : ''}${(ch.relative_change * 100).toFixed(0)}%` : '';
      g.fillText(`${moved}${pct}`, x + 62, y + 13);
    });
    c.dataset.rows = String(rows.length);
  }

  // A cluster's activity series as bars, or a hatched lane where the cluster does not exist.
  drawLane(g, series, x, y, w, h, colour) {
    g.fillStyle = '#f1f3f4';
    g.fillRect(x, y, w, h);
    if (!colour) {
      g.strokeStyle = '#dadce0';
      for (let k = 0; k < w; k += 6) { g.beginPath(); g.moveTo(x + k, y + h); g.lineTo(x + Math.min(w, k + h), y); g.stroke(); }
      return;
    }
    if (!series) return;
    const bw = w / series.length;
    g.fillStyle = colour;
    series.forEach((v, k) => {
      if (v <= 0) return;
      const bh = Math.max(1, h * Math.sqrt(v / this.maxBusy)); // sqrt: quiet clusters stay visible
      g.fillRect(x + k * bw, y + h - bh, Math.max(1, bw), bh);
    });
  }

  rowAt(e) {
    if (!this.shown) return null;
    const r = this.ribbons.getBoundingClientRect();
    const i = Math.floor((e.clientY - r.top - this.layout.top) / this.layout.H);
    return i >= 0 && i < this.shown.length ? this.shown[i] : null;
  }

  hoverRow(row, event) {
    if (!row) { this.app.tooltip.hide(); return; }
    const ch = row.change, f = ST.fmt;
    if (ch.new_cluster !== null) this.app.emphasise(ch.new_cluster);
    const side = (name, s, calls) => `${name}: ${f.count(calls)} calls, mean ${f.ns(s.mean_ns)}, p99 ${f.ns(s.p99_ns)}`;
    this.app.tooltip.show(event, `<b>${f.html(ch.function)}</b> <span class="t">cluster ${ch.base_cluster ?? '–'} → ${ch.new_cluster ?? '–'}</span><br>` +
      (ch.base_cluster !== null ? `${side('BASE', ch.base, ch.base_calls)}<br>` : 'not in BASE<br>') +
      (ch.new_cluster !== null ? `${side('NEW', ch.new, ch.new_calls)}<br>` : 'not in NEW<br>') +
      (ch.base_cluster !== null && ch.new_cluster !== null ? `<span class="t">mean ${ch.relative_change >= 0 ? '+' : ''}${(ch.relative_change * 100).toFixed(1)}% (z ${ch.z.toFixed(1)}${ch.significant ? ', significant' : ''}); ${(ch.shared * 100).toFixed(0)}% of NEW's calls in shapes BASE's cluster has</span>` : ''));
  }

  buildFlame() {
    const ext = ST.flame.data(this.model), fd = this.data.flame;
    const gone = this.$('baseline-gone');
    this.$('baseline-flame').hidden = !fd || !ext;
    if (!fd || !ext) {
      this.tree = null;
      gone.textContent = `No differential flame graph: ${this.data.flame_note || 'no flame graph in this report'}.`;
      return;
    }
    this.tree = ST.flame.fromExtension(ext);
    this.root = 0;
    this.colourScale();
    const f = ST.fmt, baseS = this.data.diff.base.seconds || 1;
    gone.innerHTML = fd.gone_stacks === 0 ? 'Every stack of BASE is in NEW.' :
      `<div class="section-title">Stacks only in BASE: ${f.count(fd.gone_stacks)}, ${f.ns(fd.gone_total_ns / baseS)}/s</div>` +
      fd.gone.slice(0, 12).map((s) => `<div class="baseline-gone-row"><span class="num">${f.ns(s.total_ns / baseS)}/s</span> <span class="num">${f.count(s.calls)} calls</span> ${f.html(s.stack.map((n) => f.shortName(n)).join(' › '))}</div>`).join('');
    this.drawFlame();
  }

  // The colour scale: the largest change of any frame under the zoom root.
  colourScale() {
    if (!this.tree) return;
    const inclusive = this.$('baseline-measure').value === 'inclusive';
    this.rates = ST.baseline.rates(this.tree, this.data.flame, this.data.diff, inclusive);
    let max = 0;
    for (let i = 1; i < this.tree.parent.length; ++i)
      if (this.data.flame.in_base[i]) max = Math.max(max, Math.abs(this.rates.now[i] - this.rates.base[i]));
    this.maxDelta = max;
  }

  fill(rect) {
    if (rect.node < 0) return '#ccc';
    const i = rect.node;
    return ST.baseline.colour(this.rates.now[i] - this.rates.base[i], this.maxDelta, !this.data.flame.in_base[i]);
  }

  drawFlame() {
    if (!this.tree) return;
    const t = this.tree;
    const ancestors = [];
    for (let a = t.parent[this.root]; a > 0; a = t.parent[a]) ancestors.unshift(a);
    this.flame.draw(t, this.root, ancestors, { hoverFn: this.hoverFn ?? null, match: null, weights: new Map(), rootWeight: 1 });
    const crumbs = this.$('baseline-crumbs');
    const path = [0, ...ancestors, ...(this.root ? [this.root] : [])];
    crumbs.innerHTML = path.map((n) => `<button type="button" data-node="${n}">${ST.fmt.html(ST.fmt.shortName(n === 0 ? 'all' : this.name(t.fn[n])))}</button>`).join(' › ');
    crumbs.querySelectorAll('button').forEach((b) => b.addEventListener('click', () => { this.root = Number(b.dataset.node); this.drawFlame(); }));
  }

  // ST.FlameCanvas calls these.
  hover(rect, event) {
    const fn = rect && rect.fn >= 0 ? rect.fn : null;
    if (fn !== (this.hoverFn ?? null)) { this.hoverFn = fn; this.drawFlame(); }
    if (!rect || rect.node < 0) { this.app.tooltip.hide(); return; }
    const i = rect.node, f = ST.fmt, fd = this.data.flame, d = this.data.diff;
    const line = (label, now, base) => `${label}: ${f.ns(now)}/s (BASE ${f.ns(base)}/s, ${now >= base ? '+' : '−'}${f.ns(Math.abs(now - base))}/s)`;
    const newS = d.new.seconds || 1, baseS = d.base.seconds || 1;
    this.app.tooltip.show(event, `<b>${f.html(this.name(rect.fn))}</b><br>` +
      (fd.in_base[i] ? '' : '<span style="color:#f28b82">a stack BASE does not have</span><br>') +
      `${line('inclusive', this.tree.weight[i] / newS, fd.base_total_ns[i] / baseS)}<br>` +
      `${line('exclusive', this.tree.self[i] / newS, fd.base_self_ns[i] / baseS)}<br>` +
      `<span class="t">calls ${f.count(this.tree.calls[i])} (BASE ${f.count(fd.base_calls[i])})</span>`);
  }

  click(rect) {
    if (rect.node < 0) return;
    this.root = rect.node;
    this.drawFlame();
  }
};

ST.views.register({
  id: 'baselineView',
  order: 30,
  mount: (app) => new ST.BaselineView(app),
  update: (view, model) => view.setModel(model),
});
