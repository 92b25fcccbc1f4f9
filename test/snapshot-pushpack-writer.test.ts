/**
 * The streaming push pack writer (transfer/pushpack-writer.ts) over the in-memory store, whose multipart
 * uploads check part numbers, ETags and S3's smallest part: files offered out of order give the same pack,
 * byte for byte, as one built in order (buildPushPack), in parts or in one put; a file that comes after the
 * reorder budget is left out; a failed part or complete leaves no pack and no upload behind. And through
 * `pushDirectory`: a pack streamed in many parts is the one pull expects (taken whole, no fallbacks), a
 * failing pack upload leaves a complete snapshot, and a push that fails aborts the upload.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashBuffer } from '../src/hash/blake3.js';
import { MemoryStore } from '../src/store/memory.js';
import { ForwardingStore } from '../src/store/forwarding.js';
import { pushPackKey } from '../src/store/keys.js';
import type { Uploads } from '../src/store/store.js';
import { pushDirectory } from '../src/transfer/push.js';
import { pullSnapshot } from '../src/transfer/pull.js';
import { buildPushPack, decodePushPack } from '../src/transfer/pushpack.js';
import { PushPackWriter, type PackBlock, type PackWriterOptions } from '../src/transfer/pushpack-writer.js';

const SNAP = 'ab'.repeat(32);
const KEY = 'acme/homes/h/PUSHPACK';
const small: PackWriterOptions = { blockMax: 256 * 1024, maxBytes: 512 * 1024 * 1024, partBytes: 1000, partsInFlight: 2, reorderBytes: 1 << 30 };

/** `n` files of one or two blocks of 1..3000 bytes (deterministic), some blocks repeated across files. */
function files(n: number): PackBlock[][] {
  const out: PackBlock[][] = [];
  for (let i = 0; i < n; i++) {
    const blocks: PackBlock[] = [];
    for (let j = 0; j < 1 + (i % 2); j++) {
      const data = Buffer.alloc(1 + ((i * 977 + j * 131) % 3000), i % 7 === 3 ? 3 : i * 2 + j); // every 7th file the same bytes
      blocks.push({ hash: hashBuffer(data), data });
    }
    out.push(blocks);
  }
  return out;
}

/** The pack built in one buffer from the files in order (the reference). */
function reference(fs: PackBlock[][], snapshot = SNAP): Buffer {
  const seen = new Set<string>();
  const cands = fs.flat().filter((b) => !seen.has(b.hash) && seen.add(b.hash));
  return buildPushPack(snapshot, cands.map((b) => ({ hash: b.hash, length: b.data.length, read: () => b.data }))).pack;
}

/** Offers the files in the order of `order` (slot numbers). */
async function offerAll(w: PushPackWriter, fs: PackBlock[][], order: number[]): Promise<void> {
  for (const slot of order) await w.offer(slot, fs[slot] ?? []);
}

/** A shuffled 0..n-1 where no slot moves more than `spread` from its place (as 64 files in flight finish). */
function jumbled(n: number, spread: number): number[] {
  const order = [...Array(n).keys()];
  for (let i = 0; i + spread < n; i += spread) order.splice(i, spread, ...order.slice(i, i + spread).reverse());
  return order;
}

test('offered out of order, in many parts: the same bytes as the pack built in order', async () => {
  const fs = files(300);
  const store = new MemoryStore({ minPartBytes: 1000 });
  const w = new PushPackWriter(store, KEY, fs.length, small);
  await offerAll(w, fs, jumbled(fs.length, 17));
  const r = await w.finish(SNAP);
  const want = reference(fs);
  assert.deepEqual(r, { written: true, blocks: decodePushPack(want).entries.length, bytes: want.length, late: 0 });
  assert.ok(want.length > 100_000, 'the pack spans a hundred parts');
  assert.ok((await store.get(KEY)).equals(want));
  assert.equal(store.uploadsPending, 0);
});

test('a small pack, or a store without multipart uploads, is one put of the same bytes', async () => {
  const fs = files(40);
  for (const store of [new MemoryStore(), new NoUploads(new MemoryStore())]) {
    const w = new PushPackWriter(store, KEY, fs.length, { ...small, partBytes: 16 << 20 });
    await offerAll(w, fs, jumbled(fs.length, 5));
    assert.equal((await w.finish(SNAP)).written, true);
    assert.ok((await store.get(KEY)).equals(reference(fs)));
  }
});

test('past the reorder budget the earliest missing file is left out; the pack stays valid and in order', async () => {
  const fs = files(50);
  const store = new MemoryStore({ minPartBytes: 1000 });
  const w = new PushPackWriter(store, KEY, fs.length, { ...small, reorderBytes: 20_000 });
  await offerAll(w, fs, [...Array(fs.length).keys()].filter((s) => s !== 2)); // file 2 is still being read...
  await w.offer(2, fs[2] ?? []); // ...and comes too late
  const r = await w.finish(SNAP);
  assert.equal(r.written, true);
  assert.equal(r.late, fs[2]?.length);
  const without = fs.map((b, i) => (i === 2 ? [] : b));
  assert.ok((await store.get(KEY)).equals(reference(without)));
});

test('maxBytes: the pack stops at the first block that does not fit', async () => {
  const fs = files(100);
  const store = new MemoryStore({ minPartBytes: 1000 });
  const w = new PushPackWriter(store, KEY, fs.length, { ...small, maxBytes: 50_000 });
  await offerAll(w, fs, jumbled(fs.length, 9));
  await w.finish(SNAP);
  const idx = decodePushPack(await store.get(KEY));
  assert.ok(idx.dataBytes <= 50_000 && idx.dataBytes > 45_000, `${idx.dataBytes}`);
  const ref = decodePushPack(reference(fs));
  assert.deepEqual(idx.entries, ref.entries.slice(0, idx.entries.length));
});

test('a part or the complete that fails: written false with the reason, the upload aborted, no pack', async () => {
  for (const failing of ['part', 'complete'] as const) {
    const mem = new MemoryStore({ minPartBytes: 1000 });
    const store = new FailingUploads(mem, failing);
    const fs = files(200);
    const w = new PushPackWriter(store, KEY, fs.length, small);
    await offerAll(w, fs, jumbled(fs.length, 3));
    const r = await w.finish(SNAP);
    assert.equal(r.written, false);
    assert.match(r.error ?? '', /injected/);
    assert.equal(mem.uploadsPending, 0, `${failing}: the upload was aborted`);
    await assert.rejects(mem.get(KEY));
  }
});

let work = '';
let src = '';
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'homefs-ppwriter-'));
  src = join(work, 'src');
  for (let d = 0; d < 6; d++) {
    await mkdir(join(src, `d${d}`, 'sub'), { recursive: true });
    for (let f = 0; f < 12; f++) {
      await writeFile(join(src, `d${d}`, `f${f}.txt`), `file ${d}/${f}\n`.repeat(40 * (f + 1)));
      await writeFile(join(src, `d${d}`, 'sub', `g${f}.bin`), Buffer.alloc(500 + 3000 * f, d * 16 + f));
    }
  }
  await writeFile(join(src, 'big.bin'), Buffer.concat([Buffer.alloc(8 * 1024 * 1024, 1), Buffer.alloc(50 * 1024, 2)])); // a small tail block
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

test('push streams the pack in parts; pull takes every small block from it, none from blocks/', async () => {
  const store = new MemoryStore({ minPartBytes: 4096 });
  const res = await pushDirectory(src, store, 'acme', 'h', { xattrs: false, pushPack: true, packWriter: { partBytes: 4096 } });
  assert.equal(res.pushPack?.written, true);
  assert.equal(res.pushPack?.late, 0);
  const pack = decodePushPack(await store.get(pushPackKey('acme', 'h')));
  assert.equal(pack.snapshot, res.snapshot);
  assert.ok(pack.dataBytes > 100 * 4096, 'many parts');
  const dest = join(work, 'out');
  const pulled = await pullSnapshot(store, 'acme', res.snapshot, dest, { home: 'h', xattrs: false, pushPack: true });
  execFileSync('diff', ['-r', src, dest]);
  assert.equal(pulled.pushPack.used, true);
  assert.equal(pulled.pushPack.fallbacks, 0);
  assert.equal(pulled.pushPack.blocks, res.pushPack?.blocks, 'every block of the pack taken, the tail of big.bin too');
  assert.equal(store.uploadsPending, 0);
});

test('a push whose pack upload fails commits a complete snapshot and says why the pack is missing', async () => {
  const mem = new MemoryStore({ minPartBytes: 4096 });
  const res = await pushDirectory(src, new FailingUploads(mem, 'part'), 'acme', 'h', { xattrs: false, pushPack: true, packWriter: { partBytes: 4096 } });
  assert.equal(res.pushPack?.written, false);
  assert.match(res.pushPack?.error ?? '', /injected/);
  assert.equal(mem.uploadsPending, 0);
  await assert.rejects(mem.get(pushPackKey('acme', 'h')));
  const dest = join(work, 'out-nopack');
  const pulled = await pullSnapshot(mem, 'acme', res.snapshot, dest, { home: 'h', xattrs: false, pushPack: true });
  execFileSync('diff', ['-r', src, dest]);
  assert.equal(pulled.pushPack.found, false);
});

test('a push that fails before HEAD moves aborts its pack upload', async () => {
  const mem = new MemoryStore({ minPartBytes: 4096 });
  let started = 0;
  const store = new FailingUploads(mem, 'none', () => started++);
  const failing = pushDirectory(src, store, 'acme', 'h', {
    xattrs: false, pushPack: true, packWriter: { partBytes: 4096 },
    beforeCommit: async () => {
      assert.equal(mem.uploadsPending, 1, 'parts went up during the content pass');
      throw new Error('lost the race');
    },
  });
  await assert.rejects(failing, /lost the race/);
  assert.equal(started, 1);
  assert.equal(mem.uploadsPending, 0);
  await assert.rejects(mem.get(pushPackKey('acme', 'h')));
});

/** A store without multipart uploads (the pack is held and put whole). */
class NoUploads extends ForwardingStore {
  override get uploads(): Uploads | undefined {
    return undefined;
  }
}

/** Multipart uploads whose part uploads (or completes) fail, or (`none`) that only count starts. */
class FailingUploads extends ForwardingStore {
  constructor(inner: MemoryStore, private readonly failing: 'part' | 'complete' | 'none', private readonly onStart: () => void = () => undefined) {
    super(inner);
  }
  override get uploads(): Uploads | undefined {
    const u = this.inner.uploads as Uploads;
    const boom = async (): Promise<never> => {
      throw new Error('injected upload failure');
    };
    return {
      minPartBytes: u.minPartBytes,
      start: (key) => {
        this.onStart();
        return u.start(key);
      },
      part: (key, id, n, data) => (this.failing === 'part' && n === 3 ? boom() : u.part(key, id, n, data)),
      complete: (key, id, etags) => (this.failing === 'complete' ? boom() : u.complete(key, id, etags)),
      abort: (key, id) => u.abort(key, id),
      list: (prefix) => u.list(prefix),
    };
  }
}
