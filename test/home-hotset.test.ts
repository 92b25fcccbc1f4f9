/**
 * HotSet (home/hotset.ts) against a memory store and a recording fake cache: what a session records, what
 * sleep writes, and how a warm-up hands the record to the cache (pack objects verified and put, the rest
 * prefetched in record order, a budget respected). The real-mount tests are in mount-hotset.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { hashBuffer } from '../src/hash/blake3.js';
import { HotSet, type HotCache } from '../src/home/hotset.js';
import { decodeHotSet } from '../src/transfer/hotset.js';
import type { HotKind } from '../src/transfer/hotset.js';
import { hotsetKey, wakePackKey } from '../src/store/keys.js';
import { MemoryStore } from '../src/store/memory.js';
import { createLogger } from '../src/util/log.js';
import { defaults } from '../src/config.js';

const log = createLogger({ level: 'error', stream: new Writable({ write: (_c, _e, cb) => cb() }) });

class FakeCache implements HotCache {
  readonly objects = new Map<string, Buffer>();
  readonly puts: string[] = [];
  readonly prefetched: string[] = [];
  has(kind: HotKind, hash: string): boolean {
    return this.objects.has(`${kind}/${hash}`);
  }
  size(kind: HotKind, hash: string): number | undefined {
    return this.objects.get(`${kind}/${hash}`)?.length;
  }
  async get(kind: HotKind, hash: string): Promise<Buffer> {
    const b = this.objects.get(`${kind}/${hash}`);
    if (!b) throw new Error('not cached');
    return b;
  }
  putInMemory(kind: HotKind, hash: string, data: Buffer): void {
    assert.equal(hashBuffer(data), hash, 'only verified bytes are put');
    this.puts.push(`${kind}/${hash}`);
    this.objects.set(`${kind}/${hash}`, Buffer.from(data));
  }
  prefetch(kind: HotKind, hashes: readonly string[]): void {
    for (const h of hashes) this.prefetched.push(`${kind}/${h}`);
  }
}

/** A warm-up of a mount that already serves (the bulk of the pack waits for that). */
function warm(h: HotSet): ReturnType<HotSet['warmUp']> {
  h.serving();
  return h.warmUp();
}

function obj(text: string, size = 0): { hash: string; data: Buffer } {
  const data = Buffer.concat([Buffer.from(text), Buffer.alloc(size)]);
  return { hash: hashBuffer(data), data };
}

test('a session records first reads once, in order; sleep writes the pack of small cached objects, then the record', async () => {
  const store = new MemoryStore();
  const cache = new FakeCache();
  const tree = obj('tree');
  const small = obj('small');
  const big = obj('big', defaults.hotset.packObjectMax + 1);
  for (const [k, o] of [['meta', tree], ['block', small], ['block', big]] as const) cache.objects.set(`${k}/${o.hash}`, o.data);
  const hot = new HotSet(store, 'acme', 'a', cache, log, Infinity);
  hot.record('meta', tree.hash, tree.data.length);
  hot.record('block', small.hash, undefined); // size from the cache
  hot.record('meta', tree.hash, tree.data.length);
  hot.record('block', big.hash, big.data.length);
  assert.equal(hot.entries, 3);
  assert.equal(hot.touchedBytes, tree.data.length + small.data.length + big.data.length);
  await hot.save('d'.repeat(64), true);
  const rec = decodeHotSet(await store.get(hotsetKey('acme', 'a')));
  assert.deepEqual(rec.entries.map((e) => [e.kind, e.hash, e.packed]), [['meta', tree.hash, true], ['block', small.hash, true], ['block', big.hash, false]]);
  assert.ok((await store.get(wakePackKey('acme', 'a'))).equals(Buffer.concat([tree.data, small.data])));
  assert.equal(rec.snapshot, 'd'.repeat(64));
});

test('nothing read: nothing written, the previous record stays', async () => {
  const store = new MemoryStore();
  await store.put(hotsetKey('acme', 'a'), Buffer.from('previous'));
  await new HotSet(store, 'acme', 'a', new FakeCache(), log, Infinity).save(null, true);
  assert.equal((await store.get(hotsetKey('acme', 'a'))).toString(), 'previous');
});

test('a warm-up puts verified pack objects, prefetches the rest in record order, and skips what is cached', async () => {
  const store = new MemoryStore();
  const src = new FakeCache();
  const objs = ['a', 'b', 'c', 'd'].map((t) => obj(t));
  const big = obj('big', defaults.hotset.packObjectMax + 1);
  for (const o of objs) src.objects.set(`block/${o.hash}`, o.data);
  src.objects.set(`block/${big.hash}`, big.data);
  const rec = new HotSet(store, 'acme', 'a', src, log, Infinity);
  for (const o of [objs[0], big, objs[1], objs[2], objs[3]]) if (o) rec.record('block', o.hash, o.data.length);
  await rec.save(null, true);
  // damage object c in the pack (offset 2: a, b, then c)
  const pack = await store.get(wakePackKey('acme', 'a'));
  pack[2] = 0x7a;
  await store.put(wakePackKey('acme', 'a'), pack);

  const cache = new FakeCache();
  const d = objs[3];
  if (d) cache.objects.set(`block/${d.hash}`, d.data); // already cached: left alone
  const r = await warm(new HotSet(store, 'acme', 'a', cache, log, Infinity));
  assert.equal(r.done, true);
  assert.equal(r.record, true);
  assert.equal(r.cached, 1);
  assert.equal(r.fromPack, 2);
  assert.equal(r.packRejected, 1);
  assert.deepEqual(cache.puts, [objs[0], objs[1]].map((o) => `block/${o?.hash}`));
  assert.deepEqual(cache.prefetched, [`block/${big.hash}`, `block/${objs[2]?.hash}`], 'unpacked first, then what the pack failed to give');
});

test('a warm-up stays within its byte budget, in record order', async () => {
  const store = new MemoryStore();
  const src = new FakeCache();
  const objs = ['a', 'b', 'c'].map((t) => obj(t, 1000));
  const rec = new HotSet(store, 'acme', 'a', src, log, Infinity);
  for (const o of objs) {
    src.objects.set(`block/${o.hash}`, o.data);
    rec.record('block', o.hash, o.data.length);
  }
  await rec.save(null, false);
  const cache = new FakeCache();
  const r = await warm(new HotSet(store, 'acme', 'a', cache, log, 2100));
  assert.equal(r.prefetched, 2);
  assert.deepEqual(cache.prefetched, objs.slice(0, 2).map((o) => `block/${o.hash}`));
});

test('no record, or one that does not decode: the warm-up does nothing and does not throw', async () => {
  const store = new MemoryStore();
  const cache = new FakeCache();
  const none = new HotSet(store, 'acme', 'a', cache, log, Infinity);
  assert.equal((await warm(none)).record, false);
  await store.put(hotsetKey('acme', 'a'), Buffer.from('HFHS\x07garbage'));
  const r = await warm(new HotSet(store, 'acme', 'a', cache, log, Infinity));
  assert.equal(r.record, false);
  assert.equal(r.done, true);
  assert.deepEqual([cache.puts.length, cache.prefetched.length], [0, 0]);
});

test('before the mount serves, a warm-up takes only the record and the pack\'s first range; a failed wake stops it there', async () => {
  const store = new MemoryStore();
  const src = new FakeCache();
  const objs = ['a', 'b', 'c'].map((t) => obj(t, defaults.hotset.packFirstRangeBytes / 2 + 1)); // one per first range
  const big = obj('big', defaults.hotset.packObjectMax + 1);
  const rec = new HotSet(store, 'acme', 'a', src, log, Infinity);
  for (const o of [...objs, big]) {
    src.objects.set(`block/${o.hash}`, o.data);
    rec.record('block', o.hash, o.data.length);
  }
  await rec.save(null, true);
  const ranges: number[] = [];
  const getRange = store.getRange.bind(store);
  let openGate = (): void => undefined;
  const gate = new Promise<void>((resolve) => {
    openGate = resolve;
  });
  store.getRange = (key: string, offset: number, length: number) => {
    ranges.push(offset);
    return offset === 0 ? getRange(key, offset, length) : gate.then(() => getRange(key, offset, length)); // the bulk is held
  };
  for (const served of [true, false]) {
    ranges.length = 0;
    const cache = new FakeCache();
    const h = new HotSet(store, 'acme', 'a', cache, log, Infinity);
    const warming = h.warmUp();
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(ranges, [0], 'only the first range before the mount serves');
    assert.deepEqual(cache.puts, [`block/${objs[0]?.hash}`]);
    assert.deepEqual(cache.prefetched, [], 'no prefetch before the mount serves');
    if (served) h.serving();
    else h.stop();
    await new Promise((r) => setTimeout(r, 20)); // while the bulk's GET is still held
    if (served) {
      assert.equal(ranges.length, 2, 'the bulk range is requested once the mount serves');
      assert.deepEqual(cache.prefetched, [`block/${big.hash}`], 'and the unpacked object is handed to prefetch');
    }
    openGate();
    const r = await warming;
    assert.equal(r.done, true);
    if (served) {
      assert.equal(r.fromPack, 3);
      assert.deepEqual(cache.prefetched, [`block/${big.hash}`]);
    } else {
      assert.deepEqual([ranges.length, cache.puts.length, cache.prefetched.length], [1, 1, 0], 'a stopped warm-up takes nothing more');
    }
  }
});
