/**
 * Background work at wake gives the event loop back (util/slicer.ts): the namespace walk over trees that are
 * all in memory, and a pack range of many objects, let callbacks queued on the loop (what a FUSE request is)
 * run before they finish; the warm-up's sink skips an object that a read cached while its range was on the way;
 * a lookup that needs a tree of the namespace pack before its turn takes it at once, verified, without a fetch.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashBuffer } from '../src/hash/blake3.js';
import type { TreeEntry } from '../src/model/tree.js';
import { encodeTree } from '../src/format/codec.js';
import { fetchPackSlices, type HotEntry, type PackSlice } from '../src/transfer/hotset.js';
import { TreeWalk } from '../src/home/treewalk.js';
import { defaults } from '../src/config.js';
import { TimeSlicer } from '../src/util/slicer.js';
import { pino } from 'pino';
import { MemoryStore } from '../src/store/memory.js';
import { nsPackKey } from '../src/store/keys.js';
import { encodeNsPack } from '../src/transfer/nspack.js';
import { NsPack } from '../src/home/nspack.js';

test('a slicer resolves at once within its slice and after a turn of the loop once it is used up', async () => {
  const order: string[] = [];
  setImmediate(() => order.push('loop'));
  await new TimeSlicer(60_000).pause();
  order.push('within');
  const used = new TimeSlicer(0);
  await used.pause();
  order.push('after');
  assert.deepEqual(order, ['within', 'loop', 'after']);
  assert.equal(used.yields, 1);
});

test('a walk over trees already in memory lets the event loop run before it ends', async () => {
  const trees = new Map<string, Buffer>();
  const put = (entries: TreeEntry[]): string => {
    const buf = encodeTree({ entries });
    const h = hashBuffer(buf);
    trees.set(h, buf);
    return h;
  };
  const dir = (name: string, tree: string): TreeEntry => ({ name, kind: 'dir', mode: 0o755, uid: 0, gid: 0, size: 0, mtimeNs: 0n, ctimeNs: 0n, tree });
  const leaves = Array.from({ length: 200 }, (_, i) => put([{ name: `f${i}`, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0, mtimeNs: 0n, ctimeNs: 0n, blocks: [] }, dir('x', put([]))]));
  const root = put(leaves.map((h, i) => dir(`d${String(i).padStart(3, '0')}`, h)));
  const slicer = new TimeSlicer(0); // every tree waits for a turn of the loop
  let loopRan = false;
  setImmediate(() => {
    loopRan = true;
  });
  const r = await new TreeWalk(async (h) => trees.get(h) as Buffer, () => slicer.pause()).run(root);
  assert.equal(loopRan, true, 'a callback queued on the loop ran during the walk');
  assert.deepEqual(r, { trees: 202, failed: 0, depth: 2 });
  assert.ok(slicer.yields >= 202);
});

test('a pack range is cut a slice at a time; an object cached meanwhile is skipped unverified', async () => {
  const objs = Array.from({ length: 50 }, (_, i) => Buffer.from(`object ${i} `.repeat(10)));
  const slices: PackSlice[] = [];
  let offset = 0;
  for (const data of objs) {
    const entry: HotEntry = { kind: 'block', hash: hashBuffer(data), size: data.length, packed: true };
    slices.push({ entry, offset });
    offset += data.length;
  }
  const pack = Buffer.concat(objs);
  pack[(slices[7]?.offset ?? 0) + 1] ^= 1; // object 7 is damaged, but cached meanwhile: never looked at
  const cachedMeanwhile = new Set([slices[7]?.entry.hash, slices[30]?.entry.hash]);
  const good: string[] = [];
  const bad: string[] = [];
  let pauses = 0;
  let loopTurns = 0;
  const tick = setInterval(() => loopTurns++, 0);
  const slicer = new TimeSlicer(0);
  try {
    await fetchPackSlices(async (o, l) => pack.subarray(o, o + l), slices, { rangeBytes: 1 << 20, parallelism: 1, pause: () => {
      pauses++;
      return slicer.pause();
    } }, {
      wants: (e) => !cachedMeanwhile.has(e.hash),
      good: (e, data) => {
        assert.equal(hashBuffer(data), e.hash);
        good.push(e.hash);
      },
      bad: (e) => bad.push(e.hash),
    });
  } finally {
    clearInterval(tick);
  }
  assert.equal(pauses, 50, 'one pause per object of the range');
  assert.ok(loopTurns > 0, 'the loop ran while the range was cut');
  assert.deepEqual(bad, []);
  assert.deepEqual(good, slices.filter((s) => !cachedMeanwhile.has(s.entry.hash)).map((s) => s.entry.hash));
});

test('a tree of the namespace pack is taken at once, verified, while the pack is cut a slice at a time', async () => {
  const trees = Array.from({ length: 4000 }, (_, i) => Buffer.from(`tree ${i} `.repeat(4)));
  const hashes = trees.map((t) => hashBuffer(t));
  const store = new MemoryStore();
  const pack = encodeNsPack(hashes[0] as string, trees.map((data, i) => ({ hash: hashes[i] as string, data })));
  const last = trees.length - 1;
  pack[pack.length - 1] ^= 1; // the last tree is damaged: taken early, it is rejected, not served
  await store.put(nsPackKey('o', 'h'), pack);
  let ranges = 0;
  const counted = Object.assign(Object.create(store) as MemoryStore, {
    getRange: (key: string, offset: number, length: number) => {
      ranges++;
      return store.getRange(key, offset, length);
    },
  });
  const cache = new Map<string, Buffer>();
  const ns = new NsPack(counted, 'o', 'h', {
    has: (_k, h) => cache.has(h),
    get: () => Promise.reject(new Error('no fetch expected')),
    putInMemory: (_k, h, data) => void cache.set(h, data),
  }, pino({ level: 'silent' }), { ...defaults.nsPack, rangeBytes: 1 << 20 });
  const early: Array<Buffer | undefined> = [];
  const loading = ns.load(hashes[0] as string);
  await new Promise<void>((resolve) => {
    const look = (): void => {
      // Before the cut reaches them: a sound tree is served at once, a damaged one is not.
      if (!cache.has(hashes[last - 1] as string) && ns.take(hashes[last - 1] as string)) {
        early.push(cache.get(hashes[last - 1] as string), ns.take(hashes[last] as string));
        return resolve();
      }
      if (ns.report?.done) return resolve();
      setImmediate(look);
    };
    look();
  });
  const r = await loading;
  assert.equal(early.length, 2, 'the load was still cutting when the lookup came');
  assert.ok(early[0]?.equals(trees[last - 1] as Buffer));
  assert.equal(early[1], undefined);
  assert.equal(ranges, 1, 'one ranged GET: nothing fetched alone');
  assert.deepEqual({ fromPack: r.fromPack, rejected: r.rejected, cached: r.cached }, { fromPack: trees.length - 1, rejected: 1, cached: 0 });
  assert.equal(cache.size, trees.length - 1);
  assert.equal(cache.has(hashes[last] as string), false);

  // Before any load: a tree of the first range, fetched early by the wake, is taken from it.
  cache.clear();
  ranges = 0;
  const first = new NsPack(counted, 'o', 'h', {
    has: (_k, h) => cache.has(h),
    get: () => Promise.reject(new Error('no fetch expected')),
    putInMemory: (_k, h, data) => void cache.set(h, data),
  }, pino({ level: 'silent' }), { ...defaults.nsPack, rangeBytes: 1 << 20 });
  first.start();
  await new Promise((resolve) => setImmediate(resolve));
  assert.ok(first.take(hashes[10] as string)?.equals(trees[10] as Buffer), 'taken from the early range');
  assert.deepEqual([...cache.keys()], [hashes[10]]);
  const loaded = await first.load(hashes[0] as string);
  assert.equal(ranges, 1, 'the load cut the early range; nothing fetched twice');
  assert.deepEqual({ fromPack: loaded.fromPack, cached: loaded.cached, rejected: loaded.rejected }, { fromPack: trees.length - 2, cached: 1, rejected: 1 });
});
