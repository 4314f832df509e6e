// The fleet view's additions (`shapetrace fleet --http` and `--html`, docs/fleet.md), shown when
// the data has "fleet": a Hosts column in the clusters, outliers and threads tables (the hosts
// whose threads the row comes from), a Hosts tab (each host's run, latest summary and counts) and
// a host filter in the top bar. Filtering reloads the page with ?host=NAME: the server merges that
// host's summaries only, so every view (timeline, tables, statistics) is exactly that host's.
'use strict';

ST.fleet = {
  available: (m) => Boolean(m.data.fleet),
  // Host names of a thread of the model, by the model's thread key.
  threadHosts(m) {
    if (!m.fleetThreadHosts) {
      const hosts = m.data.fleet.thread_hosts || [];
      m.fleetThreadHosts = new Map(m.data.model.threads.map((t, i) => [m.key(t.process, t.thread), hosts[i] ?? '']));
    }
    return m.fleetThreadHosts;
  },
  column: (hostsOf) => ({
    id: 'hosts',
    label: 'Hosts',
    value: (row) => hostsOf(row).join(', '),
    cls: 'hosts',
  }),
  // Another host's view (or the whole fleet's, for ''): the server answers ?host=NAME.
  select(host) {
    const params = new URLSearchParams(window.location.search);
    if (host) params.set('host', host); else params.delete('host');
    params.delete('token'); // the cookie carries it from the first answer on
    const query = params.toString();
    window.location.search = query ? `?${query}` : '';
  },
};

ST.tabs.addColumn({
  tab: 'clusters',
  available: ST.fleet.available,
  column: (m) => ST.fleet.column((c) => m.data.fleet.cluster_hosts[c.id] || []),
});
ST.tabs.addColumn({
  tab: 'outliers',
  available: ST.fleet.available,
  column: (m) => ST.fleet.column((o) => [m.data.fleet.outlier_hosts[o.index] ?? '']),
});
ST.tabs.addColumn({
  tab: 'threads',
  available: ST.fleet.available,
  column: (m) => ST.fleet.column((t) => [ST.fleet.threadHosts(m).get(t.key) ?? '']),
});

ST.tabs.register({
  id: 'hosts',
  order: 45,
  sort: ['host', true],
  available: ST.fleet.available,
  define: (m) => {
    const f = ST.fmt;
    const fleet = m.data.fleet;
    return {
      label: `Hosts (${fleet.host_names.length})`,
      rows: fleet.hosts.map((h) => ({ ...h, key: `${h.host}:${h.run}` })),
      key: (h) => h.key,
      columns: [
        { id: 'host', label: 'Host', value: (h) => h.host },
        { id: 'run', label: 'Run', value: (h) => String(h.run) },
        { id: 'sequence', label: 'Summary', num: true, value: (h) => h.sequence },
        { id: 'threads', label: 'Threads', num: true, value: (h) => h.threads.length },
        { id: 'events', label: 'Events', num: true, value: (h) => h.events, text: (v) => f.count(v) },
        { id: 'calls', label: 'Calls', num: true, value: (h) => h.calls, text: (v) => f.count(v) },
        { id: 'recording', label: 'Recording', value: (h) => h.recording },
      ],
    };
  },
  // A host clicked: its own view.
  row: (app, kind, h) => {
    if (kind === 'click') ST.fleet.select(h.host);
  },
});

// The host filter in the top bar.
ST.FleetFilter = class {
  constructor(app) {
    this.app = app;
    this.element = document.createElement('label');
    this.element.className = 'fleet-filter';
    this.element.hidden = true;
    this.element.innerHTML = 'Host <select id="fleet-host"></select>';
    const status = document.getElementById('live-status');
    status.parentNode.insertBefore(this.element, status);
    this.select = this.element.querySelector('select');
    this.select.addEventListener('change', () => ST.fleet.select(this.select.value));
    this.setModel(app.model);
  }

  setModel(model) {
    const fleet = model.data.fleet;
    this.element.hidden = !fleet;
    if (!fleet) return;
    // The selected host stays listed while it has not published yet (the server says 404 then).
    const names = [...new Set([...fleet.host_names, ...(fleet.selected ? [fleet.selected] : [])])].sort();
    const options = [['', `all ${fleet.host_names.length} hosts`], ...names.map((n) => [n, n])];
    this.select.innerHTML = options.map(([value, text]) =>
      `<option value="${ST.fmt.html(value)}"${value === fleet.selected ? ' selected' : ''}>${ST.fmt.html(text)}</option>`).join('');
  }
};

ST.views.register({
  id: 'fleetFilter',
  order: 5,
  mount: (app) => new ST.FleetFilter(app),
});
