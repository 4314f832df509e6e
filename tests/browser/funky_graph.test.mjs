// The funky graph's trees (ST.flame.funky in analyzer/flame/page/flame.js) in Node, without a
// browser: the page's script runs in a context of its own with the registries it calls stubbed.
// On 003's indirect recursion, a(b(a(c)), c), each function's funky graph shows where it actually
// ran: b is on the stack for 50 ns and calls a, although the fully folded tree puts the inner a
// (and its c) under the outer a.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

const page = new URL('../../analyzer/flame/page/', import.meta.url);
const ST = { tabs: { register() {} }, views: { register() {} } };
vm.runInNewContext(readFileSync(new URL('flame.js', page), 'utf8'), { ST });

// a 0-100 { b 0-50 { a 10-40 { c 20-30 } }, c 60-80 }: node 0 is the root.
const [A, B, C] = [0, 1, 2];
function tree() {
  return ST.flame.finish({
    parent: Int32Array.of(-1, 0, 1, 2, 3, 1), fn: Int32Array.of(-1, A, B, A, C, C),
    calls: Float64Array.of(0, 1, 1, 1, 1, 1), self: Float64Array.of(0, 30, 20, 20, 10, 20),
    total: Float64Array.of(0, 100, 50, 30, 10, 20),
  });
}

// A tree's nodes as "f g: weight" paths below the root, children heaviest first.
function paths(t, names = 'abc') {
  const out = [];
  const walk = (i, prefix) => {
    for (const c of t.children[i]) {
      const p = `${prefix}${prefix ? ' ' : ''}${names[t.fn[c]]}`;
      out.push(`${p}: ${t.weight[c]}`);
      walk(c, p);
    }
  };
  walk(0, '');
  return out;
}

function funky(F) {
  const t = tree();
  return ST.flame.funky(t, ST.flame.fold(t, 'indirect'), F);
}

test('the folded tree hides what b calls', () => {
  assert.deepEqual(paths(ST.flame.fold(tree(), 'indirect')), ['a: 100', 'a c: 30', 'a b: 20']);
});

test('b: 50 ns where it ran, calling a, which calls c; called by a', () => {
  const { up, down } = funky(B);
  assert.deepEqual(paths(up), ['b: 50', 'b a: 30', 'b a c: 10']);
  assert.equal(up.calls[1], 1);
  assert.equal(up.self[1], 20);
  assert.deepEqual(paths(down), ['b: 50', 'b a: 50']);
});

test('a: its recursion counted once per stack, the inner call\'s callees are its own', () => {
  const { up, down } = funky(A);
  assert.deepEqual(paths(up), ['a: 100', 'a c: 30', 'a b: 20']);
  assert.equal(up.calls[1], 2);
  assert.equal(up.self[1], 50);
  assert.deepEqual(paths(down), ['a: 100']);
});

test('c: both calls, their stacks folded', () => {
  const { up, down } = funky(C);
  assert.deepEqual(paths(up), ['c: 30']);
  assert.equal(up.calls[1], 2);
  assert.deepEqual(paths(down), ['c: 30', 'c a: 30']);
});
