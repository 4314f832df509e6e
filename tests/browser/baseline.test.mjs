// The comparison view (analyzer/report/page/baseline.js) in headless Chromium, on the report of the
// service fixture (tests/report) against a baseline run of it where no put splits a page: the diff's
// sentences are listed, the clusters' rows match the embedded diff (splitPage's cluster marked "new",
// insert's "slower"), and the differential flame graph colours the stacks BASE does not have (the split's) deep
// red and shows the values of both runs in its tool-tip.
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
  work = await mkdtemp(path.join(tmpdir(), 'shapetrace-baseline-browser-'));
  execFileSync(fixture, [path.join(work, 'base'), '--split-share', '0']);
  execFileSync(fixture, [path.join(work, 'new')]);
  reportFile = path.join(work, 'report.html');
  execFileSync(shapetrace, ['report', path.join(work, 'new'), '--baseline', path.join(work, 'base'), '-o', reportFile]);
  data = embeddedData(await readFile(reportFile, 'utf8'));
  browser = await launchBrowser({ viewport: { width: 1600, height: 1600 } });
});
after(async () => {
  await browser?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

test('the comparison lists the changes, the clusters side by side and the differential flame graph', { timeout: 120_000 }, async () => {
  const baseline = data.baseline;
  assert.ok(baseline, 'report --baseline embeds the comparison');
  assert.ok(baseline.diff.explanations.length > 0, 'the split is a change');
  const page = await openPage(browser.context, reportFile);
  await page.waitForSelector('body[data-ready="true"]');
  const panel = page.locator('#baseline-panel');
  await panel.scrollIntoViewIfNeeded();
  assert.equal(await panel.isVisible(), true);

  const sentences = await page.locator('#baseline-explanations li').allTextContents();
  assert.deepEqual(sentences, baseline.diff.explanations);
  assert.match(sentences.join('\n'), /splitPage/, 'the new call is named');

  // One row per cluster change, the first 25 unless every cluster is asked for.
  const rows = () => page.evaluate(() => Number(document.getElementById('baseline-ribbons').dataset.rows));
  assert.equal(await rows(), Math.min(25, baseline.diff.clusters.length));
  await page.locator('#baseline-all').check();
  assert.equal(await rows(), baseline.diff.clusters.length);
  const statuses = await page.evaluate(() => window.shapetrace.app.baselineView.rows.map((r) => [r.status, r.change.function]));
  // The split is a new cluster of splitPage; the puts that split joined insert's cluster, slower.
  assert.ok(statuses.some(([status, fn]) => status === 'new' && /splitPage/.test(fn)), JSON.stringify(statuses));
  assert.ok(statuses.some(([status, fn]) => status === 'slower' && /insert/.test(fn)), JSON.stringify(statuses));

  // The differential flame graph: frames of stacks BASE lacks are deep red, the others not.
  const frames = await page.evaluate(() => {
    const v = window.shapetrace.app.baselineView;
    return v.flame.rects.filter((r) => r.node >= 0).map((r) => ({ fn: r.fn, node: r.node, inBase: v.data.flame.in_base[r.node], fill: v.fill(r),
      x: r.x, y: r.y, w: r.w, h: r.h }));
  });
  const split = data.model.functions.findIndex((f) => /splitPage/.test(f.name));
  const splitFrames = frames.filter((f) => f.fn === split);
  assert.ok(splitFrames.length > 0, 'the split is drawn');
  for (const f of splitFrames) {
    assert.equal(f.inBase, 0);
    assert.equal(f.fill, 'rgb(200,30,30)');
  }
  assert.ok(frames.some((f) => f.inBase === 1 && f.fill !== 'rgb(200,30,30)'));

  // Hover a frame BASE has: the tool-tip gives both runs' time.
  const known = frames.filter((f) => f.inBase === 1).sort((a, b) => b.w - a.w)[0];
  const box = await page.locator('#baseline-flame').boundingBox();
  await page.mouse.move(box.x + known.x + known.w / 2, box.y + known.y + known.h / 2);
  const tip = await page.locator('#tooltip').textContent();
  assert.match(tip, /inclusive: .*\/s \(BASE .*\/s/);
  await saveScreenshot(panel, 'baseline');
  assert.deepEqual(page.problems, []);
});

test('a report without --baseline has no comparison view', { timeout: 120_000 }, async () => {
  const plain = path.join(work, 'plain.html');
  execFileSync(shapetrace, ['report', path.join(work, 'new'), '-o', plain]);
  const page = await openPage(browser.context, plain);
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await page.locator('#baseline-panel').isVisible(), false);
  assert.deepEqual(page.problems, []);
});
