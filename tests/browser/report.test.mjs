// The HTML report in headless Chromium: a recording of the service fixture (tests/report) is
// turned into report.html by `shapetrace report`, then the page is checked as a user meets it:
// every thread's ribbons are drawn, hovering a ribbon shows that cluster's shapes and statistics,
// clicking an occurrence opens that exact call with the right functions, outliers open their
// call, zoom works, tables sort. Expected values come from the data embedded in the file, read
// here independently of the page's scripts. Screenshots are saved as artifacts.
//
// Environment (set by ctest, tests/report/CMakeLists.txt):
//   SHAPETRACE_BINARY            the shapetrace binary
//   SHAPETRACE_REPORT_FIXTURE    tests/report's report_service_recording
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { launchBrowser, openPage, saveScreenshot, embeddedData } from './browser.mjs';

const shapetrace = process.env.SHAPETRACE_BINARY;
const fixture = process.env.SHAPETRACE_REPORT_FIXTURE;
let browser, work, reportFile, data;

// Every function name in the shape trees of a cluster (null not drawn): the expected content of
// the hover panel.
function clusterFunctionNames(d, clusterId) {
  const shapes = new Map(d.model.shapes.map((s) => [s.id, s]));
  const names = new Set();
  const walk = (id) => {
    const s = shapes.get(id);
    names.add(d.model.functions[s.function].name);
    s.children.forEach(walk);
  };
  d.model.clusters[clusterId].shapes.slice(0, 8).forEach(walk);
  return [...names].sort();
}

before(async () => {
  assert.ok(shapetrace && fixture, 'SHAPETRACE_BINARY and SHAPETRACE_REPORT_FIXTURE must be set (run through ctest)');
  work = await mkdtemp(path.join(tmpdir(), 'shapetrace-report-browser-'));
  execFileSync(fixture, [path.join(work, 'rec'), '--gap']);
  reportFile = path.join(work, 'report.html');
  execFileSync(shapetrace, ['report', path.join(work, 'rec'), '-o', reportFile]);
  data = embeddedData(await readFile(reportFile, 'utf8'));
  browser = await launchBrowser({ viewport: { width: 1600, height: 1000 } });
});
after(async () => {
  await browser?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

async function openReport() {
  const page = await openPage(browser.context, reportFile);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

// The cluster of a function with the most shapes (the interesting one to hover).
function clusterOf(functionName) {
  const fn = data.model.functions.findIndex((f) => f.name === functionName);
  return data.model.clusters.filter((c) => c.function === fn)
    .sort((a, b) => b.shapes.length - a.shapes.length)[0];
}

test('the header summarises the run and every thread has its ribbons drawn', { timeout: 90_000 }, async () => {
  const page = await openReport();
  const chip = async (label) => page.locator(`[data-summary="${label}"] b`).innerText();
  assert.equal(await chip('threads'), String(data.model.summary.threads));
  assert.equal(await chip('clusters'), String(data.model.summary.clusters));
  assert.equal(await chip('shapes'), String(data.model.summary.shapes));
  // Every call judged an outlier, and in the title how many of them are kept with their details.
  assert.ok(data.model.summary.outliers_found >= data.model.outliers.length);
  assert.equal(data.model.summary.outliers_kept, data.model.outliers.length);
  assert.equal(await chip('outliers'), data.model.summary.outliers_found.toLocaleString('en-US'));
  assert.match(await page.locator('[data-summary="outliers"]').getAttribute('title'),
    new RegExp(`the ${data.model.outliers.length.toLocaleString('en-US')} most extreme are kept`));
  assert.equal(await chip('dropped'), String(data.run.dropped_events));
  assert.ok(data.run.dropped_events > 0);

  // For every cluster on every thread, the canvas is painted where the page says it is.
  const painted = await page.evaluate(() => {
    const tl = window.shapetrace.app.timeline;
    const ctx = tl.canvas.getContext('2d');
    const dpr = window.devicePixelRatio || 1;
    const rect = tl.canvas.getBoundingClientRect();
    const result = {};
    for (const c of tl.model.clusters) {
      const at = tl.locate(c.id);
      if (!at) { result[c.id] = 'not located'; continue; }
      const pixel = ctx.getImageData(Math.floor((at.x - rect.left) * dpr), Math.floor((at.y - rect.top) * dpr), 1, 1).data;
      result[c.id] = pixel[3] > 0 ? 'painted' : 'blank';
    }
    return result;
  });
  for (const c of data.model.clusters)
    assert.equal(painted[c.id], 'painted', `cluster ${c.id} (${data.model.functions[c.function].name})`);
  const rows = await page.evaluate(() => window.shapetrace.app.timeline.rows.filter((r) => r.kind === 'ribbon').length);
  assert.equal(rows, data.model.threads.reduce((n, t) => n + t.ribbons.length, 0));
  await saveScreenshot(page, 'report-overview');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('hovering a ribbon shows the cluster\'s shapes as trees with its statistics', { timeout: 90_000 }, async () => {
  const page = await openReport();
  const cluster = clusterOf('kv::Server::handle(kv::Request const&)');
  assert.ok(cluster.shapes.length >= 2, 'the fixture gives handle() several shapes');
  const at = await page.evaluate((id) => window.shapetrace.app.timeline.locate(id), cluster.id);
  await page.mouse.move(at.x, at.y);
  const panel = page.locator('#cluster-panel');
  await panel.locator(`.cluster-title[data-cluster="${cluster.id}"]`).waitFor();
  const text = await panel.innerText();
  assert.match(text, /kv::Server::handle\(kv::Request const&\)/);
  for (const label of ['CALLS', 'MEAN', 'SD', 'P50', 'P99', 'MAX DISTANCE'])
    assert.ok(text.toUpperCase().includes(label), `panel shows ${label}`);
  assert.ok(text.includes(cluster.stats.count.toLocaleString('en-US')), 'panel shows the call count');
  // Each shape card says what its calls took: a mean, a single call's time, or that they were not
  // measured (closed by an outer exit); never "mean 0 ns" for what was not measured.
  const metas = await panel.locator('.shape-card .meta').allInnerTexts();
  cluster.shapes.slice(0, 8).forEach((id, i) => {
    const shape = data.model.shapes.find((s) => s.id === id);
    const expected = !shape.stats.count ? 'not measured' : shape.stats.count === 1 ? 'took ' : 'mean ';
    assert.ok(metas[i].includes(expected), `${metas[i]} (shape ${id}: ${shape.stats.count} measured)`);
  });
  assert.deepEqual(await page.evaluate(() => [ST.fmt.meanOf({ count: 0, mean_ns: 0 }),
    ST.fmt.meanOf({ count: 1, mean_ns: 1500 }), ST.fmt.meanOf({ count: 4, mean_ns: 2e6 })]),
  ['not measured', 'took 1.50 µs', 'mean 2.00 ms']);
  assert.equal(await panel.locator('svg.shape-tree').count(), Math.min(8, cluster.shapes.length));
  const drawn = await panel.locator('svg.shape-tree g.node').evaluateAll(
    (nodes) => [...new Set(nodes.map((n) => n.dataset.function))].sort());
  assert.deepEqual(drawn, clusterFunctionNames(data, cluster.id));
  await page.locator('#tooltip').waitFor({ state: 'visible' });
  await saveScreenshot(page, 'report-hover');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('clicking an occurrence shows that call instance with its functions', { timeout: 90_000 }, async () => {
  const page = await openReport();
  const cluster = clusterOf('kv::BTree::insert(unsigned long, std::vector<char>)');
  const at = await page.evaluate((id) => window.shapetrace.app.timeline.locate(id), cluster.id);
  await page.mouse.click(at.x, at.y);
  const panel = page.locator('#instance-panel.has-instance');
  await panel.waitFor();
  const id = Number(await panel.getAttribute('data-instance'));
  const instance = data.instances[id];
  assert.equal(instance.cluster, cluster.id);
  assert.equal(instance.function, cluster.function);
  const expected = [...new Set(instance.calls.map((c) => data.model.functions[c[0]].name))].sort();
  const listed = await page.locator('#instance-functions .row').evaluateAll(
    (rows) => rows.map((r) => r.dataset.function).sort());
  assert.deepEqual(listed, expected);
  assert.ok(listed.includes('kv::Node::search(unsigned long)'));
  assert.match(await page.locator('#instance-title').innerText(), /kv::BTree::insert/);
  // The stack is drawn: the root bar spans the canvas' width at the bottom.
  const rootPainted = await page.evaluate(() => {
    const c = document.getElementById('instance');
    const dpr = window.devicePixelRatio || 1;
    const h = c.height / dpr;
    const px = c.getContext('2d').getImageData(Math.floor(c.width / 2), Math.floor((h - 22 - 9) * dpr), 1, 1).data;
    return px[3] > 0;
  });
  assert.ok(rootPainted);
  await saveScreenshot(page, 'report-instance');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('an outlier opens its exact call, and tables sort', { timeout: 90_000 }, async () => {
  const page = await openReport();
  await page.locator('#tabs button[data-tab="outliers"]').click();
  const rows = page.locator('table[data-table="outliers"] tbody tr');
  assert.equal(await rows.count(), data.model.outliers.length);
  await rows.first().click();
  await page.locator('#instance-panel.has-instance').waitFor();
  const instance = data.instances[Number(await page.locator('#instance-panel').getAttribute('data-instance'))];
  assert.equal(instance.reason, 'outlier');
  // Sorted by the time each lost: its duration less the mean of each rule that fired.
  const lost = (o) => Math.max(o.function_outlier ? o.duration_ns - o.function_mean_ns : 0,
    o.shape_outlier ? o.duration_ns - o.shape_mean_ns : 0);
  for (const o of data.model.outliers) assert.ok(Math.abs(o.excess_ns - lost(o)) < 1e-6);
  const top = [...data.model.outliers].sort((a, b) => lost(b) - lost(a))[0];
  assert.equal(instance.start_ns, top.start_ns);
  assert.equal(instance.duration_ns, top.duration_ns);

  await page.locator('#tabs button[data-tab="clusters"]').click();
  await page.locator('table[data-table="clusters"] th[data-col="calls"]').click();
  const calls = await page.locator('table[data-table="clusters"] tbody tr td:nth-child(4)').evaluateAll(
    (cells) => cells.map((c) => Number(c.innerText.replace(/,/g, ''))));
  assert.deepEqual(calls, [...data.model.clusters.map((c) => c.stats.count)].sort((a, b) => b - a));
  await saveScreenshot(page, 'report-tables');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('zoom and pan change the visible range down to single calls', { timeout: 90_000 }, async () => {
  const page = await openReport();
  const span = () => page.evaluate(() => {
    const v = window.shapetrace.app.timeline.view;
    return v.end - v.start;
  });
  const full = await span();
  await page.locator('#zoom-in').click();
  assert.ok(Math.abs(await span() - full / 2) < full * 1e-9);
  const box = await page.locator('#timeline').boundingBox();
  await page.mouse.move(box.x + 700, box.y + 60);
  for (let i = 0; i < 40; ++i) await page.mouse.wheel(0, -400);
  await page.waitForFunction(() => {
    const v = window.shapetrace.app.timeline.view;
    return v.end - v.start < 20_000;
  });
  const deep = await span();
  assert.ok(deep < 20_000, `zoomed to ${deep} ns`);
  // At this zoom the axis ticks still read apart (not "5.00 s" each): as drawn on the canvas.
  const ticks = await page.evaluate(() => {
    const timeline = window.shapetrace.app.timeline, ctx = timeline.ctx, drawn = [];
    const fillText = ctx.fillText;
    ctx.fillText = function (text, ...rest) { drawn.push(text); return fillText.call(this, text, ...rest); };
    timeline.drawAxis();
    ctx.fillText = fillText;
    return drawn.filter((text) => !text.startsWith('bin '));
  });
  assert.ok(ticks.length >= 3, ticks.join(' | '));
  assert.equal(new Set(ticks).size, ticks.length, ticks.join(' | '));
  await page.mouse.move(box.x + 600, box.y + 60);
  await page.mouse.down();
  const before = await page.evaluate(() => window.shapetrace.app.timeline.view.start);
  await page.mouse.move(box.x + 400, box.y + 60, { steps: 5 });
  await page.mouse.up();
  assert.ok(await page.evaluate(() => window.shapetrace.app.timeline.view.start) > before);
  await page.locator('#zoom-fit').click();
  assert.equal(await span(), full);
  assert.deepEqual(page.problems, []);
  await page.close();
});

// The Callers tab (the callers extension, registered by page/callers.js): every (caller, function)
// pair of the model; a function clicked in the Functions tab shows its callers and callees, with
// shares that add up to the whole.
test('the callers view lists calls by caller and follows the call graph', { timeout: 90_000 }, async () => {
  const edges = data.model.extensions.callers.edges;
  assert.ok(edges.length > 0);
  const page = await openReport();
  await page.locator('#tabs button[data-tab="callers"]').click();
  const rows = page.locator('table[data-table="callers"] tbody tr');
  assert.equal(await rows.count(), Math.min(edges.length, 2000));
  const shortName = await shortNames(page);

  // The function called from the most places.
  const callersOf = new Map();
  for (const e of edges) callersOf.set(e.callee, (callersOf.get(e.callee) || 0) + 1);
  const [focus] = [...callersOf.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0];
  await page.locator('#tabs button[data-tab="functions"]').click();
  await page.locator(`table[data-table="functions"] tbody tr[data-key="${focus}"]`).click();
  assert.equal(await page.locator('#tabs button.active').getAttribute('data-tab'), 'callers');
  const related = edges.filter((e) => e.callee === focus || e.caller === focus);
  assert.equal(await rows.count(), related.length);
  const table = await page.locator('table[data-table="callers"]').evaluate((t) => ({
    head: [...t.querySelectorAll('th')].map((th) => th.dataset.col),
    rows: [...t.querySelectorAll('tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent)),
  }));
  const col = (id) => table.head.indexOf(id);
  const callerRows = table.rows.filter((r) => r[col('relation')] === 'caller');
  assert.equal(callerRows.length, related.filter((e) => e.callee === focus).length);
  assert.deepEqual(callerRows.map((r) => r[col('caller')]).sort(),
    related.filter((e) => e.callee === focus).map((e) => shortName(e.caller)).sort());
  const shares = callerRows.map((r) => Number.parseFloat(r[col('share')]));
  assert.ok(Math.abs(shares.reduce((a, b) => a + b, 0) - 100) < 0.5, `caller shares ${shares}`);
  const calls = related.filter((e) => e.callee === focus).reduce((s, e) => s + e.calls, 0);
  assert.equal(callerRows.reduce((s, r) => s + Number(r[col('calls')].replace(/,/g, '')), 0), calls);
  await saveScreenshot(page, 'report-callers');

  // A caller row clicked: the view moves up to that caller.
  const up = related.find((e) => e.callee === focus && e.caller !== null);
  if (up) {
    const index = table.rows.findIndex((r) => r[col('relation')] === 'caller' && r[col('caller')] === shortName(up.caller));
    await rows.nth(index).click();
    assert.equal(await rows.count(), edges.filter((e) => e.callee === up.caller || e.caller === up.caller).length);
  }
  assert.deepEqual(page.problems, []);
  await page.close();
});

// The page's short names (ST.fmt.shortName, tested on its own below) of every function, and of the
// callers view's thread root.
async function shortNames(page) {
  const names = data.model.functions.map((f) => f.name);
  const short = await page.evaluate((all) => all.map((n) => ST.fmt.shortName(n)), names);
  return (id) => (id === null ? '(thread root)' : short[id]);
}

// Labels show demangled names short: a header-only library's instantiation names run to thousands
// of characters. The examples are the ones the text outputs' shortFunctionName is tested on.
test('labels name functions short: no parameters, return type or long template arguments', { timeout: 90_000 }, async () => {
  const examples = (await readFile(new URL('../analyzer/short_function_names.tsv', import.meta.url), 'utf8'))
    .split('\n').filter((line) => line && !line.startsWith('#')).map((line) => line.split('\t'));
  assert.equal(examples.length, 24);
  const page = await openReport();
  const got = await page.evaluate((names) => names.map((n) => ST.fmt.shortName(n)), examples.map(([name]) => name));
  assert.deepEqual(got, examples.map(([, expected]) => expected));
  assert.equal(await page.evaluate(() => ST.fmt.leafName('void ns::Pool<std::allocator<void>>::run<int>(int) const')), 'run<int>');
  // The model's names stay unique: two lambdas' _M_run read alike short, and are told apart by
  // " #2" in the order of their full names, as the text outputs do; a name alone keeps its own.
  const lambdas = ['std::thread::_State_impl<std::thread::_Invoker<std::tuple<app::serve()::{lambda()#2}>>>::_M_run()',
    'std::thread::_State_impl<std::thread::_Invoker<std::tuple<app::serve()::{lambda()#1}>>>::_M_run()',
    'kv::parse(std::string_view)'];
  const unique = await page.evaluate((names) => {
    ST.fmt.registerNames(names);
    return names.map((n) => ST.fmt.shortName(n));
  }, lambdas);
  assert.deepEqual(unique, ['std::thread::_State_impl<...>::_M_run #2', 'std::thread::_State_impl<...>::_M_run', 'kv::parse']);
  await page.close();
});

test('a recursion\'s levels are one timeline row and one tree node, apart again on request', { timeout: 90_000 }, async () => {
  const dir = path.join(work, 'recursion');
  execFileSync(fixture, [path.join(dir, 'rec'), '--recursion']);
  const file = path.join(dir, 'report.html');
  execFileSync(shapetrace, ['report', path.join(dir, 'rec'), '-o', file]);
  const d = embeddedData(await readFile(file, 'utf8'));
  const destroy = d.model.functions.findIndex((f) => f.name === 'kv::Node::destroy()');
  const evictor = d.model.threads.find((t) => t.name === 'evictor');
  // Each ribbon of the model is labelled after its busiest cluster; destroy leads one per level.
  const busiest = (row) => row.map((e) => d.model.clusters[e.cluster])
    .sort((a, b) => Number(b.stats.sum_ns) - Number(a.stats.sum_ns))[0].function;
  // (the leaves may share a ribbon with a busier cluster of another function)
  const levels = evictor.timeline.filter((row) => busiest(row) === destroy).length;
  assert.ok(levels >= 2, `${levels} ribbons led by destroy`);
  const page = await openPage(browser.context, file);
  await page.waitForSelector('body[data-ready="true"]');
  const labels = () => page.evaluate(() => window.shapetrace.app.timeline.rows
    .filter((r) => r.kind === 'ribbon' && r.thread.label === 'evictor').map((r) => r.ribbon.label));
  const merged = await labels();
  assert.equal(merged.length, evictor.timeline.length - levels + 1);
  assert.deepEqual(merged.filter((l) => l.includes('destroy')), [`${levels} levels · kv::Node::destroy`]);
  // The deepest shape's tree: one node for the four levels.
  const deepest = d.model.shapes.filter((x) => x.function === destroy).sort((a, b) => b.depth - a.depth)[0];
  await page.evaluate((id) => window.shapetrace.app.clusterPanel.show(id, true), deepest.cluster);
  const tree = page.locator(`#cluster-panel svg.shape-tree[data-shape="${deepest.id}"]`);
  const nodes = () => tree.locator('g.node[data-function="kv::Node::destroy()"]').count();
  assert.equal(await tree.locator('g.node[data-levels="4"]').count(), 1);
  assert.equal(await nodes(), 1);
  await saveScreenshot(page, 'report-recursion-merged');
  await page.locator('#merge-recursion').uncheck();
  const apart = await labels();
  assert.equal(apart.length, evictor.timeline.length);
  assert.equal(apart.filter((l) => l === 'kv::Node::destroy').length, levels);
  assert.equal(await nodes(), 4); // a shape holds each distinct child shape once: one per level
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('a process that ended without a process end makes the loss unknown, never zero', { timeout: 90_000 }, async () => {
  const killedDir = path.join(work, 'killed');
  execFileSync(fixture, [path.join(killedDir, 'rec'), '--gap', '--killed']);
  const killedReport = path.join(killedDir, 'report.html');
  execFileSync(shapetrace, ['report', path.join(killedDir, 'rec'), '-o', killedReport]);
  const killed = embeddedData(await readFile(killedReport, 'utf8'));
  assert.equal(killed.run.processes_without_end, 1);
  assert.equal(killed.run.processes[0].reaped, 'killed by signal 9 (SIGKILL)');
  const page = await openPage(browser.context, killedReport);
  await page.waitForSelector('body[data-ready="true"]');
  const chip = page.locator('[data-summary="dropped"]');
  assert.equal(await chip.locator('b').innerText(), `${killed.run.dropped_events} + ?`);
  assert.match(await chip.getAttribute('class'), /\bwarn\b/);
  const notice = await page.locator('#notice').innerText();
  assert.match(notice, /1 process ended without a process end/);
  assert.match(notice, /processes_without_end 1/);
  await saveScreenshot(page, 'report-killed-process');
  assert.deepEqual(page.problems, []);
  await page.close();
});

// Each function's time computed here from the recording's own events (`dump -f json`): its calls
// with no call of the same function open below them on their thread, summed over threads; the
// thread that spent the most; the threads that called it; and the run's first and last event.
function timesFromEvents(dumpJson) {
  const byName = new Map(), stacks = new Map();
  let first = Infinity, last = 0;
  for (const line of dumpJson.split('\n').filter(Boolean)) {
    const item = JSON.parse(line);
    if (item.kind !== 'event_batch') continue;
    const thread = `${item.process}:${item.thread}`;
    if (!stacks.has(thread)) stacks.set(thread, []);
    const stack = stacks.get(thread);
    for (const e of item.events) {
      first = Math.min(first, e.t);
      last = Math.max(last, e.t);
      if (e.kind === 'enter') { stack.push(e); continue; }
      const entry = stack.pop();
      assert.equal(entry.f, e.f, 'the recording nests its calls');
      if (stack.some((open) => open.f === e.f)) continue; // inside a call of the same function
      const fn = byName.get(e.name) ?? { total: 0, threads: new Map() };
      fn.total += e.t - entry.t;
      fn.threads.set(thread, (fn.threads.get(thread) ?? 0) + e.t - entry.t);
      byName.set(e.name, fn);
    }
  }
  return { first, last, byName };
}

test('wall time and time summed over threads are labelled apart and equal the recording\'s', { timeout: 90_000 }, async () => {
  const dir = path.join(work, 'times');
  execFileSync(fixture, [path.join(dir, 'rec')]);
  const report = path.join(dir, 'report.html');
  execFileSync(shapetrace, ['report', path.join(dir, 'rec'), '-o', report]);
  const expected = timesFromEvents(execFileSync(shapetrace, ['dump', '-f', 'json', path.join(dir, 'rec')],
    { encoding: 'utf8', maxBuffer: 1 << 28 }));
  const model = embeddedData(await readFile(report, 'utf8')).model;
  const page = await openPage(browser.context, report);
  await page.waitForSelector('body[data-ready="true"]');
  const ns = (v) => page.evaluate((x) => ST.fmt.ns(x), v);

  const wall = page.locator('[data-summary="wall time"]');
  assert.equal(await wall.locator('b').innerText(), await ns(expected.last - expected.first));
  assert.match(await wall.getAttribute('title'), /wall time/);

  await page.locator('#tabs button[data-tab="functions"]').click();
  const table = page.locator('table[data-table="functions"]');
  const header = async (col) => ({
    text: await table.locator(`th[data-col="${col}"]`).innerText(),
    title: await table.locator(`th[data-col="${col}"]`).getAttribute('title'),
  });
  const summed = await header('total'), busiest = await header('busiest');
  assert.match(summed.text, /Σ threads/);
  assert.match(summed.title, /added up over threads.*can exceed the run's wall time/);
  assert.match(busiest.title, /wall time, within the run's/);
  // Rows are sorted by the summed time; each row's figures against the recording's.
  const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) =>
    [...tr.querySelectorAll('td')].map((td) => td.innerText)));
  const columns = await table.locator('th').evaluateAll((ths) => ths.map((th) => th.dataset.col));
  const at = (row, col) => row[columns.indexOf(col)];
  let exceedsWall = 0;
  const called = model.functions.filter((f) => f.calls > 0);
  assert.ok(called.length > 5);
  for (const fn of called) {
    const want = expected.byName.get(fn.name);
    assert.ok(want, `${fn.name} has calls in the recording`);
    const short = await page.evaluate((n) => ST.fmt.shortName(n), fn.name);
    const row = rows.find((r) => at(r, 'function').trim() === short);
    assert.ok(row, `a row for ${fn.name}`);
    assert.equal(at(row, 'total'), await ns(want.total), fn.name);
    assert.equal(at(row, 'busiest'), await ns(Math.max(...want.threads.values())), fn.name);
    assert.equal(at(row, 'threads'), String(want.threads.size), fn.name);
    if (want.total > expected.last - expected.first) exceedsWall += 1;
  }
  // The fixture's workers overlap: their summed time is more than the run's wall time.
  assert.ok(exceedsWall > 0);
  await saveScreenshot(page, 'report-function-times');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('the Threads tab shows each 64-bit process key exactly as the recording holds it', { timeout: 90_000 }, async () => {
  // The digits as the recording's JSON dump writes them, never through a JavaScript number.
  // A real process key: 64 random bits (the fixture's default, 42, fits any number).
  const dir = path.join(work, 'keys');
  execFileSync(fixture, [path.join(dir, 'rec'), '--process', '7777474232612461727']);
  const report = path.join(dir, 'report.html');
  execFileSync(shapetrace, ['report', path.join(dir, 'rec'), '-o', report]);
  const dump = execFileSync(shapetrace, ['dump', '-f', 'json', path.join(dir, 'rec')],
    { encoding: 'utf8', maxBuffer: 1 << 28 });
  const keys = new Set([...dump.matchAll(/"process":(\d+)/g)].map((m) => m[1]));
  assert.ok([...keys].some((k) => BigInt(k) > BigInt(Number.MAX_SAFE_INTEGER)),
    'a key a double cannot hold (keys are random 64-bit numbers)');
  const page = await openPage(browser.context, report);
  await page.waitForSelector('body[data-ready="true"]');
  await page.locator('#tabs button[data-tab="threads"]').click();
  const table = page.locator('table[data-table="threads"]');
  const columns = await table.locator('th').evaluateAll((ths) => ths.map((th) => th.dataset.col));
  const ids = await table.locator('tbody tr').evaluateAll((trs, at) =>
    trs.map((tr) => tr.querySelectorAll('td')[at].innerText), columns.indexOf('id'));
  assert.equal(ids.length, embeddedData(await readFile(report, 'utf8')).model.threads.length);
  for (const id of ids) assert.ok(keys.has(id.split(':')[0]), `${id} names a process of the recording`);
});

test('outliers are listed in the analysis\'s order, those after main returned last and marked', { timeout: 90_000 }, async () => {
  const atExit = data.model.outliers.map((o) => o.at_exit);
  assert.ok(atExit.every((v) => typeof v === 'boolean'));
  assert.equal(atExit.indexOf(true) === -1 ? -1 : atExit.slice(atExit.indexOf(true)).indexOf(false), -1,
    'no outlier of the run itself after one at exit');
  const page = await openReport();
  await page.locator('#tabs button[data-tab="outliers"]').click();
  const table = page.locator('table[data-table="outliers"]');
  const columns = await table.locator('th').evaluateAll((ths) => ths.map((th) => th.dataset.col));
  const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) =>
    [...tr.querySelectorAll('td')].map((td) => td.innerText)));
  assert.equal(rows.length, Math.min(2000, data.model.outliers.length));
  rows.forEach((row, i) => {
    assert.equal(row[columns.indexOf('rank')], String(i + 1));
    assert.equal(row[columns.indexOf('when')], atExit[i] ? 'at exit' : 'in the run');
  });
});
