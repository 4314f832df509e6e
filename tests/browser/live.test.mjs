// The live page in headless Chromium: `shapetrace live` serves it on 127.0.0.1 while nothing is
// published (the page says it is waiting for the collector), then the fixture publisher
// (tests/report) sends the service trace over a real ZeroMQ PUB socket, and the page fills in
// without a reload: threads and clusters appear in the header, ribbons are drawn, hovering shows a
// cluster's shapes and statistics, the recent-window tabs list the clusters of the last minute with
// their new shapes; with --recording a click opens the exact call. Screenshots are saved as
// artifacts.
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
  // The headline says how much of what arrived is analysed: everything, once the stream is over.
  await page.waitForFunction(() => document.querySelector('[data-summary="events analysed"] b')?.textContent === '17.4k of 17.4k',
                             null, { timeout: 30_000 });
  assert.equal(await page.locator('[data-summary="events analysed"]').getAttribute('class'), 'chip');
  assert.equal(await page.locator('[data-summary="items missed"]').count(), 0);

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

  // The recent windows: the last minute holds every cluster (the whole trace is seconds old), and
  // every shape is new since the page was opened (it was opened before anything was published).
  await page.locator('#tabs button', { hasText: 'Last 1 min' }).click();
  const recent = await page.evaluate(() => {
    const m = window.shapetrace.app.model, r = m.data.recent;
    return { clusters: r.windows[0].clusters.length, shapes: r.windows[0].new_shapes.length,
      rows: document.querySelectorAll('table[data-table="recent0"] tbody tr').length,
      opened: document.querySelectorAll('table[data-table="recent0"] .recent-opened').length,
      withCalls: m.clusters.filter((c) => c.stats.count > 0 || c.calls > 0).length };
  });
  assert.equal(recent.rows, recent.clusters);
  assert.equal(recent.clusters, recent.withCalls);
  assert.equal(recent.shapes, 17, 'every shape is new in the last minute');
  assert.equal(recent.opened, recent.rows, 'every cluster has shapes new since the page was opened');
  await saveScreenshot(page, 'live-recent');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('with --recording, a click opens the exact call from the collector\'s recording', { timeout: 120_000 }, async () => {
  const fixture = process.env.SHAPETRACE_REPORT_FIXTURE;
  assert.ok(fixture, 'SHAPETRACE_REPORT_FIXTURE must be set (run through ctest)');
  const { mkdtemp, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const path = await import('node:path');
  const work = await mkdtemp(path.join(tmpdir(), 'shapetrace-live-click-'));
  // The recording a collector would write of the same trace the publisher sends.
  await runToEnd(fixture, [path.join(work, 'rec')]);
  const ep = `tcp://127.0.0.1:${await freePort()}`;
  const server = spawn(shapetrace, ['live', '--connect', ep, '--http', '127.0.0.1:0', '--interval', '0.3',
    '--recording', path.join(work, 'rec')], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const address = await new Promise((resolve, reject) => {
      let out = '';
      server.stdout.on('data', (d) => {
        out += d;
        const m = out.match(/serving (http:\/\/127\.0\.0\.1:\d+\/)/);
        if (m) resolve(m[1]);
      });
      server.on('exit', (code) => reject(new Error(`shapetrace live exited ${code}`)));
    });
    const page = await openPage(browser.context, address);
    await page.waitForSelector('body[data-ready="true"]');
    await runToEnd(publisherBinary, [ep, '--seconds', '1']);
    await page.waitForFunction(() => document.querySelector('[data-summary="calls"] b')?.textContent === '8,697',
                               null, { timeout: 30_000 });
    assert.match(await page.locator('#notice').innerText(), /a click opens the exact call/);

    // An outlier: the exact call the analyzer judged.
    const outlier = await page.evaluate(() => {
      const app = window.shapetrace.app;
      const o = app.model.outliers[0];
      app.openOutlier(o);
      return { start: o.start_ns, duration: o.duration_ns, fn: o.function };
    });
    await page.waitForSelector('#instance-panel.has-instance');
    const shown = await page.evaluate(() => window.shapetrace.app.instanceView.instance);
    assert.equal(shown.reason, 'outlier');
    assert.equal(shown.duration_ns, outlier.duration);
    assert.equal(shown.function, outlier.fn);
    assert.ok(Math.abs(shown.start_ns - outlier.start) < 1000);

    // A click on a cluster's ribbon: a call of that cluster, read from the recording.
    const handle = await page.evaluate(() => {
      const m = window.shapetrace.app.model;
      const fn = m.functions.findIndex((f) => f.name === 'kv::Server::handle(kv::Request const&)');
      return m.clusters.find((c) => c.function === fn).id;
    });
    await page.evaluate(() => { document.getElementById('instance-panel').classList.remove('has-instance'); });
    // What a click on the cluster's first occurrence cell hands the app (a mouse click at a
    // ribbon can land on an outlier mark, which opens the outlier instead).
    await page.evaluate((id) => {
      const app = window.shapetrace.app, m = app.model;
      const thread = m.threads.find((t) => t.ribbonOfCluster.has(id));
      const cell = thread.ribbons[thread.ribbonOfCluster.get(id)].clusters.find((e) => e.cluster === id).cells[0];
      app.onClick({ thread, cluster: id, t: cell[0] * m.binNs, cell, row: { kind: 'ribbon' } });
    }, handle);
    await page.waitForSelector('#instance-panel.has-instance');
    const clicked = await page.evaluate(() => window.shapetrace.app.instanceView.instance);
    assert.equal(clicked.reason, 'live');
    assert.equal(clicked.cluster, handle);
    assert.ok(clicked.calls.length >= 3, 'the call with its callees');
    await saveScreenshot(page, 'live-click-through');

    // The flame graph of the timeline's visible range and of one cluster, read from the recording.
    await page.locator('#flame-scope').selectOption('window');
    await page.waitForFunction(() => /every thread, .* from the run's start/.test(document.getElementById('flame-panel').dataset.scopeLabel ?? ''), null, { timeout: 30_000 });
    const windowFrames = await page.evaluate(() => Number(document.getElementById('flame-canvas').dataset.frames));
    assert.ok(windowFrames > 3, `frames of the window's flame graph: ${windowFrames}`);
    await page.evaluate((id) => window.shapetrace.app.clusterPanel.show(id, true), handle);
    await page.locator('#cluster-panel .cluster-flame').click();
    await page.waitForFunction(() => /cluster/.test(document.getElementById('flame-panel').dataset.scopeLabel ?? ''), null, { timeout: 30_000 });
    const clusterRoot = await page.evaluate(() => {
      const v = window.shapetrace.app.flameView;
      return v.tree.children[0].map((c) => v.name(v.tree.fn[c]));
    });
    assert.deepEqual(clusterRoot, ['kv::Server::handle(kv::Request const&)'], 'the cluster\'s calls are the roots');
    await saveScreenshot(page, 'live-cluster-flame');
    // The time slices of the live model: the whole run's range holds every finished call, so its
    // graph weighs what the whole-run graph weighs.
    const weightOf = (scope) => page.evaluate((sc) => {
      const v = window.shapetrace.app.flameView;
      document.getElementById('flame-scope').value = sc;
      v.rebuild();
      return v.tree.weight[0];
    }, scope);
    await page.evaluate(() => window.shapetrace.app.timeline.fit());
    const whole = await weightOf('all');
    assert.ok(whole > 0);
    assert.equal(await weightOf('range'), whole);
    // The call opened in the instance view, from its button.
    await page.locator('#instance-panel .instance-flame').click();
    assert.equal(await page.locator('#flame-scope').inputValue(), 'instance');
    assert.equal(await page.evaluate(() => window.shapetrace.app.flameView.tree.weight[0]), clicked.duration_ns);
    assert.deepEqual(page.problems, []);
    await page.close();
  } finally {
    server.kill('SIGTERM');
    await rm(work, { recursive: true, force: true });
  }
});
