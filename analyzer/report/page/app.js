// The page: reads the embedded data, mounts the registered views (ST.views) and wires them together
// (hover a ribbon -> cluster panel, click -> instance view, tables <-> timeline). In live mode
// (`shapetrace live`) it polls the server's snapshot endpoint and hands every view the new model.
'use strict';

ST.Tooltip = class {
  constructor(element) { this.element = element; }
  show(event, html) {
    this.element.innerHTML = html;
    this.element.hidden = false;
    const w = this.element.offsetWidth, h = this.element.offsetHeight;
    const x = Math.min(event.clientX + 14, window.innerWidth - w - 6);
    const y = event.clientY + h + 20 > window.innerHeight ? event.clientY - h - 10 : event.clientY + 16;
    this.element.style.left = `${x}px`;
    this.element.style.top = `${y}px`;
  }
  hide() { this.element.hidden = true; }
};

ST.App = class {
  constructor(data) {
    const $ = (id) => document.getElementById(id);
    this.data = data;
    this.model = new ST.Model(data);
    this.tooltip = new ST.Tooltip($('tooltip'));
    // Every registered view, as this[id] (this.timeline, this.clusterPanel, this.tables...).
    this.views = ST.views.list.map((spec) => {
      const view = spec.mount(this);
      this[spec.id] = view;
      return { spec, view };
    });
    this.tables.setModel(this.model);
    $('zoom-in').addEventListener('click', () => this.timeline.zoom(0.5));
    $('zoom-out').addEventListener('click', () => this.timeline.zoom(2));
    $('zoom-fit').addEventListener('click', () => this.timeline.fit());
    $('merge-recursion').addEventListener('change', (e) => {
      ST.shapes.mergeRecursion = e.target.checked;
      this.timeline.setMergeRecursion(e.target.checked);
      this.clusterPanel.setModel(this.model);
    });
    window.addEventListener('keydown', (e) => {
      if (e.target.tagName === 'INPUT') return;
      const span = this.timeline.view.end - this.timeline.view.start;
      const pan = (dt) => this.timeline.setView(this.timeline.view.start + dt, this.timeline.view.end + dt);
      ({ w: () => this.timeline.zoom(0.7), s: () => this.timeline.zoom(1 / 0.7), a: () => pan(-span * 0.2),
        d: () => pan(span * 0.2), f: () => this.timeline.fit() }[e.key.toLowerCase()] || (() => {}))();
    });
    this.renderHeader();
    this.showRange();
    this.startLive();
    // The busiest cluster is shown until the user hovers another, so the panel is never empty.
    const busiest = [...this.model.clusters].sort((a, b) => b.totalNs - a.totalNs)[0];
    if (busiest) this.clusterPanel.show(busiest.id);
  }

  renderHeader() {
    const m = this.model, f = ST.fmt, s = m.summary;
    const source = this.data.source || {};
    const process = (this.data.run?.processes || []).find((p) => p.executable);
    const title = process ? `${process.executable}${process.pid ? ` (pid ${process.pid})` : ''}` : source.location;
    document.getElementById('run-title').textContent = `${title || ''}${source.generated_at ? ` · ${source.generated_at}` : ''}`;
    document.title = `shapetrace · ${process ? process.executable.split('/').pop() : 'report'}`;
    // Live, a process without its end is still running (its events are not lost yet).
    const dropped = m.droppedEvents(), unknown = m.processesWithoutEnd() > 0 && !this.data.live_state;
    const chip = (value, label, warn, title) => `<span class="chip${warn ? ' warn' : ''}" data-summary="${label}"${title ? ` title="${f.html(title)}"` : ''}><b>${value}</b><span>${label}</span></span>`;
    document.getElementById('summary').innerHTML = this.progressChips(chip) +
      chip(f.count(s.threads), 'threads') + chip(f.count(s.events, true), 'events') +
      chip(f.count(s.calls, true), 'calls') + chip(f.ns(m.wallNs()), 'wall time', false, ST.labels.wallTime) +
      chip(f.count(s.shapes), 'shapes') + chip(f.count(s.clusters), 'clusters') +
      chip(f.count(s.outliers_found ?? m.outliers.length), 'outliers', m.outliers.length > 0,
        `${f.count(s.outliers_found ?? m.outliers.length)} calls judged outliers; the ${f.count(m.outliers.length)} most extreme are kept with their details`) +
      chip(f.count(dropped) + (unknown ? ' + ?' : ''), 'dropped', dropped > 0 || unknown) +
      this.filteredChip(chip, s);
    this.renderNotice();
    this.renderLegend();
  }

  // "N filtered out at build, M throttled", only when the recording left functions out: their calls
  // are not in it (docs/analyzer.md, "Filtered and throttled functions").
  filteredChip(chip, s) {
    const built = s.functions_filtered_at_build ?? 0, throttled = s.functions_throttled ?? 0;
    if (built === 0 && throttled === 0) return '';
    const f = ST.fmt;
    return chip(`${f.count(built)} + ${f.count(throttled)}`, 'filtered', true,
      `${f.count(built)} functions filtered out at build, ${f.count(throttled)} throttled: the recording holds none of their calls (after the throttle, for a throttled one), so the shapes of their callers do not show them`);
  }

  // Live and fleet: "analysed X of Y events received", and the items missed, first in the header:
  // a view that lags or lost data says so before any figure is read.
  progressChips(chip) {
    const p = this.data.live_state?.progress, f = ST.fmt;
    if (!p) return '';
    // Behind: received and waiting for the analysis (an event of a message that did not decode is
    // not waiting; the notice counts those messages).
    const behind = p.waiting_events;
    let out = chip(`${f.count(p.analysed_events, true)} of ${f.count(p.received_events, true)}`,
      'events analysed', behind > 0,
      behind > 0 ? `${f.count(behind)} events received are not analysed yet: the analysis is behind` +
        '' : 'every event received is analysed');
    if (p.missed_items > 0)
      out += chip(f.count(p.missed_items), 'items missed', true,
        'stream items the collector published that never arrived (the analysis fell behind and its queue overflowed)');
    return out;
  }

  // Says what the page does not show exactly: instance detail capped, data lost on the way.
  renderNotice() {
    const m = this.model, d = m.detail || {}, f = ST.fmt;
    const notes = [];
    if (this.data.live) {
      notes.push(this.data.live.instances
        ? 'Live view: occurrences and statistics update every second; a click opens the exact call from the collector\'s recording.'
        : 'Live view: occurrences and statistics update every second; exact calls need the recording (shapetrace live --recording DIR, or shapetrace report).');
    } else if (d.capped || d.truncated_instances || d.not_found) {
      notes.push(`Exact call detail is embedded for ${f.count(m.instances.length)} instances ` +
        `(${f.count(d.exemplar_instances)} exemplars of ${f.count(d.clusters_with_instances)} of ${f.count(m.clusters.length)} clusters, ` +
        `${f.count(d.outlier_instances)} of ${f.count(m.outliers.length)} outliers)` +
        `${d.capped ? '; capped by the report\'s detail limits (--max-instances, --outlier-instances, --max-total-calls)' : ''}` +
        `${d.truncated_instances ? `; ${d.truncated_instances} instances list only their first ${f.count(d.max_instance_calls)} calls` : ''}` +
        `${d.not_found ? `; ${d.not_found} could not be found in the recording` : ''}.`);
    }
    const missing = m.processesWithoutEnd();
    if (missing > 0 && this.data.live_state)
      notes.push(`${f.count(missing)} process${missing > 1 ? 'es' : ''} without a process end yet (still running, ` +
        'or its end is not analysed yet; a process killed or crashed without one has lost the events it had not sent).');
    else if (missing > 0)
      notes.push(`${f.count(missing)} process${missing > 1 ? 'es' : ''} ended without a process end ` +
        '(killed, crashed, or still running when the input stopped): the events not sent yet are lost, how many is unknown.');
    const progress = this.data.live_state?.progress;
    if (progress?.note) notes.push(progress.note);
    const loss = m.dataLoss();
    if (loss.length)
      notes.push('Diagnostics: ' + loss.map((x) => `${x.name} ${f.count(x.count)}`).join(', ') + '.');
    const el = document.getElementById('notice');
    el.hidden = notes.length === 0;
    el.textContent = notes.join(' ');
  }

  // The clusters with the most time, and the outlier mark.
  renderLegend() {
    const m = this.model, f = ST.fmt;
    const top = [...m.clusters].sort((a, b) => b.totalNs - a.totalNs).slice(0, 12);
    const items = top.map((c) =>
      `<span class="legend-item" data-cluster="${c.id}" title="${f.html(m.functionName(c.function))}">` +
      `<span class="swatch" style="background:${c.color}"></span>${f.html(f.shortName(m.functionName(c.function)))} #${c.id}</span>`);
    items.push('<span class="legend-item"><span class="swatch outlier"></span>outlier (red outline: its call)</span>');
    items.push('<span class="legend-item">opacity: share of the bin its calls fill · solid bar: exact instance</span>');
    const legend = document.getElementById('legend');
    legend.innerHTML = items.join('');
    legend.querySelectorAll('[data-cluster]').forEach((el) => el.addEventListener('mouseenter',
      () => this.hoverCluster(Number(el.dataset.cluster))));
    legend.addEventListener('mouseleave', () => this.emphasise(null));
  }

  showRange() {
    const v = this.timeline.view, m = this.model;
    document.getElementById('range').textContent =
      `${ST.fmt.ns(v.start - m.t0)} – ${ST.fmt.ns(v.end - m.t0)} (${ST.fmt.ns(v.end - v.start)})`;
    this.flameView?.onRange();
  }

  // A cluster pointed at in a table, the legend or the timeline: its panel, emphasised on the timeline.
  hoverCluster(clusterId) {
    this.clusterPanel.show(clusterId);
    this.emphasise(clusterId);
  }

  // The callers tab, showing who calls `functionId` and whom it calls.
  showCallers(functionId) {
    this.callersFocus = functionId;
    this.tables.show('callers');
  }

  emphasise(clusterId) {
    if (this.timeline.highlight === clusterId) return;
    this.timeline.highlight = clusterId;
    this.timeline.draw();
  }

  onHover(hit, event) {
    if (!hit || hit.cluster === null || hit.cluster === undefined) {
      this.tooltip.hide();
      this.emphasise(null);
      return;
    }
    const m = this.model, f = ST.fmt, c = m.clusters[hit.cluster];
    this.hoverCluster(hit.cluster);
    let html = `<div>${f.html(m.functionName(c.function))} <span class="t">cluster #${c.id}</span></div>`;
    if (hit.outlier) {
      const o = hit.outlier;
      html += `<div style="color:#f28b82">outlier: ${f.ns(o.duration_ns)} (${o.score.toFixed(1)}σ; function mean ${f.ns(o.function_mean_ns)})</div>`;
    } else if (hit.instance) {
      html += `<div class="t">exact call: ${f.ns(hit.instance.duration_ns)} · click to open</div>`;
    } else if (hit.cell) {
      const [bin, count, busy] = hit.cell;
      const started = count ? `${f.count(count)} calls started in this ${f.ns(m.binNs)} bin` : `a call running through this ${f.ns(m.binNs)} bin`;
      html += `<div class="t">${started} at ${f.ns(bin * m.binNs - m.t0)}, ${f.ns(busy)} busy</div>`;
    }
    html += `<div class="t">${f.count(c.stats.count)} calls · mean ${f.ns(c.stats.mean_ns)} · p99 ${f.ns(c.stats.p99_ns)}</div>`;
    this.tooltip.show(event, html);
  }

  onClick(hit) {
    if (!hit) return;
    if (hit.outlier && (hit.row.kind === 'thread' || !hit.instance)) return this.openOutlier(hit.outlier);
    if (hit.cluster === null || hit.cluster === undefined) return;
    const found = this.model.instanceFor(hit.thread, hit.cluster, hit.t);
    if (!found && this.data.live?.instances) {
      // Live: the exact call of this cluster in this bin, from the recording being written.
      const m = this.model;
      const from = hit.cell ? hit.cell[0] * m.binNs : hit.t - m.binNs;
      return this.fetchInstance({ process: hit.thread.process, thread: hit.thread.thread,
        from_ns: Math.max(0, Math.floor(from)), to_ns: Math.ceil(from + (hit.cell ? m.binNs : 2 * m.binNs)),
        cluster: hit.cluster }, hit.cluster);
    }
    this.openInstance(found, hit.cluster);
  }

  // Live with --recording: asks the server for one exact call (live_instance.h). The times are
  // widened by a microsecond: the page's numbers cannot hold every nanosecond of a long uptime.
  async fetchInstance(params, clusterId) {
    const url = `${this.data.live.instances}?${new URLSearchParams(params)}`;
    try {
      const response = await fetch(url, { cache: 'no-store' });
      if (!response.ok) return this.showMissing(`No exact call: ${(await response.text()).trim()}`);
      const inst = await response.json();
      this.openInstance({ instance: { ...inst, endNs: inst.start_ns + inst.duration_ns }, exact: true }, clusterId);
    } catch (error) {
      this.showMissing(`The live server did not answer (${error.message}).`);
    }
  }

  openOutlier(o) {
    const inst = this.model.instances.find((i) => i.reason === 'outlier' && i.process === o.process &&
      i.thread === o.thread && i.start_ns === o.start_ns && i.function === o.function);
    if (inst) return this.openInstance({ instance: inst, exact: true }, o.cluster);
    if (this.data.live?.instances)
      return this.fetchInstance({ process: o.process, thread: o.thread, from_ns: Math.max(0, o.start_ns - 1000),
        to_ns: o.start_ns + 1000, function: o.function, duration_ns: o.duration_ns }, o.cluster);
    this.showMissing(`This outlier's calls are not embedded (the report keeps ${this.model.detail?.outlier_instances_limit ?? 0} outliers' exact calls).`);
  }

  openCluster(id) {
    this.clusterPanel.show(id);
    const list = this.model.clusterInstances(id);
    if (list.length) this.openInstance({ instance: list[0], exact: true }, id);
  }

  openInstance(found, clusterId) {
    if (!found) {
      const c = this.model.clusters[clusterId];
      return this.showMissing(`No exact instance of cluster #${clusterId}${c ? ` (${this.model.functionName(c.function)})` : ''} is embedded in this ${this.data.live ? 'live view' : 'report'}.`);
    }
    this.timeline.selected = found.instance;
    this.timeline.draw();
    this.instanceView.show(found.instance, found.exact ? '' : 'the nearest embedded instance of this cluster');
    this.flameView?.onInstance(found.instance);
    // The same call in the summary view, and an outlier beside its typical call.
    this.summaryView?.showInstance(found.instance);
    if (found.instance.reason === 'outlier') this.compareView?.showOutlier(found.instance);
  }

  showMissing(text) {
    const panel = document.getElementById('instance-panel');
    panel.classList.remove('has-instance');
    document.getElementById('instance-placeholder').textContent = text;
  }

  // Live mode: poll the snapshot and refresh everything in place.
  startLive() {
    const live = this.data.live;
    if (!live) return;
    const status = document.getElementById('live-status');
    status.hidden = false;
    const poll = async () => {
      try {
        const response = await fetch(live.snapshot, { cache: 'no-store' });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        const data = await response.json();
        data.live = live;
        this.update(data);
        status.className = `live-status${data.live_state?.waiting ? ' waiting' : ''}`;
        // The fleet view waits for summaries, not for a collector (live_state.waiting_for).
        status.textContent = data.live_state?.waiting
          ? `● waiting for ${data.live_state.waiting_for ?? 'collector'} at ${data.live_state.endpoint}`
          : `● live · ${ST.fmt.count(data.live_state?.items ?? 0, true)} ${data.live_state?.items_label ?? 'items'} · updated ${new Date().toLocaleTimeString()}`;
      } catch (error) {
        status.className = 'live-status waiting';
        status.textContent = `● server unreachable (${error.message})`;
      }
      setTimeout(poll, live.interval_ms || 1000);
    };
    setTimeout(poll, live.interval_ms || 1000);
  }

  update(data) {
    this.data = data;
    this.model = new ST.Model(data);
    for (const { spec, view } of this.views)
      if (spec.update) spec.update(view, this.model); else view.setModel(this.model);
    this.renderHeader();
    this.showRange();
  }
};

ST.start = () => {
  const data = JSON.parse(document.getElementById('shapetrace-data').textContent);
  ST.app = new ST.App(data);
  // For tests and the console: the live objects, and a flag that the first draw is done.
  window.shapetrace = ST;
  document.body.dataset.ready = 'true';
};
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', ST.start);
else ST.start();
