/**
 * Block cache prefetch and inserts: a reader's fetch jumps ahead of a long prefetch queue;
 * getInBackground is FIFO behind earlier prefetches and joins fetches in flight; prefetch keeps the disk
 * cap and never evicts pinned blocks (those of open files); a file found on disk at start is hashed whole
 * before any range of it is served, so a torn file left by a host crash is fetched again, never served;
 * the namespace walk visits every tree of a snapshot with the requests of a level in flight together; and the
 * queue itself stays first in first out over thousands of entries.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hashBuffer } from '../src/hash/blake3.js';
import type { Tree, TreeEntry } from '../src/model/tree.js';
import { encodeTree } from '../src/format/codec.js';
import { TreeWalk } from '../src/home/treewalk.js';
import { PrefetchQueue } from '../src/cache/prefetchqueue.js';
import { metaKey } from '../src/store/keys.js';
import { ORG, CountingStore, openCache, until, addBlock, deferred, withTempDir, type Obj } from './support/cache-store.js';

function at(objs: Obj[], i: number): Obj {
  const o = objs[i];
  if (!o) throw new Error(`no object ${i}`);
  return o;
}

test('a read jumps ahead of a long prefetch queue, and joins the prefetch of its own block', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const blocks = await Promise.all(Array.from({ length: 1000 }, () => addBlock(store, 64)));
    const c = await openCache(dir, store, { fetchParallelism: 6, prefetchParallelism: 4 });
    const gate = deferred();
    store.gate = gate.promise;
    c.prefetch('block', blocks.map((b) => b.hash));
    await until(() => store.inFlight === 4, 'four prefetches in flight');
    assert.equal(c.prefetchQueueLength, 996);
    const last = at(blocks, 999);
    const first = at(blocks, 0);
    const reads = [c.read(last.hash, 0, 64), c.read(first.hash, 0, 64)];
    await until(() => store.inFlight === 5, 'the reader\'s GET');
    assert.equal(store.order[4], last.key, 'the read of the last queued block went out fifth, ahead of 995 queued prefetches');
    assert.equal(c.prefetchQueueLength, 996, 'the queue has not moved');
    assert.equal(store.getCount(first.key), 1, 'the read of a block being prefetched joined that GET');
    gate.resolve();
    const [a, b] = await Promise.all(reads);
    assert.deepEqual(a, last.data);
    assert.deepEqual(b, first.data);
    await until(() => blocks.every((x) => c.has('block', x.hash)), 'the queue drained');
    assert.equal(store.getCount(), 1000, 'every block fetched exactly once');
    assert.equal(store.maxInFlight, 5);
    await c.close();
  });
});

test('getInBackground waits behind earlier prefetches, resolves verified bytes, and rejects when the cache closes', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const blocks = await Promise.all(Array.from({ length: 6 }, () => addBlock(store, 100)));
    const c = await openCache(dir, store, { fetchParallelism: 2, prefetchParallelism: 1 });
    const gate = deferred();
    store.gate = gate.promise;
    c.prefetch('block', blocks.slice(0, 3).map((b) => b.hash));
    const bg = c.getInBackground('block', at(blocks, 3).hash);
    const again = c.getInBackground('block', at(blocks, 3).hash);
    gate.resolve();
    assert.deepEqual(await bg, at(blocks, 3).data);
    assert.deepEqual(await again, at(blocks, 3).data);
    assert.deepEqual(store.order, blocks.slice(0, 4).map((b) => b.key), 'FIFO behind the earlier prefetches, one GET for both callers');
    store.hang = true;
    c.prefetch('block', [at(blocks, 4).hash]);
    const dropped = c.getInBackground('block', at(blocks, 5).hash);
    const closing = c.close();
    await assert.rejects(dropped, /closed/);
    store.hang = false;
    await closing;
  });
});

test('prefetch keeps the disk cache under its cap and never evicts the blocks of an open file', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const pinned = await addBlock(store, 3000);
    const others = await Promise.all(Array.from({ length: 20 }, () => addBlock(store, 3000)));
    const cap = 4 * 3000;
    const c = await openCache(dir, store, { maxBytes: cap, memoryBytes: 0 });
    c.pin('block', pinned.hash); // the file is open before it is read
    assert.deepEqual(await c.read(pinned.hash, 0, 3000), pinned.data);
    await c.flush();
    for (const [i, o] of others.entries()) {
      c.prefetch('block', [o.hash]);
      await until(() => c.stats().fetches === i + 2, 'the prefetch');
      await until(() => store.inFlight === 0, 'the GET');
      await c.flush();
      assert.ok(c.stats().bytes <= cap, `cache holds ${c.stats().bytes} bytes, cap ${cap}`);
    }
    assert.ok(c.stats().evictions >= 20 - 3, `evictions ${c.stats().evictions}`);
    const path = join(dir, 'blocks', pinned.hash.slice(0, 2), pinned.hash);
    assert.equal((await stat(path)).size, 3000, 'the open file\'s block is still on disk');
    assert.ok(c.diskOrder().includes(`block/${pinned.hash}`));
    assert.deepEqual(await c.read(pinned.hash, 100, 50), pinned.data.subarray(100, 150));
    assert.equal(store.getCount(pinned.key), 1, 'the open file\'s block was never fetched again');
    c.unpin('block', pinned.hash);
    // It was just read, so it is the most recently used: four newcomers push it out of a 4-object cap.
    const fresh = await Promise.all(Array.from({ length: 4 }, () => addBlock(store, 3000)));
    c.prefetch('block', fresh.map((f) => f.hash));
    await until(() => c.stats().fetches === 25, 'four more prefetches');
    await until(() => store.inFlight === 0, 'the GETs');
    await c.flush();
    assert.ok(!c.diskOrder().includes(`block/${pinned.hash}`), 'unpinned, it is evictable again');
    await c.close();
  });
});

test('a torn cache file left by a host crash is hashed before a range of it is served, and fetched again', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const b = await addBlock(store, 50_000);
    // What a crash after an unsynced write + rename can leave: the right name and size, wrong bytes.
    const sub = join(dir, 'blocks', b.hash.slice(0, 2));
    await mkdir(sub, { recursive: true });
    await writeFile(join(sub, b.hash), Buffer.concat([b.data.subarray(0, 20_000), Buffer.alloc(30_000)]));
    const c = await openCache(dir, store, { memoryBytes: 0 });
    assert.equal(c.has('block', b.hash), true, 'found on disk at start');
    assert.deepEqual(await c.read(b.hash, 40_000, 100), b.data.subarray(40_000, 40_100), 'the right bytes, not the torn zeros');
    assert.equal(store.getCount(b.key), 1, 'fetched again from the store');
    await c.flush();
    assert.deepEqual(await readFile(join(sub, b.hash)), b.data, 'the torn file was replaced');
    // Trusted now: later ranges are single preads, no more GETs.
    assert.deepEqual(await c.read(b.hash, 10, 10), b.data.subarray(10, 20));
    assert.equal(store.getCount(b.key), 1);
    await c.close();
  });
});

function dirEntry(name: string, tree: string): TreeEntry {
  return { name, kind: 'dir', mode: 0o755, uid: 0, gid: 0, size: 0, mtimeNs: 0n, ctimeNs: 0n, tree };
}

async function putTree(store: CountingStore, t: Tree): Promise<string> {
  const buf = encodeTree(t);
  const h = hashBuffer(buf);
  await store.inner.put(metaKey(ORG, h), buf);
  return h;
}

test('the namespace walk fetches every tree once, a level\'s requests in flight together', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    // root -> 30 dirs -> each: its own dir, and one dir shared by all (fetched once) -> one leaf
    const leaf = await putTree(store, { entries: [] });
    const shared = await putTree(store, { entries: [dirEntry('x', leaf)] });
    const mids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const own = await putTree(store, { entries: [dirEntry(`own${i}`, leaf)] });
      const file: TreeEntry = { name: `f${i}`, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0, mtimeNs: 0n, ctimeNs: 0n, blocks: [] };
      mids.push(await putTree(store, { entries: [dirEntry('a', own), file, dirEntry('s', shared)] }));
    }
    const root = await putTree(store, { entries: mids.map((h, i) => dirEntry(`d${String(i).padStart(2, '0')}`, h)) });
    const c = await openCache(dir, store, { fetchParallelism: 80, prefetchParallelism: 64 });
    const g1 = deferred();
    store.gate = g1.promise;
    const walk = new TreeWalk((h) => c.getInBackground('meta', h)).run(root);
    await until(() => store.inFlight === 1, 'the root GET');
    const g2 = deferred();
    store.gate = g2.promise;
    g1.resolve();
    await until(() => store.inFlight === 30, 'the 30 trees of level 1 in flight together');
    store.gate = undefined;
    g2.resolve();
    const r = await walk;
    assert.deepEqual(r, { trees: 63, failed: 0, depth: 3 }); // root, 30 mids, 30 own, shared, leaf
    assert.equal(store.getCount(), 63, 'each distinct tree fetched once');
    await c.close();
  });
});

test('when every cached block is pinned, a newcomer is kept in memory only: the cap still holds', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const blocks = await Promise.all(Array.from({ length: 5 }, () => addBlock(store, 1000)));
    const c = await openCache(dir, store, { maxBytes: 4 * 1000 });
    for (const b of blocks) {
      c.pin('block', b.hash); // one open file holding all five
      assert.deepEqual(await c.read(b.hash, 0, 1000), b.data);
      await c.flush();
      assert.ok(c.stats().bytes <= 4000, `cache holds ${c.stats().bytes} bytes`);
    }
    assert.deepEqual(c.diskOrder(), blocks.slice(0, 4).map((b) => `block/${b.hash}`), 'the first four stay on disk');
    assert.deepEqual(await c.read(at(blocks, 4).hash, 0, 1000), at(blocks, 4).data, 'the fifth is still served (from memory)');
    await c.close();
  });
});

test('the prefetch queue stays first in first out across thousands of entries, skipping what is present', async () => {
  const started: string[] = [];
  let free = 0;
  const present = new Set<string>();
  const q = new PrefetchQueue({
    open: () => true,
    present: (_kind, hash) => present.has(hash),
    trySlot: () => (free > 0 ? (free--, () => undefined) : undefined),
    start: (_kind, hash) => {
      started.push(hash);
      return Promise.resolve(Buffer.from(hash));
    },
    join: (_kind, hash) => Promise.resolve(Buffer.from(`joined ${hash}`)),
    failed: () => undefined,
  });
  const n = 5000;
  for (let i = 0; i < n; i++) q.add(`k${i}`, 'block', `h${i}`);
  q.add('k7', 'block', 'h7');
  assert.equal(q.length, n, 'an object queued twice is queued once');
  for (let i = 0; i < n; i += 3) present.add(`h${i}`);
  const waited = q.wait('k4999', 'block', 'h4999');
  // Slots come free a few at a time, as fetches end.
  for (let round = 0; q.length > 0; round++) {
    free = 1 + (round % 7);
    q.pump();
    assert.ok(round < n, 'the queue drains');
  }
  const want = Array.from({ length: n }, (_, i) => `h${i}`).filter((_, i) => i % 3 !== 0);
  assert.deepEqual(started, want, 'started in queue order, present ones skipped');
  assert.equal(q.has('k10'), false);
  assert.deepEqual(await waited, Buffer.from('h4999'));
  free = 0;
  q.add('k1', 'block', 'h1');
  const cleared = q.wait('k2', 'block', 'h2');
  q.clear(new Error('closed'));
  await assert.rejects(cleared, /closed/);
  assert.equal(q.length, 0);
});
