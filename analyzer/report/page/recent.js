// The live page's recent windows (analyzer/report/recent.h): a table tab per window (the last 1,
// 5 and 15 minutes) listing the clusters with calls in it, with the window's exact calls, rate,
// mean and p99 beside the whole run's, and which of their shapes are new: first seen in the window,
// or since this page was opened. A shape that appeared in the last minute stands out at the top.
'use strict';

ST.recent = {
  // Seconds since the live session started when this page first saw data: what "since opened"
  // counts from.
  openedAt: null,
  data(model) {
    const r = model.data.recent ?? null;
    if (r && ST.recent.openedAt === null) ST.recent.openedAt = r.now_s;
    return r;
  },
  // Per cluster: its shapes first seen in the window, and since the page was opened.
  newShapes(model, recent, window) {
    const inWindow = new Set(window.new_shapes), out = new Map();
    for (const c of model.clusters) {
      const fresh = c.shapes.filter((s) => inWindow.has(s)).length;
      const sinceOpened = c.shapes.filter((s) => recent.first_seen_s[s] > ST.recent.openedAt).length;
      out.set(c.id, { fresh, sinceOpened });
    }
    return out;
  },
  label(seconds) { return seconds % 60 === 0 ? `${seconds / 60} min` : `${seconds} s`; },
};

[0, 1, 2].forEach((index) => ST.tabs.register({
  id: `recent${index}`,
  order: 5 + index,
  sort: ['fresh', false],
  available: (m) => (ST.recent.data(m)?.windows.length ?? 0) > index,
  define: (m) => {
    const f = ST.fmt, recent = ST.recent.data(m), w = recent.windows[index];
    const fresh = ST.recent.newShapes(m, recent, w);
    const seconds = Math.max(1e-9, w.covered_s);
    const rows = w.clusters.map((x) => {
      const c = m.clusters[x.cluster];
      const n = fresh.get(x.cluster) ?? { fresh: 0, sinceOpened: 0 };
      return { key: x.cluster, cluster: x.cluster, name: `${f.shortName(m.functionName(c.function))} #${c.id}`,
        fresh: n.fresh, sinceOpened: n.sinceOpened, calls: x.calls, rate: x.calls / seconds, mean: x.mean_ns,
        p99: x.p99_ns, runMean: c.stats.mean_ns, runP99: c.stats.p99_ns,
        change: c.stats.mean_ns ? x.mean_ns / c.stats.mean_ns - 1 : 0 };
    });
    const covered = w.covered_s < w.seconds ? ` (${f.sig(w.covered_s)} s so far)` : '';
    return {
      label: `Last ${ST.recent.label(w.seconds)}`,
      rows,
      key: (r) => r.key,
      columns: [
        { id: 'name', label: `Cluster, last ${ST.recent.label(w.seconds)}${covered}`, value: (r) => r.name, cls: 'name' },
        { id: 'fresh', label: 'New shapes', num: true, value: (r) => r.fresh * 1e6 + r.sinceOpened,
          cell: (r) => (r.fresh ? `<span class="recent-new">${r.fresh} new</span>` : '') +
            (r.sinceOpened ? ` <span class="recent-opened">${r.sinceOpened} since opened</span>` : '') },
        { id: 'calls', label: 'Calls', num: true, value: (r) => r.calls, text: (v) => f.count(v) },
        { id: 'rate', label: 'Calls/s', num: true, value: (r) => r.rate, text: (v) => f.count(Math.round(v)) },
        { id: 'mean', label: 'Mean', num: true, value: (r) => r.mean, text: f.ns },
        { id: 'p99', label: 'p99', num: true, value: (r) => r.p99, text: f.ns },
        { id: 'runMean', label: 'Mean (run)', num: true, value: (r) => r.runMean, text: f.ns },
        { id: 'runP99', label: 'p99 (run)', num: true, value: (r) => r.runP99, text: f.ns },
        { id: 'change', label: 'Mean vs run', num: true, value: (r) => r.change,
          text: (v) => `${v >= 0 ? '+' : ''}${(v * 100).toFixed(0)}%`, bad: (v) => v > 0.25 },
      ],
    };
  },
  row: (app, kind, r) => {
    app.hoverCluster(r.cluster);
    if (kind === 'click') app.openCluster(r.cluster);
  },
}));
