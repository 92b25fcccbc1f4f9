/**
 * Keeps the inode records a mount holds in memory under a budget, whatever the size of the home.
 *
 * Every entry of a directory loaded from its tree is a record in memory (~650 bytes of heap), and a `find`
 * over the full-size home loads all 220,601 of them. A directory load that nothing has changed only repeats
 * its tree, so it can be dropped and made again later (journal.ts `dropHeldLoad`). Over the budget, the oldest
 * loads go first (by when they were made or their directory last listed), with two rules:
 *
 * - **Bottom up.** A load whose entries include a loaded directory waits for that directory's own load to
 *   go; when a load goes, its parent's load is tried at once.
 * - **Not what is open.** A load with an entry a handle holds open stays. An entry the kernel only knows of
 *   (it holds a lookup reference) does not keep the load: the kernel keeps its dentries, inodes and cached
 *   listings, and a request about such an entry brings its records back first (view.ts `restore`, told of
 *   each dropped load through `dropping`). The kernel's caches are its own to keep: a second walk of the
 *   home is served from them, without a request.
 *
 * Loads younger than `minAgeMs` stay (a request between two awaits may still count on one), and so do the
 * loads of directories being listed (`pinned`: a reader's listing refers to their entries' records).
 * Trimming runs on a timer while over budget, a bounded number of loads at a time, and stops at 90 % of the
 * budget so that it does not run at every new load.
 */
import type { Journal } from './journal.js';

export interface TrimOptions {
  /** Records in memory above which loads are dropped (0: never). */
  maxRecords: number;
  /** A load used more recently than this is never dropped. */
  minAgeMs: number;
  /** Loads looked at per run. */
  scan: number;
  /** A run starts this long after it was asked for. */
  delayMs: number;
}

export interface TrimHooks {
  /** The entry keeps its load: a handle holds it open (or, view.ts, the kernel holds a number a reload could change). */
  inUse(ino: number): boolean;
  /** A reader is in the middle of listing the directory. */
  pinned(dir: number): boolean;
  /** The load of `dir`, whose entries are `entries`, is about to go. */
  dropping(dir: number, entries: readonly number[]): void;
}

export class LoadTrimmer {
  private timer: NodeJS.Timeout | undefined;
  /**
   * Per held load that could not go: its entries and where the scan stopped (the entry that blocked it). The
   * next try goes on from there, and the load goes once one try has found every entry free in a row: a large
   * directory whose subdirectories go one by one is not scanned from its start after each.
   */
  private readonly cursors = new Map<number, { inos: number[]; pos: number }>();
  /** Loads dropped so far (status). */
  dropped = 0;

  constructor(private readonly journal: Journal, private readonly opts: TrimOptions, private readonly hooks: TrimHooks) {}

  /** More records are in memory than the budget allows. */
  get over(): boolean {
    return this.opts.maxRecords > 0 && this.journal.memoryCounts().records > this.opts.maxRecords;
  }

  /** Runs a trim soon if the records are over budget. */
  soon(): void {
    if (this.timer || !this.over) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.trim();
    }, this.opts.delayMs);
    this.timer.unref();
  }

  /** One run: drops the oldest loads that can go, until 90 % of the budget or `scan` loads were looked at. */
  trim(now = Date.now()): void {
    if (!this.over) return;
    // Loads a change took since their last try are not held any more: their cursors go.
    if (this.cursors.size > 2 * this.journal.heldLoads + 64) for (const dir of [...this.cursors.keys()]) if (this.journal.heldState(dir) === 'none') this.cursors.delete(dir);
    const target = Math.floor(this.opts.maxRecords * 0.9);
    for (const { dir, usedAt } of this.journal.oldestLoads(this.opts.scan)) {
      if (this.journal.memoryCounts().records <= target) return;
      if (now - usedAt < this.opts.minAgeMs) continue;
      if (this.hooks.pinned(dir)) {
        this.journal.deferLoad(dir);
        continue;
      }
      if (this.drop(dir) === 'dropped') this.upFrom(dir, now);
      else this.journal.deferLoad(dir); // looked at again after the others
    }
    this.soon();
  }

  /** After the load of `dir` went: its parent's load, and so on up, while each can go. */
  private upFrom(dir: number, now: number): void {
    let child = dir;
    for (;;) {
      const parent = this.journal.get(child)?.parents[0];
      if (parent === undefined || this.hooks.pinned(parent)) return;
      const usedAt = this.journal.loadUsedAt(parent);
      if (usedAt === undefined || now - usedAt < this.opts.minAgeMs) return;
      if (this.drop(parent) !== 'dropped') return;
      child = parent;
    }
  }

  /**
   * Drops the held load of `dir` if it can go: 'blocked' while an entry is in use or is a loaded directory,
   * 'kept' when it never can while held as it is (hard links, its directory changed, being recorded).
   */
  drop(dir: number): 'dropped' | 'blocked' | 'kept' | 'none' {
    const state = this.journal.heldState(dir);
    if (state === 'none' || state === 'kept') {
      this.cursors.delete(dir);
      return state;
    }
    let c = this.cursors.get(dir);
    if (c?.inos.length !== state) c = { inos: this.journal.heldEntries(dir), pos: 0 };
    const n = c.inos.length;
    for (let free = 0; free < n; free++, c.pos = (c.pos + 1) % n) {
      const b = this.journal.entryBlocks(dir, c.inos[c.pos] as number, this.hooks.inUse);
      if (b === 'kept') {
        this.cursors.delete(dir);
        return 'kept';
      }
      if (b) {
        this.cursors.set(dir, c);
        return 'blocked';
      }
    }
    this.cursors.delete(dir);
    this.hooks.dropping(dir, this.journal.heldEntries(dir));
    this.journal.dropHeldLoad(dir);
    this.dropped++;
    return 'dropped';
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
