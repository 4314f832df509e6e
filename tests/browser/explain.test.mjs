// The Explain view (analyzer/explain/page/explain.js) in headless Chromium, on the report of the
// service fixture (tests/report) whose requests annotate their size and whose time grows with it,
// much faster for puts that split a page: the scatter plot draws every point and both fitted lines
// (on a linear time axis, a logarithmic one when asked),
// the tree's root names a function of the split path, and a click on it opens that function's
// callers. A report without --explain-function has no Explain view.
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
let browser, work, reportFile, plainFile, data;

before(async () => {
  assert.ok(shapetrace && fixture, 'SHAPETRACE_BINARY and SHAPETRACE_REPORT_FIXTURE must be set (run through ctest)');
  work = await mkdtemp(path.join(tmpdir(), 'shapetrace-explain-browser-'));
  const rec = path.join(work, 'rec');
  execFileSync(fixture, [rec, '--sizes', '--split-share', '0.2']);
  reportFile = path.join(work, 'report.html');
  execFileSync(shapetrace, ['report', rec, '-o', reportFile, '--explain-function', 'kv::Server::handle',
    '--explain-input', 'size', '--explain-clusters', '2']);
  plainFile = path.join(work, 'plain.html');
  execFileSync(shapetrace, ['report', rec, '-o', plainFile]);
  data = embeddedData(await readFile(reportFile, 'utf8'));
  browser = await launchBrowser({ viewport: { width: 1600, height: 1400 } });
});
after(async () => {
  await browser?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

test('the explain view draws the clusters and lines and links the tree to the calls it names', { timeout: 120_000 }, async () => {
  const explain = data.model.extensions.explain;
  assert.ok(explain && !explain.error, JSON.stringify(explain?.error));
  assert.equal(explain.k, 2);
  const root = explain.tree.nodes[0];
  assert.match(root.predicate, /splitPage|writePage/, root.predicate);
  assert.equal(root.ref.kind, 'function');

  const page = await openPage(browser.context, reportFile);
  await page.waitForSelector('body[data-ready="true"]');
  const panel = page.locator('#explain-panel');
  await panel.scrollIntoViewIfNeeded();
  assert.equal(await panel.isVisible(), true);
  const canvas = page.locator('#explain-scatter');
  assert.equal(Number(await canvas.getAttribute('data-points')), explain.data.length);
  assert.equal(Number(await canvas.getAttribute('data-lines')), 2);
  // The fixture's times span less than a hundredfold: a linear axis, which the checkbox switches.
  assert.equal(await canvas.getAttribute('data-scale'), 'linear');
  await page.locator('#explain-log').check();
  assert.equal(await canvas.getAttribute('data-scale'), 'log');
  const legend = await page.locator('#explain-legend .explain-key').allTextContents();
  assert.equal(legend.length, 2);
  assert.match(legend.join(' '), /× size/);
  const title = await page.locator('#explain-tree-title').textContent();
  assert.match(title, new RegExp(`accuracy ${(100 * explain.tree.accuracy).toFixed(1)}%`));
  const leaves = await page.locator('#explain-tree .explain-leaf').count();
  assert.equal(leaves, explain.tree.leaves);
  await saveScreenshot(panel, 'report-explain');

  // The root's function, clicked: the Callers tab focused on it.
  const link = page.locator('#explain-tree a.explain-link').first();
  assert.equal(Number(await link.getAttribute('data-function')), root.ref.function);
  await link.click();
  assert.equal(await page.locator('#tabs button.active').getAttribute('data-tab'), 'callers');
  assert.equal(await page.evaluate(() => window.shapetrace.app.callersFocus), root.ref.function);
});

test('a report without --explain-function has no explain view', { timeout: 60_000 }, async () => {
  const page = await openPage(browser.context, plainFile);
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await page.locator('#explain-panel').isVisible(), false);
});
