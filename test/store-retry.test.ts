/**
 * RetryingStore over FaultyStore over MemoryStore: which failures are retried and how often, backoff with
 * full jitter, the total deadline (also against a hung store), putIfAbsent after an ambiguous failure,
 * listing that breaks off midway; and FaultyStore's own faults. A fake clock keeps it fast.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FaultyStore, connectionReset } from '../src/store/faulty.js';
import { MemoryStore } from '../src/store/memory.js';
import { RetryingStore, type RetryOptions } from '../src/store/retry.js';
import { TransientStoreError } from '../src/store/transient.js';
import { NotFoundError, UserError } from '../src/util/errors.js';
import { collect, storeConformance } from './support/store-conformance.js';

/** A clock that only moves when the store sleeps; records every backoff. */
function fakeTime(): { opts: Partial<RetryOptions>; sleeps: number[] } {
  let t = 1_000_000;
  const sleeps: number[] = [];
  return {
    sleeps,
    opts: {
      now: () => t,
      sleep: async (ms) => {
        sleeps.push(ms);
        t += ms;
      },
      random: () => 1 - Number.EPSILON,
    },
  };
}

function setup(opts: Partial<RetryOptions> = {}) {
  const faulty = new FaultyStore(new MemoryStore());
  const clock = fakeTime();
  const store = new RetryingStore(faulty, { retries: 5, baseMs: 100, maxMs: 1_000, deadlineMs: 60_000, ...clock.opts, ...opts });
  return { faulty, store, sleeps: clock.sleeps };
}

const slowDown = (): Error => new TransientStoreError('memory://', 'SlowDown (HTTP 503)');

storeConformance('memory via RetryingStore over FaultyStore (no faults)', async () => new RetryingStore(new FaultyStore(new MemoryStore())));

describe('RetryingStore', () => {
  it('retries transient failures (throttling, network) and then succeeds', async () => {
    const { faulty, store } = setup();
    await faulty.inner.put('k', Buffer.from('v'));
    const errors = [slowDown, connectionReset, slowDown];
    faulty.add({ kind: 'fail', ops: ['get'], times: 3, error: () => (errors.shift() ?? slowDown)() });
    assert.equal((await store.get('k')).toString(), 'v');
    assert.equal(faulty.calls.get, 4);
  });

  it('a SlowDown pauses every later request of the store, with a backoff that grows until a success', async () => {
    const { faulty, store, sleeps } = setup({ retries: 0 });
    await faulty.inner.put('k', Buffer.from('v'));
    faulty.add({ kind: 'fail', ops: ['get'], times: 2, error: slowDown });
    await assert.rejects(store.get('k'), TransientStoreError);
    assert.deepEqual(sleeps, [], 'no retries were allowed');
    await assert.rejects(store.get('k'), TransientStoreError);
    assert.equal(sleeps.length, 1, 'the second request waited for the pause the first one was told to take');
    const first = sleeps[0] ?? 0;
    assert.ok(first > 90 && first <= 100, `pause ${first}`);
    await store.put('other', Buffer.from('x')); // another op, another key: it waits too
    assert.equal(sleeps.length, 2);
    assert.ok((sleeps[1] ?? 0) > 190 && (sleeps[1] ?? 0) <= 200, `the pause doubled with the run of SlowDowns: ${sleeps[1]}`);
    assert.equal((await store.get('k')).toString(), 'v');
    assert.equal(sleeps.length, 2, 'after a success nothing waits');
    assert.equal(faulty.calls.get, 3);
  });

  it('never retries other errors: a missing key, a refused request', async () => {
    const { faulty, store } = setup();
    await assert.rejects(store.get('missing'), NotFoundError);
    assert.equal(faulty.calls.get, 1);
    faulty.add({ kind: 'fail', ops: ['put'], error: () => new UserError('store x: access denied (HTTP 403)') });
    await assert.rejects(store.put('k', Buffer.from('v')), /access denied/);
    assert.equal(faulty.calls.put, 1);
    faulty.clear();
    faulty.add({ kind: 'fail', ops: ['has'], error: () => new Error('a bug') });
    await assert.rejects(store.has(['k']), /a bug/);
    assert.equal(faulty.calls.has, 1);
  });

  it('gives up after `retries` retries with the last transient error', async () => {
    const { faulty, store, sleeps } = setup({ retries: 3 });
    faulty.add({ kind: 'fail', ops: ['put'], error: slowDown });
    await assert.rejects(store.put('k', Buffer.from('v')), TransientStoreError);
    assert.equal(faulty.calls.put, 4);
    assert.equal(sleeps.length, 3);
  });

  it('backs off exponentially with full jitter, capped at maxMs', async () => {
    const { faulty, store, sleeps } = setup({ retries: 6 });
    faulty.add({ kind: 'fail', ops: ['get'], error: slowDown });
    await assert.rejects(store.get('k'));
    // random() ≈ 1: the caps themselves
    assert.deepEqual(sleeps, [99, 199, 399, 799, 999, 999]);
    const jittered = new RetryingStore(new FaultyStore(new MemoryStore()), { baseMs: 100, maxMs: 1_000, random: () => 0.5 });
    assert.deepEqual([0, 1, 2, 3, 4, 5].map((a) => jittered.delay(a)), [50, 100, 200, 400, 500, 500]);
    const zero = new RetryingStore(new MemoryStore(), { random: () => 0 });
    assert.equal(zero.delay(3), 0);
  });

  it('never sleeps past the total deadline', async () => {
    const { faulty, store, sleeps } = setup({ retries: 100, deadlineMs: 1_000 });
    faulty.add({ kind: 'fail', ops: ['get'], error: slowDown });
    await assert.rejects(store.get('k'), TransientStoreError);
    assert.ok(sleeps.reduce((a, b) => a + b, 0) < 1_000, `slept ${sleeps.join('+')}`);
    assert.ok(faulty.calls.get < 10, `${faulty.calls.get} attempts`);
  });

  it('abandons a hung store at the deadline (real time)', async () => {
    const faulty = new FaultyStore(new MemoryStore());
    const store = new RetryingStore(faulty, { deadlineMs: 150, baseMs: 10, maxMs: 20 });
    faulty.add({ kind: 'hang', ops: ['get'] });
    const t0 = Date.now();
    await assert.rejects(store.get('k'), (e: unknown) => e instanceof TransientStoreError && /did not answer/.test(e.message));
    const took = Date.now() - t0;
    assert.ok(took >= 140 && took < 1_000, `took ${took} ms`);
    assert.equal(faulty.hanging, 1);
    await store.close(); // releases the hung call
    assert.equal(faulty.hanging, 0);
  });

  it('putIfAbsent: a lost reply after our write counts as created (same bytes)', async () => {
    const { faulty, store } = setup();
    faulty.add({ kind: 'failAfter', ops: ['putIfAbsent'], times: 1 });
    assert.equal(await store.putIfAbsent('heads/1', Buffer.from('snap-a')), true);
    assert.equal(faulty.calls.putIfAbsent, 2);
    assert.equal((await faulty.inner.get('heads/1')).toString(), 'snap-a');
  });

  it('putIfAbsent: after an ambiguous failure, someone else\'s object is still false', async () => {
    const { faulty, store } = setup();
    await faulty.inner.put('heads/1', Buffer.from('snap-other'));
    faulty.add({ kind: 'fail', ops: ['putIfAbsent'], times: 1 });
    assert.equal(await store.putIfAbsent('heads/1', Buffer.from('snap-a')), false);
    // without an ambiguous failure no comparison is needed
    assert.equal(await store.putIfAbsent('heads/1', Buffer.from('snap-other')), false);
  });

  it('list resumes after the last key yielded when a listing breaks off', async () => {
    const { faulty, store } = setup();
    const keys = Array.from({ length: 10 }, (_, i) => `p/${i}`);
    for (const k of keys) await faulty.inner.put(k, Buffer.from(k));
    faulty.add({ kind: 'failAfter', ops: ['list'], afterItems: 3, times: 1 });
    assert.deepEqual((await collect(store.list('p/'))).map((o) => o.key), keys);
    assert.equal(faulty.calls.list, 2);
    faulty.add({ kind: 'fail', ops: ['list'], times: 2, error: slowDown });
    assert.deepEqual((await collect(store.list('p/'))).map((o) => o.key), keys);
    assert.equal(faulty.calls.list, 5);
    faulty.add({ kind: 'failAfter', ops: ['list'], afterItems: 2, times: 1 });
    assert.deepEqual((await collect(store.list('p/', 4))).map((o) => o.key), keys.slice(0, 4));
  });

  it('list does not retry a non-transient failure', async () => {
    const { faulty, store } = setup();
    faulty.add({ kind: 'fail', ops: ['list'], error: () => new UserError('denied') });
    await assert.rejects(collect(store.list('p/')), /denied/);
    assert.equal(faulty.calls.list, 1);
  });
});

describe('FaultyStore', () => {
  it('corrupts get bodies, adds latency, retires faults after `times`, and can be cleared', async () => {
    const faulty = new FaultyStore(new MemoryStore());
    await faulty.put('k', Buffer.from('hello world'));
    const id = faulty.add({ kind: 'corrupt', ops: ['get'], keyPrefix: 'k' });
    const bad = await faulty.get('k');
    assert.notEqual(bad.toString(), 'hello world');
    assert.equal(bad.length, 11);
    assert.equal((await faulty.inner.get('k')).toString(), 'hello world'); // the store is intact
    faulty.remove(id);
    assert.equal((await faulty.get('k')).toString(), 'hello world');

    faulty.add({ kind: 'latency', ms: 60, ops: ['has'], times: 1 });
    let t0 = Date.now();
    await faulty.has(['k']);
    assert.ok(Date.now() - t0 >= 55);
    t0 = Date.now();
    await faulty.has(['k']);
    assert.ok(Date.now() - t0 < 50);

    faulty.add({ kind: 'fail', keyPrefix: 'other/' });
    await assert.rejects(faulty.get('other/x'), /injected/);
    assert.equal((await faulty.get('k')).toString(), 'hello world');
    faulty.clear();
    await assert.rejects(faulty.get('other/x'), NotFoundError);
  });

  it('fail does not touch the store; failAfter does', async () => {
    const faulty = new FaultyStore(new MemoryStore());
    faulty.add({ kind: 'fail', ops: ['put'], times: 1 });
    await assert.rejects(faulty.put('a', Buffer.from('1')));
    assert.equal((await faulty.inner.has(['a'])).size, 0);
    faulty.add({ kind: 'failAfter', ops: ['put'], times: 1 });
    await assert.rejects(faulty.put('a', Buffer.from('1')));
    assert.equal((await faulty.inner.has(['a'])).size, 1);
  });

  it('hang holds calls until released', async () => {
    const faulty = new FaultyStore(new MemoryStore());
    await faulty.put('k', Buffer.from('v'));
    faulty.add({ kind: 'hang', ops: ['get'], times: 1 });
    let done = false;
    const p = faulty.get('k').then((b) => {
      done = true;
      return b;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(done, false);
    assert.equal(faulty.hanging, 1);
    faulty.releaseHangs();
    assert.equal((await p).toString(), 'v');
  });
});
