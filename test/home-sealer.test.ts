/**
 * The seal queue's group commit (home/sealer.ts): concurrent requests share the next run; a seal asked for
 * while only fsyncs wait runs after their run instead of turning them into a seal (they keep their
 * one-round-trip log segment); `sealQueued` tells an fsync that a seal is about to start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sealer } from '../src/home/sealer.js';

/** A Sealer whose runs end when the test says so; `runs` lists the reasons runs started with. */
function controlled(): { sealer: Sealer<string>; runs: string[]; finish: () => void } {
  const runs: string[] = [];
  const pending: Array<() => void> = [];
  const sealer = new Sealer<string>((reason) => {
    runs.push(reason);
    const n = runs.length;
    return new Promise((resolve) => pending.push(() => resolve(`${reason}#${n}`)));
  });
  return { sealer, runs, finish: () => pending.shift()?.() };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

test('a seal asked for while only fsyncs are queued runs after their run, which stays an fsync run', async () => {
  const { sealer, runs, finish } = controlled();
  const a = sealer.request('fsync');
  const b = sealer.request('fsync');
  const c = sealer.request('fsync');
  assert.equal(sealer.sealQueued, false);
  const s = sealer.request('sync');
  finish();
  assert.equal(await a, 'fsync#1');
  await tick();
  assert.deepEqual(runs, ['fsync', 'fsync'], 'the queued fsyncs run as one group, still an fsync run');
  finish();
  assert.equal(await b, 'fsync#2');
  assert.equal(await c, 'fsync#2');
  await tick();
  assert.deepEqual(runs, ['fsync', 'fsync', 'sync']);
  finish();
  assert.equal(await s, 'sync#3');
});

test('an fsync that joins a queued seal is served by it; sealQueued says a seal waits', async () => {
  const { sealer, runs, finish } = controlled();
  const a = sealer.request('fsync');
  const s = sealer.request('sync');
  assert.equal(sealer.sealQueued, true);
  const b = sealer.request('fsync');
  finish();
  await a;
  await sealer.runningSettled();
  assert.deepEqual(runs, ['fsync', 'sync'], 'the queued seal started once the running run ended');
  assert.equal(sealer.sealQueued, false);
  finish();
  assert.equal(await s, 'sync#2');
  assert.equal(await b, 'sync#2');
  await sealer.idle();
});
