/**
 * In-memory shapes of trees and snapshots, shared by every layer (the journal's inodes are loaded from and
 * sealed into tree entries). A leaf module: it imports nothing. Their byte encodings (versioned,
 * deterministic) live in format/codec.ts and are specified in docs/format.md.
 */

export type EntryKind = 'file' | 'dir' | 'symlink' | 'fifo' | 'socket' | 'chardev' | 'blockdev';

export interface TreeEntry {
  /** One path component: UTF-8, no '/' or NUL, not '.' or '..', at most 255 bytes. */
  name: string;
  kind: EntryKind;
  /** Permission bits including setuid/setgid/sticky (mode & 0o7777). */
  mode: number;
  uid: number;
  gid: number;
  /** Logical size in bytes (files); target length (symlinks); 0 otherwise. */
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  /** Extended attributes, sorted by name. */
  xattrs?: Array<[string, Buffer]>;
  /** Symlink target. */
  target?: string;
  /** File content: block hashes in order (see hash/blake3.ts for the layout). Empty file: []. */
  blocks?: string[];
  /** Directory: hash of the subtree. */
  tree?: string;
  /** Hard links: entries of one snapshot with the same `link` are one inode. */
  link?: number;
  /** Hard links: the inode's link count (so a lazily loaded directory knows st_nlink without the others). */
  nlink?: number;
  /** Device number for chardev/blockdev. */
  rdev?: number;
  /**
   * The inode number to serve for this entry (tree version 3; model/inos.ts): recorded by push and seal so
   * that every host serves the same st_ino (git's index compares it). Never a counter-range number.
   */
  ino?: number;
}

export interface Tree {
  entries: TreeEntry[];
}

export interface SnapshotStats {
  files: number;
  dirs: number;
  bytes: number;
}

/** The home's root directory itself, which has no entry in any tree. */
export interface RootAttrs {
  mode: number;
  uid: number;
  gid: number;
  mtimeNs: bigint;
}

export interface Snapshot {
  /** Hash of the root tree. */
  root: string;
  /** Previous snapshot id, or null for the first one. */
  parent: string | null;
  /** `org/home` this snapshot was sealed for. */
  home: string;
  /** ISO-8601 time of sealing. */
  time: string;
  host: string;
  stats: SnapshotStats;
  /** Mode, owner and mtime of the root directory (absent in older snapshots: pull then uses 0755). */
  rootAttrs?: RootAttrs;
  /** Why it was sealed: push, fsync, idle, sync, sleep, absorb (the fsync log filled past half), fork, rollback, takeover. */
  reason?: string;
  /**
   * What a reader must know to read the home this snapshot is HEAD of (snapshot version 2): `log` means
   * fsync'd changes may be in the home's log (fsynclog/homelog.ts). Absent: version 1, nothing required.
   */
  features?: string[];
  /**
   * Feature `log-tail`: log segments of generation `gen` (this snapshot's base) from sequence number `seq` on
   * were written while this snapshot was being sealed, after it captured everything: when this snapshot is
   * HEAD `gen + 1` and that generation's own log is empty, they are newer than it (fsynclog/homelog.ts).
   */
  logTail?: { gen: number; seq: number };
}
