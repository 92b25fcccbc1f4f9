/**
 * The hot set of a mounted home: records which trees and blocks the session reads, in first-access order,
 * stores that record (and at sleep a wake pack of its small objects) under the home's keys, and at the
 * next wake, on any host, streams the recorded objects into the block cache while the mount already
 * serves. Format and trust rules: transfer/hotset.ts and docs/format.md.
 *
 * The warm-up only ever adds to the cache through its public API: packed objects are cut out of ranged
 * GETs of the pack, verified by hash and inserted with `put`; everything else (and any packed object that
 * fails its check or whose range fails) goes through `prefetch`, whose background slots leave room for the
 * reads the agent is waiting on. Nothing here can fail a mount or a sleep: errors are logged and the wake
 * is merely colder.
 *
 * The warm-up runs beside the agent's first reads, on the same event loop: it cuts the pack's objects out a
 * time slice at a time (util/slicer.ts), and skips, unverified, an object that a read brought in meanwhile.
 */
import type { Logger } from 'pino';
import { defaults } from '../config.js';
import { decodeHotSet, encodeHotSet, fetchPackSlices, packLayout, packRanges, type HotEntry, type HotKind, type HotSetRecord, type PackSlice } from '../transfer/hotset.js';
import { hotsetKey, wakePackKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { PartedPut } from '../store/parted.js';
import { FormatError, NotFoundError, errorMessage } from '../util/errors.js';
import { backgroundSlicer } from '../util/slicer.js';

/** The wake pack goes up in parts of this size (the memory a sleep holds for it). */
const PACK_PART_BYTES = 8 * 1024 * 1024;

/** The part of the block cache the hot set uses (BlockCache's public API). */
export interface HotCache {
  has(kind: HotKind, hash: string): boolean;
  size(kind: HotKind, hash: string): number | undefined;
  get(kind: HotKind, hash: string): Promise<Buffer>;
  /** Verified bytes into the cache's memory (to disk only if memory evicts them). */
  putInMemory(kind: HotKind, hash: string, data: Buffer): void;
  prefetch(kind: HotKind, hashes: readonly string[]): void;
}

export type HotSetOptions = typeof defaults.hotset;

/** What a warm-up did (reported by `status`). */
export interface WarmReport {
  /** The warm-up has finished (the prefetches it queued may still be running). */
  done: boolean;
  /** The record was found and decoded. */
  record: boolean;
  entries: number;
  /** Objects already cached, taken from the pack, handed to prefetch; packed objects that failed their check. */
  cached: number;
  fromPack: number;
  prefetched: number;
  packRejected: number;
  /** Bytes of record and pack fetched. */
  bytesFetched: number;
  /** When the pack's objects were all in memory, and when the whole warm-up ended (ms after it began). */
  packMs: number;
  ms: number;
}

export class HotSet {
  private readonly seen = new Map<string, HotEntry>();
  private bytes = 0;
  /** Entries recorded since the record was last written; whether that write carried a pack. */
  private changed = false;
  private packSaved = false;
  private lastSaveAt = 0;
  private warming: Promise<WarmReport> | null = null;
  private stopped = false;
  private release: () => void = () => undefined;
  private readonly served = new Promise<void>((resolve) => {
    this.release = resolve;
  });
  warm: WarmReport | null = null;

  constructor(
    private readonly store: Store,
    private readonly org: string,
    private readonly home: string,
    private readonly cache: HotCache,
    private readonly log: Logger,
    /** A warm-up brings in at most this many bytes (part of the cache's cap, so it never churns the cache). */
    private readonly warmBytes: number,
    private readonly opts: HotSetOptions = defaults.hotset,
  ) {}

  /** Notes a read of an object (only the first read of each counts). Cheap: one map lookup. */
  record(kind: HotKind, hash: string, size: number | undefined): void {
    const k = `${kind}/${hash}`;
    if (this.seen.has(k) || this.seen.size >= this.opts.maxEntries || this.bytes >= this.opts.maxBytes) return;
    const s = size ?? this.cache.size(kind, hash) ?? 0;
    this.seen.set(k, { kind, hash, size: s, packed: false });
    this.bytes += s;
    this.changed = true;
  }

  get entries(): number {
    return this.seen.size;
  }

  /** Bytes of the objects read so far ("bytes touched"). */
  get touchedBytes(): number {
    return this.bytes;
  }

  /** Whether a seal should write the record now (something new, and not written for a while). */
  due(now = Date.now()): boolean {
    return this.changed && now - this.lastSaveAt >= this.opts.recordIntervalMs;
  }

  /**
   * Writes the record (and, with `withPack`, the wake pack first) unless nothing was read, or nothing
   * changed since the last write. The pack holds the recorded objects up to `packObjectMax` that are in
   * the cache, in record order, until `packBytes`.
   */
  async save(snapshot: string | null, withPack: boolean): Promise<void> {
    if (this.seen.size === 0 || (!this.changed && (this.packSaved || !withPack))) return;
    this.changed = false;
    this.lastSaveAt = Date.now();
    const entries = [...this.seen.values()].map((e) => ({ ...e, size: e.size || (this.cache.size(e.kind, e.hash) ?? 0), packed: false }));
    let packBytes = 0;
    if (withPack) {
      // The pack goes up a part at a time as its objects are read (store/parted.ts): holding it whole added up
      // to its budget to the daemon's peak memory at every sleep.
      const out = new PartedPut(this.store, wakePackKey(this.org, this.home), PACK_PART_BYTES);
      try {
        for (const e of entries) {
          if (e.size === 0 || e.size > this.opts.packObjectMax || packBytes + e.size > this.opts.packBytes) continue;
          if (!this.cache.has(e.kind, e.hash)) continue; // never fetch at sleep just to pack
          let data: Buffer;
          try {
            data = await this.cache.get(e.kind, e.hash);
          } catch {
            continue;
          }
          if (data.length !== e.size) continue;
          await out.write(data);
          e.packed = true;
          packBytes += e.size;
        }
        if (packBytes > 0) await out.finish();
        else await out.abort();
      } catch (err) {
        await out.abort();
        throw err;
      }
    }
    await this.store.put(hotsetKey(this.org, this.home), encodeHotSet({ snapshot, packBytes, entries }));
    this.packSaved = withPack;
    this.log.info({ op: 'hotset.save', entries: entries.length, packBytes }, 'hot set recorded');
  }

  /**
   * Streams the last session's hot set into the cache (once; later calls return the same promise). A wake
   * starts it as soon as the cache is open, while it still claims the lease and chooses its base: the record
   * and the pack's small first range (what the last session read first) come in meanwhile; every object is
   * verified by hash, so neither needs to know the snapshot. The rest waits for `serving`: receiving the
   * bulk of the pack inside the mount's chain of small requests would only delay the mount by as much as it
   * gains (docs/decisions/0059-wake-early-fetches.md). Never throws.
   */
  warmUp(): Promise<WarmReport> {
    this.warming ??= this.warmAll();
    return this.warming;
  }

  /** The mount serves: the warm-up goes on past the pack's first range. */
  serving(): void {
    this.release();
  }

  /** A wake that failed: nothing more goes into the cache (which is about to close). */
  stop(): void {
    this.stopped = true;
    this.release();
  }

  private async warmAll(): Promise<WarmReport> {
    const t0 = performance.now();
    const r: WarmReport = { done: false, record: false, entries: 0, cached: 0, fromPack: 0, prefetched: 0, packRejected: 0, bytesFetched: 0, packMs: 0, ms: 0 };
    this.warm = r;
    try {
      await this.warmInto(r, t0);
    } catch (e) {
      if (!this.stopped) this.log.warn({ op: 'hotset.warm', err: errorMessage(e) }, 'hot set warm-up failed; the wake is colder but correct');
    }
    r.ms = Math.round(performance.now() - t0);
    r.done = true;
    if (!this.stopped) this.log.info({ op: 'hotset.warm', ...r }, 'hot set warm-up done');
    return r;
  }

  private async warmInto(r: WarmReport, t0: number): Promise<void> {
    let buf: Buffer;
    try {
      buf = await this.store.get(hotsetKey(this.org, this.home));
    } catch (e) {
      if (e instanceof NotFoundError) return;
      throw e;
    }
    r.bytesFetched += buf.length;
    let rec: HotSetRecord;
    try {
      rec = decodeHotSet(buf, `hot-set record of ${this.org}/${this.home}`);
    } catch (e) {
      if (!(e instanceof FormatError)) throw e;
      this.log.warn({ op: 'hotset.warm', err: e.message }, 'hot set record ignored');
      return;
    }
    r.record = true;
    r.entries = rec.entries.length;
    let budget = this.warmBytes;
    const kept = rec.entries.findIndex((e) => (budget -= e.size) < 0);
    if (kept >= 0) rec = { ...rec, entries: rec.entries.slice(0, kept) };
    const want = (e: HotEntry): boolean => {
      if (this.stopped) return false;
      if (this.cache.has(e.kind, e.hash)) {
        r.cached++;
        return false;
      }
      return true;
    };
    const slices = packLayout(rec).filter((s) => want(s.entry));
    const [first = [], ...rest] = packRanges(slices, this.opts.packRangeBytes, this.opts.packFirstRangeBytes);
    const rejected: HotEntry[] = [];
    const key = wakePackKey(this.org, this.home);
    const fetch = (part: readonly PackSlice[], firstRangeBytes: number): Promise<void> => fetchPackSlices(async (offset, length) => {
      const data = await this.store.getRange(key, offset, length);
      r.bytesFetched += data.length;
      return data;
    }, part, { rangeBytes: this.opts.packRangeBytes, firstRangeBytes, parallelism: this.opts.packParallelism, pause: () => backgroundSlicer.pause() }, {
      wants: (entry) => {
        if (this.stopped) return false;
        if (!this.cache.has(entry.kind, entry.hash)) return true;
        r.cached++; // a read fetched it while its range was on the way
        return false;
      },
      good: (entry, data) => {
        r.fromPack++;
        this.cache.putInMemory(entry.kind, entry.hash, data); // written to disk only if memory evicts it
      },
      bad: (entry, err) => {
        if (err !== undefined) this.log.debug({ op: 'hotset.warm', err: errorMessage(err) }, 'wake pack range failed; prefetching its objects');
        rejected.push(entry);
      },
    });
    await fetch(first, this.opts.packFirstRangeBytes);
    await this.served;
    if (this.stopped) return;
    // Unpacked objects go to prefetch at once, in record order; the pack's other ranges are fetched meanwhile.
    this.prefetchInOrder(rec.entries.filter((e) => !e.packed && want(e)), r);
    await fetch(rest.flat(), this.opts.packRangeBytes);
    r.packMs = Math.round(performance.now() - t0);
    r.packRejected = rejected.length;
    if (this.stopped) return;
    if (rejected.length > 0) this.log.warn({ op: 'hotset.warm', rejected: rejected.length }, 'wake pack objects missing or damaged; prefetching them instead');
    this.prefetchInOrder(rejected, r);
  }

  /** Hands entries to the cache's prefetch queue in their order (one call per run of one kind). */
  private prefetchInOrder(entries: readonly HotEntry[], r: WarmReport): void {
    let run: string[] = [];
    let kind: HotKind = 'block';
    const flush = (): void => {
      if (run.length === 0) return;
      this.cache.prefetch(kind, run);
      r.prefetched += run.length;
      run = [];
    };
    for (const e of entries) {
      if (e.kind !== kind) flush();
      kind = e.kind;
      run.push(e.hash);
    }
    flush();
  }
}
