// The summary view (the ThreadViewer proposal, 001): a thread's, a cluster's or a call's execution as
// its phases, top to bottom in the order they ran. A phase is a box whose height grows with the
// logarithm of the events it stands for, labelled with its first events (+f entered, -f
// returned) and, when it is a repetition, with its count ("64 ×"); an ellipsis says it holds more
// events than its label shows, and hovering it lists them. The phases are computed by the C++ side
// (Sequitur with 002's run-length post-processing): a thread's by the "summaries" extension (its
// first events, also live), a call's and a cluster's embedded calls' by `shapetrace report`.
'use strict';

ST.summary = {
  // The extension's per-thread summaries, or null.
  threads(model) { return model.data.model.extensions?.summaries?.threads ?? null; },
  // "+f" / "-f" for a label code (f: entered, -1 - f: returned).
  event(model, code) {
    return code >= 0 ? `+${ST.fmt.shortName(model.functionName(code))}` : `-${ST.fmt.shortName(model.functionName(-1 - code))}`;
  },
};

ST.SummaryView = class {
  static kWidth = 560;

  constructor(app) {
    this.app = app;
    this.section = document.createElement('section');
    this.section.className = 'panel summary-panel';
    this.section.id = 'summary-panel';
    this.section.innerHTML = `
      <div class="panel-title">Summary <span class="summary-hint">phases in the order they ran · height: log of their events · hover: the events a phase stands for</span></div>
      <div class="toolbar"><select id="summary-scope" title="What to summarise"></select><span id="summary-note" class="summary-note"></span></div>
      <div class="summary-body" id="summary-body"></div>`;
    const tables = document.querySelector('section.tables');
    tables.parentNode.insertBefore(this.section, tables);
    this.select = this.section.querySelector('#summary-scope');
    this.body = this.section.querySelector('#summary-body');
    this.note = this.section.querySelector('#summary-note');
    this.select.addEventListener('change', () => this.render());
    this.body.addEventListener('mouseleave', () => this.app.tooltip.hide());
    this.setModel(app.model);
  }

  setModel(model) {
    this.model = model;
    const previous = this.select.value;
    const options = [];
    // Threads with the most summarised events first: the first is shown by default.
    const threads = (ST.summary.threads(model) || []).map((t, i) => ({ t, i }))
      .sort((x, y) => y.t.events - x.t.events || x.i - y.i);
    for (const { t, i } of threads) {
      const label = model.threadByKey.get(model.key(t.process, t.thread))?.label ?? `thread ${t.thread}`;
      options.push(`<option value="thread:${i}">thread ${ST.fmt.html(label)}</option>`);
    }
    const clusters = [...new Set(model.instances.filter((i) => i.summary && i.cluster !== null).map((i) => i.cluster))]
      .sort((a, b) => model.clusters[b].totalNs - model.clusters[a].totalNs);
    for (const c of clusters)
      options.push(`<option value="cluster:${c}">cluster #${c} ${ST.fmt.html(ST.fmt.shortName(model.functionName(model.clusters[c].function)))}</option>`);
    if (this.instance) options.push(`<option value="instance">the open call: ${ST.fmt.html(ST.fmt.shortName(model.functionName(this.instance.function)))}</option>`);
    this.select.innerHTML = options.join('');
    this.section.hidden = options.length === 0;
    if (previous && [...this.select.options].some((o) => o.value === previous)) this.select.value = previous;
    this.render();
  }

  // The call the instance view shows: offered (and shown) here too.
  showInstance(instance) {
    if (!instance.summary) return;
    this.instance = instance;
    this.setModel(this.model);
    this.select.value = 'instance';
    this.render();
  }

  // What the selection stands for: [{title, summary, total}].
  selected() {
    const value = this.select.value || '';
    const m = this.model;
    if (value.startsWith('thread:')) {
      const t = ST.summary.threads(m)[Number(value.slice(7))];
      const note = t.thread_events_skipped
        ? `${ST.fmt.count(t.events)} events, from its first ${ST.fmt.count(t.thread_events_read)} (${ST.fmt.count(t.thread_events_skipped)} later events not summarised)`
        : `${ST.fmt.count(t.events)} events`;
      return [{ title: `its calls up to ${m.data.model.extensions.summaries.depth} levels deep: ${note}`, summary: t }];
    }
    if (value.startsWith('cluster:')) {
      const c = Number(value.slice(8));
      return m.instances.filter((i) => i.cluster === c && i.summary).map((i) => ({
        title: `${i.reason === 'first' ? 'first occurrence' : i.reason === 'slowest' ? 'from the slowest bin' : i.reason} · ${ST.fmt.ns(i.duration_ns)} · ${i.summary.events} events`, summary: i.summary, instance: i }));
    }
    if (value === 'instance' && this.instance) return [{ title: `${ST.fmt.ns(this.instance.duration_ns)} · ${this.instance.summary.events} events`, summary: this.instance.summary, instance: this.instance }];
    return [];
  }

  render() {
    const m = this.model, f = ST.fmt;
    const parts = this.selected();
    this.note.textContent = parts.length ? parts[0].title : '';
    this.body.innerHTML = '';
    for (const part of parts) {
      if (parts.length > 1) {
        const h = document.createElement('div');
        h.className = 'summary-part';
        h.textContent = part.title;
        this.body.appendChild(h);
      }
      const column = document.createElement('div');
      column.className = 'summary-phases';
      for (const [index, p] of part.summary.phases.entries()) {
        const box = document.createElement('div');
        box.className = 'summary-phase';
        box.dataset.phase = String(index);
        box.dataset.events = String(p.events);
        box.dataset.repeat = String(p.repeat);
        const height = Math.round(16 + 10 * Math.log2(Math.max(1, p.events)));
        box.style.height = `${height}px`;
        const first = p.label[0];
        box.style.background = first === undefined ? '#ccc' : m.functions[first >= 0 ? first : -1 - first]?.color ?? '#ccc';
        const events = p.label.map((code) => ST.summary.event(m, code));
        const perPass = p.events / p.repeat;
        const more = perPass > p.label.length;
        box.innerHTML = `${p.repeat > 1 ? `<b class="summary-repeat">${f.count(p.repeat)} ×</b> ` : ''}` +
          `<span class="summary-label">${f.html(events.join(', '))}${more ? ' …' : ''}</span>`;
        box.addEventListener('mousemove', (e) => this.app.tooltip.show(e,
          `<div>${p.repeat > 1 ? `${f.count(p.repeat)} repetitions of ` : ''}${f.count(perPass)} event${perPass === 1 ? '' : 's'}${p.rule ? ` (rule ${p.rule})` : ''}</div>` +
          `<div class="t">${events.map(f.html).join('<br>')}${more ? `<br>… ${f.count(perPass - p.label.length)} more` : ''}</div>`));
        column.appendChild(box);
      }
      if (part.summary.more_phases) {
        const rest = document.createElement('div');
        rest.className = 'summary-more';
        rest.textContent = `… ${f.count(part.summary.more_phases)} more phases (shapetrace summarize gives them all)`;
        column.appendChild(rest);
      }
      this.body.appendChild(column);
    }
    this.section.dataset.phases = String(this.body.querySelectorAll('.summary-phase').length);
  }
};

ST.views.register({
  id: 'summaryView',
  order: 32,
  mount: (app) => new ST.SummaryView(app),
  update: (view, model) => view.setModel(model),
});
