/**
 * Block cache basics: misses fetch once and hits do not, memory hits vs disk hits, ranges, put/has, stats,
 * on-disk layout and modes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { BlockCache } from '../src/cache/blockcache.js';
import { NotFoundError } from '../src/util/errors.js';
import { hashBuffer } from '../src/hash/blake3.js';
import { ORG, CountingStore, addBlock, addMeta, withTempDir, type Obj } from './support/cache-store.js';

async function open(dir: string, store: CountingStore, memoryBytes?: number): Promise<BlockCache> {
  const c = new BlockCache({ dir, store, org: ORG, maxBytes: 64 * 1024 * 1024, ...(memoryBytes === undefined ? {} : { memoryBytes }) });
  await c.init();
  return c;
}

test('a miss fetches once from the store, later gets are memory hits', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const b = await addBlock(store, 10_000);
    const c = await open(join(dir, ORG), store);
    assert.deepEqual(await c.get('block', b.hash), b.data);
    assert.deepEqual(await c.get('block', b.hash), b.data);
    assert.equal(store.getCount(b.key), 1);
    const s = c.stats();
    assert.equal(s.misses, 1);
    assert.equal(s.hits, 1);
    assert.equal(s.memoryHits, 1);
    assert.equal(s.fetches, 1);
    assert.equal(s.bytesFetched, 10_000);
    await c.close();
  });
});

test('meta objects use the meta key and their own directory', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const m = await addMeta(store, 300);
    const c = await open(join(dir, ORG), store);
    assert.deepEqual(await c.get('meta', m.hash), m.data);
    await c.flush();
    assert.equal(store.getCount(m.key), 1);
    assert.equal((await stat(join(dir, ORG, 'metas', m.hash.slice(0, 2), m.hash))).size, 300);
    assert.equal(c.has('meta', m.hash), true);
    assert.equal(c.has('block', m.hash), false);
    await c.close();
  });
});

test('with no memory cache, the second get is a disk hit; the files are 0600 in 0700 directories', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const b = await addBlock(store, 5000);
    const c = await open(join(dir, ORG), store, 0);
    await c.get('block', b.hash);
    await c.flush();
    assert.deepEqual(await c.get('block', b.hash), b.data);
    assert.equal(store.getCount(), 1);
    const s = c.stats();
    assert.equal(s.diskHits, 1);
    assert.equal(s.memoryHits, 0);
    assert.equal(s.memoryEntries, 0);
    assert.equal(s.entries, 1);
    assert.equal(s.bytes, 5000);
    assert.equal((await stat(join(dir, ORG))).mode & 0o777, 0o700);
    assert.equal((await stat(join(dir, ORG, 'blocks'))).mode & 0o777, 0o700);
    assert.equal((await stat(join(dir, ORG, 'blocks', b.hash.slice(0, 2), b.hash))).mode & 0o777, 0o600);
    await c.close();
  });
});

test('read() serves ranges from memory, from disk, and on a miss', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const b = await addBlock(store, 100_000);
    const mem = await open(join(dir, 'm'), store);
    assert.deepEqual(await mem.read(b.hash, 4096, 4096), b.data.subarray(4096, 8192)); // miss
    assert.deepEqual(await mem.read(b.hash, 99_000, 4096), b.data.subarray(99_000)); // memory, short at the end
    assert.equal((await mem.read(b.hash, 200_000, 10)).length, 0);
    assert.equal(mem.stats().memoryHits, 2);
    assert.equal(store.getCount(), 1);
    await mem.close();

    const disk = await open(join(dir, 'm'), store, 0); // same files, no memory: disk ranges
    assert.deepEqual(await disk.read(b.hash, 12_345, 4096), b.data.subarray(12_345, 12_345 + 4096));
    assert.deepEqual(await disk.read(b.hash, 98_000, 4096), b.data.subarray(98_000));
    assert.equal((await disk.read(b.hash, 100_000, 1)).length, 0);
    assert.equal(disk.stats().diskHits, 3);
    assert.equal(store.getCount(), 1);
    await assert.rejects(disk.read(b.hash, -1, 10), /bad range/);
    await disk.close();
  });
});

test('put() inserts verified content without a fetch; has() reflects it', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const data = Buffer.from('sealed content');
    const hash = hashBuffer(data);
    const c = await open(join(dir, ORG), store, 0);
    assert.equal(c.has('block', hash), false);
    await c.put('block', hash, data);
    assert.equal(c.has('block', hash), true);
    assert.deepEqual(await c.get('block', hash), data);
    assert.equal(store.getCount(), 0);
    await c.close();
  });
});

test('a missing object rejects with the store\'s NotFoundError and is not cached', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const c = await open(join(dir, ORG), store);
    const hash = hashBuffer(Buffer.from('absent'));
    await assert.rejects(c.get('block', hash), NotFoundError);
    await assert.rejects(c.get('block', hash), NotFoundError);
    assert.equal(store.getCount(), 2);
    assert.equal(c.stats().errors, 2);
    assert.equal(c.has('block', hash), false);
    await c.close();
  });
});

test('use before init() or after close() is a clear error; invalid hashes are refused', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const b = await addBlock(store, 10);
    const c = new BlockCache({ dir: join(dir, ORG), store, org: ORG, maxBytes: 1 << 20 });
    await assert.rejects(c.get('block', b.hash), /init\(\) was not called/);
    await c.init();
    await assert.rejects(c.get('block', 'xyz'), /not a BLAKE3 hash/);
    await c.close();
    await assert.rejects(c.get('block', b.hash), /closed/);
    assert.throws(() => new BlockCache({ dir, store, org: '../evil', maxBytes: 1 }));
  });
});

test('putInMemory: served from memory with no disk file; written to disk when the memory LRU evicts it', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const c = await open(join(dir, ORG), store, 5000);
    const a = Buffer.alloc(3000, 1);
    const b = Buffer.alloc(3000, 2);
    const ha = hashBuffer(a);
    const hb = hashBuffer(b);
    c.putInMemory('meta', ha, a);
    await c.flush();
    assert.equal(c.has('meta', ha), true);
    assert.deepEqual(c.diskOrder(), [], 'no disk write while it stays in memory');
    assert.deepEqual(await c.get('meta', ha), a);
    c.putInMemory('meta', hb, b); // 6000 bytes > 5000: a is evicted from memory
    await c.flush();
    assert.deepEqual(c.diskOrder(), [`meta/${ha}`], 'the evicted object went to disk');
    assert.deepEqual(await c.get('meta', ha), a);
    const big = Buffer.alloc(6000, 3); // more than the whole memory cache
    const hbig = hashBuffer(big);
    c.putInMemory('block', hbig, big);
    await c.flush();
    assert.ok(c.diskOrder().includes(`block/${hbig}`), 'an object the memory cache cannot take goes to disk at once');
    assert.deepEqual(await c.get('block', hbig), big);
    assert.equal(store.getCount(), 0, 'never fetched');
    await c.close();
  });
});

test('blocks read past the memory budget never push trees out of memory: each has a budget of its own', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const tree = await addMeta(store, 3_000);
    const c = await open(join(dir, ORG), store, 4_000);
    assert.deepEqual(await c.get('meta', tree.hash), tree.data);
    for (let i = 0; i < 4; i++) {
      const b = await addBlock(store, 3_000 + i);
      await c.get('block', b.hash); // each evicts the block before it from memory
    }
    const before = c.stats().memoryHits;
    assert.deepEqual(await c.get('meta', tree.hash), tree.data);
    assert.equal(c.stats().memoryHits, before + 1, 'the tree is still in memory');
    await c.close();
  });
});

/** Three trees and two blocks of 20,000 bytes each through `c`, whose budget is 100,000 and its blocks' 30,000. */
async function fillTiers(c: BlockCache, store: CountingStore): Promise<{ trees: Obj[]; blocks: Obj[] }> {
  await c.init();
  const trees = [await addMeta(store, 20_000), await addMeta(store, 20_000), await addMeta(store, 20_000)];
  const blocks = [await addBlock(store, 20_000), await addBlock(store, 20_000)];
  for (const m of trees) await c.get('meta', m.hash);
  for (const b of blocks) await c.get('block', b.hash);
  // 60,000 bytes of trees fit their 100,000; of the two 20,000-byte blocks only the last fits in 30,000.
  assert.equal(c.stats().memoryBytes, 80_000);
  return { trees, blocks };
}

test('over a store on this host, blocks get their own smaller LRU and trees keep the whole budget', async () => {
  await withTempDir(async (dir) => {
    class LocalStore extends CountingStore {
      override get url(): string {
        return 'file:///nowhere';
      }
    }
    const store = new LocalStore();
    const c = new BlockCache({ dir: join(dir, ORG), store, org: ORG, maxBytes: 64 * 1024 * 1024, memoryBytes: 100_000, localBlockMemoryBytes: 30_000 });
    const { trees, blocks } = await fillTiers(c, store);
    for (const m of trees) await c.get('meta', m.hash);
    assert.equal(store.getCount(), 5);
    await c.get('block', (blocks[0] as { hash: string }).hash);
    assert.equal(store.getCount(), 6, 'the first block left memory (a store on local disk: not copied to the cache directory)');
    await c.close();
  });
});

test('over a remote store, blocks get their own smaller LRU too, and what leaves it is read from disk', async () => {
  await withTempDir(async (dir) => {
    const store = new CountingStore();
    const c = new BlockCache({ dir: join(dir, ORG), store, org: ORG, maxBytes: 64 * 1024 * 1024, memoryBytes: 100_000, remoteBlockMemoryBytes: 30_000 });
    const { blocks } = await fillTiers(c, store);
    await c.flush();
    const first = blocks[0] as Obj;
    assert.deepEqual(await c.get('block', first.hash), first.data);
    assert.equal(store.getCount(), 5, 'the first block left memory and came back from the cache directory, not the store');
    await c.close();
  });
});
