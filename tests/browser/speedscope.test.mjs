// `shapetrace export --format speedscope` against speedscope's published file format schema
// (file-format-schema.json, shipped in speedscope's npm package, pinned in package.json),
// validated with Ajv: the export of the service fixture (tests/report), of one thread, and of a
// cluster's calls all conform. The validator is shown to reject a file that breaks the schema, so
// the check cannot pass vacuously. No browser is involved.
//
// Environment (set by ctest, tests/report/CMakeLists.txt):
//   SHAPETRACE_BINARY, SHAPETRACE_REPORT_FIXTURE
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Ajv from 'ajv';

const require = createRequire(import.meta.url);
const shapetrace = process.env.SHAPETRACE_BINARY;
const fixture = process.env.SHAPETRACE_REPORT_FIXTURE;
let work, validate;

before(async () => {
  assert.ok(shapetrace && fixture, 'SHAPETRACE_BINARY and SHAPETRACE_REPORT_FIXTURE must be set (run through ctest)');
  work = await mkdtemp(path.join(tmpdir(), 'shapetrace-speedscope-'));
  execFileSync(fixture, [path.join(work, 'rec')]);
  const schema = JSON.parse(await readFile(
    require.resolve('speedscope/dist/release/file-format-schema.json'), 'utf8'));
  validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
});
after(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

async function exported(name, ...scope) {
  const file = path.join(work, `${name}.speedscope.json`);
  execFileSync(shapetrace, ['export', path.join(work, 'rec'), '--format', 'speedscope', '-o', file, ...scope]);
  return JSON.parse(await readFile(file, 'utf8'));
}

function assertConforms(file) {
  const ok = validate(file);
  assert.ok(ok, JSON.stringify(validate.errors?.slice(0, 5), null, 1));
}

test('the whole run conforms to speedscope\'s schema, one evented profile per thread', async () => {
  const file = await exported('all');
  assertConforms(file);
  assert.ok(file.profiles.length >= 2, `profiles: ${file.profiles.length}`);
  for (const profile of file.profiles) {
    assert.equal(profile.type, 'evented');
    const opens = profile.events.filter((e) => e.type === 'O').length;
    const closes = profile.events.filter((e) => e.type === 'C').length;
    assert.equal(opens, closes, `${profile.name}: every frame opened is closed`);
  }
});

test('a thread\'s and a cluster\'s exports conform too', async () => {
  const all = await exported('all-again');
  const thread = all.profiles[0].name.match(/\((\d+)\)/)?.[1];
  if (thread) assertConforms(await exported('thread', '--thread', thread));
  assertConforms(await exported('cluster', '--cluster', '0'));
});

test('the validator rejects what breaks the schema', async () => {
  const file = await exported('broken');
  file.profiles[0].events[0].type = 'X';
  assert.equal(validate(file), false);
  delete file.shared;
  assert.equal(validate(file), false);
});
