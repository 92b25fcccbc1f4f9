/**
 * The in-memory index of the on-disk block cache: which objects are on disk, their sizes, and their order
 * of last use. A `Map` keeps insertion order, so deleting and re-inserting an entry on use makes the first
 * entry the least recently used one: touch, add and evict are O(1) with no extra structure.
 *
 * The index is a view, not the truth: other daemons of the same org share the directory and may add or
 * remove files behind it. Callers treat a missing file as a miss and re-add files they find on disk.
 */

export interface IndexEntry {
  readonly key: string;
  readonly size: number;
  /** Last use, ms since the epoch (persisted approximately as the file's mtime). */
  lastUse: number;
  /** When the file's mtime was last set to `lastUse`; throttles the utimes() calls that persist it. */
  persistedAt: number;
}

export class DiskIndex {
  private readonly entries = new Map<string, IndexEntry>();
  private total = 0;

  get bytes(): number {
    return this.total;
  }

  get count(): number {
    return this.entries.size;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  get(key: string): IndexEntry | undefined {
    return this.entries.get(key);
  }

  /** Adds (or replaces) an entry as the most recently used one. */
  add(key: string, size: number, lastUse: number, persistedAt = lastUse): IndexEntry {
    this.remove(key);
    const e: IndexEntry = { key, size, lastUse, persistedAt };
    this.entries.set(key, e);
    this.total += size;
    return e;
  }

  /** Marks an entry as just used; returns it, or undefined if it is not indexed. */
  touch(key: string, now: number): IndexEntry | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    e.lastUse = now;
    this.entries.set(key, e);
    return e;
  }

  remove(key: string): IndexEntry | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    this.total -= e.size;
    return e;
  }

  /**
   * Removes least recently used entries until the total is at most `maxBytes`, never removing `keep`
   * (the entry just added), and returns the removed entries so the caller can delete their files.
   */
  evictTo(maxBytes: number, keep?: string): IndexEntry[] {
    const out: IndexEntry[] = [];
    if (this.total <= maxBytes) return out;
    for (const [key, e] of this.entries) {
      if (this.total <= maxBytes) break;
      if (key === keep) continue;
      this.entries.delete(key);
      this.total -= e.size;
      out.push(e);
    }
    return out;
  }

  /** Keys from least to most recently used (tests and diagnostics). */
  keys(): string[] {
    return [...this.entries.keys()];
  }
}
