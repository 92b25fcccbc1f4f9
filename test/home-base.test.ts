/**
 * The wake (home/base.ts `chooseBase`) against the fencing race: a claimant advances HEAD to the
 * same snapshot before it writes any tombstone, so a seal of the old holder loses HEAD; and a claimant that
 * crashes after that advance (before its tombstone, or before its replay) leaves a home whose pending log
 * readers still see and the next wake claims and replays, from a log tail too. A wake after a clean release
 * is no claimant and adds no generation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { chooseBase, type ReadAhead } from '../src/home/base.js';
import { homePaths } from '../src/home/paths.js';
import { advanceHead, readHead } from '../src/format/heads.js';
import { isTombstone, liveHead } from '../src/fsynclog/homelog.js';
import { ObjectStore } from '../src/format/objects.js';
import { ForwardingStore } from '../src/store/forwarding.js';
import { headKey, logKey, logPrefix } from '../src/store/keys.js';
import type { ObjectInfo } from '../src/store/store.js';
import { MemoryStore } from '../src/store/memory.js';
import { HeadConflictError } from '../src/util/errors.js';
import { putLogSnapshot, writeSegment } from './support/logseed.js';

const ORG = 'acme';
const HOME = 'alice';

/** Records the keys of create-if-absent writes in order; `crash` makes matching writes throw (the waking host dies there). */
class WakeStore extends ForwardingStore {
  readonly created: string[] = [];
  /** Prefixes listed, in order. */
  readonly listed: string[] = [];
  override list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    this.listed.push(prefix);
    return super.list(prefix, limit);
  }
  crash: ((op: 'put' | 'putIfAbsent', key: string) => boolean) | null = null;
  /** Runs just before a create-if-absent write of `key` goes through (another writer gets there first). */
  race: ((key: string) => Promise<void>) | null = null;
  override put(key: string, data: Buffer): Promise<void> {
    if (this.crash?.('put', key)) return Promise.reject(new Error(`crashed before writing ${key}`));
    return super.put(key, data);
  }
  override putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    if (this.crash?.('putIfAbsent', key)) return Promise.reject(new Error(`crashed before writing ${key}`));
    this.created.push(key);
    const race = this.race;
    if (!race) return super.putIfAbsent(key, data);
    return race(key).then(() => super.putIfAbsent(key, data));
  }
}

/** One wake of a fresh state directory as `writer`; returns HEAD's generation and where its fsyncs go. */
async function wake(store: WakeStore, writer: string, claimant: boolean, early?: ReadAhead): Promise<{ log: { gen: number; nextSeq: number } | null }> {
  const dir = await mkdtemp(join(tmpdir(), 'homefs-base-'));
  try {
    const choice = await chooseBase(new ObjectStore(store, ORG), ORG, HOME, homePaths(ORG, HOME, join(dir, 'state'), join(dir, 'cache')), claimant, pino({ level: 'silent' }), () => Promise.resolve(), writer, early);
    await choice.journal.close();
    return { log: choice.log ? { gen: choice.log.gen, nextSeq: choice.log.nextSeq } : null };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function isTombstoneAt(store: MemoryStore, gen: number, seq: number): Promise<boolean> {
  return isTombstone(await store.get(logKey(ORG, HOME, gen, seq)));
}

test('a claimant advances HEAD to the same snapshot before its tombstone: the old holder\'s seal loses HEAD, its next segment fails', async () => {
  const mem = new MemoryStore();
  const s0 = await putLogSnapshot(mem, ORG, HOME);
  await advanceHead(mem, ORG, HOME, null, s0);
  const { segment } = await writeSegment(mem, ORG, HOME, 0, 0, 'old', 'fsynced by the old holder');
  const store = new WakeStore(mem);
  const r = await wake(store, 'new', true);
  assert.deepEqual(store.created.slice(0, 2), [headKey(ORG, HOME, 1), logKey(ORG, HOME, 0, 1)], 'HEAD 1 (the fence) is created before the tombstone');
  assert.equal((await mem.get(headKey(ORG, HOME, 1))).toString('latin1'), s0, 'the fence carries the same snapshot');
  assert.deepEqual(await readHead(mem, ORG, HOME), { gen: 2, snapshot: segment.snapshot }, 'then the segment is replayed');
  assert.deepEqual(r.log, { gen: 2, nextSeq: 0 });
  const sealed = await putLogSnapshot(mem, ORG, HOME, { host: 'old holder sealing' });
  await assert.rejects(advanceHead(mem, ORG, HOME, 0, sealed), HeadConflictError, "the old holder's seal (from HEAD 0) loses HEAD");
  assert.equal((await writeSegment(mem, ORG, HOME, 0, 1, 'old', 'fenced')).created, false, "the old holder's next segment is refused");
});

test('a claimant that crashed after its advance, before its tombstone: the old holder\'s later fsync counts, the next wake claims and replays it', async () => {
  const mem = new MemoryStore();
  const s0 = await putLogSnapshot(mem, ORG, HOME);
  await advanceHead(mem, ORG, HOME, null, s0);
  await writeSegment(mem, ORG, HOME, 0, 0, 'old', 'first');
  const store = new WakeStore(mem);
  store.crash = (op, key) => op === 'putIfAbsent' && key.includes('/log/');
  await assert.rejects(wake(store, 'crashing claimant', true), /crashed before writing/);
  assert.deepEqual(await readHead(mem, ORG, HOME), { gen: 1, snapshot: s0 }, 'the claimant got as far as its fence');
  const later = await writeSegment(mem, ORG, HOME, 0, 1, 'old', 'second');
  assert.equal(later.created, true, 'the log was not claimed yet: the old holder\'s fsync succeeds');
  assert.equal((await liveHead(new ObjectStore(mem, ORG), HOME, () => undefined)).snapshot, later.segment.snapshot, 'readers see it through the generation with the same snapshot');
  store.crash = null;
  await wake(store, 'next host', true);
  assert.deepEqual(await readHead(mem, ORG, HOME), { gen: 3, snapshot: later.segment.snapshot }, 'the next wake fenced (HEAD 2) and replayed the old holder\'s newest segment (HEAD 3)');
  assert.equal(await isTombstoneAt(mem, 0, 2), true, 'it claimed the log of generation 0');
  assert.equal((await writeSegment(mem, ORG, HOME, 0, 2, 'old', 'fenced')).created, false);
});

test('a claimant that crashed after its tombstone, before its replay: readers and the next wake find the pending log tail', async () => {
  const mem = new MemoryStore();
  await advanceHead(mem, ORG, HOME, null, await putLogSnapshot(mem, ORG, HOME));
  await writeSegment(mem, ORG, HOME, 0, 0, 'old', 'absorbed by the seal');
  const s1 = await putLogSnapshot(mem, ORG, HOME, { logTail: { gen: 0, seq: 1 } });
  await advanceHead(mem, ORG, HOME, 0, s1);
  const tail = await writeSegment(mem, ORG, HOME, 0, 1, 'old', 'fsynced during the seal');
  const store = new WakeStore(mem);
  store.crash = (op, key) => op === 'put' && key.includes('/blocks/'); // the replay's uploads
  await assert.rejects(wake(store, 'crashing claimant', true), /crashed before writing/);
  assert.deepEqual(await readHead(mem, ORG, HOME), { gen: 2, snapshot: s1 });
  assert.equal(await isTombstoneAt(mem, 1, 0), true, "it claimed HEAD 1's log");
  assert.equal(await isTombstoneAt(mem, 0, 2), true, 'and the log tail');
  assert.equal((await liveHead(new ObjectStore(mem, ORG), HOME, () => undefined)).snapshot, tail.segment.snapshot, 'readers see the tail through the run of generations with its snapshot');
  store.crash = null;
  await wake(store, 'next host', true);
  assert.deepEqual(await readHead(mem, ORG, HOME), { gen: 4, snapshot: tail.segment.snapshot }, 'the next wake replayed the tail');
});

test('a wake after a clean release is no claimant: no new generation, its fsyncs follow its tombstone', async () => {
  const mem = new MemoryStore();
  const s0 = await putLogSnapshot(mem, ORG, HOME);
  await advanceHead(mem, ORG, HOME, null, s0);
  const r = await wake(new WakeStore(mem), 'new', false);
  assert.deepEqual(await readHead(mem, ORG, HOME), { gen: 0, snapshot: s0 });
  assert.equal(await isTombstoneAt(mem, 0, 0), true);
  assert.deepEqual(r.log, { gen: 0, nextSeq: 1 });
});

test('a segment written while the wake claims the log (its tombstone loses the race) is claimed again and replayed', async () => {
  const mem = new MemoryStore();
  await advanceHead(mem, ORG, HOME, null, await putLogSnapshot(mem, ORG, HOME));
  const store = new WakeStore(mem);
  let raced = null as Awaited<ReturnType<typeof writeSegment>> | null; // (set in the race)
  store.race = async (key) => {
    if (key !== logKey(ORG, HOME, 0, 0) || raced) return;
    raced = await writeSegment(mem, ORG, HOME, 0, 0, 'old', 'fsynced while the wake listed the log');
  };
  const r = await wake(store, 'new', false);
  assert.ok(raced, 'the other writer took seq 0 first');
  assert.equal(await isTombstoneAt(mem, 0, 1), true, 'the second claim took seq 1');
  assert.deepEqual(await readHead(mem, ORG, HOME), { gen: 1, snapshot: raced.segment.snapshot }, "the raced segment was replayed: nothing fsync'd is lost");
  assert.deepEqual(r.log, { gen: 1, nextSeq: 0 });
});

/** HEAD and its log's listing as the claim reads them ahead (home/claim.ts), from `store` now. */
async function readAhead(store: MemoryStore): Promise<ReadAhead> {
  const head = await readHead(store, ORG, HOME);
  const gen = head?.gen ?? -1;
  const infos: ObjectInfo[] = [];
  for await (const o of store.list(logPrefix(ORG, HOME, gen))) infos.push(o);
  let taken = false;
  const logListing = (g: number): Promise<ObjectInfo[]> | undefined => {
    if (g !== gen || taken) return undefined;
    taken = true;
    return Promise.resolve(infos);
  };
  return { head: Promise.resolve(head), logListing };
}

test("the claim's listing of HEAD's log serves the wake; one made before a segment landed loses the tombstone's race and is made again", async () => {
  const mem = new MemoryStore();
  await advanceHead(mem, ORG, HOME, null, await putLogSnapshot(mem, ORG, HOME));
  await writeSegment(mem, ORG, HOME, 0, 0, 'old', 'fsynced before the wake');
  const fresh = new WakeStore(mem);
  await wake(fresh, 'new', false, await readAhead(mem));
  assert.ok(!fresh.listed.includes(logPrefix(ORG, HOME, 0)), 'the wake did not list the log itself');
  assert.equal(await isTombstoneAt(mem, 0, 1), true, 'its tombstone follows the listed segment');

  const mem2 = new MemoryStore();
  await advanceHead(mem2, ORG, HOME, null, await putLogSnapshot(mem2, ORG, HOME));
  const stale = await readAhead(mem2); // an empty log, listed
  const late = await writeSegment(mem2, ORG, HOME, 0, 0, 'old', 'fsynced after the claim listed the log');
  const store = new WakeStore(mem2);
  const r = await wake(store, 'new', false, stale);
  assert.ok(store.listed.includes(logPrefix(ORG, HOME, 0)), 'the lost race made the wake list the log again');
  assert.equal(await isTombstoneAt(mem2, 0, 1), true, 'the second claim took seq 1');
  assert.deepEqual(await readHead(mem2, ORG, HOME), { gen: 1, snapshot: late.segment.snapshot }, "the segment the listing missed was replayed: nothing fsync'd is lost");
  assert.deepEqual(r.log, { gen: 1, nextSeq: 0 });
});
