/**
 * The in-memory index of the on-disk block cache: which objects are on disk, their sizes, and their order
 * of last use, kept by an unbounded lru-cache (the byte cap is enforced by `evictTo`, which reports what
 * it removed so the caller can delete the files; lru-cache's own eviction would not tell).
 *
 * The index is a view, not the truth: other daemons of the same org share the directory and may add or
 * remove files behind it. Callers treat a missing file as a miss and re-add files they find on disk.
 *
 * Each entry says whether this process may trust the file's bytes without hashing them (`verified`: it
 * wrote the file itself or hashed it since it started; see diskfiles.ts for why that is enough). Pinned
 * keys (blocks of open files) are never evicted: the cap is then kept by evicting the newcomer instead.
 */

import { LRUCache } from 'lru-cache';

export interface IndexEntry {
  readonly key: string;
  readonly size: number;
  /** Last use, ms since the epoch (persisted approximately as the file's mtime). */
  lastUse: number;
  /** When the file's mtime was last set to `lastUse`; throttles the utimes() calls that persist it. */
  persistedAt: number;
  /** This process wrote the file or hashed it: range reads may skip re-hashing it. */
  verified: boolean;
}

export class DiskIndex {
  /** Recency order only: no count or size bound (maxSize is a formality lru-cache needs to grow unbounded). */
  private readonly entries = new LRUCache<string, IndexEntry>({ maxSize: Number.MAX_SAFE_INTEGER, sizeCalculation: () => 1 });
  private total = 0;
  private readonly pins = new Map<string, number>();

  get bytes(): number {
    return this.total;
  }

  get count(): number {
    return this.entries.size;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The entry, without marking it used. */
  get(key: string): IndexEntry | undefined {
    return this.entries.peek(key);
  }

  /** Adds (or replaces) an entry as the most recently used one. */
  add(key: string, size: number, lastUse: number, verified: boolean): IndexEntry {
    this.remove(key);
    const e: IndexEntry = { key, size, lastUse, persistedAt: lastUse, verified };
    this.entries.set(key, e);
    this.total += size;
    return e;
  }

  /** Marks an entry as just used; returns it, or undefined if it is not indexed. */
  touch(key: string, now: number): IndexEntry | undefined {
    const e = this.entries.get(key);
    if (e) e.lastUse = now;
    return e;
  }

  remove(key: string): IndexEntry | undefined {
    const e = this.entries.peek(key);
    if (!e) return undefined;
    this.entries.delete(key);
    this.total -= e.size;
    return e;
  }

  /** Keeps `key` from eviction until as many `unpin` calls (counted; the key need not be indexed yet). */
  pin(key: string): void {
    this.pins.set(key, (this.pins.get(key) ?? 0) + 1);
  }

  unpin(key: string): void {
    const n = (this.pins.get(key) ?? 0) - 1;
    if (n > 0) this.pins.set(key, n);
    else this.pins.delete(key);
  }

  isPinned(key: string): boolean {
    return this.pins.has(key);
  }

  /**
   * Removes least recently used entries until the total is at most `maxBytes`, never removing `keep`
   * (the entry just added) or a pinned entry, and returns the removed entries so the caller can delete
   * their files. The total may stay above `maxBytes` when only those are left.
   */
  evictTo(maxBytes: number, keep?: string): IndexEntry[] {
    const out: IndexEntry[] = [];
    if (this.total <= maxBytes) return out;
    while (this.total > maxBytes) {
      const victim = this.leastRecent(keep);
      if (victim === undefined) break;
      const e = this.remove(victim);
      if (!e) break;
      out.push(e);
    }
    return out;
  }

  /** The least recently used unpinned key other than `except` (O(1) unless many old entries are pinned). */
  private leastRecent(except: string | undefined): string | undefined {
    for (const key of this.entries.rkeys()) if (key !== except && !this.pins.has(key)) return key;
    return undefined;
  }

  /** Keys from least to most recently used (tests and diagnostics). */
  keys(): string[] {
    return [...this.entries.rkeys()];
  }
}
