/**
 * Presealer (src/seal/preseal.ts): a sequential writer of a large file gets each block it has moved past
 * hashed and uploaded, one block behind its position; small files and writes far from the writer's
 * position start nothing; the seal can wait for an upload in flight (fake hashing and store: the test
 * decides when each upload lands). Wired to a real content layer and seal: the seal takes the early
 * blocks by their hash, uploads only the rest, and the snapshot holds the file's bytes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BLOCK_SIZE, hashBuffer } from '../src/hash/blake3.js';
import { Content } from '../src/inodes/content.js';
import { Journal } from '../src/inodes/journal.js';
import { ROOT_INO } from '../src/inodes/types.js';
import { UpperFiles } from '../src/inodes/upper.js';
import { HomeView } from '../src/inodes/view.js';
import { Presealer, inodePath } from '../src/seal/preseal.js';
import { seal } from '../src/seal/seal.js';
import { decodeTree } from '../src/format/codec.js';
import { Excludes } from '../src/format/excludes.js';
import { GcFence } from '../src/format/gcfence.js';
import { ObjectStore } from '../src/format/objects.js';
import { MemoryStore } from '../src/store/memory.js';
import { metaKey } from '../src/store/keys.js';

const MiB = 1024 * 1024;

function fake(): { p: Presealer; hashed: Array<[number, number]>; uploaded: string[]; land: () => void; errors: unknown[] } {
  const hashed: Array<[number, number]> = [];
  const uploaded: string[] = [];
  const errors: unknown[] = [];
  let gates: Array<() => void> = [];
  const p = new Presealer({
    hashEarly: async (ino, index, into) => {
      hashed.push([ino, index]);
      return { hash: `h${ino}.${index}`, data: into };
    },
    upload: (hash) => new Promise<boolean>((resolve) => gates.push(() => { uploaded.push(hash); resolve(true); })),
    excluded: (ino) => ino === 66,
    onError: (e) => errors.push(e),
  });
  const land = (): void => {
    const g = gates;
    gates = [];
    g.forEach((f) => f());
  };
  return { p, hashed, uploaded, land, errors };
}

const turns = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

test('a sequential writer of a large file gets the blocks it moved past hashed and uploaded', async () => {
  const { p, hashed, uploaded, land, errors } = fake();
  for (let i = 0; i < 8; i++) p.written(7, i * MiB, (i + 1) * MiB, (i + 1) * MiB);
  await turns();
  assert.deepEqual([...hashed], [], 'nothing while the file is small enough to be one block');
  for (let i = 8; i < 20; i++) p.written(7, i * MiB, (i + 1) * MiB, (i + 1) * MiB); // 20 MiB
  await turns();
  assert.deepEqual([...hashed], [[7, 0], [7, 1], [7, 2]], 'three at once; block 4 is where the writer is, block 3 one behind');
  const inFlight = p.uploading('h7.0');
  assert.ok(inFlight, 'the seal can wait for an upload in flight');
  land();
  await inFlight;
  await turns();
  assert.deepEqual(hashed.map(([, i]) => i), [0, 1, 2, 3]);
  land();
  await turns();
  assert.deepEqual(uploaded, ['h7.0', 'h7.1', 'h7.2', 'h7.3']);
  assert.deepEqual([p.hashed, p.uploaded], [4, 4]);
  assert.equal(p.uploading('h7.0'), undefined);
  assert.deepEqual(errors, []);
  await p.close();
});

test('writes far from the writer\'s position, excluded files, and writes after close start nothing', async () => {
  const { p, hashed } = fake();
  p.written(9, 100 * MiB, 101 * MiB, 200 * MiB); // a random writer's first write, far into a large file
  p.written(9, 50 * MiB, 51 * MiB, 200 * MiB);
  for (let i = 0; i < 20; i++) p.written(66, i * MiB, (i + 1) * MiB, (i + 1) * MiB); // a file the seal leaves out
  await turns();
  assert.deepEqual([...hashed], []);
  await p.close();
  for (let i = 0; i < 20; i++) p.written(10, i * MiB, (i + 1) * MiB, (i + 1) * MiB);
  await turns();
  assert.deepEqual([...hashed], []);
});

/**
 * A 12 MiB file written in 1 MiB writes with a presealer watching, then sealed. `earlyUploads`: whether
 * the early uploads reach the store (else they fail: the seal must upload those blocks itself).
 */
async function presealThenSeal(earlyUploads: boolean, wrongEarlyHash = false): Promise<{ early: string[]; sealPuts: string[]; bytesHashed: number; hashes: string[]; sealed: string[]; firstSeal: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-preseal-'));
  const mem = new MemoryStore();
  const puts: string[] = [];
  const store = Object.assign(Object.create(mem) as MemoryStore, {
    put: (key: string, data: Buffer) => (puts.push(key), mem.put(key, data)),
  });
  const j = new Journal(join(dir, 'journal'));
  try {
    const objects = new ObjectStore(store, 'acme');
    const noBlocks = { read: async () => Buffer.alloc(0), get: async () => Buffer.alloc(0), prefetch: () => undefined, size: () => undefined };
    const content = new Content(j, new UpperFiles(join(dir, 'upper')), noBlocks, { readaheadBlocks: 0, quotaBytes: 0 });
    const view = new HomeView(j, { getTree: async (h) => decodeTree(await mem.get(metaKey('acme', h)), h), prefetchTrees: () => undefined });
    view.initRoot(null, {}, 0, 0);
    const errors: unknown[] = [];
    const p = new Presealer({
      hashEarly: (ino, index, into) => content.hashEarly(ino, index, async (data) => ({ hash: wrongEarlyHash ? hashBuffer(Buffer.from('not these bytes')) : hashBuffer(data), data }), into),
      upload: async (hash, data) => {
        if (!earlyUploads) throw new Error('the store is unreachable');
        if ((await objects.missingBlocks([hash])).size === 0) return false;
        await objects.putBlock(hash, data);
        return true;
      },
      excluded: () => false,
      onError: (e) => errors.push(e),
    });
    content.onWritten = (ino, offset, end, size) => p.written(ino, offset, end, size);
    const file = view.create(ROOT_INO, 'big', { kind: 'file', mode: 0o644, uid: 0, gid: 0 }).ino;
    const bytes = Buffer.alloc(3 * BLOCK_SIZE);
    for (let i = 0; i < bytes.length; i += 4096) bytes.writeUInt32LE(i, i);
    for (let off = 0; off < bytes.length; off += MiB) await content.write(file, off, bytes.subarray(off, off + MiB));
    await p.close(); // waits for the early work in flight: blocks 0 and 1 (block 2 is where the writer ended)
    assert.equal(errors.length, earlyUploads ? 0 : 2);
    const blockPuts = (): string[] => puts.filter((k) => k.includes('/blocks/')).map((k) => k.split('/').at(-1) ?? '');
    const early = blockPuts();
    puts.length = 0;
    const sealNow = (): ReturnType<typeof seal> => seal({
      journal: j, content, objects, excludes: new Excludes([]), home: 'h', host: 'test', parallelism: 4,
      fence: { gc: new GcFence(store, 'acme'), observed: null }, uploading: (h) => p.uploading(h),
    }, 'fsync');
    let firstSeal: unknown = null;
    let r = await sealNow().catch((e: unknown) => (firstSeal = e, null));
    if (firstSeal) {
      puts.length = 0;
      r = await sealNow();
    }
    const rootHash = j.get(ROOT_INO)?.tree ?? '';
    const root = decodeTree(await mem.get(metaKey('acme', rootHash)), rootHash);
    const entry = root.entries.find((e) => e.name === 'big');
    return {
      early, sealPuts: blockPuts(), bytesHashed: r?.bytesHashed ?? -1,
      hashes: [0, 1, 2].map((i) => hashBuffer(bytes.subarray(i * BLOCK_SIZE, (i + 1) * BLOCK_SIZE))),
      sealed: (entry && 'blocks' in entry ? entry.blocks : undefined) ?? [], firstSeal,
    };
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the seal takes early-hashed blocks by their hash and uploads only the others; the snapshot has every byte', async () => {
  const r = await presealThenSeal(true);
  assert.deepEqual(r.early.sort(), r.hashes.slice(0, 2).sort(), 'early uploads');
  assert.equal(r.bytesHashed, BLOCK_SIZE, 'the seal hashed only the block nobody hashed before');
  assert.deepEqual(r.sealPuts, [r.hashes[2]], 'and uploaded only that one');
  assert.deepEqual(r.sealed, r.hashes);
});

test('early uploads that failed: the seal reads those blocks, checks them against their early hash, uploads them', async () => {
  const r = await presealThenSeal(false);
  assert.deepEqual(r.early, []);
  assert.equal(r.bytesHashed, BLOCK_SIZE, 'hashed as new only the block nobody hashed before (the others were checked)');
  assert.deepEqual([...r.sealPuts].sort(), [...r.hashes].sort(), 'every block went up with the seal');
  assert.deepEqual(r.sealed, r.hashes);
});

test('an early hash that does not match the bytes fails the seal, and the next seal hashes everything afresh', async () => {
  const r = await presealThenSeal(false, true);
  assert.match(String(r.firstSeal), /no longer has its early hash/);
  assert.equal(r.bytesHashed, 3 * BLOCK_SIZE, 'the second seal hashed every block itself');
  assert.deepEqual(r.sealed, r.hashes, 'and the snapshot has the true hashes');
});

test('inodePath names a file from the root by its first parents', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-inodepath-'));
  const j = new Journal(join(dir, 'journal'));
  try {
    const view = new HomeView(j, { getTree: async () => ({ entries: [] }), prefetchTrees: () => undefined });
    view.initRoot(null, {}, 0, 0);
    const a = view.create(ROOT_INO, 'a', { kind: 'dir', mode: 0o755, uid: 0, gid: 0 }).ino;
    const b = view.create(a, '.cache', { kind: 'dir', mode: 0o755, uid: 0, gid: 0 }).ino;
    const f = view.create(b, 'big.tmp', { kind: 'file', mode: 0o644, uid: 0, gid: 0 }).ino;
    assert.deepEqual(inodePath(j, f), ['a', '.cache', 'big.tmp']);
    assert.deepEqual(inodePath(j, ROOT_INO), []);
    assert.equal(inodePath(j, 987654), undefined, 'an inode the journal does not know');
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
