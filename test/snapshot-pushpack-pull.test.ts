/**
 * `homefs pull` with the push pack (transfer/pushpack.ts, pushpack-reader.ts), over the in-memory store:
 * with the pack, the small blocks come from it and only the large ones are fetched one GET each; with it
 * missing, truncated, a block corrupted in it, or written for an older snapshot, the pull fetches what the
 * pack cannot give from blocks/, and the pulled tree is always the pushed one, byte for byte.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { link, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../src/store/memory.js';
import { pushPackKey } from '../src/store/keys.js';
import { pushDirectory } from '../src/transfer/push.js';
import { pullSnapshot, type PullResult } from '../src/transfer/pull.js';
import { decodePushPack, PUSHPACK_HEADER, pullOrder } from '../src/transfer/pushpack.js';
import { hashBuffer } from '../src/hash/blake3.js';
import { RecordingStore } from './support/ops-stores.js';
import { ForwardingStore } from '../src/store/forwarding.js';
import { readHead } from '../src/format/heads.js';

let work = '';
let src = '';
const ORG = 'acme';
const HOME = 'pp';
/** Distinct small blocks of the home (≤ 256 KiB): 30 files, same.txt, medium.bin (and its link), big.bin's tail. */
const SMALL = 30 + 1 + 1 + 1;
/** The big file's two 4 MiB blocks. */
const LARGE = 2;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'homefs-pushpack-'));
  src = join(work, 'src');
  for (let d = 0; d < 3; d++) {
    await mkdir(join(src, `d${d}`, 'sub'), { recursive: true });
    for (let f = 0; f < 5; f++) {
      await writeFile(join(src, `d${d}`, `f${f}.txt`), `file ${d}/${f}\n`.repeat(50 * (f + 1)));
      await writeFile(join(src, `d${d}`, 'sub', `g${f}.bin`), Buffer.alloc(1000 + 7000 * f, d * 16 + f));
    }
    await writeFile(join(src, `d${d}`, 'same.txt'), 'the same content in three files\n'); // one block, three takers
    await writeFile(join(src, `d${d}`, 'empty'), '');
  }
  await writeFile(join(src, 'medium.bin'), Buffer.alloc(200 * 1024, 7)); // small enough for the pack
  await link(join(src, 'medium.bin'), join(src, 'medium-link.bin'));
  await writeFile(join(src, 'big.bin'), Buffer.concat([Buffer.alloc(8 * 1024 * 1024, 1), Buffer.alloc(100 * 1024, 2)])); // 4 + 4 MiB + a 100 KiB tail
  await writeFile(join(src, 'large-only.bin'), Buffer.alloc(300 * 1024, 9)); // one block over 256 KiB: never packed
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

/** Pushes `src` into a fresh memory store (with or without the pack); returns the store and the snapshot. */
async function pushed(pushPack: boolean): Promise<{ store: MemoryStore; snapshot: string; res: Awaited<ReturnType<typeof pushDirectory>> }> {
  const store = new MemoryStore();
  const res = await pushDirectory(src, store, ORG, HOME, { xattrs: false, pushPack });
  return { store, snapshot: res.snapshot, res };
}

let n = 0;
/** Pulls `snapshot` through a recording store; asserts the result is `src`; returns it with the block GETs. */
async function pull(store: MemoryStore, snapshot: string, pushPack = true): Promise<{ res: PullResult; blockGets: number; packGets: number }> {
  const rec = new RecordingStore(store);
  const dest = join(work, `out${n++}`);
  const res = await pullSnapshot(rec, ORG, snapshot, dest, { home: HOME, xattrs: false, pushPack });
  execFileSync('diff', ['-r', src, dest]); // throws on any difference
  const gets = rec.calls.filter((c) => c.op === 'get');
  return { res, blockGets: gets.filter((c) => c.key.includes('/blocks/')).length, packGets: gets.filter((c) => c.key === pushPackKey(ORG, HOME)).length };
}

test('push writes the pack: every small block once, in pull order; the large ones stay out', async () => {
  const { store, snapshot, res } = await pushed(true);
  assert.deepEqual(res.pushPack && { written: res.pushPack.written, blocks: res.pushPack.blocks }, { written: true, blocks: SMALL });
  const idx = decodePushPack(await store.get(pushPackKey(ORG, HOME)));
  assert.equal(idx.snapshot, snapshot);
  assert.equal(idx.entries.length, SMALL);
  assert.ok(idx.entries.every((e) => e.length <= 256 * 1024));
  // A memory store gets no pack by default (only stores over the network do).
  const plain = await pushed(false);
  assert.equal(plain.res.pushPack, null);
  await assert.rejects(plain.store.get(pushPackKey(ORG, HOME)));
});

test('pull with the pack: small blocks from the pack, only the large ones one GET each', async () => {
  const { store, snapshot } = await pushed(true);
  const { res, blockGets, packGets } = await pull(store, snapshot);
  assert.equal(res.pushPack.used, true);
  assert.equal(res.pushPack.fallbacks, 0);
  // Takers: 30 files, same.txt 3 times, medium.bin once (its link is not written again), big.bin's tail.
  assert.equal(res.pushPack.blocks, 30 + 3 + 1 + 1);
  assert.equal(blockGets, LARGE + 1, 'the two 4 MiB blocks and large-only.bin');
  assert.equal(packGets, 1, 'one ranged GET holds this small pack');
  // The same pull without the pack reader: one GET per block.
  const without = await pull(store, snapshot, false);
  assert.equal(without.res.pushPack.found, false);
  assert.equal(without.packGets, 0);
  assert.ok(without.blockGets >= SMALL + LARGE + 1, `${without.blockGets} block GETs`);
});

test('pull without a pack, or with a truncated one, fetches every block from blocks/', async () => {
  const { store, snapshot } = await pushed(true);
  const key = pushPackKey(ORG, HOME);
  const full = await store.get(key);
  await store.put(key, full.subarray(0, full.length - 100));
  const cut = await pull(store, snapshot);
  assert.deepEqual([cut.res.pushPack.found, cut.res.pushPack.used, cut.res.pushPack.blocks], [true, false, 0]);
  assert.match(cut.res.pushPack.skipped ?? '', /truncated/);
  assert.ok(cut.blockGets >= SMALL + LARGE + 1);
  await store.delete(key);
  const none = await pull(store, snapshot);
  assert.deepEqual([none.res.pushPack.found, none.res.pushPack.used, none.res.pushPack.skipped], [false, false, 'none']);
  assert.ok(none.blockGets >= SMALL + LARGE + 1);
});

test('pull with a block corrupted or two swapped in the pack: the rest from the pack, those from blocks/, bytes right', async () => {
  const { store, snapshot } = await pushed(true);
  const key = pushPackKey(ORG, HOME);
  const orig = Buffer.from(await store.get(key));
  const idx = decodePushPack(orig);
  const victim = idx.entries[3];
  assert.ok(victim);
  const pack = Buffer.from(orig);
  const at = idx.dataStart + victim.offset + Math.floor(victim.length / 2);
  pack[at] = (pack[at] ?? 0) ^ 0xff;
  await store.put(key, pack);
  const one = await pull(store, snapshot);
  assert.equal(one.res.pushPack.used, true);
  assert.equal(one.res.pushPack.fallbacks, 1, 'the corrupted block');
  assert.equal(one.blockGets, LARGE + 1 + 1, 'it alone came from blocks/');
  // The hashes of the first two index entries swapped (each names the other block's bytes): both fall back.
  const swapped = Buffer.from(orig);
  const a = PUSHPACK_HEADER;
  const b = PUSHPACK_HEADER + 44;
  orig.copy(swapped, a, b, b + 32);
  orig.copy(swapped, b, a, a + 32);
  await store.put(key, swapped);
  const two = await pull(store, snapshot);
  assert.equal(two.res.pushPack.fallbacks, 2);
  assert.equal(two.blockGets, LARGE + 1 + 2);
});

test('a pack of an older snapshot is ignored (after one GET), the pull is right', async () => {
  const { store } = await pushed(true);
  const old = decodePushPack(await store.get(pushPackKey(ORG, HOME))).snapshot;
  await writeFile(join(src, 'd0', 'f0.txt'), 'changed since the pack was written\n');
  try {
    const res = await pushDirectory(src, store, ORG, HOME, { xattrs: false, pushPack: false });
    assert.notEqual(res.snapshot, old);
    const p = await pull(store, res.snapshot);
    assert.deepEqual([p.res.pushPack.found, p.res.pushPack.used, p.res.pushPack.blocks, p.packGets], [true, false, 0, 1]);
    assert.match(p.res.pushPack.skipped ?? '', /another snapshot/);
    assert.ok(p.blockGets >= SMALL + LARGE + 1);
  } finally {
    await writeFile(join(src, 'd0', 'f0.txt'), 'file 0/0\n'.repeat(50));
  }
});

test('a push whose pack cannot be written still succeeds (HEAD moved); the result says why', async () => {
  const store = new MemoryStore();
  class NoPack extends ForwardingStore {
    override put(key: string, data: Buffer): Promise<void> {
      if (key === pushPackKey(ORG, HOME)) return Promise.reject(new Error('store refused the pack'));
      return this.inner.put(key, data);
    }
  }
  const res = await pushDirectory(src, new NoPack(store), ORG, HOME, { xattrs: false, pushPack: true });
  assert.deepEqual(res.pushPack, { written: false, blocks: 0, bytes: 0, late: 0, error: 'store refused the pack' });
  assert.equal((await readHead(store, ORG, HOME))?.snapshot, res.snapshot);
  const p = await pull(store, res.snapshot);
  assert.equal(p.res.pushPack.found, false);
});

test("the pack holds a directory's own files before its hidden entries and node_modules, and pull reads it in that order", async () => {
  assert.deepEqual(pullOrder(['.cache', '.config', 'a.txt', 'node_modules', 'src']), [2, 4, 0, 1, 3]);
  const home = join(work, 'ranked');
  const files: Array<[string, string]> = [['.npm/x', 'cache x\n'], ['node_modules/m/i.js', 'module\n'], ['src/main.ts', 'source\n'], ['notes.md', 'note\n'], ['.bashrc', 'rc\n']];
  for (const [rel, text] of files) {
    await mkdir(join(home, rel, '..'), { recursive: true });
    await writeFile(join(home, rel), text);
  }
  const store = new MemoryStore();
  const res = await pushDirectory(home, store, ORG, 'ranked', { xattrs: false, pushPack: true });
  const idx = decodePushPack(await store.get(pushPackKey(ORG, 'ranked')));
  const order = idx.entries.map((e) => files.find(([, text]) => hashBuffer(Buffer.from(text)) === e.hash)?.[0]);
  assert.deepEqual(order, ['notes.md', 'src/main.ts', '.bashrc', '.npm/x', 'node_modules/m/i.js']);
  const rec = new RecordingStore(store);
  const dest = join(work, 'ranked-out');
  const pulled = await pullSnapshot(rec, ORG, res.snapshot, dest, { home: 'ranked', xattrs: false, pushPack: true });
  execFileSync('diff', ['-r', home, dest]);
  assert.equal(pulled.pushPack.fallbacks, 0, 'every small block came from the pack, in order');
  assert.equal(rec.calls.filter((c) => c.op === 'get' && c.key.includes('/blocks/')).length, 0);
});
