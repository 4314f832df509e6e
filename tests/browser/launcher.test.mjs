// The launcher's error when the browser is missing must say what to do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const browserModule = path.join(path.dirname(fileURLToPath(import.meta.url)), 'browser.mjs');

test('a missing chromium gives a clear error', { timeout: 60_000 }, () => {
  const script = `import { launchBrowser } from ${JSON.stringify(browserModule)};
    launchBrowser().then(() => process.exit(0), (e) => { console.error(e.message); process.exit(3); });`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, CHROMIUM: '/nonexistent/chromium' },
    encoding: 'utf8',
  });
  assert.equal(run.status, 3, run.stderr);
  assert.match(run.stderr, /chromium not found at \/nonexistent\/chromium: install Debian's chromium/);
});
