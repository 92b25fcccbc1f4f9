/**
 * Byte budgets: ByteBudget (src/util/concurrency.ts), its bound, its order and the one request larger than
 * the whole budget; Slabs (src/util/slabs.ts), reuse by class within the budget.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ByteBudget } from '../src/util/concurrency.js';
import { Slabs, type Slab } from '../src/util/slabs.js';

const settled = (): Promise<void> => new Promise((r) => setImmediate(r));

test('ByteBudget holds the bytes in use under its limit and serves waiters in order', async () => {
  const budget = new ByteBudget(10);
  const order: string[] = [];
  const a = await budget.acquire(6);
  const b = await budget.acquire(3); // 9 of 10
  const c = budget.acquire(3).then((r) => (order.push('c'), r));
  const d = budget.acquire(1).then((r) => (order.push('d'), r)); // fits now, but c asked first
  await settled();
  assert.equal(order.join(','), '');
  a(); // 3 in use: c (3) then d (1) fit
  const [rc, rd] = await Promise.all([c, d]);
  assert.equal(order.join(','), 'c,d');
  const e = budget.acquire(4).then((r) => (order.push('e'), r)); // 3 + 3 + 1 = 7, + 4 = 11 > 10
  await settled();
  assert.equal(order.join(','), 'c,d');
  b();
  (await e)();
  rc();
  rd();
  assert.equal(order.join(','), 'c,d,e');
});

test('ByteBudget lets a request larger than the whole budget through alone, once the budget is empty', async () => {
  const budget = new ByteBudget(10);
  const small = await budget.acquire(2);
  const held: { big?: () => void } = {};
  const p = budget.acquire(25).then((r) => (held.big = r));
  await settled();
  assert.equal(held.big, undefined);
  small();
  const big = await p;
  let next = false;
  const q = budget.acquire(1).then((r) => ((next = true), r));
  await settled();
  assert.equal(next, false, 'nothing runs beside the oversized request');
  big();
  big(); // a second release is a no-op
  (await q)();
  assert.equal(next, true);
});

test('Slabs reuse a released buffer of the same class and keep at most keepFree bytes free', async () => {
  const slabs = new Slabs(256 * 1024, 64 * 1024, 192 * 1024);
  assert.equal(slabs.capacityFor(1), 64 * 1024);
  assert.equal(slabs.capacityFor(64 * 1024 + 1), 128 * 1024);
  const a = await slabs.take(100_000); // 128 KiB class
  assert.equal(a.buf.length, 100_000);
  assert.ok(a.buf.buffer instanceof SharedArrayBuffer);
  a.buf[0] = 7;
  const first = a.buf.buffer;
  a.release();
  a.release();
  assert.equal(slabs.idleBytes, 128 * 1024);
  const b = await slabs.take(70_000);
  assert.equal(b.buf.buffer, first, 'the free slab of that class is taken again');
  assert.equal(slabs.idleBytes, 0);
  const c = await slabs.take(128 * 1024);
  let d: Slab | undefined;
  const waiting = slabs.take(10).then((s) => (d = s)); // 128 + 128 KiB taken: a 64 KiB one more would pass 256
  await settled();
  assert.equal(d, undefined);
  b.release();
  await waiting;
  c.release();
  (d as unknown as Slab).release();
  assert.equal(slabs.idleBytes, 192 * 1024, 'the oldest free slab (b\'s 128 KiB) is dropped, c\'s and d\'s are kept');
  slabs.dropFree();
  assert.equal(slabs.idleBytes, 0);
  const e = await slabs.take(70_000);
  assert.notEqual(e.buf.buffer, c.buf.buffer, 'a dropped slab is not handed out again');
});

test('Slabs with idleDropMs drop their free slabs once none has been taken for that long', async () => {
  const slabs = new Slabs(1024 * 1024, 64 * 1024, 1024 * 1024, 20);
  const a = await slabs.take(100_000);
  const b = await slabs.take(100_000);
  a.release();
  await new Promise((r) => setTimeout(r, 40));
  assert.equal(slabs.idleBytes, 128 * 1024, 'b is still taken: nothing is dropped');
  b.release();
  const c = await slabs.take(100_000); // taken again before the delay: the drop is put off
  assert.equal(slabs.idleBytes, 128 * 1024);
  c.release();
  assert.equal(slabs.idleBytes, 256 * 1024);
  await new Promise((r) => setTimeout(r, 40));
  assert.equal(slabs.idleBytes, 0, 'idle for the delay: the free slabs are dropped');
});
