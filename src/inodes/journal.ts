/**
 * The local journal of a mounted home: inode, dirent, change-set, hard-link and meta tables in LMDB, with
 * an in-memory cache of what has been touched.
 *
 * Changes are batched: each one updates the in-memory view at once and queues its LMDB write; the queue
 * is committed at the end of the event-loop turn (`commit`, scheduled with setImmediate; or at once by
 * `commitScheduled`, after a request the FUSE binding served in its awake wait) as one record appended to
 * the redo log (redolog.ts: a copy into a shared mapping, no fsync: it survives a kill -9 of the daemon;
 * host loss is what the store is for). The FUSE layer holds every reply until the batch it depends on has
 * committed (`pending`, `onCommit`), so a kill -9 loses only requests that were never answered. What the
 * log holds reaches LMDB in bulk (`checkpoint`: one LMDB transaction, each key written once) within
 * CHECKPOINT_MS, when the log passes CHECKPOINT_BYTES, and at sync and close; opening the journal applies
 * what a killed daemon left in the log. Reads see changes that are queued or only in the log (the
 * in-memory records, plus small overlays for removed inodes, links and meta keys, emptied at each
 * checkpoint). A batch is atomic: callers still group related changes with `txn(fn)`, and a batch is
 * never committed in the middle of one.
 *
 * The change set holds every inode changed since the last seal, and every directory above one, each with
 * the sequence number of its latest change. ("Dirty" is kept for a file's changed blocks, filestate.ts.)
 * A seal uses the small API at the end: `beginSeal`, `changedSeq`, `setSealedTree`, `sealCommitted`.
 *
 * A directory loaded from its tree (`inMemoryLoad`) is written to memory only, until a write touches one
 * of its inodes: then the load goes into that write's batch first (loads.ts).
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { mkdirSync, writeSync } from 'node:fs';
import { open as open_ } from 'node:fs/promises';
import { join } from 'node:path';
import { fromLegacy, type LegacyContentFields } from './filestate.js';
import { MemoryLoads, type HeldLoad } from './loads.js';
import type { Inode } from './types.js';
import { ROOT_INO } from './types.js';
import { RedoLog, type RedoWrite } from './redolog.js';
import { hashBuffer } from '../hash/blake3.js';
import { CREATED_INO_BASE, createdIno, DERIVED_INO_BASE, HALF_SPAN, isPortableIno, PUSHED_INO_BASE } from '../model/inos.js';
import { InoTable } from '../util/inomap.js';

/** The derived range (model/inos.ts): [2^40, 2^52). */
const STABLE_INO_SPAN = PUSHED_INO_BASE - DERIVED_INO_BASE;

/** The inode number derived from `key` (see allocIno). */
export function stableIno(key: string): number {
  const h = Number.parseInt(hashBuffer(Buffer.from(key, 'utf8')).slice(0, 13), 16); // 52 bits
  return DERIVED_INO_BASE + (h % STABLE_INO_SPAN);
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

/** Changes queued under `deferred` are committed at the latest this long after. */
const LAZY_COMMIT_MS = 50;
/** What the redo log holds reaches LMDB at the latest this long after its first batch… */
const CHECKPOINT_MS = 1000;
/** …or as soon as the log holds this much. */
const CHECKPOINT_BYTES = 4 * 1024 * 1024;
/** While checkpoints fail (LMDB cannot take writes), commits fail too once the log holds this much. */
const LOG_MAX_BYTES = 16 * CHECKPOINT_BYTES;
/** Table numbers: indices of `Journal.tables`, and what the redo log records (never renumber). */
const INODES = 0;
const DIRENTS = 1;
const CHANGED = 2;
const LINKS = 3;
const META = 4;
/** The redo log's file, next to LMDB's. */
const LOG_FILE = 'redo.log';
/** Meta key: the seq of the last redo-log batch applied to LMDB. */
const REDO_SEQ = 'redoSeq';

export interface JournalOptions {
  /** Test fault injection: in its n-th commit of ≥ 12 queued writes (several requests), write half its log record, wait 300 ms, then SIGKILL this process. */
  killInCommit?: number;
  /** Test fault injection: in its n-th checkpoint, SIGKILL this process after LMDB committed and before the log is emptied. */
  killInCheckpoint?: number;
}

/** A queued write: the table (its index in `tables`), its key, and the value (undefined: remove). */
interface QueuedWrite extends RedoWrite {
  key: Key;
}

export class Journal {
  private readonly env: RootDatabase;
  private readonly inodesDb: Database<Inode, number>;
  private readonly direntsDb: Database<number, Key>;
  /** The change set (its LMDB table keeps its first name, 'dirty', so existing state directories open). */
  private readonly changedDb: Database<number, number>;
  private readonly linksDb: Database<number, number>;
  private readonly metaDb: Database<unknown, string>;
  private readonly inodes = new InoTable<Inode>();
  private readonly dirs = new InoTable<Map<string, number>>();
  private readonly changed = new Map<number, number>();
  private depth = 0;
  private seq = 0;
  /** Every markChanged call since this process opened the journal (continuous protection counts changes by it). */
  mutations = 0;
  /** Per inode: the `mutations` count of the latest change at or below it (in memory; absent: none since open). */
  private readonly versions = new Map<number, number>();
  private nextIno: number;
  /** Sequence number at which the running (or last) seal started; marks below it are being sealed. */
  private sealFloor = 0;
  /** The tables by index (QueuedWrite.table, the redo log's table numbers): never reorder. */
  private readonly tables: Array<Database<unknown, Key>>;
  /** Writes queued for the next commit, by table and key (a later write of a key replaces the earlier). */
  private readonly queued = new Map<string, QueuedWrite>();
  /** Writes committed to the redo log and not yet to LMDB (the next checkpoint's), by table and key. */
  private readonly logged = new Map<string, QueuedWrite>();
  private readonly log: RedoLog;
  /** The seq of the last batch appended to the redo log. */
  private logSeq: number;
  private checkpointTimer: NodeJS.Timeout | undefined;
  private checkpoints = 0;
  /** Why the last checkpoint failed; undefined once one succeeds. */
  private checkpointError: unknown;
  /** Overlays of what is queued or only in the log, for reads that do not go through the in-memory records. */
  private readonly goneInos = new Set<number>();
  /** Inodes removed and written again since the last checkpoint: LMDB may still hold their old dirents. */
  private readonly reborn = new Set<number>();
  private readonly queuedLinks = new Map<number, number>();
  private readonly queuedMeta = new Map<string, unknown>();
  private scheduled = false;
  private immediate: NodeJS.Immediate | undefined;
  /** Inside `deferred`: queued changes wait for the next batch someone needs (or LAZY_COMMIT_MS). */
  private deferring = 0;
  private lazyTimer: NodeJS.Timeout | undefined;
  private commits = 0;
  private readonly commitListeners: Array<(err: unknown) => void> = [];
  private readonly xattrListeners: Array<(ino: number) => void> = [];
  private readonly loads = new MemoryLoads((ino) => this.inodes.get(ino)?.parents ?? []);
  /**
   * The journal was empty when opened, so every record and dirent LMDB holds is also in memory (nothing is
   * dropped from `inodes` or `dirs` but removed inodes): a miss in memory is a miss, with no LMDB read. A first
   * load of a fresh home asks for thousands of numbers nobody holds (allocIno) and directories nobody listed.
   */
  private readonly allInMemory: boolean;

  constructor(readonly path: string, private readonly opts: JournalOptions = {}) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.env = open({ path, noSync: true, compression: false, mapSize: 4 * 1024 ** 3 });
    this.inodesDb = this.env.openDB<Inode, number>({ name: 'inodes' });
    this.direntsDb = this.env.openDB<number, Key>({ name: 'dirents' });
    this.changedDb = this.env.openDB<number, number>({ name: 'dirty' });
    this.linksDb = this.env.openDB<number, number>({ name: 'links' });
    this.metaDb = this.env.openDB<unknown, string>({ name: 'meta' });
    const tables: Array<[number, Database<unknown, Key>]> = [[INODES, this.inodesDb], [DIRENTS, this.direntsDb], [CHANGED, this.changedDb], [LINKS, this.linksDb], [META, this.metaDb]] as Array<[number, Database<unknown, Key>]>;
    this.tables = [];
    for (const [i, db] of tables) this.tables[i] = db;
    this.logSeq = this.replay(join(path, LOG_FILE));
    this.log = new RedoLog(join(path, LOG_FILE));
    this.nextIno = (this.metaDb.get('nextIno') as number | undefined) ?? ROOT_INO + 1;
    this.allInMemory = isEmpty(this.inodesDb) && isEmpty(this.direntsDb);
    for (const { key, value } of this.changedDb.getRange({})) {
      this.changed.set(key, value);
      this.seq = Math.max(this.seq, value);
    }
  }

  /** Groups changes: they land in the same batch (nested calls join the outer one). */
  txn<T>(fn: () => T): T {
    this.depth++;
    try {
      return fn();
    } finally {
      this.depth--;
    }
  }

  /**
   * Applies the batches a killed daemon left in the redo log to LMDB (those after the last checkpoint), in
   * one transaction; returns the seq to continue from. The log is emptied by the caller's `new RedoLog`.
   */
  private replay(logPath: string): number {
    const applied = (this.metaDb.get(REDO_SEQ) as number | undefined) ?? 0;
    const batches = RedoLog.readAll(logPath).filter((b) => b.seq > applied);
    if (batches.length === 0) return applied;
    const last = (batches[batches.length - 1] as { seq: number }).seq;
    this.env.transactionSync(() => {
      for (const b of batches) {
        for (const w of b.writes) {
          const db = this.tables[w.table];
          if (!db) throw new Error(`redo log ${logPath}: unknown table ${w.table}`);
          void (w.value === undefined ? db.remove(w.key as Key) : db.put(w.key as Key, w.value));
        }
      }
      void this.metaDb.put(REDO_SEQ, last);
    });
    return last;
  }

  private queue(table: number, key: Key, value: unknown): void {
    if (this.loads.size > 0 && (table === INODES || table === CHANGED || table === DIRENTS)) {
      const dirent = table === DIRENTS;
      const ino = dirent ? (key as [number, string])[0] : (key as number);
      for (const load of this.loads.takeFor(ino, dirent)) this.flushLoad(load);
      // A directory whose load is still held reads as unloaded on disk (loads.ts).
      if (table === INODES && this.loads.holds(ino) && (value as Inode | undefined)?.loaded) value = { ...(value as Inode), loaded: false };
    }
    const k = keyOf(table, key);
    this.queued.delete(k);
    this.queued.set(k, { table, key, value });
    if (this.deferring === 0) this.commitSoon();
    else if (!this.scheduled && !this.lazyTimer) this.lazyTimer = setTimeout(() => this.commitSafely(), LAZY_COMMIT_MS);
  }

  /**
   * Runs fn, the load of directory `dir` from its tree, keeping what it writes (records, the directory's
   * dirents, hard-link ids) in memory only: on disk the directory stays unloaded until a change touches
   * the load, which then joins that change's batch (loads.ts).
   */
  inMemoryLoad<T>(dir: number, fn: () => T): T {
    return this.loads.record(dir, fn);
  }

  /**
   * A held load can be dropped from memory (inodes/trim.ts): its entries' records and its entry map go, and the
   * directory reads as unloaded again, as it does on disk, so the next use loads it from its tree once more
   * (with the same inode numbers: those the tree records, or derived from the same parent and names). Only a
   * load that nothing stands on can go: `heldState`, `entryBlocks` for each entry, then `dropHeldLoad`.
   */
  /** Whether `dir` has a held load that may go (its number of entries), none, or one that cannot go as it is ('kept'). */
  heldState(dir: number): number | 'none' | 'kept' {
    const load = this.loads.get(dir);
    if (!load) return 'none';
    const d = this.inodes.get(dir);
    const entries = this.dirs.get(dir);
    if (this.loads.recording || load.links.size > 0 || !d?.loaded || !d.tree || this.changed.has(dir) || !entries) return 'kept';
    return entries.size;
  }

  /** The entries (inode numbers) of directory `dir`, a copy. */
  heldEntries(dir: number): number[] {
    return [...(this.dirs.get(dir)?.values() ?? [])];
  }

  /** Whether entry `ino` keeps the held load of `dir`: true (for now), 'kept' (while the load is held as it is), false. */
  entryBlocks(dir: number, ino: number, inUse: (ino: number) => boolean): boolean | 'kept' {
    const r = this.inodes.get(ino);
    if (!r || r.parents.length !== 1 || r.parents[0] !== dir || this.changed.has(ino) || this.versions.has(ino)) return 'kept';
    if (r.kind === 'dir' && (r.loaded || (this.dirs.get(ino)?.size ?? 0) > 0 || this.loads.holds(ino))) return true;
    return inUse(ino);
  }

  /** Drops the held load of `dir`, whose every entry `entryBlocks` just found free (LoadTrimmer.drop). */
  dropHeldLoad(dir: number): void {
    const d = this.inodes.get(dir);
    const entries = this.dirs.get(dir);
    if (!d || !entries) throw new Error(`no held load of ${dir} to drop`);
    for (const ino of entries.values()) {
      this.inodes.delete(ino);
      this.dirs.delete(ino);
    }
    this.dirs.delete(dir);
    this.loads.drop(dir);
    this.inodes.set(dir, { ...d, loaded: false });
  }

  /** Marks the held load of `dir` (if any) used now: `oldestLoads` walks it last. */
  touchLoad(dir: number): void {
    if (this.loads.size > 0) this.loads.touch(dir);
  }

  /** Moves the held load of `dir` to the end of `oldestLoads`, keeping when it was last used. */
  deferLoad(dir: number): void {
    this.loads.touch(dir, false);
  }

  /** When the held load of `dir` was last used, undefined when none is held. */
  loadUsedAt(dir: number): number | undefined {
    return this.loads.get(dir)?.usedAt;
  }

  /** Up to `max` held loads, least recently used first: their directories and when each was last used. */
  oldestLoads(max: number): Array<{ dir: number; usedAt: number }> {
    return this.loads.oldest(max).map((l) => ({ dir: l.dir, usedAt: l.usedAt }));
  }

  /** Directory loads held in memory only. */
  get heldLoads(): number {
    return this.loads.size;
  }

  /** What the journal keeps in memory: inode records, directories' entry maps, held loads (status). */
  memoryCounts(): { records: number; dirs: number; heldLoads: number } {
    return { records: this.inodes.size, dirs: this.dirs.size, heldLoads: this.loads.size };
  }

  /**
   * Queues a held load's writes: the records it wrote as they are now (its directory's and its entries'),
   * its directory's dirents, its link ids.
   */
  private flushLoad(load: HeldLoad): void {
    const own = this.inodes.get(load.dir);
    if (own) this.queue(INODES, load.dir, own);
    for (const [name, ino] of this.dirs.get(load.dir) ?? []) {
      const rec = this.inodes.get(ino);
      if (rec) this.queue(INODES, ino, rec);
      this.queue(DIRENTS, [load.dir, name], ino);
    }
    for (const [link, ino] of load.links) this.setLinkIno(link, ino);
  }

  /** Commits what is queued at the end of this event-loop turn (a reply is waiting for it). */
  commitSoon(): void {
    if (this.scheduled || this.queued.size === 0) return;
    this.scheduled = true;
    this.immediate = setImmediate(() => this.commitSafely());
  }

  /**
   * Commits now what `commitSoon` left for the end of this turn, if anything: the FUSE binding serves the
   * next request without a turn of the loop when nothing else waits for one (fs/adapter.ts `turnEnd`).
   */
  commitScheduled(): void {
    if (!this.scheduled) return;
    clearImmediate(this.immediate);
    this.commitSafely();
  }

  /**
   * Runs fn; the changes it queues do not ask for a commit of their own but join the next batch (one
   * LMDB commit fewer per change that nobody waits for, such as the kernel's forget of an unlinked file:
   * a kill -9 before it commits only leaves that inode's record behind, as an unreplied request would).
   * They commit at the latest LAZY_COMMIT_MS later.
   */
  deferred<T>(fn: () => T): T {
    this.deferring++;
    try {
      return fn();
    } finally {
      this.deferring--;
    }
  }

  /** True while changes are queued and not committed. */
  get pending(): boolean {
    return this.queued.size > 0;
  }

  /** Called after every commit (err undefined) or failed commit (the batch is lost; memory is ahead of disk). */
  onCommit(fn: (err: unknown) => void): void {
    this.commitListeners.push(fn);
  }

  /**
   * Called synchronously, before the change is visible to anyone, whenever inode `ino` may have gained
   * extended attributes: a record with xattrs is written (setxattr, a record loaded from a tree) or the
   * inode is removed (its number may come back for another inode). The FUSE binding's negative xattr cache
   * revokes its mark here (fs/noxattrs.ts).
   */
  onXattrsMayExist(fn: (ino: number) => void): void {
    this.xattrListeners.push(fn);
  }

  private xattrsMayExist(ino: number): void {
    for (const fn of this.xattrListeners) fn(ino);
  }

  private commitSafely(): void {
    this.scheduled = false;
    this.immediate = undefined;
    clearTimeout(this.lazyTimer);
    this.lazyTimer = undefined;
    try {
      this.commit();
    } catch {
      /* reported to the listeners by commit() */
    }
  }

  /**
   * Commits the queued batch, now: one record appended to the redo log. Called at the end of the
   * event-loop turn, and directly by whoever must not answer or proceed before its changes are on disk.
   */
  commit(): void {
    if (this.queued.size === 0) return;
    if (this.depth > 0) throw new Error('journal commit inside a change group');
    const batch = [...this.queued.values()];
    this.queued.clear();
    let failure: unknown;
    try {
      this.append(batch);
    } catch (e) {
      failure = e;
    }
    if (failure === undefined) {
      for (const w of batch) {
        this.logged.set(keyOf(w.table, w.key), w);
      }
    }
    for (const fn of this.commitListeners) fn(failure);
    if (failure !== undefined) throw failure;
    if (this.log.bytes >= CHECKPOINT_BYTES) this.checkpointSafely();
    else this.checkpointTimer ??= setTimeout(() => this.checkpointSafely(), CHECKPOINT_MS).unref();
  }

  /** Appends a batch to the redo log; on a full disk, once more after a checkpoint has emptied the log. */
  private append(batch: QueuedWrite[]): void {
    if (this.checkpointError !== undefined && this.log.bytes >= LOG_MAX_BYTES) throw this.checkpointError;
    const seq = this.logSeq + 1;
    const kill = this.opts.killInCommit !== undefined && batch.length >= 12 && ++this.commits >= this.opts.killInCommit;
    const tear = kill ? (fd: number, rec: Buffer, at: number): void => {
      writeSync(fd, rec, 0, rec.length >> 1, at);
      // Linger first, so that a reply sent too early would reach its caller before the kill.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
      process.kill(process.pid, 'SIGKILL');
    } : undefined;
    try {
      this.log.append(seq, batch, tear);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if ((code !== 'ENOSPC' && code !== 'EDQUOT') || this.log.bytes === 0) throw e;
      this.checkpoint(true); // the overlays still cover this batch, which is in neither the log nor LMDB yet
      this.log.append(seq, batch);
    }
    this.logSeq = seq;
  }

  private checkpointSafely(): void {
    try {
      this.checkpoint();
    } catch {
      /* what the log holds stays there; the next commit schedules another try */
    }
  }

  /**
   * Copies what the redo log holds into LMDB (one transaction, each key once), then empties the log. Commits
   * the queued batch first, so the overlays can be emptied with the log (unless `keepOverlays`: a batch
   * being appended still needs them).
   */
  checkpoint(keepOverlays = false): void {
    clearTimeout(this.checkpointTimer);
    this.checkpointTimer = undefined;
    if (this.queued.size > 0 && this.depth === 0) {
      try {
        this.commit();
      } catch {
        /* that batch is lost (its replies were answered EIO); what the log holds still goes in */
      }
    }
    if (this.logged.size === 0) return;
    const seq = this.logSeq;
    try {
      this.env.transactionSync(() => {
        for (const w of this.logged.values()) {
          const db = this.tables[w.table] as Database<unknown, Key>;
          void (w.value === undefined ? db.remove(w.key) : db.put(w.key, w.value));
        }
        void this.metaDb.put(REDO_SEQ, seq);
      });
    } catch (e) {
      this.checkpointError = e;
      throw e;
    }
    this.checkpointError = undefined;
    if (this.opts.killInCheckpoint !== undefined && ++this.checkpoints >= this.opts.killInCheckpoint) process.kill(process.pid, 'SIGKILL');
    this.logged.clear();
    if (this.queued.size === 0 && !keepOverlays) {
      this.goneInos.clear();
      this.reborn.clear();
      this.queuedLinks.clear();
      this.queuedMeta.clear();
    }
    this.log.reset();
  }

  get(ino: number): Inode | undefined {
    let i = this.inodes.get(ino);
    if (i) return i;
    if (this.goneInos.has(ino) || this.allInMemory) return undefined;
    i = this.inodesDb.get(ino);
    if (i) {
      i = upgrade(i);
      this.inodes.set(ino, i);
    }
    return i;
  }

  put(inode: Inode): void {
    if (inode.xattrs !== undefined && inode.xattrs.length > 0) this.xattrsMayExist(inode.ino);
    this.inodes.set(inode.ino, inode);
    if (this.goneInos.delete(inode.ino)) this.reborn.add(inode.ino);
    if (!this.loads.recording) this.queue(INODES, inode.ino, inode);
  }

  /** Replaces fields of an inode and journals it; returns the new record. */
  update(ino: number, patch: Partial<Inode>): Inode {
    const old = this.get(ino);
    if (!old) throw new Error(`no inode ${ino}`);
    const next = { ...old, ...patch };
    this.put(next);
    return next;
  }

  /**
   * Replaces fields of an inode in memory only, for changes that need not survive a kill -9: those of an
   * unlinked inode (nlink 0), which no restart reads again. They reach the disk with its next journaled change, if any.
   */
  updateInMemory(ino: number, patch: Partial<Inode>): Inode {
    const old = this.get(ino);
    if (!old) throw new Error(`no inode ${ino}`);
    const next = { ...old, ...patch };
    if (next.xattrs !== undefined && next.xattrs.length > 0) this.xattrsMayExist(ino);
    this.inodes.set(ino, next);
    return next;
  }

  remove(ino: number): void {
    this.xattrsMayExist(ino);
    this.inodes.delete(ino);
    this.dirs.delete(ino);
    this.changed.delete(ino);
    this.versions.delete(ino);
    this.goneInos.add(ino);
    this.queue(INODES, ino, undefined);
    this.queue(CHANGED, ino, undefined);
  }

  /**
   * The inode number of an entry loaded from a tree: the number the tree recorded (`recorded`, served on
   * the hosts before) when no inode of this mount has it, else one derived from `stable` (what names the
   * entry the same way on every host: its parent's number and its name, or its hard-link id), else the
   * counter's. A number in use is never handed out again (so no two inodes of a mount share one).
   */
  allocIno(stable?: string | (() => string), recorded?: number): number {
    if (recorded !== undefined && isPortableIno(recorded) && this.get(recorded) === undefined) return recorded;
    if (stable !== undefined) {
      const ino = stableIno(typeof stable === 'string' ? stable : stable());
      if (this.get(ino) === undefined) return ino;
    }
    return this.counterIno();
  }

  /**
   * The number of a file created in this mount: from the created range (model/inos.ts), which trees record
   * and other hosts serve again. One journal never hands a number out twice, so an unlinked file's upper
   * data that is still being removed never meets a new file's. Falls back to the counter if it is in use.
   */
  createdIno(): number {
    const n = this.counterIno();
    let base = this.getMeta<number>('createdInoBase');
    if (base === undefined) {
      base = Math.floor(Math.random() * HALF_SPAN);
      this.setMeta('createdInoBase', base);
    }
    const ino = createdIno(base, n);
    return this.get(ino) === undefined ? ino : n;
  }

  /**
   * Whether this journal handed `ino` out to a file it created (its counter, or its created range up to
   * its counter): such a number never had another holder here. A number loaded from a tree may have.
   */
  handedOut(ino: number): boolean {
    if (ino < DERIVED_INO_BASE) return true;
    const base = this.getMeta<number>('createdInoBase');
    if (base === undefined || ino < CREATED_INO_BASE) return false;
    return (((ino - CREATED_INO_BASE - base) % HALF_SPAN) + HALF_SPAN) % HALF_SPAN < this.nextIno;
  }

  private counterIno(): number {
    if (this.nextIno >= DERIVED_INO_BASE) throw new Error('inode counter exhausted');
    const ino = this.nextIno++;
    this.setMeta('nextIno', this.nextIno);
    return ino;
  }

  /** Children of a loaded directory (name → ino), cached in memory. */
  children(parent: number): Map<string, number> {
    let m = this.dirs.get(parent);
    if (m) return m;
    m = new Map();
    // A removed directory's entries may still be in LMDB, their removal only in the log.
    if (this.goneInos.has(parent)) return m;
    if (this.allInMemory) {
      this.dirs.set(parent, m);
      return m;
    }
    for (const { key, value } of this.direntsDb.getRange({ start: [parent, ''], end: [parent + 1, ''] })) {
      const k = key as [number, string];
      if (k[0] === parent) m.set(k[1], value);
    }
    // A directory whose number came back: its old entries' removals may be only in the log or the queue.
    if (this.reborn.has(parent)) {
      for (const w of [...this.logged.values(), ...this.queued.values()]) {
        const k = w.key as [number, string];
        if (w.table !== DIRENTS || k[0] !== parent) continue;
        if (w.value === undefined) m.delete(k[1]);
        else m.set(k[1], w.value as number);
      }
    }
    this.dirs.set(parent, m);
    return m;
  }

  child(parent: number, name: string): number | undefined {
    return this.children(parent).get(name);
  }

  setChild(parent: number, name: string, ino: number): void {
    this.children(parent).set(name, ino);
    if (!this.loads.recording) this.queue(DIRENTS, [parent, name], ino);
  }

  removeChild(parent: number, name: string): void {
    this.children(parent).delete(name);
    this.queue(DIRENTS, [parent, name], undefined);
  }

  linkIno(linkId: number): number | undefined {
    return this.loads.linkIno(linkId) ?? this.queuedLinks.get(linkId) ?? this.linksDb.get(linkId);
  }

  setLinkIno(linkId: number, ino: number): void {
    if (this.loads.recording) return this.loads.linked(linkId, ino);
    this.queuedLinks.set(linkId, ino);
    this.queue(LINKS, linkId, ino);
  }

  getMeta<T>(key: string): T | undefined {
    return (this.queuedMeta.has(key) ? this.queuedMeta.get(key) : this.metaDb.get(key)) as T | undefined;
  }

  setMeta(key: string, value: unknown): void {
    this.queuedMeta.set(key, value);
    this.queue(META, key, value);
  }

  base(): BaseState {
    return (this.getMeta<BaseState>('base') ?? { snapshot: null, gen: null });
  }

  /** Moves the base (committed at once, with everything queued: the store's HEAD already moved). */
  setBase(b: BaseState): void {
    this.setMeta('base', b);
    if (this.depth === 0) this.commit();
  }

  // ---- change set ----------------------------------------------------------------------------------

  /**
   * Marks an inode and every directory above it changed with a fresh sequence number. Skipped when the
   * inode was already marked since the current seal started (its ancestors then were too), and so is
   * the walk above any directory that was (only whether an inode is in the change set is read, and a
   * mark at or above the floor survives the running seal).
   */
  markChanged(ino: number): void {
    this.mutations++;
    this.bumpVersions(ino);
    const cur = this.changed.get(ino);
    if (cur !== undefined && cur >= this.sealFloor) return;
    const s = ++this.seq;
    const seen = new Set<number>();
    const stack = [ino];
    while (stack.length > 0) {
      const i = stack.pop() as number;
      if (seen.has(i)) continue;
      seen.add(i);
      const c = i === ino ? undefined : this.changed.get(i);
      if (c !== undefined && c >= this.sealFloor) continue;
      this.changed.set(i, s);
      this.queue(CHANGED, i, s);
      const node = this.get(i);
      if (node) for (const p of node.parents) stack.push(p);
    }
  }

  /** Records the change count on `ino` and every directory above it (each walk stops where it already holds it). */
  private bumpVersions(ino: number): void {
    const v = this.mutations;
    const stack = [ino];
    while (stack.length > 0) {
      const i = stack.pop() as number;
      if (this.versions.get(i) === v) continue;
      this.versions.set(i, v);
      const node = this.get(i);
      if (node) for (const p of node.parents) stack.push(p);
    }
  }

  /**
   * The change count of the latest change at or below `ino` since this journal was opened (0: none): equal
   * values at two moments mean nothing at or below it changed in between (a log segment reuses its tree).
   */
  version(ino: number): number {
    return this.versions.get(ino) ?? 0;
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
          this.queue(CHANGED, ino, undefined);
        }
      }
    });
    this.commit();
  }

  /** Makes every change durable on disk (the journal itself commits without fsync). */
  async sync(): Promise<void> {
    this.commit();
    this.checkpoint();
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
    this.commit();
    this.checkpoint();
    this.log.close();
    await this.env.close();
  }
}

/** Whether an LMDB table holds no key. */
function isEmpty(db: Database<unknown, Key>): boolean {
  for (const _ of db.getKeys({ limit: 1 })) return false;
  return true;
}

/** The key of a write in the queued and logged maps. */
function keyOf(table: number, key: Key): string {
  return `${table}:${Array.isArray(key) ? key.join('/') : key}`;
}

/** A record as read from LMDB, upgraded from earlier versions' layout (files' separate content fields). */
function upgrade(rec: Inode): Inode {
  if (rec.kind !== 'file' || rec.content !== undefined) return rec;
  const { blocks, sealedSize, local, dirty, ...rest } = rec as Inode & LegacyContentFields;
  return { ...rest, content: fromLegacy({ blocks, sealedSize, local, dirty }) };
}
