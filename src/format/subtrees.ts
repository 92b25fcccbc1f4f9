/**
 * The subtree hashes of an encoded tree, read without decoding it: what the namespace walk
 * (home/treewalk.ts) needs from each of the thousands of trees it visits. It steps over each entry by the
 * lengths the format gives (docs/format.md) and builds nothing but the list of its directories' tree
 * hashes, so it costs a fraction of `decodeTree`.
 *
 * It checks only what it needs to stay in bounds: magic, version, and that every length fits the buffer
 * (else a FormatError). Anything else wrong with the tree is for `decodeTree`, which the mount still runs
 * on every tree it serves; a hash taken from a malformed tree only makes the walk prefetch one more object.
 */
import { blockCount } from '../hash/blake3.js';
import { FormatError } from '../util/errors.js';
import { TREE_MAGIC, TREE_VERSION, TREE_VERSION_V1, TREE_VERSION_V2 } from './codec.js';

const KIND_FILE = 1;
const KIND_DIR = 2;
const KIND_SYMLINK = 3;
const KIND_CHARDEV = 6;
const KIND_BLOCKDEV = 7;
const HASH_BYTES = 32;

export function subtreesOf(buf: Buffer, hashForErrors?: string): string[] {
  const what = hashForErrors ? `tree ${hashForErrors}` : 'tree';
  const fail = (at: number): never => {
    throw new FormatError(what, `truncated at byte ${at}`);
  };
  if (buf.length < 9 || !buf.subarray(0, 4).equals(TREE_MAGIC)) throw new FormatError(what, 'not a tree (bad magic)');
  const version = buf[4] as number;
  if (version < TREE_VERSION_V1 || version > TREE_VERSION) throw new FormatError(what, `unsupported tree version ${version}`);
  const count = buf.readUInt32LE(5);
  // kind, name length; then after the name: mode, uid, gid, size, mtime, ctime, link[, nlink][, ino]
  const fixed = 2 + 4 + 4 + 8 + 8 + 8 + 4 + (version >= TREE_VERSION_V2 ? 4 : 0) + (version >= TREE_VERSION ? 8 : 0);
  const out: string[] = [];
  let p = 9;
  for (let i = 0; i < count; i++) {
    if (p + 3 > buf.length) fail(p);
    const kind = buf[p] as number;
    p += 3 + buf.readUInt16LE(p + 1);
    if (p + fixed > buf.length) fail(p);
    const sizeAt = p + 10;
    p += fixed;
    switch (kind) {
      case KIND_FILE: {
        const size = Number(buf.readBigUInt64LE(sizeAt));
        const blocks = blockCount(size);
        if (blocks > (buf.length - p) / HASH_BYTES) fail(p);
        p += blocks * HASH_BYTES;
        break;
      }
      case KIND_DIR:
        if (p + HASH_BYTES > buf.length) fail(p);
        out.push(buf.toString('hex', p, p + HASH_BYTES));
        p += HASH_BYTES;
        break;
      case KIND_SYMLINK:
        if (p + 2 > buf.length) fail(p);
        p += 2 + buf.readUInt16LE(p);
        break;
      case KIND_CHARDEV:
      case KIND_BLOCKDEV:
        p += 8;
        break;
      default:
        break;
    }
    if (p + 2 > buf.length) fail(p);
    const xattrs = buf.readUInt16LE(p);
    p += 2;
    for (let x = 0; x < xattrs; x++) {
      if (p + 1 > buf.length) fail(p);
      p += 1 + (buf[p] as number);
      if (p + 4 > buf.length) fail(p);
      p += 4 + buf.readUInt32LE(p);
    }
    if (p > buf.length) fail(p);
  }
  return out;
}
