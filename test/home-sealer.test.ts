/**
 * The group commit of seals and of log segments (home/sealer.ts): requests that arrive while a run runs
 * share the single next run; a failed run fails only its own requests.
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

test('requests that arrive while a run is running share the single next run, for the reason that is not fsync', async () => {
  const { sealer, runs, finish } = controlled();
  const a = sealer.request('fsync');
  const b = sealer.request('fsync');
  const s = sealer.request('sync');
  const c = sealer.request('fsync');
  assert.equal(sealer.busy, true);
  finish();
  assert.equal(await a, 'fsync#1');
  await tick();
  assert.deepEqual(runs, ['fsync', 'sync'], 'one next run for all three, run as the seal asked for');
  finish();
  assert.equal(await b, 'sync#2');
  assert.equal(await s, 'sync#2');
  assert.equal(await c, 'sync#2');
  await sealer.idle();
  assert.equal(sealer.busy, false);
});

test('a failed run fails its requests only; the next run still starts', async () => {
  const runs: string[] = [];
  const sealer = new Sealer<string>(async (reason) => {
    runs.push(reason);
    if (runs.length === 1) throw new Error('store down');
    return reason;
  });
  const a = sealer.request('sync');
  const b = sealer.request('idle');
  await assert.rejects(a, /store down/);
  assert.equal(await b, 'idle');
  assert.deepEqual(runs, ['sync', 'idle']);
});
