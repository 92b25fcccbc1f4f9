/**
 * Block cache fetch behaviour: single-flight, verification (corrupt objects rejected and not cached), store
 * errors propagated and not cached, the fetch timeout, and bounded background prefetch.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CorruptObjectError, StoreUnavailableError } from '../src/util/errors.js';
import { CountingStore, openCache, until, addBlock, deferred, withTempDir } from './support/cache-store.js';

test('concurrent readers of one block share one store GET', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const b = await addBlock(store, 200_000);
    const c = await openCache(dir, store);
    const gate = deferred();
    store.gate = gate.promise;
    const readers = [
      ...Array.from({ length: 8 }, () => c.get('block', b.hash)),
      ...Array.from({ length: 8 }, (_, i) => c.read(b.hash, i * 1000, 500)),
    ];
    await until(() => store.getCount() > 0, 'the first GET');
    gate.resolve();
    const out = await Promise.all(readers);
    assert.equal(store.getCount(b.key), 1);
    for (let i = 0; i < 8; i++) assert.deepEqual(out[i], b.data);
    for (let i = 0; i < 8; i++) assert.deepEqual(out[8 + i], b.data.subarray(i * 1000, i * 1000 + 500));
    assert.equal(c.stats().misses, 16);
    assert.equal(c.stats().fetches, 1);
    await c.close();
  });
});

test('a corrupt object is rejected, nothing is cached, and the next get retries the store', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const b = await addBlock(store, 4096);
    const bad = Buffer.from(b.data);
    bad.writeUInt8(bad.readUInt8(4095) ^ 1, 4095);
    store.inner.corrupt(b.key, bad);
    const c = await openCache(dir, store);
    await assert.rejects(c.get('block', b.hash), CorruptObjectError);
    await assert.rejects(c.read(b.hash, 0, 10), CorruptObjectError);
    await c.flush();
    assert.equal(c.has('block', b.hash), false);
    assert.deepEqual(await readdir(join(dir, 'blocks')), []);
    assert.equal(c.stats().errors, 2);
    store.inner.corrupt(b.key, b.data); // repaired
    assert.deepEqual(await c.get('block', b.hash), b.data);
    assert.equal(store.getCount(b.key), 3);
    await c.close();
  });
});

test('a store failure propagates as the store\'s error and is not cached', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const b = await addBlock(store, 1000);
    const c = await openCache(dir, store);
    const boom = new Error('connection reset');
    store.failWith = boom;
    await assert.rejects(c.get('block', b.hash), (e) => e === boom);
    store.failWith = undefined;
    assert.deepEqual(await c.get('block', b.hash), b.data);
    assert.equal(store.getCount(b.key), 2);
    assert.equal(c.stats().errors, 1);
    await c.close();
  });
});

test('a hung store GET rejects with StoreUnavailableError after fetchTimeoutMs and frees its slot', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const b = await addBlock(store, 1000);
    const c = await openCache(dir, store, { fetchTimeoutMs: 60, fetchParallelism: 1 });
    store.hang = true;
    const t0 = Date.now();
    await assert.rejects(c.get('block', b.hash), StoreUnavailableError);
    const took = Date.now() - t0;
    assert.ok(took >= 55 && took < 1000, `timeout took ${took} ms`);
    store.hang = false; // the store is back: the only slot must not still be held by the hung GET
    assert.deepEqual(await c.get('block', b.hash), b.data);
    await c.close();
  });
});

test('prefetch fetches in the background, bounded, and later reads are hits', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const blocks = await Promise.all(Array.from({ length: 12 }, () => addBlock(store, 3000)));
    const c = await openCache(dir, store, { fetchParallelism: 4, prefetchParallelism: 2 });
    const gate = deferred();
    store.gate = gate.promise;
    c.prefetch('block', blocks.map((b) => b.hash));
    c.prefetch('block', blocks.map((b) => b.hash)); // duplicates are ignored
    await until(() => store.inFlight === 2, 'two prefetches in flight');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(store.inFlight, 2, 'prefetch uses at most prefetchParallelism of the fetch slots');
    // a foreground read is not queued behind the prefetches
    const last = blocks[11];
    assert.ok(last);
    const fg = c.get('block', last.hash);
    await until(() => store.inFlight === 3, 'the foreground GET');
    gate.resolve();
    assert.deepEqual(await fg, last.data);
    await until(() => blocks.every((b) => c.has('block', b.hash)), 'all prefetched');
    assert.equal(store.maxInFlight, 3);
    assert.equal(store.getCount(), 12);
    for (const b of blocks) assert.deepEqual(await c.read(b.hash, 0, 3000), b.data);
    assert.equal(store.getCount(), 12);
    await c.close();
  });
});

test('prefetch never throws: bad hashes and store failures are counted', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const b = await addBlock(store, 100);
    const c = await openCache(dir, store);
    store.failWith = new Error('down');
    c.prefetch('block', ['not-a-hash', b.hash]);
    await until(() => c.stats().errors === 2, 'both errors counted');
    assert.equal(c.has('block', b.hash), false);
    store.failWith = undefined;
    assert.deepEqual(await c.get('block', b.hash), b.data);
    await c.close();
  });
});
