/**
 * Block cache on disk: the size cap with least-recently-used eviction, rebuilding the index at init,
 * stale temp files, corrupt cache files, several daemons sharing one cache directory, and the atomic writes'
 * batches.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BlockCache } from '../src/cache/blockcache.js';
import { DiskFiles } from '../src/cache/diskfiles.js';
import { hashBuffer } from '../src/hash/blake3.js';
import { ORG, CountingStore, addBlock, withTempDir, type Obj } from './support/cache-store.js';

const KiB = 1024;

async function open(dir: string, store: CountingStore, maxBytes: number, memoryBytes = 0): Promise<BlockCache> {
  const c = new BlockCache({ dir, store, org: ORG, maxBytes, memoryBytes });
  await c.init();
  return c;
}

function blockPath(dir: string, hash: string): string {
  return join(dir, 'blocks', hash.slice(0, 2), hash);
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(() => true, () => false);
}

async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const sub of await readdir(join(dir, 'blocks'))) {
    for (const name of await readdir(join(dir, 'blocks', sub))) total += (await stat(join(dir, 'blocks', sub, name))).size;
  }
  return total;
}

test('eviction keeps the disk total under maxBytes and evicts the least recently used object', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map(() => addBlock(store, 3 * KiB))) as [Obj, Obj, Obj, Obj];
    const cache = await open(dir, store, 10 * KiB, 1 << 20);
    for (const o of [a, b, c]) {
      await cache.get('block', o.hash);
      await cache.flush();
    }
    await cache.get('block', a.hash); // a memory hit still counts as a use
    await cache.get('block', d.hash);
    await cache.flush();
    assert.equal(await exists(blockPath(dir, b.hash)), false, 'b was least recently used');
    for (const o of [a, c, d]) assert.equal(await exists(blockPath(dir, o.hash)), true);
    const s = cache.stats();
    assert.equal(s.evictions, 1);
    assert.equal(s.bytes, 9 * KiB);
    assert.equal(await diskBytes(dir), 9 * KiB);
    await cache.close();
  });
});

test('many inserts never leave more than maxBytes on disk', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const objs = await Promise.all(Array.from({ length: 40 }, (_, i) => addBlock(store, 1000 + i * 97)));
    const cache = await open(dir, store, 20_000);
    await Promise.all(objs.map((o) => cache.get('block', o.hash)));
    await cache.flush();
    const s = cache.stats();
    assert.ok(s.bytes <= 20_000, `index says ${s.bytes}`);
    assert.equal(await diskBytes(dir), s.bytes);
    assert.ok(s.evictions > 0);
    assert.ok(s.entries >= 3, `entries ${s.entries}`);
    // an object larger than the whole cap is served but never written
    const big = await addBlock(store, 30_000);
    assert.deepEqual(await cache.get('block', big.hash), big.data);
    await cache.flush();
    assert.equal(await exists(blockPath(dir, big.hash)), false);
    await cache.close();
  });
});

test('init rebuilds the index from disk in last-use order, evicts down to the cap, and removes stale temp files', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const objs = await Promise.all([0, 1, 2, 3].map(() => addBlock(store, 2 * KiB)));
    const first = await open(dir, store, 1 << 20);
    for (const o of objs) await first.get('block', o.hash);
    await first.close();
    // last use is the mtime: make objs[2] the oldest and objs[0] the newest
    const now = Date.now() / 1000;
    const ages = [10, 300, 900, 600];
    await Promise.all(objs.map((o, i) => utimes(blockPath(dir, o.hash), now - (ages[i] ?? 0), now - (ages[i] ?? 0))));
    const sub = join(dir, 'blocks', 'ab');
    await mkdir(sub, { recursive: true });
    await writeFile(join(sub, '.tmp-1-stale'), 'x');
    await utimes(join(sub, '.tmp-1-stale'), now - 3600, now - 3600);
    await writeFile(join(sub, '.tmp-2-live'), 'y'); // another daemon's write in progress
    await writeFile(join(sub, 'not-a-hash'), 'z');

    const again = await open(dir, store, 1 << 20);
    assert.equal(again.stats().entries, 4);
    assert.equal(again.stats().bytes, 8 * KiB);
    assert.deepEqual(again.diskOrder(), [2, 3, 1, 0].map((i) => `block/${objs[i]?.hash}`));
    assert.deepEqual((await readdir(sub)).filter((n) => !/^[0-9a-f]{64}$/.test(n)).sort(), ['.tmp-2-live', 'not-a-hash']);
    await again.close();

    const smaller = await open(dir, store, 5 * KiB);
    await smaller.flush();
    assert.equal(smaller.stats().entries, 2);
    assert.equal(smaller.stats().evictions, 2);
    assert.ok(smaller.stats().bytes <= 5 * KiB);
    for (const i of [2, 3]) assert.equal(await exists(blockPath(dir, objs[i]?.hash ?? '')), false, `old object ${i} evicted`);
    for (const i of [0, 1]) {
      const o = objs[i];
      assert.ok(o);
      assert.deepEqual(await smaller.read(o.hash, 0, 2 * KiB), o.data);
    }
    assert.equal(smaller.stats().diskHits, 2);
    assert.equal(store.getCount(), 4, 'survivors served from disk, no new GETs');
    await smaller.close();
  });
});

test('a corrupt cache file is detected, removed, and fetched again from the store', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const o = await addBlock(store, 4 * KiB);
    const first = await open(dir, store, 1 << 20);
    await first.get('block', o.hash);
    await first.close();
    await writeFile(blockPath(dir, o.hash), Buffer.alloc(4 * KiB));
    const second = await open(dir, store, 1 << 20);
    assert.deepEqual(await second.get('block', o.hash), o.data);
    assert.equal(store.getCount(o.key), 2);
    await second.flush();
    const onDisk = await readFile(blockPath(dir, o.hash));
    assert.deepEqual(onDisk, o.data, 'rewritten with the good content');
    await second.close();
  });
});

test('a range read of a cache file this process has not verified checks it first: corrupt, it is fetched again', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const good = await addBlock(store, 4 * KiB);
    const bad = await addBlock(store, 4 * KiB);
    const first = await open(dir, store, 1 << 20);
    for (const o of [good, bad]) await first.get('block', o.hash);
    await first.close();
    const flipped = Buffer.from(bad.data);
    flipped[100] = (flipped[100] ?? 0) ^ 1;
    await writeFile(blockPath(dir, bad.hash), flipped);
    const second = await open(dir, store, 1 << 20);
    assert.deepEqual(await second.read(good.hash, 1000, 100), good.data.subarray(1000, 1100));
    assert.deepEqual(await second.read(bad.hash, 50, 100), bad.data.subarray(50, 150));
    assert.equal(store.getCount(good.key), 1, 'the good file served from disk');
    assert.equal(store.getCount(bad.key), 2, 'the corrupt one fetched again');
    await second.flush();
    assert.deepEqual(await readFile(blockPath(dir, bad.hash)), bad.data, 'rewritten with the good content');
    await second.close();
  });
});

test('two daemons share one cache directory: files appear and vanish under each other', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const x = await addBlock(store, 3 * KiB);
    const y = await addBlock(store, 3 * KiB);
    const a = await open(dir, store, 1 << 20);
    const b = await open(dir, store, 1 << 20);
    await a.get('block', x.hash);
    await a.flush();
    assert.equal(b.has('block', x.hash), false, 'b has not looked yet');
    assert.deepEqual(await b.get('block', x.hash), x.data);
    assert.equal(store.getCount(x.key), 1, 'b found a\'s file instead of fetching');
    assert.equal(b.has('block', x.hash), true);
    // both fetch y at once: both write it, the rename makes that harmless
    await Promise.all([a.get('block', y.hash), b.get('block', y.hash)]);
    await Promise.all([a.flush(), b.flush()]);
    assert.deepEqual(await b.read(y.hash, 0, 3 * KiB), y.data);
    // another daemon evicts x behind b's back: b's read falls back to the store
    await unlink(blockPath(dir, x.hash));
    assert.deepEqual(await b.read(x.hash, 100, 200), x.data.subarray(100, 300));
    assert.equal(store.getCount(x.key), 2);
    // a range read also finds (and verifies) a file the other daemon wrote
    const z = await addBlock(store, 2 * KiB);
    await a.get('block', z.hash);
    await a.flush();
    assert.deepEqual(await b.read(z.hash, 10, 20), z.data.subarray(10, 30));
    assert.equal(store.getCount(z.key), 1);
    assert.equal(b.has('block', z.hash), true);
    await Promise.all([a.close(), b.close()]);
  });
});

test('a use persists the last-use time (mtime) so it survives a restart, at most once a minute', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const o = await addBlock(store, 1000);
    const first = await open(dir, store, 1 << 20);
    await first.get('block', o.hash);
    await first.close();
    const hourAgo = Date.now() / 1000 - 3600;
    await utimes(blockPath(dir, o.hash), hourAgo, hourAgo);
    const second = await open(dir, store, 1 << 20, 1 << 20);
    await second.read(o.hash, 0, 10); // disk hit
    await second.flush();
    const m1 = (await stat(blockPath(dir, o.hash))).mtimeMs;
    assert.ok(Date.now() - m1 < 60_000, 'mtime refreshed');
    await utimes(blockPath(dir, o.hash), hourAgo, hourAgo);
    await second.get('block', o.hash); // memory hit within the minute: no new utimes
    await second.flush();
    assert.ok(Date.now() - (await stat(blockPath(dir, o.hash))).mtimeMs > 3000_000, 'not refreshed again within the minute');
    await second.close();
  });
});

test('atomic writes in batches: each lands whole under its name, a vanished fan-out directory is made again, a failure is an fs error', async () => {
  await withTempDir(async (dir) => {
    const files = new DiskFiles(dir);
    await files.ensureDirs();
    const datas = Array.from({ length: 600 }, (_, i) => Buffer.from(`object ${i}\n`.repeat(i % 7 + 1)));
    const hashes = datas.map((d) => hashBuffer(d));
    // 600 writes in one turn: three batches (BATCH_MAX 256).
    await Promise.all(datas.map((d, i) => files.write('block', hashes[i] as string, d)));
    for (const [i, h] of hashes.entries()) assert.deepEqual(await readFile(files.path('block', h)), datas[i]);
    const leftovers = [];
    for (const sub of await readdir(join(dir, 'blocks'))) leftovers.push(...(await readdir(join(dir, 'blocks', sub))).filter((n) => n.startsWith('.tmp-')));
    assert.deepEqual(leftovers, []);
    // The cache wiped underneath: the fan-out directory this process made is gone.
    const again = Buffer.from('written after the wipe');
    const h = hashBuffer(again);
    await mkdir(join(dir, 'blocks', h.slice(0, 2)), { recursive: true });
    await files.write('block', h, again);
    await rm(join(dir, 'blocks'), { recursive: true });
    await mkdir(join(dir, 'blocks'));
    await files.write('block', h, again);
    assert.deepEqual(await readFile(files.path('block', h)), again);
    // A fan-out "directory" that is a file: ENOTDIR from the open, with its path.
    const odd = Buffer.from('cannot land');
    const oh = hashBuffer(odd);
    await rm(join(dir, 'blocks', oh.slice(0, 2)), { recursive: true, force: true });
    await writeFile(join(dir, 'blocks', oh.slice(0, 2)), 'not a directory');
    await assert.rejects(files.write('block', oh, odd), (e: NodeJS.ErrnoException) => e.code === 'ENOTDIR' && e.syscall === 'open' && /\.tmp-/.test(e.path ?? ''));
  });
});
