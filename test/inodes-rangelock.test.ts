/**
 * RangeLocks (src/inodes/rangelock.ts), the order of content changes to one file: non-overlapping ranges
 * run side by side, overlapping ones in arrival order, a whole-file change alone; a failed change does not
 * hold up the next. Every change here finishes only when the test releases it, so the order is exact.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RangeLocks } from '../src/inodes/rangelock.js';

/** A change that records when it starts and finishes when `release` is called. */
function gated(log: string[], name: string): { fn: () => Promise<string>; release: (fail?: boolean) => void } {
  let release: (fail?: boolean) => void = () => undefined;
  const gate = new Promise<boolean>((resolve) => (release = (fail) => resolve(fail === true)));
  return {
    fn: async () => {
      log.push(`start ${name}`);
      const fail = await gate;
      log.push(`end ${name}`);
      if (fail) throw new Error(name);
      return name;
    },
    release: (fail) => release(fail),
  };
}

const turns = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

test('non-overlapping ranges run at once; an overlapping one waits for the one it overlaps only', async () => {
  const locks = new RangeLocks();
  const log: string[] = [];
  const a = gated(log, 'a'), b = gated(log, 'b'), c = gated(log, 'c');
  const pa = locks.run(7, 0, 100, a.fn);
  const pb = locks.run(7, 100, 200, b.fn);
  const pc = locks.run(7, 150, 160, c.fn); // overlaps b, not a
  await turns();
  assert.deepEqual(log, ['start a', 'start b']);
  a.release();
  await turns();
  assert.deepEqual(log, ['start a', 'start b', 'end a']);
  b.release();
  await turns();
  assert.deepEqual(log.slice(3), ['end b', 'start c']);
  c.release();
  assert.deepEqual(await Promise.all([pa, pb, pc]), ['a', 'b', 'c']);
});

test('a whole-file change waits for every earlier change, and every later one waits for it', async () => {
  const locks = new RangeLocks();
  const log: string[] = [];
  const a = gated(log, 'a'), w = gated(log, 'whole'), b = gated(log, 'b'), other = gated(log, 'other-file');
  const pa = locks.run(1, 0, 10, a.fn);
  const pw = locks.whole(1, w.fn);
  const pb = locks.run(1, 1000, 2000, b.fn);
  const po = locks.run(2, 0, 10, other.fn); // another file is never held up
  await turns();
  assert.deepEqual(log, ['start a', 'start other-file']);
  a.release();
  await turns();
  assert.deepEqual(log.slice(2), ['end a', 'start whole']);
  w.release();
  await turns();
  assert.deepEqual(log.slice(4), ['end whole', 'start b']);
  b.release();
  other.release();
  await Promise.all([pa, pw, pb, po]);
});

test('a change that fails rejects its own caller only; the next overlapping one still runs', async () => {
  const locks = new RangeLocks();
  const log: string[] = [];
  const a = gated(log, 'a'), b = gated(log, 'b');
  const pa = locks.run(3, 0, 10, a.fn);
  const pb = locks.run(3, 5, 15, b.fn);
  a.release(true);
  await assert.rejects(pa, /a/);
  await turns();
  assert.deepEqual(log, ['start a', 'end a', 'start b']);
  b.release();
  assert.equal(await pb, 'b');
});

test('an empty range holds the byte at its start', async () => {
  const locks = new RangeLocks();
  const log: string[] = [];
  const a = gated(log, 'a'), e = gated(log, 'empty');
  const pa = locks.run(4, 0, 10, a.fn);
  const pe = locks.run(4, 5, 5, e.fn);
  await turns();
  assert.deepEqual(log, ['start a']);
  a.release();
  e.release();
  await Promise.all([pa, pe]);
  assert.deepEqual(log, ['start a', 'end a', 'start empty', 'end empty']);
});
