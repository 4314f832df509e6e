// The browser harness shared by shapetrace's browser tests: launches Debian's headless Chromium
// through playwright-core (npm's own browser downloads are not used), opens pages, fails a test on
// any page error, and saves screenshots as test artifacts.
//
// Environment:
//   CHROMIUM                       the browser to drive (default /usr/bin/chromium)
//   SHAPETRACE_BROWSER_ARTIFACTS   where screenshots go (default tests/browser/artifacts)
import { mkdtemp, mkdir, rm, access } from 'node:fs/promises';
import { constants } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// playwright-core comes from npm (tests/browser/setup runs `npm ci`); say so when it is missing.
let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch (error) {
  throw new Error(`playwright-core is not installed (${error.code}): run tests/browser/setup, ` +
                  'which scripts/setup runs');
}

const here = path.dirname(fileURLToPath(import.meta.url));

export const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
export const artifactsDir =
  process.env.SHAPETRACE_BROWSER_ARTIFACTS || path.join(here, 'artifacts');

// What Chromium needs to run headless as root in a container without reaching the network: no
// sandbox (root), no GPU, none of the background services that phone home or update components.
export const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];

// A browser with a fresh profile. Returns { context, close }; close() also deletes the profile.
export async function launchBrowser({ viewport = { width: 1400, height: 900 } } = {}) {
  try {
    await access(chromiumPath, constants.X_OK);
  } catch {
    throw new Error(
      `chromium not found at ${chromiumPath}: install Debian's chromium package ` +
        `(scripts/setup does) or set CHROMIUM to the browser's path`);
  }
  const profile = await mkdtemp(path.join(tmpdir(), 'shapetrace-chromium-'));
  let context;
  try {
    // A persistent context is the way to hand Chromium our own --user-data-dir: a fresh, empty
    // profile per browser, removed afterwards.
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: chromiumArgs,
      viewport,
      timeout: 60_000,
    });
  } catch (error) {
    await rm(profile, { recursive: true, force: true });
    throw error;
  }
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

// Opens url (a path is turned into a file:// URL) in a new page. Every uncaught exception and
// console.error of the page is collected in page.problems, so that a test can assert there were
// none: a report that throws is broken even if it looks right.
export async function openPage(context, url) {
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (error) => page.problems.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') page.problems.push(`console.error: ${message.text()}`);
  });
  const target = /^[a-z][a-z0-9+.-]*:/.test(url) ? url : pathToFileURL(path.resolve(url)).href;
  const response = await page.goto(target, { waitUntil: 'load' });
  if (response && !response.ok() && !target.startsWith('file:'))
    throw new Error(`${target} answered HTTP ${response.status()}`);
  return page;
}

// Saves a screenshot of the page (or of one element) as <artifacts>/<name>.png; returns the path.
export async function saveScreenshot(pageOrLocator, name) {
  await mkdir(artifactsDir, { recursive: true });
  const file = path.join(artifactsDir, `${name}.png`);
  await pageOrLocator.screenshot({ path: file });
  return file;
}

// The JSON a report page embeds (its data script), parsed straight from the file: what the tests
// check the page against, independently of the page's own scripts.
export function embeddedData(html) {
  const open = '<script type="application/json" id="shapetrace-data">';
  const begin = html.indexOf(open) + open.length;
  return JSON.parse(html.slice(begin, html.indexOf('</script>', begin)));
}
