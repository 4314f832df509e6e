// The fleet's live page in headless Chromium, against a real fleet: a nats-server with JetStream
// (a free port, a temporary store), `shapetrace fleet --http` started first (the page waits for
// summaries), then two hosts, each `shapetrace live --nats` fed by the report tests' publisher as a
// collector's publish endpoint (different process keys and request counts, so the hosts differ).
// The page fills in without a reload with the merged model (the calls of both hosts), the tables
// carry a Hosts column (threads of one host each, clusters of both), the Hosts tab lists both, and
// the host filter reloads the page with one host's model (exactly its calls) that keeps polling
// that host's snapshot. An unknown host is a 404.
//
// Environment (set by ctest, tests/fleet/CMakeLists.txt):
//   SHAPETRACE_BINARY             the shapetrace binary
//   SHAPETRACE_REPORT_PUBLISHER   tests/report's report_service_publisher
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, openPage, saveScreenshot } from './browser.mjs';

const shapetrace = process.env.SHAPETRACE_BINARY;
const publisherBinary = process.env.SHAPETRACE_REPORT_PUBLISHER;
// The fixture's calls with the default 400 requests per worker (as live.test.mjs) and with 200.
const kCallsWeb1 = 8697, kCallsWeb2 = 4658;
let browser, nats, fleet, url, dir, natsUrl;
const children = [];

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

function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => { socket.end(); resolve(true); });
    socket.on('error', () => resolve(false));
  });
}

function start(command, args) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.err = '';
  child.stderr.on('data', (d) => { child.err += d; });
  children.push(child);
  return child;
}

function exited(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.on('exit', (code) => resolve(code));
  });
}

before(async () => {
  assert.ok(shapetrace && publisherBinary,
            'SHAPETRACE_BINARY and SHAPETRACE_REPORT_PUBLISHER must be set (run through ctest)');
  dir = await mkdtemp(path.join(os.tmpdir(), 'shapetrace-fleet-browser-'));
  const natsPort = await freePort();
  natsUrl = `nats://127.0.0.1:${natsPort}`;
  nats = start('nats-server', ['-a', '127.0.0.1', '-p', String(natsPort), '-js', '-sd', dir,
                               '-l', path.join(dir, 'nats.log')]);
  for (let i = 0; i < 200 && !(await accepts(natsPort)); ++i)
    await new Promise((r) => setTimeout(r, 50));
  assert.ok(await accepts(natsPort), 'nats-server did not start');

  fleet = start(shapetrace, ['fleet', '--nats', natsUrl, '--stream', 'S', '--http', '127.0.0.1:0',
                             '--snapshot-every', '0.3']);
  url = await new Promise((resolve, reject) => {
    let out = '';
    fleet.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/serving (http:\/\/127\.0\.0\.1:\d+\/)/);
      if (m) resolve(m[1]);
    });
    fleet.on('exit', (code) => reject(new Error(`shapetrace fleet exited ${code}: ${fleet.err}`)));
  });
  browser = await launchBrowser({ viewport: { width: 1600, height: 1000 } });
});
after(async () => {
  await browser?.close();
  for (const child of children.reverse()) {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited(child);
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

// One host: live --nats on a fresh endpoint, fed by the publisher; resolves when live has stopped
// (its last summary sent).
async function runHost(host, processKey, requests) {
  const endpoint = `tcp://127.0.0.1:${await freePort()}`;
  const live = start(shapetrace, ['live', '--connect', endpoint, '--no-http', '--duration', '5',
                                  '--nats', natsUrl, '--stream', 'S', '--host', host,
                                  '--window', '0.3']);
  const publisher = start(publisherBinary, [endpoint, '--seconds', '1', '--process', String(processKey),
                                            '--requests', String(requests)]);
  assert.equal(await exited(publisher), 0, publisher.err);
  assert.equal(await exited(live), 0, live.err);
}

const chip = (page, name) => page.locator(`[data-summary="${name}"] b`).innerText();
const column = (page, table, id) => page.evaluate(([t, c]) => {
  const head = [...document.querySelectorAll(`table[data-table="${t}"] thead th`)].map((th) => th.dataset.col);
  const index = head.indexOf(c);
  return index < 0 ? null : [...document.querySelectorAll(`table[data-table="${t}"] tbody tr`)]
    .map((tr) => tr.children[index].textContent);
}, [table, id]);

test('the fleet page waits for summaries, merges two hosts live, and filters by host', { timeout: 180_000 }, async () => {
  const page = await openPage(browser.context, url);
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForFunction((u) => document.getElementById('live-status').textContent.includes(`waiting for summaries at ${u} S`), natsUrl);
  assert.equal(await chip(page, 'calls'), '0');

  await Promise.all([runHost('web-1', 1001, 400), runHost('web-2', 2002, 200)]);
  // Exact counts from the page's model (the chip abbreviates: 13.4k).
  const total = kCallsWeb1 + kCallsWeb2;
  const calls = () => page.evaluate(() => window.shapetrace.app.model.summary.calls);
  await page.waitForFunction((t) => window.shapetrace.app.model.summary.calls === t, total,
                             { timeout: 30_000 });
  assert.equal(await chip(page, 'calls'), '13.4k');
  assert.equal(await chip(page, 'threads'), '10');
  assert.match(await page.locator('#live-status').innerText(), /live · \d+ summaries/);

  // The host filter lists both hosts.
  const options = await page.locator('#fleet-host option').allInnerTexts();
  assert.deepEqual(options, ['all 2 hosts', 'web-1', 'web-2']);

  // Clusters: the service's clusters come from both hosts.
  const clusterHosts = await column(page, 'clusters', 'hosts');
  assert.ok(clusterHosts.length > 0);
  assert.ok(clusterHosts.every((h) => h === 'web-1, web-2'), clusterHosts.join(' | '));
  // Threads: five of each host's.
  await page.locator('#tabs button', { hasText: 'Threads' }).click();
  const threadHosts = (await column(page, 'threads', 'hosts')).sort();
  assert.deepEqual(threadHosts, [...Array(5).fill('web-1'), ...Array(5).fill('web-2')]);
  // Outliers: each from one host.
  await page.locator('#tabs button', { hasText: 'Outliers' }).click();
  const outlierHosts = await column(page, 'outliers', 'hosts');
  assert.ok(outlierHosts.every((h) => h === 'web-1' || h === 'web-2'), outlierHosts.join(' | '));
  // Hosts: both, with their calls.
  await page.locator('#tabs button', { hasText: 'Hosts' }).click();
  assert.deepEqual(await column(page, 'hosts', 'host'), ['web-1', 'web-2']);
  assert.deepEqual(await column(page, 'hosts', 'calls'), [kCallsWeb1, kCallsWeb2].map((n) => n.toLocaleString('en-US')));
  await saveScreenshot(page, 'fleet-merged');

  // Filtering by host: the page of web-2's model alone, which keeps polling web-2's snapshot.
  await Promise.all([page.waitForNavigation(), page.selectOption('#fleet-host', 'web-2')]);
  assert.match(page.url(), /\?host=web-2$/);
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await chip(page, 'calls'), kCallsWeb2.toLocaleString('en-US'));
  assert.equal(await chip(page, 'threads'), '5');
  assert.equal(await page.locator('#fleet-host').inputValue(), 'web-2');
  const polled = await page.waitForResponse((r) => r.url().includes('/api/snapshot'), { timeout: 10_000 });
  assert.match(polled.url(), /\/api\/snapshot\?host=web-2$/);
  assert.equal(await chip(page, 'calls'), kCallsWeb2.toLocaleString('en-US'));
  await page.locator('#tabs button', { hasText: 'Threads' }).click();
  assert.deepEqual(await column(page, 'threads', 'hosts'), Array(5).fill('web-2'));
  await saveScreenshot(page, 'fleet-web-2');

  // Back to every host.
  await Promise.all([page.waitForNavigation(), page.selectOption('#fleet-host', '')]);
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await calls(), total);
  assert.deepEqual(page.problems, []);
  await page.close();

  // A host that never published.
  const missing = await fetch(`${url}?host=web-9`);
  assert.equal(missing.status, 404);
  assert.match(await missing.text(), /no host web-9 has published to the fleet/);
  assert.equal((await fetch(`${url}api/snapshot?host=web-9`)).status, 404);
});
