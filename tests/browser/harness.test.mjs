// Proves the browser harness on a static page of the example's own: Chromium starts headless with
// a fresh profile, the page's text is read, hovering shows information, clicking shows a detail
// view, and screenshots are saved as artifacts. The report and live-page tests use the same calls.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser, openPage, saveScreenshot } from './browser.mjs';

const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures',
                          'kvstore_threads.html');
let browser;

before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

async function assertPng(file) {
  const bytes = await readFile(file);
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
                   `${file} is not a PNG`);
  assert.ok((await stat(file)).size > 2000, `${file} is suspiciously small`);
}

test('the page loads and shows one lane per thread', { timeout: 60_000 }, async () => {
  const page = await openPage(browser.context, fixture);
  assert.equal(await page.title(), 'kvstore threads');
  const threads = await page.locator('.lane').evaluateAll((lanes) => lanes.map((l) => l.dataset.thread));
  assert.deepEqual(threads, ['client', 'worker-0', 'worker-1', 'evictor', 'flusher']);
  assert.match(await page.locator('#summary').innerText(), /1 put slowed by a page split/);
  await assertPng(await saveScreenshot(page, 'harness-page'));
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('hovering an interval shows its information', { timeout: 60_000 }, async () => {
  const page = await openPage(browser.context, fixture);
  const tooltip = page.locator('#tooltip');
  assert.equal(await tooltip.isVisible(), false);
  await page.locator('.span.split').hover();
  await tooltip.waitFor({ state: 'visible' });
  assert.equal(await tooltip.innerText(), 'split: 330 us');
  await assertPng(await saveScreenshot(page, 'harness-hover'));
  await page.locator('h1').hover();
  await tooltip.waitFor({ state: 'hidden' });
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('clicking an interval shows its call stack', { timeout: 60_000 }, async () => {
  const page = await openPage(browser.context, fixture);
  await page.locator('.span.split').click();
  const detail = page.locator('#detail');
  await detail.waitFor({ state: 'visible' });
  assert.equal(await detail.innerText(),
               'worker-1\nWorker::serve\n  Store::put\n    BTree::insert\n      BTree::splitLeaf');
  await assertPng(await saveScreenshot(detail, 'harness-detail'));
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('a page error is caught, not ignored', { timeout: 60_000 }, async () => {
  const page = await openPage(browser.context, 'data:text/html,<script>throw new Error("boom")</script>');
  assert.equal(page.problems.length, 1);
  assert.match(page.problems[0], /uncaught: boom/);
  await page.close();
});
