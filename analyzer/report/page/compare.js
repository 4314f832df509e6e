// The comparison view (the ThreadViewer proposal, 001): "why was this call slow". An outlier's calls
// aligned with a typical call of its function by Needleman-Wunsch, as biologists align two DNA
// strands: two rows of boxes (the outlier above, the typical call below), one per aligned run of
// calls, a gap where one side has nothing, and between them the conservation line, thick where the
// two match (as the UCSC Genome Browser draws it); then where they diverge, and the aligned rows.
// The alignment is computed by `shapetrace report` (summaries/comparison.h) and embedded; the page
// only draws it. Live pages have no exact calls, so no comparisons.
'use strict';

ST.CompareView = class {
  static kRowH = 22;

  constructor(app) {
    this.app = app;
    this.section = document.createElement('section');
    this.section.className = 'panel compare-panel';
    this.section.id = 'compare-panel';
    this.section.innerHTML = `
      <div class="panel-title">Why was this call slow <span class="compare-hint">an outlier (above) aligned with a typical call of its function (below) · thick line: the calls match · hover: the calls</span></div>
      <div class="toolbar"><select id="compare-select" title="Outlier"></select></div>
      <div class="compare-head" id="compare-head"></div>
      <div class="compare-canvas-wrap"><canvas id="compare-canvas"></canvas></div>
      <ul class="compare-divergences" id="compare-divergences"></ul>
      <div class="compare-rows" id="compare-rows"></div>
      <div class="placeholder" id="compare-placeholder"></div>`;
    const tables = document.querySelector('section.tables');
    tables.parentNode.insertBefore(this.section, tables);
    const $ = (id) => this.section.querySelector(`#${id}`);
    this.$ = $;
    this.canvas = $('compare-canvas');
    $('compare-select').addEventListener('change', () => this.show(Number($('compare-select').value)));
    this.canvas.addEventListener('mousemove', (e) => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => this.app.tooltip.hide());
    window.addEventListener('resize', () => this.draw());
    this.setModel(app.model);
  }

  setModel(model) {
    this.model = model;
    this.comparisons = model.data.comparisons ?? [];
    const f = ST.fmt;
    const select = this.$('compare-select');
    select.innerHTML = this.comparisons.map((c, i) => {
      const o = model.instances[c.outlier];
      const thread = model.threadByKey.get(model.key(o.process, o.thread));
      return `<option value="${i}">${f.html(f.shortName(model.functionName(o.function)))} · ${f.ns(o.duration_ns)} · ${f.html(thread?.label ?? o.thread)} at ${f.ns(o.start_ns - model.t0)}</option>`;
    }).join('');
    const none = this.comparisons.length === 0;
    select.hidden = none;
    this.$('compare-placeholder').hidden = !none;
    this.$('compare-placeholder').textContent = this.app.data.live
      ? 'Comparisons need the exact calls of a recording: shapetrace report, or shapetrace compare.'
      : 'No outlier could be compared with a typical call of its function.';
    if (!none) this.show(Math.min(this.index ?? 0, this.comparisons.length - 1));
  }

  // The comparison of an embedded outlier instance, if there is one.
  showOutlier(instance) {
    const i = this.comparisons.findIndex((c) => c.outlier === instance.id);
    if (i < 0) return false;
    this.show(i);
    return true;
  }

  show(index) {
    this.index = index;
    const c = this.comparisons[index];
    const m = this.model, f = ST.fmt;
    this.$('compare-select').value = String(index);
    this.section.dataset.comparison = String(index);
    const a = m.instances[c.outlier], b = m.instances[c.typical];
    const ratio = b.duration_ns ? ` (${(a.duration_ns / b.duration_ns).toFixed(1)}×)` : '';
    // The two calls' recorded arguments and return values: often the answer (a larger input).
    const values = (inst, side) => {
      const text = f.callValues(inst.calls[0]);
      return text ? ` <span class="call-values" data-call-values="${side}">${f.html(text)}</span>` : '';
    };
    this.$('compare-head').innerHTML =
      `<div><b>outlier</b>${values(a, 'outlier')} ${f.ns(a.duration_ns)}${ratio}, ${f.count(c.a.calls)} calls · <b>typical</b>${values(b, 'typical')} (shape #${b.shape}) ${f.ns(b.duration_ns)}, ${f.count(c.b.calls)} calls</div>` +
      (c.typical_reason ? `<div class="t" data-typical-reason>compared with ${f.html(c.typical_reason)}</div>` : '') +
      `<div class="t">score ${c.score} (match ${c.scoring.match}, mismatch ${c.scoring.mismatch}, gap ${c.scoring.gap}) · ${f.count(c.columns)} columns: ${f.count(c.matches)} match, ${f.count(c.mismatches)} differ, ${f.count(c.only_a)} only in the outlier, ${f.count(c.only_b)} only in the typical call · conservation ${(c.conservation * 100).toFixed(1)}%${c.truncated ? ' · over the embedded calls only' : ''}</div>`;
    this.$('compare-divergences').innerHTML = c.divergences.length
      ? c.divergences.map((d) => `<li>${f.html(d.replace(/\bA\b/g, 'the outlier').replace(/\bB\b/g, 'the typical call'))}</li>`).join('')
      : '<li>The same calls in the same order: the outlier did the same work, slower.</li>';
    this.rowsTable(c);
    this.draw();
  }

  runText(side, run, count) {
    const [code, , depth] = side.runs[run];
    const name = this.model.functionName(code >= 0 ? code : -1 - code);
    return { depth, text: `${count > 1 ? `${ST.fmt.count(count)} × ` : ''}${ST.fmt.shortName(name)}`, name, fn: code >= 0 ? code : -1 - code };
  }

  rowsTable(c) {
    const f = ST.fmt;
    const mark = { match: '=', mismatch: '≠', only_a: '◀', only_b: '▶' };
    const cell = (side, run, count) => {
      if (run === null) return '<td class="gap">·</td>';
      const r = this.runText(side, run, count);
      return `<td style="padding-left:${6 + 12 * Math.min(r.depth, 20)}px" title="${f.html(r.name)}">${f.html(r.text)}</td>`;
    };
    this.$('compare-rows').innerHTML = `<table><thead><tr><th></th><th>outlier</th><th>typical call</th></tr></thead><tbody>` +
      c.rows.map(([kind, count, ar, br]) => `<tr class="${kind}" data-kind="${kind}"><td class="mark">${mark[kind]}</td>${cell(c.a, ar, count)}${cell(c.b, br, count)}</tr>`).join('') +
      `</tbody></table>${c.more_rows ? `<div class="t">${f.count(c.more_rows)} more rows (shapetrace compare gives them all)</div>` : ''}`;
  }

  // Two rows of boxes, one per aligned row, widths growing with the log of their columns.
  draw() {
    const c = this.comparisons?.[this.index];
    if (!c) return;
    const H = ST.CompareView.kRowH;
    const widths = c.rows.map(([, count]) => 10 + 8 * Math.log2(count + 1));
    const total = widths.reduce((s, w) => s + w, 0);
    const available = this.canvas.parentElement.clientWidth || 800;
    const scale = total > available ? 1 : available / total;
    const width = Math.max(available, total);
    const height = 3 * H + 16;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(height * dpr);
    const g = this.canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    g.font = `11px ${getComputedStyle(document.body).fontFamily}`;
    const boxes = [];
    let x = 0;
    c.rows.forEach(([kind, count, ar, br], i) => {
      const w = widths[i] * scale;
      const draw = (side, run, y) => {
        if (run === null) {
          g.strokeStyle = '#bbb';
          g.setLineDash([3, 3]);
          g.beginPath();
          g.moveTo(x + 1, y + H / 2);
          g.lineTo(x + w - 1, y + H / 2);
          g.stroke();
          g.setLineDash([]);
          return;
        }
        const r = this.runText(side, run, count);
        g.fillStyle = this.model.functions[r.fn]?.color ?? '#999';
        g.fillRect(x + 0.5, y + 1, Math.max(1, w - 1), H - 2);
        if (kind === 'mismatch') {
          g.strokeStyle = ST.color.outlier;
          g.strokeRect(x + 1, y + 1.5, Math.max(1, w - 2), H - 3);
        }
        if (w > 30) {
          g.save();
          g.beginPath();
          g.rect(x, y, w - 2, H);
          g.clip();
          g.fillStyle = '#fff';
          g.fillText(r.text, x + 3, y + 15);
          g.restore();
        }
        boxes.push({ x, w, y, kind, count, text: r.name, depth: r.depth, side: side === c.a ? 'outlier' : 'typical call' });
      };
      draw(c.a, ar, 0);
      draw(c.b, br, 2 * H);
      // Conservation: a thick line where the two match, a thin one elsewhere.
      g.fillStyle = kind === 'match' ? '#3c4043' : '#c8ccd0';
      const t = kind === 'match' ? 8 : 2;
      g.fillRect(x, H + H / 2 - t / 2, w, t);
      x += w;
    });
    this.boxes = boxes;
    this.canvas.dataset.columns = String(c.rows.length);
  }

  hover(e) {
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    const box = this.boxes?.find((b) => x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + ST.CompareView.kRowH);
    if (!box) { this.app.tooltip.hide(); return; }
    const f = ST.fmt;
    this.app.tooltip.show(e, `<div>${f.html(box.text)}</div><div class="t">${box.side}: ${box.count > 1 ? `${f.count(box.count)} calls` : 'one call'} · depth ${box.depth} · ${{ match: 'matched', mismatch: 'a different call on the other side', only_a: 'only in the outlier', only_b: 'only in the typical call' }[box.kind]}</div>`);
  }
};

ST.views.register({
  id: 'compareView',
  order: 33,
  mount: (app) => new ST.CompareView(app),
  update: (view, model) => view.setModel(model),
});
