/**
 * A mount's cold reads from the push pack (home/packreads.ts), over the in-memory store, and through the
 * block cache: one ranged GET serves a window of blocks in pack order, the next blocks come from what it
 * held, a fetch joins a window in flight, and a pack that is missing, damaged, or holds a wrong block only
 * sends fetches to blocks/ (the cache still returns the right bytes).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../src/store/memory.js';
import { blockKey, pushPackKey } from '../src/store/keys.js';
import { buildPushPack, PUSHPACK_HEADER } from '../src/transfer/pushpack.js';
import { hashBuffer } from '../src/hash/blake3.js';
import { PackReads } from '../src/home/packreads.js';
import { BlockCache } from '../src/cache/blockcache.js';
import { RecordingStore } from './support/ops-stores.js';

const ORG = 'acme';
const HOME = 'h';
const SNAP = 'a'.repeat(64);
const OPTS = { windowBytes: 10_000, heldBytes: 1_000_000, maxIndexBytes: 1_000_000 };

/** 12 blocks of 3,000 bytes: a window of 10,000 bytes holds 3 of them. */
function blocks(): Buffer[] {
  return Array.from({ length: 12 }, (_, i) => Buffer.alloc(3000, i + 1));
}

async function seeded(pack = true): Promise<{ store: RecordingStore; data: Buffer[]; hashes: string[] }> {
  const mem = new MemoryStore();
  const data = blocks();
  const hashes = data.map((d) => hashBuffer(d));
  for (let i = 0; i < data.length; i++) await mem.put(blockKey(ORG, hashes[i] as string), data[i] as Buffer);
  if (pack) {
    const built = buildPushPack(SNAP, data.map((d, i) => ({ hash: hashes[i] as string, length: d.length, read: () => d })));
    await mem.put(pushPackKey(ORG, HOME), built.pack);
  }
  return { store: new RecordingStore(mem), data, hashes };
}

const packGets = (s: RecordingStore): number => s.calls.filter((c) => c.key === pushPackKey(ORG, HOME)).length;
const blockGets = (s: RecordingStore): number => s.calls.filter((c) => c.key.includes('/blocks/')).length;

test('one window serves the block asked for and holds the next ones in pack order', async () => {
  const { store, data, hashes } = await seeded();
  const r = new PackReads(store, ORG, HOME, OPTS);
  await r.load();
  assert.equal(r.report.state, 'ready');
  assert.equal(r.report.blocks, 12);
  const afterLoad = packGets(store);
  assert.deepEqual(await r.fetch(hashes[0] as string), data[0]);
  assert.equal(packGets(store), afterLoad + 1, 'one ranged GET for the window');
  assert.deepEqual(await r.fetch(hashes[1] as string), data[1]);
  assert.deepEqual(await r.fetch(hashes[2] as string), data[2]);
  assert.equal(packGets(store), afterLoad + 1, 'blocks 1 and 2 came from the window already read');
  assert.deepEqual(await r.fetch(hashes[3] as string), data[3]);
  assert.equal(packGets(store), afterLoad + 2, 'block 3 starts the next window');
  assert.equal(await r.fetch('f'.repeat(64)), undefined, 'a block the pack does not hold');
  assert.equal(r.report.served, 4);
});

test('fetches of blocks in a window in flight join it', async () => {
  const { store, data, hashes } = await seeded();
  const r = new PackReads(store, ORG, HOME, OPTS);
  await r.load();
  const before = packGets(store);
  const got = await Promise.all([0, 1, 2].map((i) => r.fetch(hashes[i] as string)));
  assert.deepEqual(got, data.slice(0, 3));
  assert.equal(packGets(store), before + 1);
});

test('a reader walking forward gets the next windows read ahead; a jump starts a new run with none', async () => {
  const { store, data, hashes } = await seeded();
  const r = new PackReads(store, ORG, HOME, { ...OPTS, aheadWindows: 2 });
  await r.load();
  const base = packGets(store);
  assert.deepEqual(await r.fetch(hashes[9] as string), data[9]);
  assert.deepEqual(await r.fetch(hashes[0] as string), data[0]);
  assert.equal(packGets(store), base + 2, 'two fetches that jump: their own windows, nothing ahead');
  assert.equal(r.report.ahead, 0);
  assert.deepEqual(await r.fetch(hashes[1] as string), data[1]);
  assert.equal(packGets(store), base + 4, 'the second fetch of a forward run reads the two windows after its own');
  assert.equal(r.report.ahead, 2);
  for (let i = 2; i < 12; i++) if (i !== 9) assert.deepEqual(await r.fetch(hashes[i] as string), data[i]); // 9: the cache has it
  assert.equal(packGets(store), base + 4, 'every later block came from a window read ahead (or the first jump)');
  assert.equal(r.report.served, 12);
  assert.deepEqual(await r.fetch(hashes[9] as string), data[9], 'a block asked again (evicted from the cache) is read again');
});

test('read-ahead stops where the held bytes would pass their bound', async () => {
  const { store, data, hashes } = await seeded();
  const r = new PackReads(store, ORG, HOME, { ...OPTS, aheadWindows: 2, heldBytes: 12_000 });
  await r.load();
  const base = packGets(store);
  for (let i = 0; i < 3; i++) assert.deepEqual(await r.fetch(hashes[i] as string), data[i]);
  assert.equal(packGets(store), base + 2, 'one window ahead fits the bound (6,000 held + 10,000 > 12,000 stops the second)');
  for (let i = 3; i < 12; i++) assert.deepEqual(await r.fetch(hashes[i] as string), data[i]);
  assert.equal(r.report.served, 12);
});

test('before the index loads, and with no pack, fetches are left to blocks/', async () => {
  const { store, hashes } = await seeded(false);
  const r = new PackReads(store, ORG, HOME, OPTS);
  assert.equal(await r.fetch(hashes[0] as string), undefined);
  await r.load();
  assert.equal(r.report.state, 'none');
  assert.equal(await r.fetch(hashes[0] as string), undefined);
});

test('a damaged pack is not used; a corrupted block in a window is rejected', async () => {
  const { store, hashes } = await seeded();
  const key = pushPackKey(ORG, HOME);
  const pack = await store.get(key);
  const bad = Buffer.from(pack);
  bad.write('XXXX', 0);
  await store.put(key, bad);
  const r = new PackReads(store, ORG, HOME, OPTS);
  await r.load();
  assert.equal(r.report.state, 'skipped');
  assert.equal(await r.fetch(hashes[0] as string), undefined);

  const flipped = Buffer.from(pack);
  const dataStart = PUSHPACK_HEADER + 44 * 12;
  flipped[dataStart + 3000 + 17] ^= 0xff; // inside block 1
  await store.put(key, flipped);
  const r2 = new PackReads(store, ORG, HOME, OPTS);
  await r2.load();
  assert.ok(await r2.fetch(hashes[0] as string));
  assert.equal(await r2.fetch(hashes[1] as string), undefined, 'a block that fails its hash is never served');
  assert.equal(r2.report.rejected, 1);
});

test('through the block cache: bytes always right, blocks/ asked only for what the pack cannot give', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'homefs-packreads-'));
  try {
    const { store, data, hashes } = await seeded();
    const key = pushPackKey(ORG, HOME);
    const flipped = Buffer.from(await store.get(key));
    flipped[PUSHPACK_HEADER + 44 * 12 + 3000 * 4 + 5] ^= 0xff; // block 4 corrupted in the pack
    await store.put(key, flipped);
    store.calls.length = 0;
    const pack = new PackReads(store, ORG, HOME, OPTS);
    await pack.load();
    const cache = new BlockCache({ dir, store, org: ORG, maxBytes: 10_000_000, pack });
    await cache.init();
    try {
      for (let i = 0; i < 12; i++) assert.deepEqual(await cache.get('block', hashes[i] as string), data[i]);
      assert.equal(blockGets(store), 1, 'only the corrupted block came from blocks/');
      assert.equal(pack.report.served, 11);
    } finally {
      await cache.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
