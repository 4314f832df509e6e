// The live page in headless Chromium: `shapetrace live` serves it on 127.0.0.1 while nothing is
// published (the page says it is waiting for the collector), then the fixture publisher
// (tests/report) sends the service trace over a real ZeroMQ PUB socket, and the page fills in
// without a reload: threads and clusters appear in the header, ribbons are drawn, hovering shows a
// cluster's shapes and statistics. Screenshots are saved as artifacts.
//
// Environment (set by ctest, tests/report/CMakeLists.txt):
//   SHAPETRACE_BINARY             the shapetrace binary
//   SHAPETRACE_REPORT_PUBLISHER   tests/report's report_service_publisher
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { launchBrowser, openPage, saveScreenshot } from './browser.mjs';

const shapetrace = process.env.SHAPETRACE_BINARY;
const publisherBinary = process.env.SHAPETRACE_REPORT_PUBLISHER;
let browser, live, url, endpoint;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

// Runs a command to its end; rejects on a non-zero exit.
function runToEnd(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${err}`))));
  });
}

before(async () => {
  assert.ok(shapetrace && publisherBinary,
            'SHAPETRACE_BINARY and SHAPETRACE_REPORT_PUBLISHER must be set (run through ctest)');
  endpoint = `tcp://127.0.0.1:${await freePort()}`;
  live = spawn(shapetrace, ['live', '--connect', endpoint, '--http', '127.0.0.1:0', '--interval', '0.3'],
               { stdio: ['ignore', 'pipe', 'pipe'] });
  url = await new Promise((resolve, reject) => {
    let out = '', err = '';
    live.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/serving (http:\/\/127\.0\.0\.1:\d+\/)/);
      if (m) resolve(m[1]);
    });
    live.stderr.on('data', (d) => { err += d; });
    live.on('exit', (code) => reject(new Error(`shapetrace live exited ${code}: ${err}`)));
  });
  browser = await launchBrowser({ viewport: { width: 1600, height: 1000 } });
});
after(async () => {
  await browser?.close();
  live?.kill('SIGTERM');
});

test('the live page waits for the collector, then fills in as the service runs', { timeout: 120_000 }, async () => {
  const page = await openPage(browser.context, url);
  await page.waitForSelector('body[data-ready="true"]');
  const status = page.locator('#live-status');
  await page.waitForFunction((ep) => document.getElementById('live-status').textContent.includes(`waiting for collector at ${ep}`), endpoint);
  assert.equal(await page.locator('[data-summary="clusters"] b').innerText(), '0');
  await saveScreenshot(page, 'live-waiting');

  await runToEnd(publisherBinary, [endpoint, '--seconds', '2']);
  await page.waitForFunction(() => document.querySelector('[data-summary="calls"] b')?.textContent === '8,697',
                             null, { timeout: 30_000 });
  assert.equal(await page.locator('[data-summary="threads"] b').innerText(), '5');
  assert.equal(await page.locator('[data-summary="clusters"] b').innerText(), '14');
  assert.match(await status.innerText(), /live · \d+ items/);

  // Ribbons of every cluster are painted.
  const blank = await page.evaluate(() => {
    const tl = window.shapetrace.app.timeline;
    const ctx = tl.canvas.getContext('2d');
    const dpr = window.devicePixelRatio || 1;
    const rect = tl.canvas.getBoundingClientRect();
    return tl.model.clusters.filter((c) => {
      const at = tl.locate(c.id);
      if (!at) return true;
      return ctx.getImageData(Math.floor((at.x - rect.left) * dpr), Math.floor((at.y - rect.top) * dpr), 1, 1).data[3] === 0;
    }).map((c) => c.id);
  });
  await saveScreenshot(page, 'live-filled');
  assert.deepEqual(blank, [], JSON.stringify(await page.evaluate(() => {
    const tl = window.shapetrace.app.timeline;
    return { view: tl.view, t0: tl.model.t0, t1: tl.model.t1, at: tl.locate(1), h: tl.height, w: tl.width };
  })));

  // Hover shows the cluster's shapes and statistics, as in the report.
  const handle = await page.evaluate(() => {
    const m = window.shapetrace.app.model;
    const fn = m.functions.findIndex((f) => f.name === 'kv::Server::handle(kv::Request const&)');
    return m.clusters.find((c) => c.function === fn).id;
  });
  const at = await page.evaluate((id) => window.shapetrace.app.timeline.locate(id), handle);
  await page.mouse.move(at.x, at.y);
  await page.locator(`#cluster-panel .cluster-title[data-cluster="${handle}"]`).waitFor();
  assert.ok(await page.locator('#cluster-panel svg.shape-tree').count() >= 2);
  assert.match(await page.locator('#cluster-panel').innerText(), /P99/i);
  await saveScreenshot(page, 'live-running');

  // The summary view follows the run (the summaries extension runs live); comparisons need the
  // recording's exact calls, which the page says.
  assert.ok(Number(await page.locator('#summary-panel').getAttribute('data-phases')) > 0);
  assert.match(await page.locator('#summary-scope').innerText(), /thread worker-0/);
  assert.match(await page.locator('#compare-placeholder').innerText(), /need the exact calls of a recording/);
  assert.deepEqual(page.problems, []);
  await page.close();
});
