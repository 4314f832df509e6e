// Sortable tables under the timeline, one tab each: clusters, functions, outliers and threads here,
// and any tab another file registers (ST.tabs). Clicking a column header sorts by it (again:
// reverses); rows report hover and click to the tab, which tells the page.
'use strict';

ST.Tables = class {
  constructor(tabs, wrap, app) {
    this.tabs = tabs;
    this.wrap = wrap;
    this.app = app;
    this.current = 'clusters';
    this.sort = Object.fromEntries(ST.tabs.list.map((t) => [t.id, t.sort]));
  }

  setModel(model) {
    this.model = model;
    this.render();
  }

  definitions() {
    const defs = {};
    for (const tab of ST.tabs.list)
      if (!tab.available || tab.available(this.model)) defs[tab.id] = tab.define(this.model, this.app);
    for (const extra of ST.tabs.columns)
      if (defs[extra.tab] && (!extra.available || extra.available(this.model)))
        defs[extra.tab].columns.push(extra.column(this.model));
    return defs;
  }

  render() {
    const defs = this.definitions();
    this.tabs.innerHTML = Object.entries(defs).map(([id, d]) =>
      `<button type="button" data-tab="${id}" class="${id === this.current ? 'active' : ''}">${ST.fmt.html(d.label)}</button>`).join('');
    this.tabs.querySelectorAll('button').forEach((b) => b.addEventListener('click', () => {
      const tab = ST.tabs.list.find((t) => t.id === b.dataset.tab);
      if (tab.select) tab.select(this.app);
      this.show(b.dataset.tab);
    }));
    if (!defs[this.current]) this.current = Object.keys(defs)[0];
    const def = defs[this.current];
    const [sortId, ascending] = this.sort[this.current];
    const column = def.columns.find((c) => c.id === sortId) || def.columns[0];
    const rows = [...def.rows].sort((a, b) => {
      const x = column.value(a), y = column.value(b);
      const order = typeof x === 'string' ? String(x).localeCompare(String(y)) : x - y;
      return ascending ? order : -order;
    }).slice(0, 2000);
    const head = def.columns.map((c) =>
      `<th data-col="${c.id}" class="${c.num ? 'num' : ''}${c.id === column.id ? ` sorted${ascending ? ' asc' : ''}` : ''}"${c.title ? ` title="${ST.fmt.html(c.title)}"` : ''}>${c.label}</th>`).join('');
    const body = rows.map((r) => `<tr data-key="${ST.fmt.html(def.key(r))}">` + def.columns.map((c) => {
      const v = c.value(r);
      const content = c.cell ? c.cell(r) : ST.fmt.html(c.text ? c.text(v, r) : v);
      const cls = [c.num ? 'num' : '', c.cls || '', c.bad && c.bad(v) ? 'bad' : ''].join(' ').trim();
      return `<td class="${cls}">${content}</td>`;
    }).join('') + '</tr>').join('');
    this.wrap.innerHTML = `<table data-table="${this.current}"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
    this.wrap.querySelectorAll('th').forEach((th) => th.addEventListener('click', () => {
      const [id, asc] = this.sort[this.current];
      this.sort[this.current] = [th.dataset.col, id === th.dataset.col ? !asc : false];
      this.render();
    }));
    const byKey = new Map(rows.map((r) => [String(def.key(r)), r]));
    this.wrap.querySelectorAll('tbody tr').forEach((tr) => {
      const row = byKey.get(tr.dataset.key);
      tr.addEventListener('mouseenter', () => this.rowEvent('hover', row));
      tr.addEventListener('click', () => this.rowEvent('click', row));
    });
  }

  show(id) {
    this.current = id;
    this.render();
  }

  rowEvent(kind, row) {
    const tab = ST.tabs.list.find((t) => t.id === this.current);
    if (tab.row) tab.row(this.app, kind, row);
  }
};

ST.views.register({
  id: 'tables',
  order: 40,
  mount: (app) => new ST.Tables(document.getElementById('tabs'), document.getElementById('table-wrap'), app),
});

ST.tabs.register({
  id: 'clusters',
  order: 10,
  sort: ['total', false],
  define: (m) => {
    const f = ST.fmt;
    const name = (id) => m.functionName(id);
    return {
      label: `Clusters (${m.clusters.length})`,
      rows: m.clusters,
      key: (c) => c.id,
      columns: [
        { id: 'id', label: '#', num: true, value: (c) => c.id },
        { id: 'function', label: 'Function', value: (c) => name(c.function), cell: (c) => `<span class="swatch" style="background:${c.color}"></span> ${f.html(f.shortName(name(c.function)))}`, cls: 'name' },
        { id: 'shapes', label: 'Shapes', num: true, value: (c) => c.shapes.length },
        { id: 'calls', label: 'Calls', num: true, value: (c) => c.stats.count, text: (v) => f.count(v) },
        { id: 'total', label: 'Time Σ calls', num: true, value: (c) => c.totalNs, text: f.ns, title: ST.labels.clusterTime },
        { id: 'threads', label: 'Threads', num: true, value: (c) => c.threads, text: (v) => f.count(v), title: 'Threads with calls of this cluster' },
        { id: 'mean', label: 'Mean', num: true, value: (c) => c.stats.mean_ns, text: (v, c) => (c.stats.count ? f.ns(v) : '–') },
        { id: 'p50', label: 'p50', num: true, value: (c) => c.stats.p50_ns, text: f.ns },
        { id: 'p99', label: 'p99', num: true, value: (c) => c.stats.p99_ns, text: f.ns },
        { id: 'max', label: 'Max', num: true, value: (c) => c.stats.max_ns, text: f.ns },
        { id: 'outliers', label: 'Outliers', num: true, value: (c) => c.outliers, bad: (v) => v > 0 },
        { id: 'distance', label: 'Max distance', num: true, value: (c) => c.max_distance, text: (v) => v.toFixed(2) },
      ],
    };
  },
  row: (app, kind, c) => {
    if (kind === 'hover') app.hoverCluster(c.id); else app.openCluster(c.id);
  },
});

ST.tabs.register({
  id: 'functions',
  order: 20,
  sort: ['total', false],
  define: (m) => {
    const f = ST.fmt;
    return {
      label: `Functions (${m.functions.length})`,
      rows: m.functions,
      key: (fn) => fn.id,
      columns: [
        { id: 'function', label: 'Function', value: (fn) => fn.name, cell: (fn) => `<span class="swatch" style="background:${fn.color}"></span> ${f.html(f.shortName(fn.name))}`, cls: 'name' },
        { id: 'calls', label: 'Calls', num: true, value: (fn) => fn.calls, text: (v) => f.count(v) },
        { id: 'total', label: 'Time Σ threads', num: true, value: (fn) => fn.totalNs, text: f.ns, title: ST.labels.functionTime },
        { id: 'busiest', label: 'Busiest thread', num: true, value: (fn) => fn.busiest_thread_ns ?? 0, text: f.ns, title: ST.labels.busiestThread },
        { id: 'threads', label: 'Threads', num: true, value: (fn) => fn.threads ?? 0, text: (v) => f.count(v), title: 'Threads that called it' },
        { id: 'mean', label: 'Mean', num: true, value: (fn) => fn.stats.mean_ns, text: (v, fn) => (fn.stats.count ? f.ns(v) : '–') },
        { id: 'p99', label: 'p99', num: true, value: (fn) => fn.stats.p99_ns, text: f.ns },
        { id: 'max', label: 'Max', num: true, value: (fn) => fn.stats.max_ns, text: f.ns },
        { id: 'outliers', label: 'Outliers', num: true, value: (fn) => fn.outliers, bad: (v) => v > 0 },
        { id: 'file', label: 'Source', value: (fn) => fn.file ? `${fn.file}:${fn.line}` : '' },
      ],
    };
  },
  // A function clicked: who calls it and whom it calls (when the callers extension ran).
  row: (app, kind, fn) => {
    if (kind === 'click' && ST.tabs.list.some((t) => t.id === 'callers' && t.available(app.model)))
      app.showCallers(fn.id);
  },
});

ST.tabs.register({
  id: 'outliers',
  order: 30,
  sort: ['rank', true],
  define: (m) => {
    const f = ST.fmt;
    const name = (id) => m.functionName(id);
    return {
      label: `Outliers (${m.outliers.length})`,
      rows: m.outliers,
      key: (o) => o.index,
      columns: [
        { id: 'rank', label: '#', num: true, value: (o) => o.index + 1, title: 'The order the analysis keeps them in: the most time lost first, those at exit last' },
        { id: 'function', label: 'Function', value: (o) => name(o.function), cell: (o) => f.html(f.shortName(name(o.function))), cls: 'name' },
        { id: 'thread', label: 'Thread', value: (o) => m.threadByKey.get(m.key(o.process, o.thread))?.label ?? o.thread },
        { id: 'start', label: 'At', num: true, value: (o) => o.start_ns - m.t0, text: f.ns },
        { id: 'duration', label: 'Duration', num: true, value: (o) => o.duration_ns, text: f.ns },
        { id: 'fmean', label: 'Function mean', num: true, value: (o) => o.function_mean_ns, text: f.ns },
        { id: 'smean', label: 'Shape mean', num: true, value: (o) => o.shape_mean_ns, text: f.ns },
        { id: 'excess', label: 'Time lost', num: true, value: (o) => o.excess_ns ?? 0, text: f.ns, title: 'Its duration less the mean it was judged against (its shape\'s when it did the same work slower): the order in which outliers are kept' },
        { id: 'score', label: 'σ above', num: true, value: (o) => o.score, text: (v) => v.toFixed(1) },
        { id: 'why', label: 'Why', value: (o) => o.shape_outlier ? 'same work, slower' : 'did more work (another shape)' },
        { id: 'when', label: 'When', value: (o) => o.at_exit ? 'at exit' : 'in the run', title: 'At exit: it started after its thread\'s call of main returned (an exit-time destructor or atexit handler), listed after the outliers of the run itself' },
        { id: 'cluster', label: 'Cluster', num: true, value: (o) => o.cluster ?? -1, text: (v) => v < 0 ? '–' : `#${v}` },
      ],
    };
  },
  row: (app, kind, o) => {
    if (o.cluster !== null) app.hoverCluster(o.cluster);
    if (kind === 'click') app.openOutlier(o);
  },
});

ST.tabs.register({
  id: 'threads',
  order: 40,
  sort: ['calls', false],
  define: (m) => {
    const f = ST.fmt;
    return {
      label: `Threads (${m.threads.length})`,
      rows: m.threads,
      key: (t) => t.key,
      columns: [
        { id: 'thread', label: 'Thread', value: (t) => t.label },
        { id: 'id', label: 'Id', value: (t) => t.key },
        { id: 'events', label: 'Events', num: true, value: (t) => t.events, text: (v) => f.count(v) },
        { id: 'calls', label: 'Calls', num: true, value: (t) => t.calls, text: (v) => f.count(v) },
        { id: 'ribbons', label: 'Ribbons', num: true, value: (t) => t.ribbons.length },
        { id: 'outliers', label: 'Outliers', num: true, value: (t) => t.outliers.length, bad: (v) => v > 0 },
        // Time the tracer made the thread wait for ring space (lossless recording): taken out of
        // the calls' durations, shown so that nobody mistakes it for the program's.
        { id: 'tracer_waits', label: 'Tracer waits', num: true, value: (t) => t.diagnostics.tracer_wait_ns || 0,
          text: (v, t) => (v ? `${f.ns(v)} (${f.count(t.diagnostics.tracer_waits)})` : ''), bad: (v) => v > 0 },
        { id: 'diagnostics', label: 'Diagnostics', value: (t) => Object.entries(t.diagnostics).map(([k, v]) => `${k}: ${v}`).join(', ') },
      ],
    };
  },
});
