/**
 * The shape of a seal's store traffic: a change to a file 8 directories deep costs two round
 * trips, not one per tree level. The store holds every request until the test releases it; the seal must
 * issue the block, all 9 changed trees, the snapshot and the gc fence's look without any of them having
 * answered, and HEAD only after all of them have. A seal that waited for a level before starting the next
 * never reaches that count and the test fails. An fsync to the log is one request: a create-only segment.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Content } from '../src/inodes/content.js';
import { Journal } from '../src/inodes/journal.js';
import { UpperFiles } from '../src/inodes/upper.js';
import { HomeView } from '../src/inodes/view.js';
import { ROOT_INO } from '../src/inodes/types.js';
import { LogFencedError, LogFullError, seal, sealToLog, type SealDeps } from '../src/seal/seal.js';
import { claimLog, liveHead } from '../src/fsynclog/homelog.js';
import { decodeTree } from '../src/format/codec.js';
import { Excludes } from '../src/format/excludes.js';
import { GcFence } from '../src/format/gcfence.js';
import { readHead } from '../src/format/heads.js';
import { ObjectStore } from '../src/format/objects.js';
import { MemoryStore } from '../src/store/memory.js';
import { Slabs } from '../src/util/slabs.js';
import { SLAB_MIN } from '../src/seal/blockread.js';
import type { ObjectInfo, Store } from '../src/store/store.js';

/** Holds every request until `release()`; records what was asked, in order. */
class HeldStore implements Store {
  readonly asked: Array<{ op: string; key: string }> = [];
  private held: Array<() => void> = [];
  holding = true;
  constructor(readonly inner: Store) {}
  get url(): string {
    return this.inner.url;
  }
  private async hold<T>(op: string, key: string, run: () => Promise<T>): Promise<T> {
    this.asked.push({ op, key });
    if (this.holding) await new Promise<void>((r) => this.held.push(r));
    return run();
  }
  get pending(): number {
    return this.held.length;
  }
  release(): void {
    const h = this.held;
    this.held = [];
    for (const r of h) r();
  }
  has(keys: readonly string[]): Promise<Set<string>> {
    return this.hold('has', keys.join(','), () => this.inner.has(keys));
  }
  get(key: string): Promise<Buffer> {
    return this.hold('get', key, () => this.inner.get(key));
  }
  getRange(key: string, offset: number, length: number): Promise<Buffer> {
    return this.hold('getRange', key, () => this.inner.getRange(key, offset, length));
  }
  put(key: string, data: Buffer): Promise<void> {
    return this.hold('put', key, () => this.inner.put(key, data));
  }
  putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    return this.hold('putIfAbsent', key, () => this.inner.putIfAbsent(key, data));
  }
  async *list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    await this.hold('list', prefix, async () => undefined);
    yield* this.inner.list(prefix, limit);
  }
  delete(key: string): Promise<void> {
    return this.hold('delete', key, () => this.inner.delete(key));
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** A journal, content and view over a held memory store, and seal deps for them; removed after `fn`. */
async function withHome(tag: string, home: string, parallelism: number, fn: (h: { mem: MemoryStore; store: HeldStore; content: Content; view: HomeView; deps: SealDeps }) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), `homefs-${tag}-`));
  const mem = new MemoryStore();
  const store = new HeldStore(mem);
  store.holding = false;
  const j = new Journal(join(dir, 'journal'));
  try {
    const objects = new ObjectStore(store, 'acme');
    const noBlocks = { read: async () => Buffer.alloc(0), get: async () => Buffer.alloc(0), prefetch: () => undefined, size: () => undefined };
    const content = new Content(j, new UpperFiles(join(dir, 'upper')), noBlocks, { readaheadBlocks: 0, quotaBytes: 0 });
    const view = new HomeView(j, { getTree: async (h) => decodeTree(await mem.get(`acme/meta/${h.slice(0, 2)}/${h}`), h), prefetchTrees: () => undefined });
    view.initRoot(null, {}, 0, 0);
    const deps: SealDeps = {
      journal: j, content, objects, excludes: new Excludes([]), home, host: 'test', parallelism,
      fence: { gc: new GcFence(store, 'acme'), observed: null },
    };
    await fn({ mem, store, content, view, deps });
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(ok(), what);
}

test('a write 8 directories deep seals in two round trips: everything in parallel, then HEAD', async () => {
  await withHome('sealshape', 'deep', 4, async ({ mem, store, content, view, deps }) => {
    let parent = ROOT_INO;
    for (let i = 0; i < 8; i++) parent = view.create(parent, `d${i}`, { kind: 'dir', mode: 0o755, uid: 0, gid: 0 }).ino;
    const file = view.create(parent, 'f', { kind: 'file', mode: 0o644, uid: 0, gid: 0 }).ino;
    await content.write(file, 0, Buffer.from('first'));
    assert.ok(await seal(deps, 'setup'), 'the first seal commits');

    await content.write(file, 0, Buffer.from('second version'));
    store.asked.length = 0;
    store.holding = true;
    const sealing = seal(deps, 'fsync');
    // One block + 9 trees (root and 8 levels) + the snapshot + the fence's look, none answered yet.
    await until('the whole seal but HEAD is in flight at once', () => store.pending === 12);
    assert.deepEqual(store.asked.filter((a) => a.op === 'putIfAbsent'), [], 'HEAD waits for everything else');
    assert.equal(store.asked.filter((a) => a.op === 'put' && a.key.includes('/meta/')).length, 10, 'trees and snapshot');
    store.release();
    await until('HEAD is written once they landed', () => store.pending === 1);
    assert.match(store.asked.at(-1)?.key ?? '', /\/heads\//);
    store.holding = false;
    store.release();
    const r = await sealing;
    assert.equal(r?.gen, 1);
    const head = await readHead(mem, 'acme', 'deep');
    assert.equal(head?.snapshot, r?.snapshot, 'HEAD names the new snapshot');
    const again = await seal(deps, 'fsync');
    assert.equal(again, null, 'nothing left to seal: every tree was recorded');
  });
});

test('an fsync to the log 8 directories deep is one request; a claimed log refuses the next segment', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-logshape-'));
  const mem = new MemoryStore();
  const store = new HeldStore(mem);
  store.holding = false;
  const j = new Journal(join(dir, 'journal'));
  try {
    const objects = new ObjectStore(store, 'acme');
    const noBlocks = { read: async () => Buffer.alloc(0), get: async () => Buffer.alloc(0), prefetch: () => undefined, size: () => undefined };
    const content = new Content(j, new UpperFiles(join(dir, 'upper')), noBlocks, { readaheadBlocks: 0, quotaBytes: 0 });
    const view = new HomeView(j, { getTree: async (h) => decodeTree(await mem.get(`acme/meta/${h.slice(0, 2)}/${h}`), h), prefetchTrees: () => undefined });
    view.initRoot(null, {}, 0, 0);
    const deps: SealDeps = {
      journal: j, content, objects, excludes: new Excludes([]), home: 'deep', host: 'test', parallelism: 4,
      fence: { gc: new GcFence(store, 'acme'), observed: null },
    };
    let parent = ROOT_INO;
    for (let i = 0; i < 8; i++) parent = view.create(parent, `d${i}`, { kind: 'dir', mode: 0o755, uid: 0, gid: 0 }).ino;
    const file = view.create(parent, 'f', { kind: 'file', mode: 0o644, uid: 0, gid: 0 }).ino;
    await content.write(file, 0, Buffer.from('first'));
    const sealed = await seal(deps, 'setup');
    assert.ok(sealed);

    await content.write(file, 0, Buffer.from('logged, not sealed'));
    store.asked.length = 0;
    const r = await sealToLog(deps, { gen: sealed.gen, seq: 0, writer: 'me' }, 'fsync', 1 << 20);
    assert.deepEqual(store.asked.map((a) => a.op), ['putIfAbsent'], 'one create-only request');
    assert.match(store.asked[0]?.key ?? '', /^acme\/homes\/deep\/log\/9999999999999\/9999999999999$/);
    assert.equal(j.changedCount > 0, true, 'the journal keeps the change for the seal that absorbs the log');
    const live = await liveHead(new ObjectStore(mem, 'acme'), 'deep');
    assert.equal(live.snapshot, r?.snapshot, 'readers see the segment');
    const snap = await live.objects.getSnapshot(live.snapshot ?? '');
    let tree = await live.objects.getTree(snap.root);
    for (let i = 0; i < 8; i++) tree = await live.objects.getTree(tree.entries[0]?.tree ?? '');
    const block = await live.objects.getBlock(tree.entries[0]?.blocks?.[0] ?? '');
    assert.equal(block.toString(), 'logged, not sealed');

    await assert.rejects(sealToLog(deps, { gen: sealed.gen, seq: 1, writer: 'me' }, 'fsync', 10), LogFullError, 'too big for a segment: nothing written');
    await claimLog(mem, 'acme', 'deep', sealed.gen, 'other host');
    await assert.rejects(sealToLog(deps, { gen: sealed.gen, seq: 1, writer: 'me' }, 'fsync', 1 << 20), LogFencedError);
    assert.equal((await liveHead(new ObjectStore(mem, 'acme'), 'deep')).snapshot, r?.snapshot, 'the fenced segment never counts');
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a paced seal keeps to its pace while it holds, and goes at full speed once the pace lifts', async () => {
  let allowed = 1;
  await withHome('sealpace', 'paced', 8, async ({ store, content, view, deps: plain }) => {
    const deps: SealDeps = { ...plain, pace: () => allowed };
    assert.ok(await seal(deps, 'setup'), 'a first seal of the empty home');
    for (let i = 0; i < 6; i++) {
      const f = view.create(ROOT_INO, `f${i}`, { kind: 'file', mode: 0o644, uid: 0, gid: 0 }).ino;
      await content.write(f, 0, Buffer.alloc(5000, i + 1));
    }
    store.asked.length = 0;
    store.holding = true;
    const blockPuts = (): number => store.asked.filter((a) => a.op === 'put' && a.key.includes('/blocks/')).length;
    const sealing = seal(deps, 'absorb');
    await until('one block write is in flight', () => blockPuts() === 1);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(blockPuts(), 1, 'the pace holds the other blocks back');
    store.release();
    await until('the next block goes once the first landed', () => blockPuts() === 2);
    allowed = Infinity;
    store.holding = false;
    store.release();
    const r = await sealing;
    assert.equal(blockPuts(), 6, 'every block went up');
    assert.equal(r?.gen, 1);
  });
});

test('a seal reads large blocks into a few reused buffers, and each stays untouched until its upload has copied it', async () => {
  await withHome('sealslabs', 'slabs', 4, async ({ store, content, view, deps }) => {
    const files: Array<{ ino: number; bytes: Buffer }> = [];
    for (let i = 0; i < 3; i++) {
      const ino = view.create(ROOT_INO, `f${i}`, { kind: 'file', mode: 0o644, uid: 0, gid: 0 }).ino;
      const bytes = randomBytes(12 * 1024 * 1024 + 1000 * (i + 1));
      await content.write(ino, 0, bytes);
      files.push({ ino, bytes });
    }
    const slabs = new Slabs(8 * 1024 * 1024, SLAB_MIN, 8 * 1024 * 1024);
    const taken = slabs.take.bind(slabs);
    let buffers = 0;
    const seen = new Set<ArrayBufferLike>();
    slabs.take = async (n) => {
      const s = await taken(n);
      if (!seen.has(s.buf.buffer)) (seen.add(s.buf.buffer), buffers++);
      return s;
    };
    // Uploads are held and let go a few at a time: a buffer given back before its upload copied it would be
    // read over by the next block, and its object would not match its hash.
    store.holding = true;
    let sealing = true;
    const drip = (async () => {
      while (sealing) {
        store.release();
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const r = await seal({ ...deps, slabs }, 'test').finally(() => (sealing = false));
    await drip;
    store.holding = false;
    assert.ok(r, 'the seal commits');
    assert.ok(buffers <= 2, `at most the budget's two 4 MiB buffers were ever made (${buffers})`);
    for (const f of files) {
      const blocks = (deps.journal.get(f.ino)?.content as { sealed: { blocks: string[] } }).sealed.blocks;
      assert.equal(blocks.length, 4);
      const back = Buffer.concat(await Promise.all(blocks.map((h) => deps.objects.getBlock(h))));
      assert.ok(back.equals(f.bytes), 'every block in the store holds the bytes the file had');
    }
  });
});
