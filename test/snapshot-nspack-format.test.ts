/**
 * The namespace pack format (docs/format.md, "Namespace pack"): the checked-in fixture decodes to the
 * documented values, every tree in it verifies by hash, building the pack from its trees gives the same
 * bytes, a namespace over the size budget gets no pack, and hostile packs (other versions, counts out of
 * range, lengths that do not add up, a first tree that is not the root) are rejected with a FormatError.
 * readNsPack cuts verified trees out of ranged reads, whatever the range size, and rejects damaged ones.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hashBuffer } from '../src/hash/blake3.js';
import { buildNsPack, decodeNsPackIndex, encodeNsPack, nsPackIndexLength, NSPACK_HEADER, readNsPack } from '../src/transfer/nspack.js';
import { NotFoundError } from '../src/util/errors.js';
import { FormatError } from '../src/util/errors.js';

const dir = new URL('../../test/fixtures/format/', import.meta.url);
const pack = (): Buffer => readFileSync(new URL('nspack-v1.bin', dir));
const ROOT = '2d6a531bc97b6b0834b6058c3d92f2c636ff63c614a1eb4a32124a5d66d4e2c9';
const EMPTY = 'd26b857a310267d5ad2f24f0b2c71e935ba9f39d3fa271387fb16c25c0e2fc9b';
const NOTES = 'ad1043ffc676c5696ff11c8c82fa5ab26bfaa1803c7b8ca72dbd6d9047421f00';

test('nspack-v1.bin decodes to the documented trees, each verifying by hash', () => {
  const bytes = pack();
  assert.equal(hashBuffer(bytes), 'a0bde96194f8586fee383132b9446f26083e164e5ed41734525f167bf4c046a9');
  const idx = decodeNsPackIndex(bytes);
  assert.equal(idx.root, ROOT);
  assert.equal(idx.dataStart, NSPACK_HEADER + 3 * 36);
  assert.equal(nsPackIndexLength(bytes), idx.dataStart);
  assert.deepEqual(idx.slices.map((s) => [s.entry.hash, s.entry.size, s.offset]), [[ROOT, 169, 0], [EMPTY, 9, 169], [NOTES, 60, 178]]);
  for (const s of idx.slices) {
    assert.equal(hashBuffer(bytes.subarray(idx.dataStart + s.offset, idx.dataStart + s.offset + s.entry.size)), s.entry.hash);
  }
  assert.equal(bytes.length, idx.dataStart + 238);
});

test('building the pack from the trees gives the fixture, breadth-first in name order; too big gives none', async () => {
  const bytes = pack();
  const idx = decodeNsPackIndex(bytes);
  const trees = new Map(idx.slices.map((s) => [s.entry.hash, bytes.subarray(idx.dataStart + s.offset, idx.dataStart + s.offset + s.entry.size)]));
  const get = async (h: string): Promise<Buffer> => {
    const t = trees.get(h);
    if (!t) throw new Error(`no tree ${h}`);
    return t;
  };
  assert.ok((await buildNsPack(ROOT, get, { maxBytes: 1 << 20, parallelism: 4 }))?.equals(bytes));
  assert.equal(await buildNsPack(ROOT, get, { maxBytes: 200, parallelism: 4 }), null);
  assert.throws(() => encodeNsPack(EMPTY, [{ hash: ROOT, data: Buffer.alloc(1) }]), /first tree must be the root/);
});

test('hostile packs are rejected with a FormatError, never half-decoded', () => {
  const mutate = (f: (b: Buffer) => void): Buffer => {
    const b = Buffer.from(pack());
    f(b);
    return b;
  };
  const cases: Array<[string, Buffer]> = [
    ['version 2', mutate((b) => { b[4] = 2; })],
    ['version 0', mutate((b) => { b[4] = 0; })],
    ['wrong magic', mutate((b) => { b[0] = 0x58; })],
    ['count 0', mutate((b) => { b.writeUInt32LE(0, 37); })],
    ['count over the limit', mutate((b) => { b.writeUInt32LE(0xffffffff, 37); })],
    ['count larger than the index bytes', mutate((b) => { b.writeUInt32LE(50, 37); })],
    ['dataBytes not the sum of the sizes', mutate((b) => { b.writeBigUInt64LE(239n, 41); })],
    ['first tree is not the root', mutate((b) => { b[NSPACK_HEADER + 4] = (b[NSPACK_HEADER + 4] ?? 0) ^ 1; })],
    ['shorter than the header', pack().subarray(0, 20)],
    ['empty', Buffer.alloc(0)],
  ];
  for (const [name, bytes] of cases) assert.throws(() => decodeNsPackIndex(bytes), FormatError, name);
});

test('readNsPack: every wanted tree verified, in ranges of any size; damaged trees and failed ranges rejected', async () => {
  const bytes = pack();
  const run = async (src: Buffer, rangeBytes: number, skip: string[] = [], failAt = -1) => {
    const got: string[] = [];
    const bad: string[] = [];
    let gets = 0;
    const idx = await readNsPack(async (offset, length) => {
      gets++;
      if (offset === failAt) throw new Error('range failed');
      return src.subarray(offset, offset + length);
    }, {
      wants: (h) => !skip.includes(h),
      tree: (h, data) => {
        assert.equal(hashBuffer(data), h);
        got.push(h);
      },
      rejected: (h) => bad.push(h),
    }, { rangeBytes, rangeParallelism: 2 });
    return { idx, got: got.sort(), bad: bad.sort(), gets };
  };
  const all = [ROOT, EMPTY, NOTES].sort();
  const whole = await run(bytes, 1 << 20);
  assert.equal(whole.idx?.root, ROOT);
  assert.deepEqual([whole.got, whole.bad, whole.gets], [all, [], 1]);
  const small = await run(bytes, 64); // the index needs a second read, each tree its own range
  assert.deepEqual([small.got, small.bad], [all, []]);
  assert.equal(small.gets, 2 + 3);
  assert.deepEqual((await run(bytes, 1 << 20, [ROOT, NOTES])).got, [EMPTY]);
  const damaged = Buffer.from(bytes);
  const dataStart = NSPACK_HEADER + 3 * 36;
  damaged[dataStart + 170] = (damaged[dataStart + 170] ?? 0) ^ 1; // inside `empty` (offset 169, 9 bytes)
  const d = await run(damaged, 1 << 20);
  assert.deepEqual([d.got, d.bad], [[ROOT, NOTES].sort(), [EMPTY]]);
  const f = await run(bytes, 64, [], dataStart + 178); // the range holding `notes` fails
  assert.deepEqual([f.got, f.bad], [[ROOT, EMPTY].sort(), [NOTES]]);
  assert.equal(await readNsPack(async () => { throw new NotFoundError('x'); }, { wants: () => true, tree: () => undefined, rejected: () => undefined }, { rangeBytes: 64, rangeParallelism: 1 }), null);
  await assert.rejects(run(Buffer.from('HFNX' + 'x'.repeat(100)), 1 << 20), FormatError);
});
