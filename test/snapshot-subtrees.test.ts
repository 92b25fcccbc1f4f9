/**
 * Reading trees on the walk's and the mount's paths: `subtreesOf` (format/subtrees.ts) gives exactly the
 * subtree hashes `decodeTree` would, for every tree version and entry kind, and fails cleanly on truncation;
 * the lighter checks of `decodeTree` accept nothing the full validation refuses (a decoded tree encodes to
 * the same bytes), and a file size that would need more blocks than the tree holds is refused before anything
 * is allocated for them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeTree, encodeTree } from '../src/format/codec.js';
import { subtreesOf } from '../src/format/subtrees.js';
import type { Tree, TreeEntry } from '../src/model/tree.js';
import { FormatError } from '../src/util/errors.js';

const H = (c: string): string => c.repeat(64);
const PUSHED = 2 ** 52;

function mixed(withIno: boolean, withNlink: boolean): Tree {
  const f = (name: string, extra: Partial<TreeEntry> = {}): TreeEntry => ({
    name, kind: 'file', mode: 0o644, uid: 1, gid: 2, size: 0, mtimeNs: 5n, ctimeNs: 6n, blocks: [], ...(withIno ? { ino: PUSHED + name.length } : {}), ...extra,
  });
  return {
    entries: [
      f('a', { size: 10, blocks: [H('1')], xattrs: [['user.x', Buffer.from('v')]] }),
      f('big', { size: 9 * 1024 * 1024, blocks: [H('2'), H('3'), H('4')] }),
      { ...f('d1'), kind: 'dir', blocks: undefined, tree: H('a') },
      { ...f('dev'), kind: 'chardev', blocks: undefined, rdev: 0x801 },
      { ...f('fifo'), kind: 'fifo', blocks: undefined },
      f('hard', { size: 1, blocks: [H('5')], link: 7, ...(withNlink ? { nlink: 2 } : {}) }),
      { ...f('ln'), kind: 'symlink', blocks: undefined, size: 3, target: 'd1/' },
      { ...f('z'), kind: 'dir', blocks: undefined, tree: H('b'), xattrs: [['user.y', Buffer.alloc(3)]] },
    ],
  };
}

test('subtreesOf finds what decodeTree finds, in every tree version', () => {
  for (const [ino, nlink] of [[false, false], [false, true], [true, true]] as const) {
    const buf = encodeTree(mixed(ino, nlink));
    const want = decodeTree(buf).entries.filter((e) => e.kind === 'dir').map((e) => e.tree);
    assert.deepEqual(subtreesOf(buf), want);
    assert.deepEqual(subtreesOf(encodeTree({ entries: [] })), []);
    for (let cut = 0; cut < buf.length; cut++) {
      assert.throws(() => subtreesOf(buf.subarray(0, cut)), FormatError, `truncated at ${cut}`);
    }
  }
});

test('a file size needing more blocks than the tree holds is refused, not allocated for', () => {
  const buf = encodeTree({ entries: [{ name: 'f', kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 1, mtimeNs: 0n, ctimeNs: 0n, blocks: [H('1')] }] });
  const sizeAt = 4 + 1 + 4 + 1 + 2 + 1 + 2 + 4 + 4;
  buf.writeBigUInt64LE(BigInt(Number.MAX_SAFE_INTEGER), sizeAt);
  assert.throws(() => decodeTree(buf), (e: unknown) => e instanceof FormatError && /cannot fit/.test(e.message));
  assert.throws(() => subtreesOf(buf), FormatError);
});

test('decodeTree accepts no mutation of a valid tree that the full validation would refuse', () => {
  let seed = 0x9e3779b9;
  const rng = { next: (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) };
  const good = encodeTree(mixed(true, true));
  let accepted = 0;
  for (let i = 0; i < 20000; i++) {
    const b = Buffer.from(good);
    const at = 9 + Math.floor(rng.next() * (b.length - 9));
    b[at] = Math.floor(rng.next() * 256);
    let t: Tree;
    try {
      t = decodeTree(b);
    } catch (e) {
      assert.ok(e instanceof FormatError, String(e));
      continue;
    }
    accepted++;
    assert.ok(encodeTree(t).equals(b), `mutation at byte ${at} decoded to a tree that encodes differently`);
  }
  assert.ok(accepted > 0);
});
