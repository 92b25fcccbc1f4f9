/**
 * The local journal of a mounted home: inode, dirent, change-set, hard-link and meta tables in LMDB, with
 * an in-memory cache of what has been touched. Every change is an LMDB write transaction committed before
 * the FUSE reply (noSync: it survives a kill -9 of the daemon; host loss is what the store is for).
 *
 * Callers group related changes with `txn(fn)` so that, e.g., a rename is one transaction.
 *
 * The change set holds every inode changed since the last seal, and every directory above one, each with
 * the sequence number of its latest change. ("Dirty" is kept for a file's changed blocks, filestate.ts.)
 * A seal uses the small API at the end: `beginSeal`, `changedSeq`, `setSealedTree`, `sealCommitted`.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { mkdirSync } from 'node:fs';
import { open as open_ } from 'node:fs/promises';
import { join } from 'node:path';
import { fromLegacy, type LegacyContentFields } from './filestate.js';
import type { Inode } from './types.js';
import { ROOT_INO } from './types.js';
import { hashBuffer } from '../hash/blake3.js';

/** Derived inode numbers live in [2^40, 2^52): above any counter, exact in a JS number. */
const STABLE_INO_BASE = 2 ** 40;
const STABLE_INO_SPAN = 2 ** 52 - 2 ** 40;

/** The inode number derived from `key` (see allocIno). */
export function stableIno(key: string): number {
  const h = Number.parseInt(hashBuffer(Buffer.from(key, 'utf8')).slice(0, 13), 16); // 52 bits
  return STABLE_INO_BASE + (h % STABLE_INO_SPAN);
}

/** The key of a child's derived inode number: its parent's inode and its name. */
export function childKey(parent: number, name: string): string {
  return `${parent}/${name}`;
}

export interface BaseState {
  /** Snapshot the local state is based on, null for a home that had no HEAD. */
  snapshot: string | null;
  /** HEAD generation of that snapshot, null if none. */
  gen: number | null;
}

type Key = number | string | Array<number | string>;

export class Journal {
  private readonly env: RootDatabase;
  private readonly inodesDb: Database<Inode, number>;
  private readonly direntsDb: Database<number, Key>;
  /** The change set (its LMDB table keeps its first name, 'dirty', so existing state directories open). */
  private readonly changedDb: Database<number, number>;
  private readonly linksDb: Database<number, number>;
  private readonly metaDb: Database<unknown, string>;
  private readonly inodes = new Map<number, Inode>();
  private readonly dirs = new Map<number, Map<string, number>>();
  private readonly changed = new Map<number, number>();
  private depth = 0;
  private seq = 0;
  private nextIno: number;
  /** Sequence number at which the running (or last) seal started; marks below it are being sealed. */
  private sealFloor = 0;

  constructor(readonly path: string) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.env = open({ path, noSync: true, compression: false, mapSize: 4 * 1024 ** 3 });
    this.inodesDb = this.env.openDB<Inode, number>({ name: 'inodes' });
    this.direntsDb = this.env.openDB<number, Key>({ name: 'dirents' });
    this.changedDb = this.env.openDB<number, number>({ name: 'dirty' });
    this.linksDb = this.env.openDB<number, number>({ name: 'links' });
    this.metaDb = this.env.openDB<unknown, string>({ name: 'meta' });
    this.nextIno = (this.metaDb.get('nextIno') as number | undefined) ?? ROOT_INO + 1;
    for (const { key, value } of this.changedDb.getRange({})) {
      this.changed.set(key, value);
      this.seq = Math.max(this.seq, value);
    }
  }

  /** Runs `fn` in one write transaction (nested calls join the outer one). */
  txn<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    this.depth++;
    try {
      return this.env.transactionSync(fn);
    } finally {
      this.depth--;
    }
  }

  get(ino: number): Inode | undefined {
    let i = this.inodes.get(ino);
    if (i) return i;
    i = this.inodesDb.get(ino);
    if (i) {
      i = upgrade(i);
      this.inodes.set(ino, i);
    }
    return i;
  }

  put(inode: Inode): void {
    this.inodes.set(inode.ino, inode);
    this.txn(() => void this.inodesDb.put(inode.ino, inode));
  }

  /** Replaces fields of an inode and journals it; returns the new record. */
  update(ino: number, patch: Partial<Inode>): Inode {
    const old = this.get(ino);
    if (!old) throw new Error(`no inode ${ino}`);
    const next = { ...old, ...patch };
    this.put(next);
    return next;
  }

  remove(ino: number): void {
    this.inodes.delete(ino);
    this.dirs.delete(ino);
    this.changed.delete(ino);
    this.txn(() => {
      void this.inodesDb.remove(ino);
      void this.changedDb.remove(ino);
    });
  }

  /**
   * A new inode number. With `stable` (what names the file the same way on every host: its parent's inode
   * and its name, or its hard-link id), the number is derived from it, so a home woken on another host
   * shows the same st_ino for the same path and tools that compare inode numbers (git's index) do not
   * take every file for changed; a number in use falls back to the counter, whose range is disjoint.
   */
  allocIno(stable?: string): number {
    if (stable !== undefined) {
      const ino = stableIno(stable);
      if (this.get(ino) === undefined) return ino;
    }
    if (this.nextIno >= STABLE_INO_BASE) throw new Error('inode counter exhausted');
    const ino = this.nextIno++;
    this.txn(() => void this.metaDb.put('nextIno', this.nextIno));
    return ino;
  }

  /** Children of a loaded directory (name → ino), cached in memory. */
  children(parent: number): Map<string, number> {
    let m = this.dirs.get(parent);
    if (m) return m;
    m = new Map();
    for (const { key, value } of this.direntsDb.getRange({ start: [parent, ''], end: [parent + 1, ''] })) {
      const k = key as [number, string];
      if (k[0] === parent) m.set(k[1], value);
    }
    this.dirs.set(parent, m);
    return m;
  }

  child(parent: number, name: string): number | undefined {
    return this.children(parent).get(name);
  }

  setChild(parent: number, name: string, ino: number): void {
    this.children(parent).set(name, ino);
    this.txn(() => void this.direntsDb.put([parent, name], ino));
  }

  removeChild(parent: number, name: string): void {
    this.children(parent).delete(name);
    this.txn(() => void this.direntsDb.remove([parent, name]));
  }

  linkIno(linkId: number): number | undefined {
    return this.linksDb.get(linkId);
  }

  setLinkIno(linkId: number, ino: number): void {
    this.txn(() => void this.linksDb.put(linkId, ino));
  }

  getMeta<T>(key: string): T | undefined {
    return this.metaDb.get(key) as T | undefined;
  }

  setMeta(key: string, value: unknown): void {
    this.txn(() => void this.metaDb.put(key, value));
  }

  base(): BaseState {
    return (this.getMeta<BaseState>('base') ?? { snapshot: null, gen: null });
  }

  setBase(b: BaseState): void {
    this.setMeta('base', b);
  }

  // ---- change set ----------------------------------------------------------------------------------

  /**
   * Marks an inode and every directory above it changed with a fresh sequence number. Skipped when the
   * inode was already marked since the current seal started (its ancestors then were too).
   */
  markChanged(ino: number): void {
    const cur = this.changed.get(ino);
    if (cur !== undefined && cur >= this.sealFloor) return;
    const s = ++this.seq;
    this.txn(() => {
      const seen = new Set<number>();
      const stack = [ino];
      while (stack.length > 0) {
        const i = stack.pop() as number;
        if (seen.has(i)) continue;
        seen.add(i);
        this.changed.set(i, s);
        void this.changedDb.put(i, s);
        const node = this.get(i);
        if (node) for (const p of node.parents) stack.push(p);
      }
    });
  }

  /** The sequence number of the inode's latest unsealed change, undefined when it has none. */
  changedSeq(ino: number): number | undefined {
    return this.changed.get(ino);
  }

  /** Inodes changed since the last seal (directories above changes included). */
  get changedCount(): number {
    return this.changed.size;
  }

  changedInodes(): IterableIterator<[number, number]> {
    return this.changed.entries();
  }

  // ---- sealing ---------------------------------------------------------------------------------------

  /**
   * Starts a seal: returns its floor, the sequence number below which every change is covered by it.
   * Changes made while the seal runs get numbers at or above the floor and stay for the next seal.
   */
  beginSeal(): number {
    this.sealFloor = this.seq + 1;
    return this.sealFloor;
  }

  /** Records the tree hash a seal wrote for directory `ino`. */
  setSealedTree(ino: number, tree: string): void {
    this.update(ino, { tree });
  }

  /** After the seal begun at `floor` committed `base`: one transaction moves the base and forgets its changes. */
  sealCommitted(base: BaseState, floor: number): void {
    this.txn(() => {
      this.setBase(base);
      for (const [ino, s] of [...this.changed]) {
        if (s < floor) {
          this.changed.delete(ino);
          void this.changedDb.remove(ino);
        }
      }
    });
  }

  /** Makes every committed transaction durable on disk (the journal itself commits without fsync). */
  async sync(): Promise<void> {
    const fh = await open_(join(this.path, 'data.mdb'), 'r');
    try {
      await fh.datasync();
    } finally {
      await fh.close();
    }
  }

  isEmpty(): boolean {
    return this.get(ROOT_INO) === undefined;
  }

  async close(): Promise<void> {
    await this.env.close();
  }
}

/** A record as read from LMDB, upgraded from earlier versions' layout (files' separate content fields). */
function upgrade(rec: Inode): Inode {
  if (rec.kind !== 'file' || rec.content !== undefined) return rec;
  const { blocks, sealedSize, local, dirty, ...rest } = rec as Inode & LegacyContentFields;
  return { ...rest, content: fromLegacy({ blocks, sealedSize, local, dirty }) };
}
