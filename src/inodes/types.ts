/**
 * The inode record of a mounted home, as journaled in LMDB. One record holds everything needed to answer
 * getattr and to write the inode's tree entry at the next seal, so sealing never reads anything else.
 *
 * Content of a regular file is described in two layers:
 *  - `blocks` + `sealedSize`: the content as of the last seal (or the base snapshot), in the store;
 *  - an upper file `upper/<ino>` holding local bytes: either the whole file (`local === 'all'`) or, for a
 *    large file, only the 4 MiB blocks listed in `local` (untouched blocks stay in the store).
 * Invariant: every block in `dirty` is local. A file without an upper file is exactly its sealed blocks.
 */
import type { EntryKind } from '../model/tree.js';

export const ROOT_INO = 1;

export interface Inode {
  ino: number;
  kind: EntryKind;
  /** Permission bits incl. setuid/setgid/sticky (mode & 0o7777). */
  mode: number;
  uid: number;
  gid: number;
  size: number;
  atimeNs: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  nlink: number;
  /** Directories containing this inode, one element per link (a directory has exactly one; root none). */
  parents: number[];
  rdev?: number;
  target?: string;
  xattrs?: Array<[string, Buffer]>;
  /** Identity of a hard-linked inode in snapshots (kept from the snapshot it came from, or new). */
  linkId?: number;

  /** Files: sealed content. */
  blocks?: string[];
  sealedSize?: number;
  /** Files: which bytes are in the upper file: none (undefined), all, or these 4 MiB block indices. */
  local?: 'all' | number[];
  /** Files: 4 MiB block indices (or 'all') changed since the last seal. */
  dirty?: 'all' | number[];

  /** Directories: tree hash as of the last seal (undefined for a directory never sealed). */
  tree?: string;
  /** Directories: children are materialized in the dirent table. */
  loaded?: boolean;
}

export function isDir(i: Inode): boolean {
  return i.kind === 'dir';
}
