/**
 * The one conversion into a tree entry. Push (from lstat) and seal (from a journal inode) describe an
 * entry with the same attributes and hand it here, so the per-kind rules (which fields a kind carries,
 * what its size means, how hard links and directory link counts are recorded) exist exactly once and
 * always satisfy the codec's validation (format/codec.ts).
 */
import { isPortableIno } from './inos.js';
import type { TreeEntry } from './tree.js';

/**
 * What every entry records about its inode, whatever it was read from: the tree entry's own fields, except
 * that `mode` and `size` arrive raw (from lstat or the journal) and treeEntry normalizes them.
 */
export interface EntryAttrs extends Pick<TreeEntry, 'kind' | 'uid' | 'gid' | 'mtimeNs' | 'ctimeNs'> {
  /** Mode bits; only the permission bits (mode & 0o7777) are kept. */
  mode: number;
  /** File length, or symlink target length; ignored for other kinds. */
  size: number;
  xattrs?: Array<[string, Buffer]> | undefined;
  target?: string | undefined;
  rdev?: number | undefined;
}

/** Where the entry's content is, and its link identity. */
export interface EntryContent {
  /** Files: the block list (empty file: none). */
  blocks?: string[] | undefined;
  /** Directories: the subtree's hash. */
  tree?: string | undefined;
  /** Non-directories that are hard links inside the snapshot: the shared link id. */
  link?: number | undefined;
  /** Hard links: how many names the inode has; directories: 2 + subdirectories. */
  nlink?: number | undefined;
  /** The inode number served for it (recorded only when portable: model/inos.ts). */
  ino?: number | undefined;
}

export function treeEntry(name: string, a: EntryAttrs, c: EntryContent): TreeEntry {
  const e: TreeEntry = {
    name, kind: a.kind, mode: a.mode & 0o7777, uid: a.uid, gid: a.gid,
    size: a.kind === 'file' || a.kind === 'symlink' ? a.size : 0, mtimeNs: a.mtimeNs, ctimeNs: a.ctimeNs,
  };
  if (a.xattrs && a.xattrs.length > 0) e.xattrs = a.xattrs;
  switch (a.kind) {
    case 'file':
      e.blocks = c.blocks ?? [];
      break;
    case 'dir':
      if (c.tree !== undefined) e.tree = c.tree;
      break;
    case 'symlink':
      e.target = a.target ?? '';
      break;
    case 'chardev':
    case 'blockdev':
      e.rdev = a.rdev ?? 0;
      break;
    case 'fifo':
    case 'socket':
      break;
  }
  if (a.kind === 'dir') {
    if (c.nlink !== undefined) e.nlink = Math.max(2, c.nlink);
  } else if (c.link !== undefined) {
    e.link = c.link;
    if (c.nlink !== undefined) e.nlink = c.nlink;
  }
  if (c.ino !== undefined && isPortableIno(c.ino)) e.ino = c.ino;
  return e;
}
