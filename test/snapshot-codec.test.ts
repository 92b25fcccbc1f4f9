/**
 * Codec tests: round trips of every entry kind, determinism, and hostile or malformed encodings, each of
 * which must be a FormatError (never a crash, a hang or an accepted bad name).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeSnapshot, decodeTree, encodeSnapshot, encodeTree } from '../src/format/codec.js';
import type { Snapshot, Tree, TreeEntry } from '../src/model/tree.js';
import { FormatError } from '../src/util/errors.js';

const H = (c: string): string => c.repeat(64);

function base(name: string, extra: Partial<TreeEntry>): TreeEntry {
  return { name, kind: 'file', mode: 0o644, uid: 1000, gid: 1000, size: 0, mtimeNs: 1_700_000_000_123_456_789n, ctimeNs: 1_700_000_001_000_000_001n, blocks: [], ...extra };
}

export function sampleTree(): Tree {
  return {
    entries: [
      base('.bashrc', { size: 5, blocks: [H('a')], xattrs: [['user.a', Buffer.from('1')], ['user.b', Buffer.alloc(0)]] }),
      base('big', { size: 20 * 1024 * 1024, blocks: [H('1'), H('2'), H('3'), H('4'), H('5')], mode: 0o4755 }),
      { name: 'dir', kind: 'dir', mode: 0o1777, uid: 0, gid: 0, size: 0, mtimeNs: -5n, ctimeNs: 0n, tree: H('b') },
      base('empty', {}),
      { name: 'fifo', kind: 'fifo', mode: 0o600, uid: 1, gid: 2, size: 0, mtimeNs: 1n, ctimeNs: 2n },
      base('hard1', { size: 3, blocks: [H('c')], link: 1 }),
      base('hard2', { size: 3, blocks: [H('c')], link: 1 }),
      { name: 'link', kind: 'symlink', mode: 0o777, uid: 0, gid: 0, size: 7, mtimeNs: 3n, ctimeNs: 4n, target: 'nowhere' },
      { name: 'tty', kind: 'chardev', mode: 0o620, uid: 0, gid: 5, size: 0, mtimeNs: 3n, ctimeNs: 4n, rdev: 0x8801 },
      base('ünïcødé 日本 🎉', { size: 1, blocks: [H('d')] }),
    ],
  };
}

const ENTRY_NAME_OFFSET = 4 + 1 + 4 + 1 + 2; // magic, version, count, kind, name length

function oneEntry(name: string, extra: Partial<TreeEntry> = {}): Buffer {
  return encodeTree({ entries: [base(name, extra)] });
}

function assertFormatError(fn: () => unknown, re: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof FormatError && re.test(e.message), `expected FormatError matching ${re}`);
}

test('tree round trip keeps every field and is deterministic', () => {
  const t = sampleTree();
  const enc = encodeTree(t);
  const dec = decodeTree(enc);
  assert.deepEqual(dec, t);
  assert.ok(encodeTree(dec).equals(enc));
  assert.equal(enc.subarray(0, 4).toString('latin1'), 'HFTR');
  assert.equal(enc[4], 1);
});

test('encoding refuses invalid trees (unsorted, wrong block count)', () => {
  const t = sampleTree();
  assertFormatError(() => encodeTree({ entries: [...t.entries].reverse() }), /not sorted/);
  assertFormatError(() => encodeTree({ entries: [base('x', { size: 9 * 1024 * 1024, blocks: [H('a')] })] }), /1 blocks for size/);
  assertFormatError(() => encodeTree({ entries: [{ ...base('d', {}), kind: 'dir', tree: H('a') }] }), /dir must not have blocks/);
});

test('hostile names are rejected on decode', () => {
  for (const [bad, re] of [
    ['..', /not allowed/],
    ['.', /not allowed/],
    ['a/b', /contains '\/'/],
    ['a\0b', /contains NUL/],
  ] as const) {
    const enc = oneEntry('x'.repeat(Buffer.byteLength(bad)));
    Buffer.from(bad, 'utf8').copy(enc, ENTRY_NAME_OFFSET);
    assertFormatError(() => decodeTree(enc, H('e')), re);
  }
  const enc = oneEntry('xx');
  enc[ENTRY_NAME_OFFSET] = 0xff; // invalid UTF-8
  assertFormatError(() => decodeTree(enc), /not valid UTF-8/);
  const long = oneEntry('y'.repeat(255));
  long.writeUInt16LE(256, ENTRY_NAME_OFFSET - 2);
  assertFormatError(() => decodeTree(long), /name length 256/);
});

test('unsorted or duplicate names, counts, truncation and trailing bytes are rejected', () => {
  const two = encodeTree({ entries: [base('aa', {}), base('ab', {})] });
  const dup = Buffer.from(two);
  const second = dup.indexOf(Buffer.from('ab'));
  dup[second + 1] = 'a'.charCodeAt(0);
  assertFormatError(() => decodeTree(dup), /not sorted and unique/);

  const huge = Buffer.from(two);
  huge.writeUInt32LE(1_000_001, 5);
  assertFormatError(() => decodeTree(huge), /more than 1000000/);
  const lying = Buffer.from(two);
  lying.writeUInt32LE(900_000, 5);
  assertFormatError(() => decodeTree(lying), /cannot fit/);

  assertFormatError(() => decodeTree(two.subarray(0, two.length - 1)), /truncated/);
  assertFormatError(() => decodeTree(Buffer.concat([two, Buffer.from([0])])), /trailing/);
  assertFormatError(() => decodeTree(Buffer.from('HFTX\x01')), /bad magic/);
  const v4 = Buffer.from(two);
  v4[4] = 4;
  assertFormatError(() => decodeTree(v4), /unsupported tree version 4 .*upgrade homefs/);
  const v0 = Buffer.from(two);
  v0[4] = 0;
  assertFormatError(() => decodeTree(v0), /unsupported tree version 0/);
  const kind = Buffer.from(two);
  kind[9] = 9;
  assertFormatError(() => decodeTree(kind), /unknown kind code 9/);
});

test('out-of-range fields and inconsistent kinds are rejected', () => {
  const mode = oneEntry('m');
  mode.writeUInt16LE(0o17777, ENTRY_NAME_OFFSET + 1);
  assertFormatError(() => decodeTree(mode), /mode .* out of range/);

  const size = oneEntry('s');
  size.writeBigUInt64LE(2n ** 60n, ENTRY_NAME_OFFSET + 1 + 2 + 8);
  assertFormatError(() => decodeTree(size), /exceeds 2\^53-1/);

  const dir = encodeTree({ entries: [{ name: 'd', kind: 'dir', mode: 0o755, uid: 0, gid: 0, size: 0, mtimeNs: 0n, ctimeNs: 0n, tree: H('a') }] });
  dir.writeBigUInt64LE(5n, ENTRY_NAME_OFFSET + 1 + 2 + 8);
  assertFormatError(() => decodeTree(dir), /directory has size 0/);

  const sym = encodeTree({ entries: [{ name: 'l', kind: 'symlink', mode: 0o777, uid: 0, gid: 0, size: 3, mtimeNs: 0n, ctimeNs: 0n, target: 'abc' }] });
  sym.writeBigUInt64LE(4n, ENTRY_NAME_OFFSET + 1 + 2 + 8);
  assertFormatError(() => decodeTree(sym), /differs from its target length/);

  const dirLink = encodeTree({ entries: [{ name: 'd', kind: 'dir', mode: 0o755, uid: 0, gid: 0, size: 0, mtimeNs: 0n, ctimeNs: 0n, tree: H('a') }] });
  dirLink.writeUInt32LE(7, ENTRY_NAME_OFFSET + 1 + 2 + 8 + 8 + 8 + 8);
  assertFormatError(() => decodeTree(dirLink), /directory cannot be a hard link/);

  const xa = oneEntry('x', { xattrs: [['user.a', Buffer.from('1')], ['user.b', Buffer.from('2')]] });
  const at = xa.lastIndexOf(Buffer.from('user.b'));
  xa[at + 5] = 'a'.charCodeAt(0);
  assertFormatError(() => decodeTree(xa), /xattr names not sorted/);
  const xv = oneEntry('x', { xattrs: [['user.a', Buffer.from('1')]] });
  xv.writeUInt32LE(70_000, xv.lastIndexOf(Buffer.from('user.a')) + 6);
  assertFormatError(() => decodeTree(xv), /value of 70000 bytes/);
});

export function sampleSnapshot(): Snapshot {
  return { root: H('a'), parent: null, home: 'acme/alice', time: '2026-11-30T12:00:00.000Z', host: 'host-1', stats: { files: 3, dirs: 1, bytes: 42 }, reason: 'push' };
}

test('snapshot round trip is canonical JSON with a version', () => {
  const s = sampleSnapshot();
  const enc = encodeSnapshot(s);
  assert.equal(enc.toString(), '{"version":1,"root":"' + H('a') + '","parent":null,"home":"acme/alice","time":"2026-11-30T12:00:00.000Z","host":"host-1","stats":{"files":3,"dirs":1,"bytes":42},"reason":"push"}\n');
  assert.deepEqual(decodeSnapshot(enc), s);
  const withParent = { ...s, parent: H('f') };
  assert.deepEqual(decodeSnapshot(encodeSnapshot(withParent)), withParent);
  const withRoot = { ...s, rootAttrs: { mode: 0o700, uid: 1000, gid: 1000, mtimeNs: 1_796_000_000_123_456_789n } };
  const encRoot = encodeSnapshot(withRoot);
  assert.match(encRoot.toString(), /"stats":\{[^}]*\},"rootAttrs":\{"mode":448,"uid":1000,"gid":1000,"mtimeNs":"1796000000123456789"\},"reason":"push"/);
  assert.deepEqual(decodeSnapshot(encRoot), withRoot);
});

test('malformed snapshots are rejected', () => {
  const good = JSON.parse(encodeSnapshot(sampleSnapshot()).toString()) as Record<string, unknown>;
  const enc = (o: unknown): Buffer => Buffer.from(JSON.stringify(o) + '\n');
  assertFormatError(() => decodeSnapshot(enc({ ...good, version: 3 })), /unsupported snapshot version 3 .*upgrade homefs/);
  assertFormatError(() => decodeSnapshot(enc({ ...good, version: 2 })), /version 2 without a features list/);
  assertFormatError(() => decodeSnapshot(enc({ ...good, features: ['log'] })), /version 1 with a features list/);
  assertFormatError(() => decodeSnapshot(enc({ ...good, root: 'abc' })), /root/);
  assertFormatError(() => decodeSnapshot(enc({ ...good, home: '../etc' })), /home/);
  assertFormatError(() => decodeSnapshot(enc({ ...good, extra: 1 })), /canonical/);
  assertFormatError(() => decodeSnapshot(Buffer.from(JSON.stringify(good, null, 1))), /canonical/);
  assertFormatError(() => decodeSnapshot(enc({ ...good, stats: { files: -1, dirs: 0, bytes: 0 } })), /stats.files/);
  assertFormatError(() => decodeSnapshot(Buffer.from('not json')), /not UTF-8 JSON/);
  const root = { mode: 448, uid: 0, gid: 0, mtimeNs: '5' };
  assertFormatError(() => decodeSnapshot(enc({ ...good, rootAttrs: { ...root, mode: 0o10000 } })), /rootAttrs.mode/);
  assertFormatError(() => decodeSnapshot(enc({ ...good, rootAttrs: { ...root, mtimeNs: 5 } })), /rootAttrs.mtimeNs/);
  assertFormatError(() => decodeSnapshot(enc({ ...good, rootAttrs: { ...root, mtimeNs: '99999999999999999999' } })), /rootAttrs.mtimeNs/);
});

test('link counts are written as version 2 and read back; trees without them stay version 1', () => {
  const base = { kind: 'file' as const, mode: 0o644, uid: 0, gid: 0, size: 0, mtimeNs: 1n, ctimeNs: 1n, blocks: [] };
  const withLinks = encodeTree({ entries: [{ ...base, name: 'a', link: 7, nlink: 3 }, { name: 'd', kind: 'dir', mode: 0o755, uid: 0, gid: 0, size: 0, mtimeNs: 1n, ctimeNs: 1n, tree: 'c'.repeat(64), nlink: 4 }] });
  assert.equal(withLinks[4], 2);
  const t = decodeTree(withLinks);
  assert.equal(t.entries[0]?.nlink, 3);
  assert.equal(t.entries[1]?.nlink, 4);
  const plain = encodeTree({ entries: [{ ...base, name: 'a' }] });
  assert.equal(plain[4], 1);
  assert.equal(decodeTree(plain).entries[0]?.nlink, undefined);
  assertFormatError(() => encodeTree({ entries: [{ ...base, name: 'a', nlink: 0 }] }), /link count/);
});

test('inode numbers are written as version 3 and read back; out-of-range, counter-range or missing ones are rejected', () => {
  const base = { kind: 'file' as const, mode: 0o644, uid: 0, gid: 0, size: 0, mtimeNs: 1n, ctimeNs: 1n, blocks: [] };
  const pushed = 2 ** 52 + 123_456;
  const enc = encodeTree({ entries: [{ ...base, name: 'a', ino: pushed }, { ...base, name: 'b' }, { ...base, name: 'c', link: 1, nlink: 2, ino: 2 ** 53 - 1 }] });
  assert.equal(enc[4], 3);
  const t = decodeTree(enc);
  assert.deepEqual(t.entries.map((e) => e.ino), [pushed, undefined, 2 ** 53 - 1]);
  assert.equal(t.entries[2]?.nlink, 2);
  assert.ok(encodeTree(t).equals(enc));
  // Where entry a's inode number sits: after kind, name, mode, uid, gid, size, mtime, ctime, link, nlink.
  const inoAt = ENTRY_NAME_OFFSET + 1 + 2 + 4 + 4 + 8 + 8 + 8 + 4 + 4;
  assert.equal(enc.readBigUInt64LE(inoAt), BigInt(pushed));
  const counter = Buffer.from(enc);
  counter.writeBigUInt64LE(5n, inoAt);
  assertFormatError(() => decodeTree(counter), /inode number 5 out of range/);
  const huge = Buffer.from(enc);
  huge.writeBigUInt64LE(2n ** 53n, inoAt);
  assertFormatError(() => decodeTree(huge), /exceeds 2\^53-1/);
  const none = encodeTree({ entries: [{ ...base, name: 'a', nlink: 1, link: 1 }] });
  assert.equal(none[4], 2);
  // A version 3 tree whose entries record no inode number is not canonical (version 2 writes it).
  const padded = Buffer.concat([none.subarray(0, ENTRY_NAME_OFFSET + 1 + 2 + 4 + 4 + 8 + 8 + 8 + 4 + 4 - 1), Buffer.alloc(8), none.subarray(ENTRY_NAME_OFFSET + 1 + 2 + 4 + 4 + 8 + 8 + 8 + 4 + 4 - 1)]);
  padded[4] = 3;
  assertFormatError(() => decodeTree(padded), /without any inode number/);
  assertFormatError(() => encodeTree({ entries: [{ ...base, name: 'a', ino: 2 ** 40 - 1 }] }), /inode number/);
  assertFormatError(() => encodeTree({ entries: [{ ...base, name: 'a', ino: 2 ** 41 + 0.5 }] }), /inode number/);
});
