/**
 * The fsync log's format (fsynclog/homelog.ts, docs/format.md "Log segments"): the checked-in segment
 * fixture decodes to the documented values; hostile segments (truncated, corrupted, for another home or
 * generation, from a newer homefs) are rejected with a FormatError, and a reader skips them with one warning
 * and falls back to the previous valid segment; a claim's tombstone makes the previous holder's next
 * segment fail; snapshot version 2 lists required features and an unknown one is refused; a chained segment
 * (version 2) is read with the objects of the segments it names, and rejected when one of them is gone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hashBuffer } from '../src/hash/blake3.js';
import { decodeSnapshot, encodeSnapshot } from '../src/format/codec.js';
import { advanceHead } from '../src/format/heads.js';
import { claimLog, createEntry, decodeSegment, dropOldLogs, encodeSegment, liveHead, TOMBSTONE_KEEP_MS, type Segment } from '../src/fsynclog/homelog.js';
import { ObjectStore } from '../src/format/objects.js';
import { logKey } from '../src/store/keys.js';
import { MemoryStore } from '../src/store/memory.js';
import { FormatError } from '../src/util/errors.js';
import { writeSegment } from './support/logseed.js';

const dir = new URL('../../test/fixtures/format/', import.meta.url);
const KEY = { home: 'acme/alice', gen: 7, seq: 3 };

test('log-segment-v1.bin decodes to the documented values; snapshot-v2.json requires the log feature', () => {
  const bytes = readFileSync(new URL('log-segment-v1.bin', dir));
  assert.equal(hashBuffer(bytes), '3b9d9835f5465d69fbf7b19a56967f936b18dec03af82ff80e128ccf8932b258');
  const s = decodeSegment(bytes, KEY);
  assert.deepEqual([s.home, s.gen, s.seq, s.writer, s.time], ['acme/alice', 7, 3, 'f'.repeat(32), '2026-12-01T00:00:00.000Z']);
  assert.equal(s.snapshot, '887de5ae9060063a206f7500b8f64322e2e213d9b230d437bc19e1142e9be68d');
  assert.deepEqual(s.objects.map((o) => `${o.kind}:${o.hash.slice(0, 8)}:${o.data.length}`), ['block:5435741f:19', 'meta:23950d55:' + String(s.objects[1]?.data.length), 'meta:887de5ae:' + String(s.objects[2]?.data.length)]);
  assert.equal(s.objects[0]?.data.toString(), 'hello from the log\n');
  assert.ok(encodeSegment(s).equals(bytes), 're-encodes to the same bytes');
  const snapBytes = readFileSync(new URL('snapshot-v2.json', dir));
  assert.ok(snapBytes.equals(s.objects[2]?.data ?? Buffer.alloc(0)));
  const snap = decodeSnapshot(snapBytes, s.snapshot);
  assert.deepEqual(snap.features, ['log']);
  assert.match(snapBytes.toString(), /^\{"version":2,/);
});

test('hostile segments are rejected: truncated, corrupted, another home or generation, a newer version', () => {
  const good = readFileSync(new URL('log-segment-v1.bin', dir));
  const rejects = (buf: Buffer, k: typeof KEY, re: RegExp): void => {
    assert.throws(() => decodeSegment(buf, k), (e: unknown) => e instanceof FormatError && re.test(e.message));
  };
  rejects(good.subarray(0, good.length - 1), KEY, /checksum mismatch \(truncated or corrupted\)/);
  rejects(good.subarray(0, 20), KEY, /checksum mismatch|truncated/);
  const flipped = Buffer.from(good);
  flipped[200] = (flipped[200] ?? 0) ^ 0xff;
  rejects(flipped, KEY, /checksum mismatch/);
  rejects(good, { ...KEY, gen: 8 }, /not its key \(from another home or generation\)/);
  rejects(good, { ...KEY, home: 'acme/bob' }, /not its key/);
  rejects(good, { ...KEY, seq: 4 }, /not its key/);
  const future = Buffer.from(good);
  future[4] = 3;
  rejects(future, KEY, /written by a newer homefs \(segment version 3/);
  rejects(Buffer.from('not a segment at all, no no no no no no no'), KEY, /bad magic/);
  // A well-formed checksum over a lying object: the object's hash is checked too.
  const s = decodeSegment(good, KEY);
  const lying: Segment = { ...s, objects: s.objects.map((o, i) => (i === 0 ? { ...o, data: Buffer.from('other bytes') } : o)) };
  rejects(encodeSegment(lying), KEY, /does not match its hash/);
});

test('snapshot version 2: an unknown required feature is refused with one line that says to upgrade', () => {
  const base = { root: 'b'.repeat(64), parent: null, home: 'acme/alice', time: '2026-12-01T00:00:00.000Z', host: 'h', stats: { files: 0, dirs: 1, bytes: 0 } };
  const v1 = encodeSnapshot(base);
  assert.match(v1.toString(), /^\{"version":1,/);
  assert.equal(decodeSnapshot(v1).features, undefined);
  const forged = Buffer.from(encodeSnapshot({ ...base, features: ['log'] }).toString().replace('["log"]', '["log","teleport"]'));
  assert.throws(() => decodeSnapshot(forged), /needs features this homefs does not know \(teleport\): upgrade homefs/);
});

async function seedSegment(store: MemoryStore, gen: number, seq: number, writer: string, content: string): Promise<Segment> {
  const { segment, created } = await writeSegment(store, 'acme', 'alice', gen, seq, writer, content);
  assert.equal(created, true);
  return segment;
}

/** A home acme/alice whose HEAD (generation 0) is a snapshot with the `log` feature. */
async function homeWithHead(): Promise<{ store: MemoryStore; objects: ObjectStore }> {
  const store = new MemoryStore();
  const head = encodeSnapshot({ root: 'c'.repeat(64), parent: null, home: 'acme/alice', time: '2026-12-01T00:00:00.000Z', host: 'h', stats: { files: 0, dirs: 1, bytes: 0 }, features: ['log'] });
  await store.put(`acme/meta/${hashBuffer(head).slice(0, 2)}/${hashBuffer(head)}`, head);
  await advanceHead(store, 'acme', 'alice', null, hashBuffer(head));
  return { store, objects: new ObjectStore(store, 'acme') };
}

test('readers see the newest valid segment; a corrupted newest one is skipped with one warning; a claim fences the old writer', async () => {
  const { store, objects } = await homeWithHead();
  const s0 = await seedSegment(store, 0, 0, 'old', 'first');
  await seedSegment(store, 0, 1, 'old', 'second');
  const bad = Buffer.from(await store.get(logKey('acme', 'alice', 0, 1)));
  bad[bad.length - 5] = (bad[bad.length - 5] ?? 0) ^ 1;
  await store.put(logKey('acme', 'alice', 0, 1), bad);
  const warnings: string[] = [];
  const live = await liveHead(objects, 'alice', (m) => warnings.push(m));
  assert.equal(live.snapshot, s0.snapshot, 'falls back to the previous valid segment');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? '', /log segment acme\/alice gen 0 seq 1: checksum mismatch .*ignoring it/);
  const snap = await live.objects.getSnapshot(s0.snapshot);
  const tree = await live.objects.getTree(snap.root);
  assert.equal((await live.objects.getBlock(tree.entries[0]?.blocks?.[0] ?? '')).toString(), 'first', 'objects are served from the segment');

  const claim = await claimLog(store, 'acme', 'alice', 0, 'new');
  assert.deepEqual({ seqs: claim.seqs.map((e) => e.seq), tombstone: claim.tombstone }, { seqs: [1, 0], tombstone: 2 });
  const lateSegment = encodeSegment({ ...s0, seq: 2 });
  assert.equal(await createEntry(store, logKey('acme', 'alice', 0, 2), lateSegment), false, "the old holder's next segment is refused");
  assert.equal((await liveHead(objects, 'alice', () => undefined)).snapshot, s0.snapshot, 'a tombstone is not a segment');
  assert.equal((await claimLog(store, 'acme', 'alice', 0, 'newer')).tombstone, 3, 'the next claim takes the next number');
});

test('a run of tombstones over the log (a home woken often without a seal) is read a window at a time, and judged newest first', async () => {
  const { store, objects } = await homeWithHead();
  const big = await seedSegment(store, 0, 0, 'old', 'x'.repeat(4096)); // large enough to be told by its size
  for (let i = 0; i < 20; i++) await claimLog(store, 'acme', 'alice', 0, `wake ${i}`); // seqs 1..20
  const small = await seedSegment(store, 0, 21, 'old', 'small'); // a segment as small as a tombstone
  for (let i = 0; i < 20; i++) await claimLog(store, 'acme', 'alice', 0, `later wake ${i}`); // seqs 22..41
  let inFlight = 0;
  let most = 0;
  const reads: string[] = [];
  const get = store.get.bind(store);
  store.get = async (key: string) => {
    reads.push(key);
    most = Math.max(most, ++inFlight);
    try {
      await new Promise((r) => setTimeout(r, 2));
      return await get(key);
    } finally {
      inFlight--;
    }
  };
  assert.equal((await liveHead(objects, 'alice', () => undefined)).snapshot, small.snapshot, 'the newest segment, under 20 tombstones');
  assert.equal(most, 16, 'small entries are read 16 at a time');
  assert.ok(!reads.includes(logKey('acme', 'alice', 0, 0)), 'nothing older than the segment found is read');
  // Corrupt the small segment: the reader falls back past 20 more tombstones to the large one, with one warning.
  const bytes = Buffer.from(await get(logKey('acme', 'alice', 0, 21)));
  bytes[bytes.length - 5] = (bytes[bytes.length - 5] ?? 0) ^ 1;
  await store.put(logKey('acme', 'alice', 0, 21), bytes);
  const warnings: string[] = [];
  assert.equal((await liveHead(objects, 'alice', (m) => warnings.push(m))).snapshot, big.snapshot);
  assert.equal(warnings.length, 1);
});

test("a log orphaned by an older homefs's --takeover (HEAD advanced to the same snapshot) is still seen; an absorbed one is not", async () => {
  const store = new MemoryStore();
  const objects = new ObjectStore(store, 'acme');
  const head = encodeSnapshot({ root: 'c'.repeat(64), parent: null, home: 'acme/alice', time: '2026-12-01T00:00:00.000Z', host: 'h', stats: { files: 0, dirs: 1, bytes: 0 }, features: ['log'] });
  const headId = hashBuffer(head);
  await store.put(`acme/meta/${headId.slice(0, 2)}/${headId}`, head);
  await advanceHead(store, 'acme', 'alice', null, headId);
  const s0 = await seedSegment(store, 0, 0, 'old', 'fsync\'d before the old version took over');
  await advanceHead(store, 'acme', 'alice', 0, headId); // an older homefs's fence: same snapshot, one generation up
  assert.equal((await liveHead(objects, 'alice', () => undefined)).snapshot, s0.snapshot, 'readers still see what was fsync\'d');
  await advanceHead(store, 'acme', 'alice', 1, s0.snapshot); // replayed (or sealed): the snapshot changes
  await advanceHead(store, 'acme', 'alice', 2, headId); // a later generation with another snapshot: the chain is broken
  const live = await liveHead(objects, 'alice', () => undefined);
  assert.equal(live.segment, null, 'a log below a generation with another snapshot is never replayed');
  assert.equal(live.snapshot, headId);
});

/** Stores a snapshot (no tree behind it: readers here only need its id) and returns its id. */
async function putSnapshot(store: MemoryStore, extra: { features: string[]; logTail?: { gen: number; seq: number } }): Promise<string> {
  const snap = encodeSnapshot({ root: 'c'.repeat(64), parent: null, home: 'acme/alice', time: '2026-12-01T00:00:00.000Z', host: 'h', stats: { files: 0, dirs: 1, bytes: 0 }, ...extra });
  const id = hashBuffer(snap);
  await store.put(`acme/meta/${id.slice(0, 2)}/${id}`, snap);
  return id;
}

test("a log tail (segments of the generation below HEAD from HEAD's logTail.seq on) counts when HEAD's own log is empty, also under a claimant's fence", async () => {
  const store = new MemoryStore();
  const objects = new ObjectStore(store, 'acme');
  await advanceHead(store, 'acme', 'alice', null, await putSnapshot(store, { features: ['log'] }));
  await seedSegment(store, 0, 0, 'me', 'absorbed by the seal');
  const sealed = await putSnapshot(store, { features: ['log', 'log-tail'], logTail: { gen: 0, seq: 1 } });
  const tail = await seedSegment(store, 0, 1, 'me', 'fsync\'d while the seal ran');
  await advanceHead(store, 'acme', 'alice', 0, sealed);
  assert.equal((await liveHead(objects, 'alice', () => undefined)).snapshot, tail.snapshot, 'the tail is newer than the seal');
  const own = await seedSegment(store, 1, 0, 'me', 'fsync\'d after the seal');
  assert.equal((await liveHead(objects, 'alice', () => undefined)).snapshot, own.snapshot, "HEAD's own log comes first");
  await store.delete(logKey('acme', 'alice', 1, 0));
  await advanceHead(store, 'acme', 'alice', 1, sealed); // a claimant's fence (same snapshot), which then crashed before its replay
  await advanceHead(store, 'acme', 'alice', 2, sealed); // and another one
  assert.equal((await liveHead(objects, 'alice', () => undefined)).snapshot, tail.snapshot, 'the tail still counts through generations with the same snapshot');
  await advanceHead(store, 'acme', 'alice', 3, tail.snapshot); // replayed
  await advanceHead(store, 'acme', 'alice', 4, sealed); // a rollback to the sealed snapshot
  assert.equal((await liveHead(objects, 'alice', () => undefined)).snapshot, sealed, 'a tail counts only through a run down to the generation its seal created');
  const noTail = await putSnapshot(store, { features: ['log'] });
  await advanceHead(store, 'acme', 'alice', 5, noTail);
  assert.equal((await liveHead(objects, 'alice', () => undefined)).snapshot, noTail, 'a snapshot without logTail ignores the log below');
});

test('dropOldLogs: absorbed segments go, the log tail stays; tombstones go once unread and older than a day', async () => {
  const store = new MemoryStore();
  await seedSegment(store, 0, 0, 'me', 'old');
  await createEntry(store, logKey('acme', 'alice', 0, 1), Buffer.from('HFTB\x01{}', 'latin1'));
  await seedSegment(store, 1, 0, 'me', 'absorbed');
  await seedSegment(store, 1, 1, 'me', 'tail');
  await createEntry(store, logKey('acme', 'alice', 1, 2), Buffer.from('HFTB\x01{}', 'latin1'));
  const keys = async (): Promise<string[]> => {
    const out: string[] = [];
    for await (const o of store.list('acme/homes/alice/log/')) out.push(o.key.split('/').slice(-2).map((x) => String(9999999999999 - Number(x))).join('/'));
    return out.sort();
  };
  // HEAD 2 was sealed from generation 1 with tail seq 1: generation 1's tombstone is read (tail log), so it stays.
  assert.equal(await dropOldLogs(store, 'acme', 'alice', 2, { gen: 1, seq: 1 }), 2);
  assert.deepEqual(await keys(), ['0/1', '1/1', '1/2'], 'segments absorbed deleted; the tail and young tombstones kept');
  assert.equal(await dropOldLogs(store, 'acme', 'alice', 3, null, Date.now() + TOMBSTONE_KEEP_MS - 60_000), 1);
  assert.deepEqual(await keys(), ['0/1', '1/2'], 'tombstones younger than a day are kept');
  assert.equal(await dropOldLogs(store, 'acme', 'alice', 3, null, Date.now() + TOMBSTONE_KEEP_MS + 60_000), 2);
  assert.deepEqual(await keys(), [], 'unread tombstones older than a day are deleted');
});

test('log-segment-v2.bin (chained) decodes to the documented values; a bad chain is rejected', () => {
  const bytes = readFileSync(new URL('log-segment-v2.bin', dir));
  assert.equal(hashBuffer(bytes), 'ff4dbf3eec4c6c581aa32177fc569296777c20fecb24cca57cfff114bd1b2b27');
  const k = { home: 'acme/alice', gen: 7, seq: 5 };
  const s = decodeSegment(bytes, k);
  assert.equal(bytes.readUInt8(4), 2, 'version 2');
  assert.deepEqual(s.chain, [3, 4]);
  assert.deepEqual(s.objects.map((o) => o.kind), ['meta', 'meta'], 'only the tree and snapshot: its block is in segment 3');
  assert.ok(encodeSegment(s).equals(bytes), 're-encodes to the same bytes');
  const v1 = decodeSegment(readFileSync(new URL('log-segment-v1.bin', dir)), KEY);
  assert.equal(encodeSegment(v1).readUInt8(4), 1, 'a whole segment is still written as version 1');
  const rejects = (seg: Segment, re: RegExp): void => {
    assert.throws(() => decodeSegment(encodeSegment(seg), k), (e: unknown) => e instanceof FormatError && re.test(e.message));
  };
  rejects({ ...s, chain: [4, 3] }, /chain invalid/);
  rejects({ ...s, chain: [3, 5] }, /chain invalid/);
  rejects({ ...s, chain: Array.from({ length: 65 }, (_, i) => i - 70) }, /chain invalid/);
});

test('a chained segment is read with the objects of its chain; a chain with a missing link is skipped with one warning', async () => {
  const store = new MemoryStore();
  const objects = new ObjectStore(store, 'acme');
  await advanceHead(store, 'acme', 'alice', null, await putSnapshot(store, { features: ['log', 'log-chain'] }));
  const s0 = await seedSegment(store, 0, 0, 'me', 'in the first segment only');
  // Segment 1: a new snapshot whose tree references segment 0's block, holding only its tree and snapshot.
  const block = s0.objects[0];
  assert.ok(block);
  const { encodeTree } = await import('../src/format/codec.js');
  const tree = encodeTree({ entries: [{ name: 'g', kind: 'file', mode: 0o644, uid: 0, gid: 0, size: block.data.length, mtimeNs: 2n, ctimeNs: 2n, blocks: [block.hash] }] });
  const snap = encodeSnapshot({ root: hashBuffer(tree), parent: null, home: 'acme/alice', time: '2026-12-01T00:00:01.000Z', host: 'h', stats: { files: 1, dirs: 1, bytes: block.data.length }, features: ['log', 'log-chain'] });
  const s1: Segment = { ...s0, seq: 1, snapshot: hashBuffer(snap), chain: [0], objects: [{ kind: 'meta', hash: hashBuffer(tree), data: tree }, { kind: 'meta', hash: hashBuffer(snap), data: snap }] };
  assert.equal(await createEntry(store, logKey('acme', 'alice', 0, 1), encodeSegment(s1)), true);
  const live = await liveHead(objects, 'alice', () => undefined);
  assert.equal(live.snapshot, s1.snapshot);
  const t = await live.objects.getTree((await live.objects.getSnapshot(s1.snapshot)).root);
  assert.equal((await live.objects.getBlock(t.entries[0]?.blocks?.[0] ?? '')).toString(), 'in the first segment only', "the block comes from the chain's segment");
  assert.equal(live.segment?.objects.length, 5, "the chain's three objects and its own two");
  await store.delete(logKey('acme', 'alice', 0, 0));
  const warnings: string[] = [];
  const broken = await liveHead(objects, 'alice', (m) => warnings.push(m));
  assert.equal(broken.segment, null, 'no whole state is left in the log: HEAD alone');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? '', /seq 1: it relies on segment 0, which is missing; ignoring it/);
});
