// The summary view and the comparison view ("why was this call slow", analyzer/report/page/
// summary.js and compare.js) in headless Chromium, on a report of the service fixture
// (tests/report): every thread's phases from the "summaries" extension, as boxes whose heights grow
// with the log of their events, repetitions labelled with their count, hover listing a phase's
// events; an opened call's own summary; and an outlier aligned with a typical call of its
// function: two rows of boxes and the conservation line, the divergences and the aligned rows,
// each checked against the embedded data.
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
  work = await mkdtemp(path.join(tmpdir(), 'shapetrace-summaries-browser-'));
  execFileSync(fixture, [path.join(work, 'rec')]);
  reportFile = path.join(work, 'report.html');
  // Every outlier compared: the 30 that lost the most time are all cold-page gets (same work,
  // slower), and the test needs puts that split a page (did more work) too.
  execFileSync(shapetrace, ['report', path.join(work, 'rec'), '-o', reportFile, '--comparisons', '200']);
  data = embeddedData(await readFile(reportFile, 'utf8'));
  browser = await launchBrowser({ viewport: { width: 1500, height: 1300 } });
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

const fnName = (code) => {
  const f = data.model.functions[code >= 0 ? code : -1 - code].name;
  return f.replace(/\(.*$/, '');
};

test('the summary view shows a thread\'s phases, heights on a log scale, repetitions counted', { timeout: 120_000 }, async () => {
  const threads = data.model.extensions.summaries.threads;
  assert.ok(threads.length >= 4, 'the report runs the summaries extension');
  const page = await openReport();
  await page.locator('#summary-panel').scrollIntoViewIfNeeded();
  // The thread with the most summarised events is shown first.
  const busiest = threads.map((t, i) => ({ t, i })).sort((x, y) => y.t.events - x.t.events || x.i - y.i)[0];
  assert.equal(await page.locator('#summary-scope').inputValue(), `thread:${busiest.i}`);
  const phases = busiest.t.phases;
  assert.equal(Number(await page.locator('#summary-panel').getAttribute('data-phases')), phases.length);
  const boxes = await page.evaluate(() => [...document.querySelectorAll('#summary-body .summary-phase')].map((b) => ({
    h: b.getBoundingClientRect().height, events: Number(b.dataset.events), repeat: Number(b.dataset.repeat), text: b.textContent })));
  assert.equal(boxes.length, phases.length);
  for (const [i, b] of boxes.entries()) {
    assert.equal(b.events, phases[i].events);
    assert.ok(Math.abs(b.h - Math.round(16 + 10 * Math.log2(b.events))) <= 1, `phase ${i}: height ${b.h} for ${b.events} events`);
  }
  // Twice the events, 10 px taller: a logarithmic scale.
  const repeated = boxes.findIndex((b) => b.repeat > 1);
  assert.ok(repeated >= 0, 'a repetition among the phases');
  assert.match(boxes[repeated].text, new RegExp(`^${phases[repeated].repeat} ×`));
  assert.ok(boxes[repeated].text.includes(`+${fnName(phases[repeated].label[0])}`), boxes[repeated].text);

  // Hover: the events the phase stands for.
  const box = page.locator('#summary-body .summary-phase').nth(repeated);
  await box.hover();
  const tooltip = await page.locator('#tooltip').innerText();
  assert.match(tooltip, new RegExp(`${phases[repeated].repeat} repetitions of`));
  for (const code of phases[repeated].label.slice(0, 3))
    assert.ok(tooltip.includes(`${code >= 0 ? '+' : '-'}${fnName(code)}`), tooltip);
  await saveScreenshot(page.locator('#summary-panel'), 'summary-thread');

  // Another thread, chosen from the list.
  const other = threads.findIndex((t, i) => i !== busiest.i && t.phases.length > 0);
  await page.selectOption('#summary-scope', `thread:${other}`);
  assert.equal(Number(await page.locator('#summary-panel').getAttribute('data-phases')), threads[other].phases.length);
  assert.deepEqual(page.problems, []);
});

test('an opened call is summarised, and an outlier is compared with a typical call', { timeout: 120_000 }, async () => {
  assert.ok(data.comparisons.length > 0, 'the report embeds comparisons');
  // An outlier that did more work than its typical call: its comparison has divergences.
  const index = data.comparisons.findIndex((c) => c.divergences.length > 0);
  assert.ok(index >= 0, 'an outlier that did more work');
  const c = data.comparisons[index];
  const outlier = data.instances[c.outlier];
  const typical = data.instances[c.typical];
  assert.equal(outlier.reason, 'outlier');
  assert.equal(typical.reason, 'typical');
  assert.equal(typical.function, outlier.function);
  assert.ok(typical.duration_ns < outlier.duration_ns);

  const page = await openReport();
  // Opening the outlier (as a click on its mark does) shows it beside its typical call.
  await page.evaluate((id) => {
    const app = window.shapetrace.app;
    app.openInstance({ instance: app.model.instances[id], exact: true }, null);
  }, c.outlier);
  await page.locator('#compare-panel').scrollIntoViewIfNeeded();
  assert.equal(await page.locator('#compare-panel').getAttribute('data-comparison'), String(index));
  assert.equal(Number(await page.locator('#compare-canvas').getAttribute('data-columns')), c.rows.length);
  const head = await page.locator('#compare-head').innerText();
  assert.match(head, new RegExp(`score ${c.score} \\(match 1, mismatch -1, gap -1\\)`));
  assert.match(head, new RegExp(`${c.only_a} only in the outlier`));
  // Which call it is compared with, and why: its own shape when the analysis judged it the same
  // work done slower, else the nearest common shape of its function (docs/summaries.md).
  assert.equal(await page.locator('#compare-head [data-typical-reason]').innerText(), `compared with ${c.typical_reason}`);
  let own = 0, other = 0;
  for (const each of data.comparisons) {
    const o = data.instances[each.outlier], t = data.instances[each.typical];
    const judged = data.model.outliers.find((x) => x.start_ns === o.start_ns && x.thread === o.thread);
    assert.ok(judged, 'the comparison is of an outlier the analysis judged');
    if (judged.shape_outlier) {
      own += 1;
      assert.equal(t.shape, o.shape, 'the same work is compared with a call of its own shape');
      assert.match(each.typical_reason, /^its own shape \(\d+ calls\): it did the same work as they do, slower$/);
    } else {
      other += 1;
      assert.notEqual(t.shape, o.shape, 'other work is compared with another shape');
      assert.match(each.typical_reason, new RegExp(`^it did other work than its function's usual calls \\(shape #${o.shape}, \\d+ calls?\\); shape #${t.shape} is the common shape of the function nearest to it`));
    }
  }
  assert.ok(own > 0 && other > 0, `both kinds of comparison (${own} same work, ${other} other work)`);
  // The divergences, in the page's words.
  const items = await page.locator('#compare-divergences li').allInnerTexts();
  assert.equal(items.length, c.divergences.length);
  assert.ok(items[0].includes('only the outlier has') || items[0].includes('the outlier has'), items[0]);
  // The aligned rows: one per row of the alignment, gaps where one side has nothing.
  const rows = await page.evaluate(() => [...document.querySelectorAll('#compare-rows tbody tr')].map((tr) => ({
    kind: tr.dataset.kind, gaps: [...tr.querySelectorAll('td.gap')].length })));
  assert.equal(rows.length, c.rows.length);
  for (const [i, [kind, , a, b]] of c.rows.entries()) {
    assert.equal(rows[i].kind, kind);
    assert.equal(rows[i].gaps, (a === null) + (b === null));
  }
  // The conservation line is thick over the matched columns: sample its middle row of pixels.
  const thick = await page.evaluate(() => {
    const v = window.shapetrace.app.compareView;
    const g = v.canvas.getContext('2d');
    const dpr = window.devicePixelRatio || 1;
    const y = Math.round((ST.CompareView.kRowH * 1.5 - 3) * dpr);
    return v.boxes.filter((b) => b.side === 'outlier').map((b) => {
      const p = g.getImageData(Math.round((b.x + b.w / 2) * dpr), y, 1, 1).data;
      return { kind: b.kind, dark: p[3] > 0 && p[0] < 100 };
    });
  });
  for (const t of thick) assert.equal(t.dark, t.kind === 'match', JSON.stringify(thick));
  await saveScreenshot(page.locator('#compare-panel'), 'compare-outlier');

  // The opened call's own summary.
  await page.locator('#summary-panel').scrollIntoViewIfNeeded();
  assert.equal(await page.locator('#summary-scope').inputValue(), 'instance');
  assert.equal(Number(await page.locator('#summary-panel').getAttribute('data-phases')), outlier.summary.phases.length);
  await saveScreenshot(page.locator('#summary-panel'), 'summary-call');
  assert.deepEqual(page.problems, []);
});
