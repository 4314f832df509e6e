// The "Callers" tab: the callers extension's table (analyzer/extensions/callers.h) of calls and
// time by caller. Unfocused it lists every (caller, function) pair; focused on a function (click it
// in the Functions tab, or a row here to follow a caller up the call graph) it lists the function's
// callers and its callees, with each one's share of the function's calls or time.
'use strict';

ST.callers = {
  // The extension's edges, with the model's names; null when the extension did not run.
  edges(model) {
    return model.data.model.extensions?.callers?.edges ?? null;
  },
};

ST.tabs.register({
  id: 'callers',
  order: 25,
  sort: ['total', false],
  available: (m) => ST.callers.edges(m) !== null,
  select: (app) => { app.callersFocus = null; },
  define: (m, app) => {
    const f = ST.fmt;
    const name = (id) => (id === null ? '(thread root)' : m.functionName(id));
    const focus = app.callersFocus ?? null;
    let rows = ST.callers.edges(m).map((e, index) => ({ ...e, index, mean: e.measured ? e.total_ns / e.measured : 0 }));
    if (focus !== null) {
      const calls = rows.filter((e) => e.callee === focus).reduce((sum, e) => sum + e.calls, 0);
      const time = rows.filter((e) => e.caller === focus).reduce((sum, e) => sum + e.total_ns, 0);
      rows = rows.filter((e) => e.callee === focus || e.caller === focus).map((e) => ({
        ...e,
        relation: e.callee === focus ? 'caller' : 'callee',
        share: e.callee === focus ? (calls ? e.calls / calls : 0) : (time ? e.total_ns / time : 0),
      }));
    }
    const columns = [
      { id: 'callee', label: 'Function', value: (e) => name(e.callee), cell: (e) => f.html(f.shortName(name(e.callee))), cls: 'name' },
      { id: 'caller', label: 'Called by', value: (e) => name(e.caller), cell: (e) => f.html(f.shortName(name(e.caller))), cls: 'name' },
      { id: 'calls', label: 'Calls', num: true, value: (e) => e.calls, text: (v) => f.count(v) },
      { id: 'total', label: 'Time Σ threads', num: true, value: (e) => e.total_ns, text: f.ns, title: 'The durations of the callee\'s calls from this caller, added up over every thread: calls running at once on several threads add up, so this can exceed the run\'s wall time.' },
      { id: 'self', label: 'Self time', num: true, value: (e) => e.self_ns, text: f.ns },
      { id: 'mean', label: 'Mean', num: true, value: (e) => e.mean, text: f.ns },
    ];
    if (focus !== null) {
      columns.unshift({ id: 'relation', label: `Of ${f.shortName(name(focus))}`, value: (e) => e.relation });
      columns.push({ id: 'share', label: 'Share', num: true, value: (e) => e.share, text: (v) => `${(v * 100).toFixed(1)}%` });
    }
    return {
      label: focus === null ? `Callers (${rows.length})` : `Callers of ${f.shortName(name(focus))}`,
      rows,
      key: (e) => e.index,
      columns,
    };
  },
  // A row clicked: focus on its function, or, focused, on the row's other end (up to a caller,
  // down to a callee).
  row: (app, kind, e) => {
    if (kind !== 'click') return;
    const next = e.relation === undefined || e.relation === 'callee' ? e.callee : e.caller;
    if (next !== null) app.showCallers(next);
  },
});
