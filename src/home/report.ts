/**
 * What a mounted home reports about itself: `homefs status` (state, HEAD, dirty data, seals, cache),
 * `statfs` for `df` inside the mount (the host's free space, or the home's quota), and the cache's
 * cumulative statistics mirrored into the Prometheus metrics.
 */
import { statfsSync } from 'node:fs';
import type { BlockCache } from '../cache/blockcache.js';
import type { StatFs } from '../fuse/types.js';
import type { Journal } from '../inodes/journal.js';
import type { HomeMetrics } from '../metrics/homefs.js';
import type { ProtectionReport } from './protect.js';

const BSIZE = 4096;

export interface StatusInput {
  state: string;
  cfg: { org: string; home: string; mountpoint: string; fsync: string; readOnly: boolean };
  journal: Journal;
  cache: BlockCache;
  storeUrl: string;
  lastSealAt: number;
  lastSnapshot: string | null;
  lastError: string | null;
  seals: number;
  bytesUploaded: number;
  /** The session's hot set: objects read so far, their bytes, and what the wake's warm-up did. */
  hotset: { entries: number; touchedBytes: number; warm: { bytesFetched: number } | null };
  /** What loading the namespace pack did at wake (null: no pack on this store, or not loaded). */
  nspack: { bytesFetched: number } | null;
  /** What the push pack served to cold reads (null: a local store). */
  pushpack: { bytesFetched: number } | null;
  /** Blocks of large files hashed and uploaded while they were written (seal/preseal.ts); null when off. */
  preseal: { hashed: number; uploaded: number } | null;
  /** Directory loads dropped to keep the records under the budget, and entries the kernel holds whose records went with them (inodes/trim.ts). */
  trim: { dropped: number; remembered: number };
  /** Write-behind and continuous protection (home/protect.ts): backlog, oldest change not in the store, throughput; null when read-only. */
  protection: ProtectionReport | null;
  /**
   * FUSE passthrough: 'on', or 'off: <why>'; its opens so far (null before INIT) and the files open for writing
   * through it; the small files put into the kernel's page cache at their first open (null before the mount).
   */
  fuse: { passthrough: string; opens: { passthrough: number; cached: number; refused: number } | null; liveFiles: number; preloaded: { files: number; bytes: number } | null };
  metricsUrl?: string | undefined;
}

/** The files with changes not yet sealed: how many, and their total size (status, homefs_dirty_bytes). */
export function dirtyTotals(journal: Journal): { files: number; bytes: number } {
  let bytes = 0;
  let files = 0;
  for (const [ino] of journal.changedInodes()) {
    const n = journal.get(ino);
    if (n && n.kind === 'file') {
      files++;
      bytes += n.size;
    }
  }
  return { files, bytes };
}

export function homeStatus(h: StatusInput): Record<string, unknown> {
  const { files: dirtyFiles, bytes: dirtyBytes } = dirtyTotals(h.journal);
  const c = h.cache.stats();
  const base = h.journal.base();
  return {
    state: h.state, org: h.cfg.org, home: h.cfg.home, mountpoint: h.cfg.mountpoint, pid: process.pid,
    store: h.storeUrl, head: base.snapshot, gen: base.gen, dirtyFiles, dirtyInodes: h.journal.changedCount, dirtyBytes,
    lastSealAt: h.lastSealAt ? new Date(h.lastSealAt).toISOString() : null, lastSnapshot: h.lastSnapshot,
    lastError: h.lastError, seals: h.seals, bytesUploaded: h.bytesUploaded,
    cacheBytes: c.bytes, cacheHits: c.hits, cacheMisses: c.misses, hitRatio: c.hits + c.misses > 0 ? c.hits / (c.hits + c.misses) : null,
    // Everything fetched from the store: the cache's GETs plus the hot-set record, wake pack, namespace pack
    // and push pack.
    bytesFetched: c.bytesFetched + (h.hotset.warm?.bytesFetched ?? 0) + (h.nspack?.bytesFetched ?? 0) + (h.pushpack?.bytesFetched ?? 0),
    bytesTouched: h.hotset.touchedBytes, hotset: h.hotset, nspack: h.nspack, pushpack: h.pushpack, preseal: h.preseal, protection: h.protection, fuse: h.fuse,
    fsync: h.cfg.fsync, readOnly: h.cfg.readOnly, metricsUrl: h.metricsUrl ?? null,
    memory: { ...memoryReport(h.journal), loadsDropped: h.trim.dropped, remembered: h.trim.remembered },
  };
}

/** The daemon's memory (bytes) and what holds most of it: the inode records and directory entries kept in memory. */
function memoryReport(journal: Journal): Record<string, number> {
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, ...journal.memoryCounts() };
}

/** statfs answers from memory: the host filesystem's figures refreshed every 10 s, or the quota. */
export class Capacity {
  private host: StatFs | undefined;
  private at = 0;

  constructor(private readonly stateDir: string, private readonly quotaBytes: number, private readonly used: () => number) {}

  statfs(): StatFs {
    if (!this.host || Date.now() - this.at > 10_000) {
      this.at = Date.now();
      try {
        const s = statfsSync(this.stateDir);
        const scale = Number(s.bsize) / BSIZE;
        this.host = { bsize: BSIZE, frsize: BSIZE, blocks: Math.floor(Number(s.blocks) * scale), bfree: Math.floor(Number(s.bfree) * scale), bavail: Math.floor(Number(s.bavail) * scale), files: 1e9, ffree: 1e9, favail: 1e9, namemax: 255 };
      } catch {
        this.host = { bsize: BSIZE, frsize: BSIZE, blocks: 1 << 30, bfree: 1 << 29, bavail: 1 << 29, files: 1e9, ffree: 1e9, favail: 1e9, namemax: 255 };
      }
    }
    if (this.quotaBytes <= 0) return this.host;
    const free = Math.max(0, Math.floor((this.quotaBytes - this.used()) / BSIZE));
    return { ...this.host, blocks: Math.floor(this.quotaBytes / BSIZE), bfree: free, bavail: free };
  }
}

/** Mirrors the cache's cumulative counters into the metrics registry (as deltas since the last call). */
export class CacheMetricsMirror {
  private seen = { misses: 0, evictions: 0, memoryHits: 0, diskHits: 0 };

  constructor(private readonly cache: BlockCache, private readonly m: HomeMetrics) {}

  sync(): void {
    const c = this.cache.stats();
    this.m.cacheHits.inc({ tier: 'memory' }, c.memoryHits - this.seen.memoryHits);
    this.m.cacheHits.inc({ tier: 'disk' }, c.diskHits - this.seen.diskHits);
    this.m.cacheMisses.inc(c.misses - this.seen.misses);
    this.m.cacheEvictions.inc(c.evictions - this.seen.evictions);
    this.seen = { misses: c.misses, evictions: c.evictions, memoryHits: c.memoryHits, diskHits: c.diskHits };
    this.m.cacheBytes.set(c.bytes);
  }
}
