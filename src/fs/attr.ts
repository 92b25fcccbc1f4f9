/**
 * Conversions between inode records and the FUSE binding's attribute and entry shapes.
 */
import type { Attr, Entry } from '../fuse/types.js';
import type { Inode } from '../inodes/types.js';
import type { EntryKind } from '../model/tree.js';

const TYPE_BITS: Record<EntryKind, number> = {
  file: 0o100000, dir: 0o040000, symlink: 0o120000, fifo: 0o010000, socket: 0o140000, chardev: 0o020000, blockdev: 0o060000,
};

export function kindOfMode(mode: number): EntryKind | undefined {
  switch (mode & 0o170000) {
    case 0o100000: return 'file';
    case 0o040000: return 'dir';
    case 0o120000: return 'symlink';
    case 0o010000: return 'fifo';
    case 0o140000: return 'socket';
    case 0o020000: return 'chardev';
    case 0o060000: return 'blockdev';
    case 0: return 'file';
    default: return undefined;
  }
}

const NS = 1_000_000_000n;

/** The file type and permission bits of `i`, as st_mode. */
export function modeOf(i: Inode): number {
  return TYPE_BITS[i.kind] | i.mode;
}

export function attrOf(i: Inode): Attr {
  // A record loaded from a tree has one time for all three, and most others two: each distinct time is
  // split once (BigInt division allocates, and a first `find` makes an attribute per entry).
  const a = i.atimeNs, m = i.mtimeNs, c = i.ctimeNs;
  const mSec = Number(m / NS), mNsec = Number(m % NS);
  const aSec = a === m ? mSec : Number(a / NS), aNsec = a === m ? mNsec : Number(a % NS);
  const cSec = c === m ? mSec : Number(c / NS), cNsec = c === m ? mNsec : Number(c % NS);
  return {
    ino: i.ino, mode: TYPE_BITS[i.kind] | i.mode, nlink: i.nlink, uid: i.uid, gid: i.gid, rdev: i.rdev ?? 0,
    size: i.size, blocks: Math.ceil(i.size / 512), blksize: 65536,
    atimeSec: aSec, atimeNsec: aNsec, mtimeSec: mSec, mtimeNsec: mNsec, ctimeSec: cSec, ctimeNsec: cNsec,
  };
}

export interface Timeouts {
  attr: number;
  entry: number;
  negative: number;
}

export function entryOf(i: Inode, t: Timeouts): Entry {
  return { ino: i.ino, generation: 0, attr: attrOf(i), attrTimeout: t.attr, entryTimeout: t.entry };
}

export function toNs(t: { sec: number; nsec: number }): bigint {
  return BigInt(t.sec) * NS + BigInt(t.nsec);
}
