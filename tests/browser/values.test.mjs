// Recorded arguments and return values in the report (#35), in headless Chromium: the service
// fixture recorded as a build with SHAPETRACE_PASS_ARGS would record it (find, insert and
// Node::search their key as arg2, find its result, respond its status) is turned into report.html.
// What the page shows of an exact call (the instance view's title and tooltips, the comparison's
// outlier and typical call, the flame graph of one call) is checked against `shapetrace dump` of
// the same recording, read here independently of the report: an outlier's recorded values, not
// the values of some other call of its function.
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
// `${thread}:${start}:${end}:${function}` -> the values dump shows for that call, as the page
// writes a call's values: its arguments, then its return value ("arg2=81 = 0x7f3a00001440").
const dumped = new Map();

// Dump's lines, each thread's calls rebuilt with a stack: "1000123 4242/10   -> kv::BTree::find(
// unsigned long) arg2=81" (a name has spaces: its values start at the first " argN=" or " = "),
// and the values a batch's end cut from their enter on a line of their own ("# NAME arg2=81").
function readDump(text) {
  const stacks = new Map();
  const split = (rest) => {
    const at = rest.search(/ (arg\d+=|= )/);
    return at < 0 ? [rest, ''] : [rest.slice(0, at), rest.slice(at + 1)];
  };
  for (const line of text.split('\n')) {
    const m = /^(\d+) \d+\/(\d+) +(->|<-|<~|# )(.*)$/.exec(line);
    if (!m) continue;
    const [, time, thread, mark, rest] = m;
    if (!stacks.has(thread)) stacks.set(thread, []);
    const stack = stacks.get(thread);
    const [name, values] = split(mark === '# ' ? rest : rest.trimStart());
    if (mark === '->') { stack.push({ name, start: time, values: values ? [values] : [] }); continue; }
    const top = stack[stack.length - 1];
    if (mark === '# ') { if (top && name === top.name && values) top.values.push(values); continue; }
    stack.pop();
    if (values) top.values.push(values);
    if (top.values.length) dumped.set(`${thread}:${top.start}:${time}:${top.name}`, top.values.join(' '));
  }
}

before(async () => {
  assert.ok(shapetrace && fixture, 'SHAPETRACE_BINARY and SHAPETRACE_REPORT_FIXTURE must be set (run through ctest)');
  work = await mkdtemp(path.join(tmpdir(), 'shapetrace-values-browser-'));
  const rec = path.join(work, 'rec');
  execFileSync(fixture, [rec, '--values']);
  reportFile = path.join(work, 'report.html');
  execFileSync(shapetrace, ['report', rec, '-o', reportFile]);
  data = embeddedData(await readFile(reportFile, 'utf8'));
  readDump(execFileSync(shapetrace, ['dump', rec], { maxBuffer: 1 << 28 }).toString());
  assert.ok(dumped.size > 1000, `dump shows values: ${dumped.size}`);
  browser = await launchBrowser({ viewport: { width: 1600, height: 1000 } });
});
after(async () => {
  await browser?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

// What dump shows for the call `c` of instance `inst` ('' for none).
function dumpedValues(inst, c) {
  const name = data.model.functions[c[0]].name;
  return dumped.get(`${inst.thread}:${inst.start_ns + c[2]}:${inst.start_ns + c[3]}:${name}`) ?? '';
}

async function openReport() {
  const page = await openPage(browser.context, reportFile);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

test('every embedded call carries the values the recording holds for it', () => {
  let withValues = 0;
  for (const inst of data.instances)
    for (const c of inst.calls) {
      const expected = dumpedValues(inst, c);
      const shown = (c[4] ?? []).map(([p, t]) => (p === 0 ? `= ${t}` : `arg${p}=${t}`)).join(' ');
      assert.equal(shown, expected, `${data.model.functions[c[0]].name} at ${inst.start_ns + c[2]}`);
      if (shown) ++withValues;
    }
  assert.ok(withValues > 20, `calls with values: ${withValues}`);
  // Only the chosen functions have values: handle and the loops record none.
  const handle = data.model.functions.findIndex((f) => f.name.startsWith('kv::Server::handle'));
  assert.ok(data.instances.every((i) => i.calls.every((c) => c[0] !== handle || c[4] === undefined)));
});

test('an outlier shows its recorded values, in the instance view, the comparison and the flame graph', { timeout: 120_000 }, async () => {
  // An outlier compared with a typical call, both of a function that records its values.
  const c = data.comparisons.find((x) => data.instances[x.outlier].calls[0][4] && data.instances[x.typical].calls[0][4]);
  assert.ok(c, 'a comparison of calls with values');
  const outlier = data.instances[c.outlier], typical = data.instances[c.typical];
  const expected = dumpedValues(outlier, outlier.calls[0]);
  assert.match(expected, /^arg2=\d+/);
  const page = await openReport();

  // The instance view: the title, and the tooltip of the root's bar.
  await page.evaluate((o) => window.shapetrace.app.openOutlier(window.shapetrace.app.model.outliers.find((x) => x.start_ns === o.start_ns && x.function === o.function)), outlier);
  await page.locator('#instance-panel.has-instance').waitFor();
  assert.equal(Number(await page.locator('#instance-panel').getAttribute('data-instance')), c.outlier);
  assert.equal(await page.locator('#instance-title [data-call-values]').innerText(), expected);
  const bar = await page.evaluate(() => {
    const v = window.shapetrace.app.instanceView, g = v.geometry, box = v.canvas.getBoundingClientRect();
    return { x: box.left + (g.left + g.right) / 2, y: box.top + g.bottom - g.H / 2 };
  });
  await page.mouse.move(bar.x, bar.y);
  await page.locator('#tooltip [data-call-values]').waitFor();
  assert.equal(await page.locator('#tooltip [data-call-values]').innerText(), expected);
  await saveScreenshot(page, 'values-instance');

  // Why was this call slow: the outlier's values and the typical call's, each its own.
  await page.evaluate((o) => window.shapetrace.app.compareView.showOutlier(window.shapetrace.app.model.instances[o]), c.outlier);
  assert.equal(await page.locator('#compare-head [data-call-values="outlier"]').innerText(), expected);
  assert.equal(await page.locator('#compare-head [data-call-values="typical"]').innerText(),
    dumpedValues(typical, typical.calls[0]));

  // The flame graph of this one call: the root frame's tooltip, and a frame that stands for
  // several calls shows none.
  await page.locator('#instance-panel .instance-flame').click();
  const frame = async (pick) => page.evaluate((which) => {
    const v = window.shapetrace.app.flameView, t = v.tree;
    const r = v.flame.rects.filter((x) => x.node > 0 && (which === 'root' ? t.parent[x.node] === 0 : t.calls[x.node] > 1))
      .sort((a, b) => b.w - a.w)[0];
    if (!r) return null;
    const box = v.flame.canvas.getBoundingClientRect();
    return { x: box.left + r.x + r.w / 2, y: box.top + r.y + r.h / 2, calls: t.calls[r.node] };
  }, pick);
  const root = await frame('root');
  assert.equal(root.calls, 1);
  await page.mouse.move(root.x, root.y);
  await page.locator('#tooltip [data-call-values]').waitFor();
  assert.equal(await page.locator('#tooltip [data-call-values]').innerText(), expected);
  await saveScreenshot(page, 'values-flame');
  const merged = await frame('several');
  if (merged) {
    await page.mouse.move(merged.x, merged.y);
    await page.waitForFunction((n) => document.getElementById('tooltip').innerText.includes(`calls ${n}`), merged.calls.toLocaleString('en-US'));
    assert.equal(await page.locator('#tooltip [data-call-values]').count(), 0);
  }
  assert.deepEqual(page.problems, []);
  await page.close();
});
