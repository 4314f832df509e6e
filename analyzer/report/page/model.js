// The report data (report_data.cpp) turned into what the views look things up by: functions,
// shapes and clusters by id, per-thread rows with their ribbons, outliers and embedded instances
// per thread and per cluster, the run's time range and the colours.
'use strict';

ST.Model = class {
  constructor(data) {
    this.data = data;
    const m = data.model;
    this.summary = m.summary;
    this.binNs = m.timeline_bin_ns;
    this.functions = m.functions;
    ST.fmt.registerNames(this.functions.map((f) => f.name));
    this.shapes = new Map(m.shapes.map((s) => [s.id, s]));
    this.clusters = m.clusters;
    this.detail = data.detail;

    // Colour of a cluster: its function's hue, varied by its rank among that function's clusters.
    const rank = new Map();
    for (const c of this.clusters) {
      const n = rank.get(c.function) || 0;
      rank.set(c.function, n + 1);
      c.color = ST.color.forFunction(c.function, n);
      c.totalNs = Number(c.stats.sum_ns);
      c.outliers = c.shapes.reduce((sum, id) => sum + (this.shapes.get(id)?.outliers || 0), 0);
      c.threads = 0;
    }
    for (const t of m.threads) {
      const seen = new Set((t.shapes || []).map((id) => this.shapes.get(id)?.cluster).filter((c) => c !== undefined && c !== null));
      for (const id of seen) if (this.clusters[id]) this.clusters[id].threads += 1;
    }
    for (const f of this.functions) {
      f.color = ST.color.forFunction(f.id);
      // A recursive chain counted once, summed over threads (older models: every level summed).
      f.totalNs = Number(f.inclusive_ns ?? f.stats.sum_ns);
    }

    this.threads = m.threads.map((t) => this.buildThread(t, m.threads.length));
    this.threadByKey = new Map(this.threads.map((t) => [t.key, t]));

    this.outliers = m.outliers.map((o, index) => ({
      ...o, index, cluster: this.clusterOfShape(o.shape),
    }));
    this.instances = data.instances.map((inst) => ({ ...inst, endNs: inst.start_ns + inst.duration_ns }));
    for (const t of this.threads) {
      t.outliers = this.outliers.filter((o) => this.key(o.process, o.thread) === t.key);
      t.instances = this.instances.filter((i) => this.key(i.process, i.thread) === t.key)
        .sort((a, b) => a.start_ns - b.start_ns);
    }
    this.timeRange();
  }

  key(process, thread) { return `${process}:${thread}`; }
  functionName(id) { return this.functions[id]?.name ?? `fn#${id}`; }
  clusterOfShape(shapeId) {
    const s = this.shapes.get(shapeId);
    return s && s.cluster !== undefined && s.cluster !== 4294967295 ? s.cluster : null;
  }

  buildThread(t, threadCount) {
    const processes = new Set(this.data.model.threads.map((x) => x.process));
    const label = (t.name || `thread ${t.thread}`) + (processes.size > 1 ? ` (${t.process})` : '');
    const ribbons = t.timeline.map((row, index) => ({
      index,
      clusters: row.map((entry) => ({ cluster: entry.cluster, cells: entry.cells })),
    }));
    // Label a ribbon after its busiest cluster.
    for (const r of ribbons) {
      let best = null;
      for (const e of r.clusters) {
        const c = this.clusters[e.cluster];
        if (!best || c.totalNs > best.totalNs) best = c;
      }
      r.function = best ? best.function : null;
      r.label = best ? ST.fmt.shortName(this.functionName(best.function)) : '';
      r.clusterSet = new Set(r.clusters.map((e) => e.cluster));
    }
    const ribbonOfCluster = new Map();
    ribbons.forEach((r) => r.clusters.forEach((e) => ribbonOfCluster.set(e.cluster, r.index)));
    return {
      key: this.key(t.process, t.thread), process: t.process, thread: t.thread, label,
      events: t.events, calls: t.calls, ended: t.ended, diagnostics: t.diagnostics,
      ribbons, foldedRibbons: this.foldRecursion(ribbons), ribbonOfCluster, threadCount,
    };
  }

  // The ribbons with recursion merged, as flame graph tools' "merge recursion": consecutive
  // ribbons led by one recursive function are the levels of its recursion (a call's shape
  // contains the shape of the call below it, so the two cannot share a ribbon) and become one
  // row, "17 levels · _Rb_tree::_M_erase", drawing every level's clusters. `ribbons` keeps them
  // apart.
  foldRecursion(ribbons) {
    const rows = [];
    for (const r of ribbons) {
      const last = rows[rows.length - 1];
      if (last && r.function !== null && last.function === r.function && this.isRecursive(r.function)) {
        last.levels.push(r);
        continue;
      }
      rows.push({ ...r, levels: [r] });
    }
    for (const row of rows) {
      if (row.levels.length === 1) continue;
      row.clusters = row.levels.flatMap((r) => r.clusters);
      row.clusterSet = new Set(row.clusters.map((e) => e.cluster));
      row.label = `${row.levels.length} levels · ${row.label}`;
    }
    return rows;
  }

  // Whether a shape of `fn` holds a call of `fn` below its root (memoized per function).
  isRecursive(fn) {
    this.recursive ??= new Map();
    if (!this.recursive.has(fn)) {
      const seen = new Set();
      const below = (id) => {
        if (seen.has(id)) return false;
        seen.add(id);
        const s = this.shapes.get(id);
        return !!s && s.children.some((c) => this.shapes.get(c)?.function === fn || below(c));
      };
      let found = false;
      for (const s of this.shapes.values())
        if (s.function === fn && below(s.id)) { found = true; break; }
      this.recursive.set(fn, found);
    }
    return this.recursive.get(fn);
  }

  // The run's wall time: its first recorded event to its last, when the recording says; else the
  // drawn range (widened to whole timeline bins).
  wallNs() {
    const run = this.data.run || {};
    return run.first_ns && run.last_ns ? run.last_ns - run.first_ns : this.t1 - this.t0;
  }

  // The run's time range [t0, t1] in absolute nanoseconds: the occurrence cells, widened to the
  // recorded events' range when known.
  timeRange() {
    let lo = Infinity, hi = -Infinity;
    for (const t of this.threads)
      for (const r of t.ribbons)
        for (const e of r.clusters)
          if (e.cells.length) {
            lo = Math.min(lo, e.cells[0][0] * this.binNs);
            hi = Math.max(hi, (e.cells[e.cells.length - 1][0] + 1) * this.binNs);
          }
    const run = this.data.run || {};
    if (run.first_ns) lo = Math.min(lo, run.first_ns);
    if (run.last_ns) hi = Math.max(hi, run.last_ns);
    if (!isFinite(lo)) { lo = 0; hi = 1e6; }
    if (hi <= lo) hi = lo + 1000;
    this.t0 = lo;
    this.t1 = hi;
  }

  clusterInstances(clusterId) {
    return this.instances.filter((i) => i.cluster === clusterId);
  }

  // The embedded instance for a click on (thread, cluster) at time `t`: one covering t on that
  // thread if there is one, else the closest instance of the cluster (same thread first).
  instanceFor(thread, clusterId, t) {
    const own = thread.instances.filter((i) => clusterId === null || i.cluster === clusterId);
    const covering = own.find((i) => i.start_ns <= t && t <= i.endNs);
    if (covering) return { instance: covering, exact: true };
    const pool = own.length ? own : (clusterId === null ? [] : this.clusterInstances(clusterId));
    let best = null, bestDistance = Infinity;
    for (const i of pool) {
      const d = Math.min(Math.abs(i.start_ns - t), Math.abs(i.endNs - t));
      if (d < bestDistance) { best = i; bestDistance = d; }
    }
    return best ? { instance: best, exact: false } : null;
  }

  droppedEvents() {
    const run = this.data.run || {};
    let dropped = run.dropped_events || 0;
    if (!dropped)
      for (const d of this.data.model.diagnostics)
        if (d.name === 'events_dropped') dropped = d.count;
    return dropped;
  }

  // Processes whose end never came: what they had not sent is lost, in an unknown amount.
  processesWithoutEnd() {
    const run = this.data.run || {};
    if (run.processes_without_end !== undefined) return run.processes_without_end;
    const d = this.data.model.diagnostics.find((x) => x.name === 'processes_without_end');
    return d ? d.count : 0;
  }

  dataLoss() {
    return this.data.model.diagnostics.filter((d) => d.severity !== 'info' && d.count > 0);
  }
};
