/**
 * The push pack format (docs/format.md, "Push pack"): the checked-in fixture decodes to the documented
 * values, every block in it verifies by hash, building the pack from its blocks gives the same bytes, the
 * writer's choice keeps each hash once, small blocks only and stops at the byte budget, a block whose bytes
 * changed is left out, and hostile packs (bad magic, a newer version, truncated, an index out of bounds or
 * out of order) are rejected with a FormatError, by the index's decoder and by a mount's table of it, which
 * finds every block. The reader (pushpack-reader.ts) serves verified blocks in
 * ranges, counts a damaged one as a fallback, ignores a pack of another snapshot, and never holds a taker
 * at its memory budget.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hashBuffer } from '../src/hash/blake3.js';
import { buildPushPack, decodePushPack, decodePushPackIndex, pushPackIndexLength, PushPackTable, PUSHPACK_HEADER, writePushPackHead } from '../src/transfer/pushpack.js';
import { PushPackWriter } from '../src/transfer/pushpack-writer.js';
import { MemoryStore } from '../src/store/memory.js';
import { emptyPushPackStats, groupRanges, PushPackReader } from '../src/transfer/pushpack-reader.js';
import { FormatError, NotFoundError } from '../src/util/errors.js';

const dir = new URL('../../test/fixtures/format/', import.meta.url);
const pack = (): Buffer => readFileSync(new URL('pushpack-v1.bin', dir));
const SNAP = 'cd4bf34fb45cfa595a872ac2eb1f7cb9845dd8efee6b9c38cab83da38859e455';
const BLOCKS: Array<[string, Buffer]> = [
  ['c81d851204db47dfca8877fcfae554f5421e6c2202f14625aa220135e3e5dd60', Buffer.from('hello, pack\n')],
  ['c9bd36ec7c6c45e1ef67d38ad298fceb2ff34d84f676eeeba82ff9223efd13df', Buffer.alloc(300, 0x61)],
  ['4b694fa6468140836e2f43625aca1150ec72032dc23a12e13416ca026c647ef3', Buffer.from('#!/bin/sh\necho hi\n')],
];

test('pushpack-v1.bin decodes to the documented blocks, each verifying by hash', () => {
  const bytes = pack();
  assert.equal(hashBuffer(bytes), '948d420f01ca8f0c732b474c06a7df8eb51f04add9ffdd95d23d03ac9eed9605');
  const idx = decodePushPack(bytes);
  assert.equal(idx.snapshot, SNAP);
  assert.equal(idx.dataStart, PUSHPACK_HEADER + 3 * 44);
  assert.equal(pushPackIndexLength(bytes), idx.dataStart);
  assert.equal(idx.dataBytes, 12 + 300 + 18);
  assert.deepEqual(idx.entries.map((e) => [e.hash, e.offset, e.length]), [[BLOCKS[0]?.[0], 0, 12], [BLOCKS[1]?.[0], 12, 300], [BLOCKS[2]?.[0], 312, 18]]);
  for (const e of idx.entries) assert.equal(hashBuffer(bytes.subarray(idx.dataStart + e.offset, idx.dataStart + e.offset + e.length)), e.hash);
  assert.equal(bytes.length, idx.dataStart + idx.dataBytes);
});

test('building the pack from its blocks gives the fixture; a block whose bytes changed is left out', () => {
  const cands = BLOCKS.map(([hash, data]) => ({ hash, length: data.length, read: () => data }));
  const built = buildPushPack(SNAP, cands);
  assert.ok(built.pack.equals(pack()));
  assert.equal(built.blocks, 3);
  const changed = buildPushPack(SNAP, cands.map((c, i) => (i === 1 ? { ...c, read: () => Buffer.alloc(300, 0x62) } : i === 2 ? { ...c, read: () => null } : c)));
  assert.equal(changed.blocks, 1);
  const idx = decodePushPack(changed.pack);
  assert.deepEqual(idx.entries.map((e) => e.hash), [BLOCKS[0]?.[0]]);
  assert.equal(changed.pack.length, PUSHPACK_HEADER + 44 + 12);
  const empty = decodePushPack(buildPushPack(SNAP, []).pack);
  assert.deepEqual([empty.entries.length, empty.dataBytes], [0, 0]);
});

test('the writer takes each hash once, blocks up to blockMax, until maxBytes', async () => {
  const b = (hash: string, length: number) => ({ hash, data: Buffer.alloc(length) });
  const h = (c: string): string => c.repeat(64);
  const store = new MemoryStore();
  const w = new PushPackWriter(store, 'k', 1, { blockMax: 100, maxBytes: 100, partBytes: 1 << 24, partsInFlight: 2, reorderBytes: 1 << 24 });
  await w.offer(0, [b(h('a'), 10), b(h('b'), 500), b(h('a'), 10), b(h('c'), 0), b(h('d'), 50), b(h('e'), 50), b(h('f'), 1)]);
  assert.equal((await w.finish(SNAP)).written, true);
  const chosen = decodePushPack(await store.get('k')).entries;
  assert.deepEqual(chosen.map((c) => c.hash), [h('a'), h('d')], 'b too big, a once, c empty, e over the budget (and everything after it)');
});

test('hostile packs are rejected with a FormatError, never half-decoded', () => {
  const mutate = (f: (b: Buffer) => void): Buffer => {
    const b = Buffer.from(pack());
    f(b);
    return b;
  };
  const entry = (i: number): number => PUSHPACK_HEADER + 44 * i;
  const cases: Array<[string, Buffer]> = [
    ['bad magic', mutate((b) => { b[0] = 0x58; })],
    ['newer version', mutate((b) => { b[4] = 2; })],
    ['version 0', mutate((b) => { b[4] = 0; })],
    ['truncated data', pack().subarray(0, pack().length - 1)],
    ['trailing bytes', Buffer.concat([pack(), Buffer.alloc(1)])],
    ['truncated index', pack().subarray(0, entry(2) + 10)],
    ['shorter than the header', pack().subarray(0, 20)],
    ['empty', Buffer.alloc(0)],
    ['count over the limit', mutate((b) => { b.writeUInt32LE(0xffffffff, 37); })],
    ['data length over the limit', mutate((b) => { b.writeBigUInt64LE(1n << 40n, 41); })],
    ['index out of bounds (offset)', mutate((b) => { b.writeBigUInt64LE(320n, entry(2) + 32); })],
    ['index out of bounds (huge offset)', mutate((b) => { b.writeBigUInt64LE(1n << 62n, entry(2) + 32); })],
    ['index out of bounds (length)', mutate((b) => { b.writeUInt32LE(19, entry(2) + 40); })],
    ['block length 0', mutate((b) => { b.writeUInt32LE(0, entry(0) + 40); })],
    ['block over 256 KiB', mutate((b) => { b.writeUInt32LE(256 * 1024 + 1, entry(0) + 40); })],
    ['overlapping blocks', mutate((b) => { b.writeBigUInt64LE(11n, entry(1) + 32); })],
  ];
  for (const [name, bytes] of cases) assert.throws(() => decodePushPack(bytes), FormatError, name);
  // The reader's check (index only) also refuses all but the data-length cases.
  for (const [name, bytes] of cases.filter(([n]) => n !== 'truncated data' && n !== 'trailing bytes')) {
    assert.throws(() => decodePushPackIndex(bytes), FormatError, name);
    assert.throws(() => new PushPackTable(bytes), FormatError, name);
  }
});

test("a mount's table of the index finds every entry, also among hashes whose first four bytes collide", () => {
  // 3,000 blocks: every tenth one's hash starts like the one before it, so the table's probes must look further.
  const entries = Array.from({ length: 3000 }, (_, i) => {
    const h = hashBuffer(Buffer.from(`block ${i}`));
    return { hash: i % 10 === 1 ? hashBuffer(Buffer.from(`block ${i - 1}`)).slice(0, 8) + h.slice(8) : h, offset: i * 2, length: 2 };
  });
  const head = Buffer.alloc(PUSHPACK_HEADER + entries.length * 44);
  writePushPackHead(head, SNAP, entries, entries.length * 2);
  const t = new PushPackTable(head);
  assert.deepEqual([t.count, t.dataStart, t.dataBytes], [3000, head.length, 6000]);
  for (const [i, e] of entries.entries()) {
    assert.equal(t.find(e.hash), i, e.hash);
    assert.deepEqual([t.hash(i), t.offset(i), t.length(i)], [e.hash, e.offset, e.length]);
  }
  assert.equal(t.find('0'.repeat(64)), -1);
  assert.equal(t.find((entries[5] as { hash: string }).hash.slice(0, 63) + 'x'), -1, 'a hash that is not one');
  assert.equal(t.find('zz'), -1);
  assert.equal(new PushPackTable(pack()).find(BLOCKS[2]?.[0] as string), 2);
});

/** A ranged reader of `src` counting its GETs. */
function ranged(src: Buffer | null, failAt = -1) {
  const calls: Array<[number, number]> = [];
  const get = async (offset: number, length: number): Promise<Buffer> => {
    calls.push([offset, length]);
    if (src === null) throw new NotFoundError('PUSHPACK');
    if (offset === failAt) throw new Error('range failed');
    return src.subarray(offset, offset + length);
  };
  return { get, calls };
}

test('groupRanges: spans of at most rangeBytes (a gap is read through), a bigger block alone', () => {
  const e = (offset: number, length: number) => ({ hash: '0'.repeat(64), offset, length });
  assert.deepEqual(groupRanges([e(0, 4), e(4, 4), e(10, 2), e(12, 20), e(32, 1)], 12).map((r) => r.map((x) => x.offset)), [[0, 4, 10], [12], [32]]);
});

test('reader: every block verified, whatever the range size; a damaged one and a failed range fall back', async () => {
  const bytes = pack();
  const opts = { rangeBytes: 1 << 20, rangeParallelism: 2, bufferBytes: 1 << 20 };
  // All in the first GET.
  const one = ranged(bytes);
  const r1 = await PushPackReader.open(one.get, SNAP, opts);
  assert.ok(r1);
  for (const [hash, data] of BLOCKS) assert.ok((await r1.take(hash))?.equals(data), hash);
  assert.equal(await r1.take('e'.repeat(64)), undefined, 'not in the pack');
  assert.deepEqual({ ...r1.stats }, { found: true, used: true, blocks: 3, bytes: 330, fallbacks: 0, requests: 1, bytesFetched: bytes.length });
  // Tiny ranges: the index in two GETs, then one block per range.
  const small = ranged(bytes);
  const r2 = await PushPackReader.open(small.get, SNAP, { ...opts, rangeBytes: 100 });
  assert.ok(r2);
  r2.setNeeds(new Map(BLOCKS.map(([h]) => [h, 1])));
  for (const [hash, data] of BLOCKS) assert.ok((await r2.take(hash))?.equals(data), hash);
  assert.equal(r2.stats.requests, 2 + 3);
  // The second block damaged in the store: its taker gets undefined (fetches it alone), counted.
  const damaged = Buffer.from(bytes);
  damaged[PUSHPACK_HEADER + 3 * 44 + 12 + 5] ^= 1;
  const r3 = await PushPackReader.open(ranged(damaged).get, SNAP, opts);
  assert.equal(await r3?.take(BLOCKS[1]?.[0] ?? ''), undefined);
  assert.ok((await r3?.take(BLOCKS[2]?.[0] ?? ''))?.equals(BLOCKS[2]?.[1] ?? Buffer.alloc(0)));
  assert.deepEqual([r3?.stats.blocks, r3?.stats.fallbacks], [1, 1]);
  // A range that cannot be read: its blocks fall back, the others come.
  const failing = ranged(bytes, PUSHPACK_HEADER + 3 * 44 + 12);
  const r4 = await PushPackReader.open(failing.get, SNAP, { ...opts, rangeBytes: 200 });
  assert.ok(r4);
  assert.ok((await r4.take(BLOCKS[0]?.[0] ?? ''))?.equals(BLOCKS[0]?.[1] ?? Buffer.alloc(0)));
  assert.equal(await r4.take(BLOCKS[1]?.[0] ?? ''), undefined);
  assert.equal(r4.stats.fallbacks, 1);
});

test('reader: a missing pack, one of another snapshot, a damaged or truncated one is not used', async () => {
  const opts = { rangeBytes: 1 << 20, rangeParallelism: 2, bufferBytes: 1 << 20 };
  const stats = emptyPushPackStats();
  assert.equal(await PushPackReader.open(ranged(null).get, SNAP, opts, stats), null);
  assert.deepEqual([stats.found, stats.used, stats.skipped], [false, false, 'none']);
  const other = emptyPushPackStats();
  const o = ranged(pack());
  assert.equal(await PushPackReader.open(o.get, 'a'.repeat(64), opts, other), null);
  assert.deepEqual([other.found, other.used, o.calls.length], [true, false, 1]);
  assert.match(other.skipped ?? '', /another snapshot/);
  const bad = emptyPushPackStats();
  assert.equal(await PushPackReader.open(ranged(Buffer.from('HFPQ' + 'x'.repeat(100))).get, SNAP, opts, bad), null);
  assert.match(bad.skipped ?? '', /damaged: .*wrong magic/);
  const cut = emptyPushPackStats();
  assert.equal(await PushPackReader.open(ranged(pack().subarray(0, pack().length - 3)).get, SNAP, opts, cut), null);
  assert.match(cut.skipped ?? '', /truncated/);
});

test('reader: at its memory budget a taker of a block not read yet is let go (never stuck), the rest still come from the pack', async () => {
  // Blocks 0 and 2 are each taken twice; block 1 once. Budget: one block held.
  const bytes = pack();
  const r = await PushPackReader.open(ranged(bytes).get, SNAP, { rangeBytes: 140, rangeParallelism: 1, bufferBytes: 1 });
  assert.ok(r);
  r.setNeeds(new Map([[BLOCKS[0]?.[0] ?? '', 2], [BLOCKS[1]?.[0] ?? '', 1], [BLOCKS[2]?.[0] ?? '', 2]]));
  // The first range read (block 0 is held twice over): the reader waits for takers; block 2 is not read
  // yet and nothing is in flight, so its taker is let go at once.
  assert.equal(await r.take(BLOCKS[2]?.[0] ?? ''), undefined);
  assert.ok(await r.take(BLOCKS[0]?.[0] ?? ''));
  assert.ok(await r.take(BLOCKS[0]?.[0] ?? ''), 'held until its last taker');
  assert.ok((await r.take(BLOCKS[1]?.[0] ?? ''))?.equals(BLOCKS[1]?.[1] ?? Buffer.alloc(0)), 'memory freed: the next range comes');
  assert.ok((await r.take(BLOCKS[2]?.[0] ?? ''))?.equals(BLOCKS[2]?.[1] ?? Buffer.alloc(0)));
  assert.deepEqual([r.stats.blocks, r.stats.fallbacks], [4, 1]);
});
