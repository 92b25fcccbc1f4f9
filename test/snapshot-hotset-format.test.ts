/**
 * The hot-set record and wake pack format (docs/format.md, "Hot set and wake pack"): the checked-in
 * fixtures decode to the documented values and re-encode to the same bytes, the pack's slices verify by
 * hash, and hostile records (other versions, unknown kinds or flags, lengths that do not add up) are
 * rejected with a FormatError.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hashBuffer } from '../src/hash/blake3.js';
import { decodeHotSet, encodeHotSet, packLayout, packRanges } from '../src/transfer/hotset.js';
import { FormatError } from '../src/util/errors.js';

const dir = new URL('../../test/fixtures/format/', import.meta.url);
const RECORD_HASH = '9b55aab5f45c6170207175b8050d18bbac0a5cbc7558777206570db4ffc062d6';
const record = (): Buffer => readFileSync(new URL('hotset-v1.bin', dir));

test('hotset-v1.bin decodes to the documented entries and re-encodes to the same bytes', () => {
  const bytes = record();
  assert.equal(hashBuffer(bytes), RECORD_HASH);
  const r = decodeHotSet(bytes);
  assert.equal(r.snapshot, 'c8c2cd6300eadbf83a495b5c03153a17389d25d970a5ba06f335c9c08c40205d');
  assert.equal(r.packBytes, 15);
  assert.deepEqual(r.entries.map((e) => [e.kind, e.size, e.packed]), [['meta', 8, true], ['block', 4194304, false], ['block', 7, true]]);
  assert.equal(r.entries[1]?.hash, 'c'.repeat(64));
  assert.ok(encodeHotSet(r).equals(bytes));
});

test('wakepack-v1.bin: each packed entry of the record is found at its offset and verifies', () => {
  const pack = readFileSync(new URL('wakepack-v1.bin', dir));
  const r = decodeHotSet(record());
  const slices = packLayout(r);
  assert.deepEqual(slices.map((s) => s.offset), [0, 8]);
  for (const s of slices) assert.equal(hashBuffer(pack.subarray(s.offset, s.offset + s.entry.size)), s.entry.hash);
  assert.equal(pack.subarray(8).toString(), 'needle\n');
  assert.deepEqual(packRanges(slices, 8).map((g) => g.length), [1, 1], 'a range never splits an entry');
  assert.deepEqual(packRanges(slices, 1 << 20).map((g) => g.length), [2]);
  assert.deepEqual(packRanges(slices, 1 << 20, 8).map((g) => g.length), [1, 1], 'the first range holds about firstBytes');
  assert.deepEqual(packRanges([...slices, ...slices.map((s) => ({ ...s, offset: s.offset + 15 }))], 16, 8).map((g) => g.length), [1, 2, 1], 'later ranges hold about rangeBytes');
  assert.deepEqual(packRanges([slices[0], slices[1]].filter((s) => s !== undefined).map((s, i) => (i === 1 ? { ...s, offset: 100 } : s)), 1 << 20).map((g) => g.length), [1, 1], 'a gap starts a new range');
});

test('hostile records are rejected with a FormatError, never half-decoded', () => {
  const mutate = (f: (b: Buffer) => Buffer): Buffer => f(Buffer.from(record()));
  const cases: Array<[string, Buffer]> = [
    ['version 2', mutate((b) => { b[4] = 2; return b; })],
    ['version 0', mutate((b) => { b[4] = 0; return b; })],
    ['wrong magic', mutate((b) => { b[0] = 0x58; return b; })],
    ['unknown kind', mutate((b) => { b[49] = 3; return b; })],
    ['unknown flag bit', mutate((b) => { b[50] = 3; return b; })],
    ['packBytes not the sum of packed sizes', mutate((b) => { b.writeUInt32LE(16, 37); return b; })],
    ['packBytes beyond 2^53', mutate((b) => { b.writeBigUInt64LE(1n << 60n, 37); return b; })],
    ['trailing byte', Buffer.concat([record(), Buffer.from([0])])],
    ['truncated entry', record().subarray(0, record().length - 1)],
    ['count larger than the bytes', mutate((b) => { b.writeUInt32LE(4, 45); return b; })],
    ['count over the limit', mutate((b) => { b.writeUInt32LE(0xffffffff, 45); return b; })],
    ['shorter than the header', record().subarray(0, 20)],
    ['empty', Buffer.alloc(0)],
  ];
  for (const [name, bytes] of cases) assert.throws(() => decodeHotSet(bytes), FormatError, name);
});

test('encoding refuses a record whose packBytes does not add up', () => {
  const r = decodeHotSet(record());
  assert.throws(() => encodeHotSet({ ...r, packBytes: 14 }), /packBytes/);
});
