/**
 * The inode record of a mounted home, as journaled in LMDB. One record holds everything needed to answer
 * getattr and to write the inode's tree entry at the next seal, so sealing never reads anything else.
 *
 * A regular file's content (sealed blocks, upper file, what changed since the last seal) is one named
 * state, `content` (filestate.ts).
 */
import type { EntryKind } from '../model/tree.js';
import type { FileContent } from './filestate.js';

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

  /** Files: where the content is and what changed since the last seal (always set for files). */
  content?: FileContent;

  /** Directories: tree hash as of the last seal (undefined for a directory never sealed). */
  tree?: string;
  /** Directories: children are materialized in the dirent table. */
  loaded?: boolean;
}
