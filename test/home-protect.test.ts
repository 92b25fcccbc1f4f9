/**
 * home/protect.ts: when protection runs. A change a third of an interval old starts a run (a segment) while
 * the foreground is idle; while it is busy the run waits until the change is two thirds of an interval old;
 * nothing changed, nothing runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Protection } from '../src/home/protect.js';

function harness(busy: () => boolean) {
  let now = 0, mutations = 0;
  const runs: number[] = [];
  const p: Protection = new Protection({
    mutations: () => mutations,
    flushKernel: async () => undefined,
    segment: async () => {
      // As the home's segments do: the change count when it captured, handed back once it landed.
      const mark = p.mark();
      runs.push(now);
      p.covered(mark, now);
      return true;
    },
    seal: async () => undefined,
    busy,
    log: pino({ level: 'silent' }),
    now: () => now,
  }, 9_000);
  return {
    p, runs,
    change: () => void mutations++,
    /** One tick at `t` (the home ticks once a second), then what the run it started did. */
    at: async (t: number) => {
      now = t;
      p.tick(false);
      await p.idle();
    },
  };
}

test('an idle foreground: a change a third of the interval old is protected', async () => {
  const h = harness(() => false);
  await h.at(1_000);
  assert.deepEqual(h.runs, [], 'nothing changed: no run');
  h.change();
  await h.at(2_000); // the change is seen here
  await h.at(4_000);
  assert.deepEqual(h.runs, [], 'two seconds old: not yet');
  await h.at(5_000);
  assert.deepEqual(h.runs, [5_000], 'three seconds (a third of 9 s) old: a segment');
});

test('a busy foreground: the run waits until the change is two thirds of the interval old', async () => {
  let busy = true;
  const h = harness(() => busy);
  h.change();
  await h.at(1_000);
  await h.at(5_000);
  await h.at(6_000);
  assert.deepEqual(h.runs, [], 'four and five seconds old while requests flow: not yet');
  await h.at(7_000);
  assert.deepEqual(h.runs, [7_000], 'six seconds (two thirds of 9 s) old: a segment, busy or not');
  h.change();
  await h.at(8_000);
  await h.at(11_000);
  assert.deepEqual(h.runs, [7_000], 'the next change, three seconds old, still busy: not yet');
  busy = false;
  await h.at(12_000);
  assert.deepEqual(h.runs, [7_000, 12_000], 'the burst is over: the run comes at once');
});
