// The flame graph and the funky graph (analyzer/flame/page/flame.js) in headless Chromium, on a
// report of the service fixture (tests/report): the graph renders from the "flame" extension,
// hovering a frame outlines every frame of the same function, a regular expression search gives
// the matched share (checked against the embedded data, computed here independently), clicking
// zooms with a breadcrumb back, and the funky graph re-centres on the clicked function. The scopes
// the report embeds: the timeline's visible range (the time slices that overlap it, summed here
// from the embedded data), a cluster from its side panel's button, a function's outlier and typical
// calls from the Frame tab, the call opened in the instance view; a report whose scope trees were
// capped says so. A 10^6-node tree's redraw time is printed (not asserted).
//
// Environment (set by ctest, tests/report/CMakeLists.txt):
//   SHAPETRACE_BINARY, SHAPETRACE_REPORT_FIXTURE
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

before(async () => {
  assert.ok(shapetrace && fixture, 'SHAPETRACE_BINARY and SHAPETRACE_REPORT_FIXTURE must be set (run through ctest)');
  work = await mkdtemp(path.join(tmpdir(), 'shapetrace-flame-browser-'));
  execFileSync(fixture, [path.join(work, 'rec')]);
  reportFile = path.join(work, 'report.html');
  execFileSync(shapetrace, ['report', path.join(work, 'rec'), '-o', reportFile]);
  data = embeddedData(await readFile(reportFile, 'utf8'));
  browser = await launchBrowser({ viewport: { width: 1600, height: 1400 } });
});
after(async () => {
  await browser?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

async function openReport() {
  const page = await openPage(browser.context, reportFile);
  await page.waitForSelector('body[data-ready="true"]');
  await page.locator('#flame-panel').scrollIntoViewIfNeeded();
  return page;
}

test('the flame graph renders, hover highlights a function, search and zoom work', { timeout: 120_000 }, async () => {
  const flame = data.model.extensions.flame;
  assert.ok(flame && flame.nodes.parent.length > 3, 'the report runs the flame extension');
  const page = await openReport();
  const frames = await page.evaluate(() => Number(document.getElementById('flame-canvas').dataset.frames));
  assert.ok(frames > 3, `frames drawn: ${frames}`);

  // Hover the widest frame in the second row: every drawn frame of its function is highlighted.
  const target = await page.evaluate(() => {
    const v = window.shapetrace.app.flameView;
    const r = v.flame.rects.filter((x) => x.fn >= 0 && x.depth === 1).sort((a, b) => b.w - a.w)[0];
    const box = v.flame.canvas.getBoundingClientRect();
    return { x: box.left + r.x + r.w / 2, y: box.top + r.y + r.h / 2, fn: r.fn, node: r.node,
      same: v.flame.rects.filter((x) => x.fn === r.fn).length };
  });
  await page.mouse.move(target.x, target.y);
  await page.waitForFunction((fn) => document.getElementById('flame-panel').dataset.hoverFunction === String(fn), target.fn);
  const magenta = await page.evaluate((fn) => {
    const v = window.shapetrace.app.flameView;
    const g = v.flame.canvas.getContext('2d');
    const dpr = window.devicePixelRatio || 1;
    return v.flame.rects.filter((r) => r.fn === fn && r.w > 4).map((r) => {
      const p = g.getImageData(Math.floor((r.x + 1.5) * dpr), Math.floor((r.y + r.h / 2) * dpr), 1, 1).data;
      return p[0] > 180 && p[1] < 80 && p[2] > 100; // the magenta outline
    });
  }, target.fn);
  assert.ok(magenta.length >= 1 && magenta.every(Boolean), `highlighted: ${magenta}`);
  assert.ok(await page.locator('#tooltip').isVisible());
  assert.match(await page.locator('#tooltip').innerText(), /inclusive .*\n?.*exclusive/s);
  await saveScreenshot(page, 'flame-hover');

  // Search: the matched share equals the share computed here from the embedded tree.
  const name = data.model.functions[target.fn].name;
  const pattern = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  await page.fill('#flame-search', pattern);
  const share = Number(await page.locator('#flame-matched').getAttribute('data-share'));
  const n = flame.nodes;
  const weight = new Float64Array(n.parent.length), below = new Float64Array(n.parent.length);
  for (let i = n.parent.length - 1; i > 0; --i) { weight[i] = Math.max(n.total_ns[i], below[i]); below[n.parent[i]] += weight[i]; }
  let matched = 0;
  for (let i = 1; i < n.parent.length; ++i) {
    if (n.function[i] !== target.fn) continue;
    let a = n.parent[i];
    while (a > 0 && n.function[a] !== target.fn) a = n.parent[a];
    if (a <= 0) matched += weight[i];
  }
  assert.ok(Math.abs(share - matched / below[0]) < 1e-9, `share ${share} vs ${matched / below[0]}`);
  await page.fill('#flame-search', '');

  // Click: zoom onto the frame (it spans the width), the breadcrumb leads back.
  await page.mouse.click(target.x, target.y);
  const zoomed = await page.evaluate(() => {
    const v = window.shapetrace.app.flameView;
    const r = v.flame.rects.find((x) => x.node === v.root);
    return { root: v.root, w: r.w, width: v.flame.canvas.clientWidth, crumbs: document.querySelectorAll('#flame-crumbs button').length, funky: v.funkyFn };
  });
  assert.equal(zoomed.root, target.node);
  assert.ok(Math.abs(zoomed.w - zoomed.width) < 1);
  assert.ok(zoomed.crumbs >= 2);
  assert.equal(zoomed.funky, target.fn, 'the funky graph is centred on the clicked function');
  assert.match(await page.locator('#funky-title').innerText(), /Funky graph: /);
  // The clicked function's clusters and outliers are listed in the table panel.
  const listed = await page.evaluate(() => [...document.querySelectorAll('#table-wrap tbody tr')].length);
  const expected = data.model.clusters.filter((c) => c.function === target.fn).length +
    data.model.outliers.filter((o) => o.function === target.fn).length +
    (data.flame_scopes.functions.some((e) => e.function === target.fn) ? 1 : 0); // its outliers' flame graph
  assert.equal(listed, expected);
  assert.match(await page.locator('#tabs').innerText(), /Frame: /);
  await page.locator('#flame-crumbs button').first().click();
  assert.equal(await page.evaluate(() => window.shapetrace.app.flameView.root), 0);

  // The funky graph's root: the function's inclusive weight, the sum over its top-most frames.
  const funky = await page.evaluate(() => window.shapetrace.app.flameView.funkyUp.weight[1]);
  assert.ok(Math.abs(funky - matched) / matched < 1e-9, `funky root ${funky} vs ${matched}`);
  // Scope: one thread's graph, labelled as the timeline labels it; its root weight is that
  // thread's own.
  const options = await page.locator('#flame-scope option').evaluateAll((os) => os.filter((o) => /^\d+$/.test(o.value)).map((o) => o.textContent));
  assert.equal(options.length, flame.threads.length);
  assert.ok(options.includes('worker-0'), options.join(', '));
  const index = options.indexOf('worker-0');
  await page.selectOption('#flame-scope', String(index));
  const threadWeight = await page.evaluate(() => window.shapetrace.app.flameView.tree.weight[0]);
  const t = flame.threads[index];
  const own = t.nodes.reduce((sum, id, i) => sum + (n.parent[id] === 0 ? t.total_ns[i] : 0), 0);
  assert.equal(threadWeight, own);
  await saveScreenshot(page, 'flame-zoomed');
  assert.deepEqual(page.problems, []);
  await page.close();
});

// The root weight of a tree in the extension's columns: the sum over its top frames of
// max(total, the weight below), as the page weighs a frame.
function rootWeight(nodes) {
  const n = nodes.parent.length, weight = new Float64Array(n), below = new Float64Array(n);
  for (let i = n - 1; i > 0; --i) { weight[i] = Math.max(nodes.total_ns[i], below[i]); below[nodes.parent[i]] += weight[i]; }
  return below[0];
}

test('scopes: the visible range, a cluster, outliers against typical calls, one call', { timeout: 120_000 }, async () => {
  const flame = data.model.extensions.flame, scopes = data.flame_scopes;
  assert.ok(flame.slices.slices.length > 3, 'time slices in the model');
  assert.ok(scopes.complete && scopes.clusters.length === data.model.clusters.filter((c) => c.stats.count > 0).length);
  const page = await openReport();
  const view = () => page.evaluate(() => {
    const v = window.shapetrace.app.flameView;
    return { weight: v.tree.weight[0], label: v.section.dataset.scopeLabel, capped: v.section.dataset.scopeCapped,
      top: v.tree.children[0].map((c) => v.tree.fn[c]), frames: Number(v.flame.canvas.dataset.frames) };
  });

  // The visible range: the slices overlapping it, summed here; the graph follows the timeline.
  await page.selectOption('#flame-scope', 'range');
  const sl = flame.slices, first = sl.slices[0].start_ns;
  const from = first + 5 * sl.width_ns + sl.width_ns / 2, to = first + 9 * sl.width_ns + sl.width_ns / 4;
  await page.evaluate(([a, b]) => window.shapetrace.app.timeline.setView(a, b), [from, to]);
  const expectedRange = (() => {
    const n = flame.nodes.parent.length, total = new Float64Array(n);
    for (const s of sl.slices)
      if (s.start_ns + sl.width_ns > from && s.start_ns < to) s.nodes.forEach((id, i) => { total[id] += s.total_ns[i]; });
    return rootWeight({ parent: flame.nodes.parent, total_ns: total });
  })();
  await page.waitForFunction((w) => Math.abs(window.shapetrace.app.flameView.tree.weight[0] - w) < 1e-6, expectedRange);
  let v = await view();
  assert.ok(v.weight > 0 && v.frames > 1);
  assert.match(v.label, /calls that ended in .* rounded out to 5 slices of/);
  await saveScreenshot(page, 'flame-range');

  // A cluster: the side panel's button shows the tree embedded for it.
  const busiest = scopes.clusters.find((c) => c.roots > 100);
  await page.evaluate((id) => window.shapetrace.app.clusterPanel.show(id), busiest.cluster);
  await page.locator('#cluster-panel .cluster-flame').click();
  v = await view();
  assert.equal(await page.locator('#flame-scope').inputValue(), 'cluster');
  assert.equal(v.weight, rootWeight(busiest.nodes));
  assert.deepEqual(v.top, [data.model.clusters[busiest.cluster].function], 'rooted at the cluster\'s function');
  assert.match(v.label, new RegExp(`cluster #${busiest.cluster} .*: ${busiest.roots.toLocaleString('en-US')} calls`));
  assert.equal(v.capped, 'false');

  // A shape of that cluster: its button in the side panel.
  const shape = scopes.shapes.find((e) => e.cluster === busiest.cluster);
  await page.locator(`#cluster-panel .shape-flame[data-shape="${shape.shape}"]`).click();
  v = await view();
  assert.equal(await page.locator('#flame-scope').inputValue(), 'shape');
  assert.equal(v.weight, rootWeight(shape.nodes));
  assert.equal(shape.roots, shape.calls);
  assert.match(v.label, new RegExp(`shape #${shape.shape} of cluster #${busiest.cluster} .*: ${shape.roots.toLocaleString('en-US')} calls`));

  // A function's outliers: from the Frame tab of a frame of that function.
  const entry = scopes.functions[0];
  await page.evaluate((fn) => { const app = window.shapetrace.app; app.flameFocus = fn; app.tables.show('flameFunction'); }, entry.function);
  await page.locator('#table-wrap tbody tr', { hasText: 'outlier calls against its typical calls' }).click();
  v = await view();
  assert.equal(await page.locator('#flame-scope').inputValue(), 'outliers');
  assert.ok(await page.locator('#flame-function').isVisible());
  assert.equal(v.weight, rootWeight(entry.outliers.nodes));
  assert.match(v.label, new RegExp(`${entry.outliers.roots} outlier calls of .* against ${entry.typical.roots.toLocaleString('en-US')} typical calls`));
  await page.selectOption('#flame-scope', 'typical');
  assert.equal((await view()).weight, rootWeight(entry.typical.nodes));
  await saveScreenshot(page, 'flame-outliers');

  // One call: an outlier opened (as its table row opens it), then the instance view's button; its
  // tree weighs the call's duration.
  // (A call three levels deep at least, for the funky graph below.)
  const inst = data.instances.find((i) => i.reason === 'outlier' && !i.omitted_calls && i.calls.some((c) => c[1] >= 2));
  assert.ok(inst, 'an outlier call three levels deep');
  await page.evaluate((o) => window.shapetrace.app.openOutlier(window.shapetrace.app.model.outliers.find((x) => x.start_ns === o.start_ns && x.function === o.function)), inst);
  await page.locator('#instance-panel .instance-flame').click();
  assert.equal(await page.locator('#flame-scope').inputValue(), 'instance');
  v = await view();
  assert.equal(v.weight, inst.duration_ns);
  assert.deepEqual(v.top, [inst.function]);
  assert.match(v.label, /one call of .* \(outlier\)/);

  // The funky graph of a function inside that call: its calls, inclusive and exclusive time, and
  // each callee's inclusive time equal direct sums over the call's embedded calls.
  const calls = inst.calls, parentOf = [], open = [];
  calls.forEach(([, depth], i) => { open.length = depth; parentOf[i] = depth ? open[depth - 1] : -1; open.push(i); });
  const dur = (i) => calls[i][3] - calls[i][2];
  const counts = new Map();
  // The function below the root with the most calls that call others.
  calls.forEach(([f], i) => { if (i > 0 && parentOf.includes(i)) counts.set(f, (counts.get(f) ?? 0) + 1); });
  const F = [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0];
  const ofF = calls.map((c, i) => i).filter((i) => calls[i][0] === F);
  const under = (i, f) => { for (let a = parentOf[i]; a >= 0; a = parentOf[a]) if (calls[a][0] === f) return true; return false; };
  const direct = { calls: ofF.length, incl: 0, self: 0, callees: new Map() };
  for (const i of ofF) {
    if (!under(i, F)) direct.incl += dur(i);
    const kids = calls.map((c, j) => j).filter((j) => parentOf[j] === i);
    direct.self += Math.max(0, dur(i) - kids.reduce((sum, j) => sum + dur(j), 0));
    for (const j of kids) direct.callees.set(calls[j][0], (direct.callees.get(calls[j][0]) ?? 0) + dur(j));
  }
  assert.ok(ofF.every((i) => !under(i, F)), 'no recursion of the function in this call');
  assert.ok(direct.callees.size > 0 && direct.self < direct.incl);
  const funky = await page.evaluate((fn) => {
    const fv = window.shapetrace.app.flameView;
    fv.funkyFn = fn; fv.draw();
    const up = fv.funkyUp;
    return { calls: up.calls[1], incl: up.weight[1], self: up.self[1], callers: fv.funkyDown.weight[1],
      callees: up.children[1].map((c) => [up.fn[c], up.weight[c]]) };
  }, F);
  assert.equal(funky.calls, direct.calls);
  assert.equal(funky.incl, direct.incl);
  assert.equal(funky.self, direct.self);
  assert.equal(funky.callers, direct.incl, 'the callers half weighs the function\'s frames');
  assert.deepEqual(new Map(funky.callees), direct.callees);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('a report whose scope trees were capped says so', { timeout: 120_000 }, async () => {
  const capped = path.join(work, 'capped.html');
  const out = execFileSync(shapetrace, ['report', path.join(work, 'rec'), '-o', capped, '--flame-scope-events', '3000', '--flame-scope-clusters', '2']).toString();
  assert.match(out, /scoped flame graphs: 2 clusters, \d+ shapes, outliers of \d+ functions, from \d+ of \d+ events \(--flame-scope-events/);
  const cappedData = embeddedData(await readFile(capped, 'utf8'));
  assert.equal(cappedData.flame_scopes.complete, false);
  const page = await openPage(browser.context, capped);
  await page.waitForSelector('body[data-ready="true"]');
  const id = cappedData.flame_scopes.clusters[0].cluster;
  await page.evaluate((c) => window.shapetrace.app.flameView.showCluster(c), id);
  let label = page.locator('#flame-scope-label');
  assert.match(await label.innerText(), /the report read \d+(\.\d)?% of the events/);
  assert.match(await label.getAttribute('class'), /capped/);
  // A cluster past --flame-scope-clusters has no graph, and the page says why; its panel no button.
  const other = cappedData.model.clusters.map((c) => c.id).find((c) => !cappedData.flame_scopes.clusters.some((e) => e.cluster === c));
  await page.evaluate((c) => window.shapetrace.app.clusterPanel.show(c), other);
  assert.equal(await page.locator('#cluster-panel .cluster-flame').count(), 0);
  await page.evaluate((c) => window.shapetrace.app.flameView.showCluster(c), other);
  assert.match(await label.innerText(), /is not among the 2 clusters with the most time/);
  assert.deepEqual(page.problems, []);
  await page.close();
  // A page bound that no tree fits: every scoped graph is left out, and the page says why.
  const bounded = path.join(work, 'bounded.html');
  execFileSync(shapetrace, ['report', path.join(work, 'rec'), '-o', bounded, '--flame-scope-total-nodes', '1']);
  const boundedData = embeddedData(await readFile(bounded, 'utf8'));
  assert.ok(boundedData.flame_scopes.clusters.every((e) => e.nodes === null));
  const page2 = await openPage(browser.context, bounded);
  await page2.waitForSelector('body[data-ready="true"]');
  await page2.evaluate((c) => window.shapetrace.app.flameView.showCluster(c), boundedData.flame_scopes.clusters[0].cluster);
  assert.match(await page2.locator('#flame-scope-label').innerText(), /left out to bound the page/);
  assert.deepEqual(page2.problems, []);
  await page2.close();
});

test('a 10^6-node flame graph redraws quickly (printed, not asserted)', { timeout: 120_000 }, async () => {
  const page = await openReport();
  const ms = await page.evaluate(() => {
    const n = 1_000_000;
    const parent = new Int32Array(n), fn = new Int32Array(n), calls = new Float64Array(n), self = new Float64Array(n), total = new Float64Array(n);
    parent[0] = -1; fn[0] = -1;
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (let i = 1; i < n; ++i) { parent[i] = Math.floor(rnd() * i); fn[i] = Math.floor(rnd() * 500); calls[i] = 1; self[i] = 1 + Math.floor(rnd() * 1000); }
    for (let i = n - 1; i > 0; --i) { total[i] += self[i]; total[parent[i]] += total[i]; }
    const v = window.shapetrace.app.flameView;
    v.tree = ST.flame.finish({ parent, fn, calls, self, total });
    v.root = 0;
    const t0 = performance.now();
    ST.flame.index(v.tree); // once per tree: the depth-first order every zoom reads
    const indexMs = performance.now() - t0;
    const times = [];
    for (let k = 0; k < 5; ++k) { const t0 = performance.now(); v.flame.draw(v.tree, 0, [], { ...v.state, weights: ST.flame.functionWeights(v.tree, 0), rootWeight: v.tree.weight[0] }); times.push(performance.now() - t0); }
    const t1 = performance.now(); v.flame.draw(v.tree, 0, [], v.state); const drawOnly = performance.now() - t1;
    return { times, drawOnly, indexMs };
  });
  console.log(`10^6-node flame graph: index (once per tree) ${ms.indexMs.toFixed(1)} ms; zoom (function weights, layout, draw) ${ms.times.map((t) => t.toFixed(1)).join(', ')} ms; redraw on hover or search (layout, draw) ${ms.drawOnly.toFixed(1)} ms`);
  await page.close();
});
