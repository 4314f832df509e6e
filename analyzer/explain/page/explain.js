// The Explain view (`shapetrace report --explain-function F --explain-input KEY`, docs/explain.md):
// why some calls of F are slow. The scatter plot of the calls' time against their input, coloured
// by cluster, with each cluster's fitted line; and the decision tree that separates the clusters,
// whose predicates name functions: a click on one opens its callers and callees (the Callers tab).
'use strict';

ST.explain = {
  colours: ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'],
  colour(cluster) { return ST.explain.colours[cluster % ST.explain.colours.length]; },
  // The extension's result, null when it did not run.
  result(model) { return model.data.model.extensions?.explain ?? null; },
};

ST.ExplainView = class {
  constructor(app) {
    this.app = app;
    this.section = document.createElement('section');
    this.section.className = 'panel explain-panel';
    this.section.id = 'explain-panel';
    this.section.innerHTML = `
      <div class="panel-title">Explain <span class="sub" id="explain-subject"></span></div>
      <div class="explain-error" id="explain-error"></div>
      <div class="explain-body" id="explain-body">
        <div class="explain-plot"><label class="explain-scale"><input type="checkbox" id="explain-log"> logarithmic time</label><canvas id="explain-scatter"></canvas><div class="explain-legend" id="explain-legend"></div></div>
        <div class="explain-tree"><div class="section-title" id="explain-tree-title"></div><ul id="explain-tree"></ul></div>
      </div>`;
    const anchor = document.getElementById('instance-panel');
    anchor.parentNode.insertBefore(this.section, anchor);
    this.$ = (id) => this.section.querySelector(`#${id}`);
    this.$('explain-log').addEventListener('change', () => this.draw());
    this.$('explain-tree').addEventListener('click', (e) => {
      const link = e.target.closest('[data-function]');
      if (link) this.app.showCallers(Number(link.dataset.function));
    });
    this.setModel(app.model);
  }

  setModel(model) {
    this.model = model;
    this.data = ST.explain.result(model);
    this.section.hidden = !this.data;
    if (!this.data) return;
    const error = this.data.error ?? null;
    this.$('explain-error').textContent = error ?? '';
    this.$('explain-error').hidden = error === null;
    this.$('explain-body').hidden = error !== null;
    if (error !== null) {
      this.$('explain-subject').textContent = '';
      return;
    }
    const d = this.data, f = ST.fmt;
    this.$('explain-subject').textContent =
      `${f.count(d.points)} ${d.subject}${d.seen > d.points + d.left_out ? ` (a sample of ${f.count(d.seen)})` : ''} · time against ${d.input} · ${d.k} line${d.k === 1 ? '' : 's'} (${d.method})`;
    this.$('explain-legend').innerHTML = d.clusters.map((c) =>
      `<span class="explain-key"><i style="background:${ST.explain.colour(c.cluster)}"></i>cluster ${c.cluster + 1}: ${f.count(c.points)} · ${f.html(this.lineText(c))}</span>`).join('');
    this.$('explain-tree-title').textContent =
      `What separates them: accuracy ${(100 * d.tree.accuracy).toFixed(1)}% (${d.tree.folds}-fold cross-validation), height ${d.tree.height}`;
    this.$('explain-tree').innerHTML = this.nodeHtml(0);
    // Times that span more than a hundredfold (a few calls waiting milliseconds among microsecond
    // ones) are drawn on a logarithmic axis, else every fast call lies on the floor.
    const ys = d.data.map((p) => p.y).filter((y) => y > 0).sort((a, b) => a - b);
    this.$('explain-log').checked = ys.length > 0 && ys[ys.length - 1] > 100 * ys[Math.floor(ys.length / 2)];
    this.draw();
  }

  lineText(c) {
    const slope = Math.abs(c.slope_ns) >= 1000 ? `${ST.fmt.sig(c.slope_ns / 1000)} µs` : `${ST.fmt.sig(c.slope_ns)} ns`;
    return `${slope} × ${this.data.input} + ${ST.fmt.ns(c.intercept_ns)}`;
  }

  // The tree as nested lists: a predicate, then its yes and no branches; leaves name their cluster.
  nodeHtml(index) {
    const node = this.data.tree.nodes[index], f = ST.fmt;
    if (node.predicate === undefined) {
      return `<li class="explain-leaf"><i style="background:${ST.explain.colour(node.cluster)}"></i>cluster ${node.cluster + 1} <span class="explain-count">(${f.count(node.counts[node.cluster])} of ${f.count(node.points)})</span></li>`;
    }
    const ref = node.ref ?? {};
    const fn = Number.isInteger(ref.function) ? ref.function : null;
    const text = f.html(node.predicate);
    const predicate = fn === null ? text : `<a href="#" class="explain-link" data-function="${fn}" title="${f.html(this.model.functionName(fn))}: its callers and callees">${text}</a>`;
    return `<li class="explain-node"><span class="explain-predicate">if ${predicate}</span>
      <ul><li class="explain-branch">yes<ul>${this.nodeHtml(node.yes)}</ul></li><li class="explain-branch">no<ul>${this.nodeHtml(node.no)}</ul></li></ul></li>`;
  }

  draw() {
    const c = this.$('explain-scatter'), d = this.data;
    const width = Math.max(320, Math.min(900, (c.parentElement.clientWidth || 700))), height = 320;
    const left = 70, right = 12, top = 10, bottom = 34;
    const dpr = window.devicePixelRatio || 1;
    c.style.width = `${width}px`; c.style.height = `${height}px`;
    c.width = Math.round(width * dpr); c.height = Math.round(height * dpr);
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    const xs = d.data.map((p) => p.x), ys = d.data.map((p) => p.y);
    const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1, y1 = Math.max(...ys) || 1;
    const log = this.$('explain-log').checked;
    const positive = ys.filter((y) => y > 0);
    const y0 = log ? Math.max(1, Math.min(...positive)) : 0;
    const fraction = (y) => (log ? (Math.log(Math.max(y, y0)) - Math.log(y0)) / ((Math.log(y1) - Math.log(y0)) || 1)
      : Math.max(0, y / y1));
    const sx = (x) => left + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (width - left - right);
    const sy = (y) => height - bottom - fraction(y) * (height - top - bottom);
    g.strokeStyle = '#c9ced6';
    g.beginPath(); g.moveTo(left, top); g.lineTo(left, height - bottom); g.lineTo(width - right, height - bottom); g.stroke();
    g.fillStyle = '#636c76'; g.font = '11px sans-serif';
    g.fillText(ST.fmt.ns(y1), 4, top + 8);
    g.fillText(log ? ST.fmt.ns(y0) : '0', 4, height - bottom);
    g.fillText(String(x0), left, height - bottom + 14);
    g.fillText(String(x1), width - right - 30, height - bottom + 14);
    g.fillText(d.input, (left + width) / 2, height - 6);
    for (const p of d.data) {
      g.fillStyle = ST.explain.colour(p.cluster);
      g.globalAlpha = 0.6;
      g.fillRect(sx(p.x) - 1.5, sy(p.y) - 1.5, 3, 3);
    }
    g.globalAlpha = 1;
    g.lineWidth = 2;
    g.save();
    g.beginPath(); g.rect(left, top, width - left - right, height - top - bottom); g.clip();
    // A line is a curve on a logarithmic axis: drawn in 64 segments.
    for (const line of d.clusters) {
      g.strokeStyle = ST.explain.colour(line.cluster);
      g.beginPath();
      for (let i = 0; i <= 64; ++i) {
        const x = x0 + ((x1 - x0) * i) / 64;
        const y = sy(line.slope_ns * x + line.intercept_ns);
        if (i === 0) g.moveTo(sx(x), y); else g.lineTo(sx(x), y);
      }
      g.stroke();
    }
    g.restore();
    c.dataset.points = String(d.data.length);
    c.dataset.scale = log ? 'log' : 'linear';
    c.dataset.lines = String(d.clusters.length);
  }
};

ST.views.register({
  id: 'explainView',
  order: 35,
  mount: (app) => new ST.ExplainView(app),
  update: (view, model) => view.setModel(model),
});
