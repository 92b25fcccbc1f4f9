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

export function attrOf(i: Inode): Attr {
  return {
    ino: i.ino, mode: TYPE_BITS[i.kind] | i.mode, nlink: i.nlink, uid: i.uid, gid: i.gid, rdev: i.rdev ?? 0,
    size: i.size, blocks: Math.ceil(i.size / 512), blksize: 65536,
    atimeSec: Number(i.atimeNs / NS), atimeNsec: Number(i.atimeNs % NS),
    mtimeSec: Number(i.mtimeNs / NS), mtimeNsec: Number(i.mtimeNs % NS),
    ctimeSec: Number(i.ctimeNs / NS), ctimeNsec: Number(i.ctimeNs % NS),
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
