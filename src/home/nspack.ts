/**
 * The namespace pack of a mounted home (format: transfer/nspack.ts, docs/format.md): at wake, before the
 * tree walk, every tree of the pack is brought into the block cache from a few ranged GETs (the first one
 * holds the index and the first trees), so `find` or `ls -R` on a fresh host costs a few round trips; at
 * sleep, a pack of the final snapshot's trees is written unless the one read at wake was already of that
 * root.
 *
 * The pack is only ever a hint: each tree is verified by its hash before the cache takes it (a tree that
 * fails is left to the walk, which fetches it alone), a pack that does not decode is ignored, and nothing
 * here can fail a mount or a sleep: errors are logged and the wake is merely colder.
 */
import type { Logger } from 'pino';
import { defaults } from '../config.js';
import { decodeNsPackIndex, nsPackIndexLength, NSPACK_HEADER, NSPACK_ROOT, readNsPack, storeNsPack, type NsPackSink } from '../transfer/nspack.js';
import { cutSlice, type PackSlice } from '../transfer/hotset.js';
import { backgroundSlicer } from '../util/slicer.js';
import { nsPackKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { FormatError, NotFoundError, errorMessage } from '../util/errors.js';

/** The part of the block cache the pack uses (BlockCache's public API). */
export interface NsCache {
  has(kind: 'meta', hash: string): boolean;
  get(kind: 'meta', hash: string): Promise<Buffer>;
  /** Verified bytes into the cache's memory (to disk only if memory evicts them). */
  putInMemory(kind: 'meta', hash: string, data: Buffer): void;
}

export type NsPackOptions = typeof defaults.nsPack;

/** What loading the pack did (reported by `status`). */
export interface NsLoadReport {
  /** Loading has finished (the walk then fetches whatever the pack did not bring). */
  done: boolean;
  /** The pack was found and its index decoded; it is of the snapshot the mount serves (else an older one). */
  found: boolean;
  sameRoot: boolean;
  trees: number;
  /** Trees already cached, taken from the pack, and rejected (hash mismatch or a range that failed). */
  cached: number;
  fromPack: number;
  rejected: number;
  /** Ranged GETs made, and bytes they returned. */
  requests: number;
  bytesFetched: number;
  ms: number;
}

export class NsPack {
  /** The root of the pack found at wake (null: none, or not read). */
  private loadedRoot: string | null = null;
  report: NsLoadReport | null = null;
  private loading: Promise<NsLoadReport> | null = null;
  /** The root in the pack's header (null: none found); `loadedRoot` forgets it when trees were rejected. */
  private packRoot: string | null = null;
  private stopped = false;
  /** The first range, fetched by `start` before `load` asked for it. */
  private early: Promise<Buffer> | null = null;
  /** Trees whose range is in memory, not cut out yet (`take` cuts one at once); those `take` cut. */
  private readonly pending = new Map<string, { data: Buffer; at: number; slice: PackSlice }>();
  private readonly taken = new Set<string>();
  /** The early first range, once it arrived: `take` serves its trees before `load` cuts them. */
  private earlyHead: Buffer | null = null;

  constructor(
    private readonly store: Store,
    private readonly org: string,
    private readonly home: string,
    private readonly cache: NsCache,
    private readonly log: Logger,
    private readonly opts: NsPackOptions = defaults.nsPack,
  ) {}

  /**
   * Starts fetching the pack's first range (once). A wake starts it as soon as the cache is open, before it
   * has chosen its base; the trees are cut out of it and verified by `load`, once the mount serves: cutting
   * thousands of trees earlier would hold the event loop inside the wake's chain of round trips. Which
   * snapshot the pack is of only decides `sameRoot`. Never throws (a failed fetch is retried by `load`).
   */
  start(): void {
    if (this.loading || this.early) return;
    this.early = this.store.getRange(nsPackKey(this.org, this.home), 0, this.opts.rangeBytes);
    this.early.then((head) => {
      this.earlyHead = head;
    }, () => undefined); // (awaited by load, or given up)
  }

  /**
   * The pack's trees in the cache (loaded once), and whether it is of `root`. Never throws. The trees are cut
   * out with `pause` between them (`take` serves any of them at once meanwhile).
   */
  async load(root: string, pause: () => Promise<void> = () => backgroundSlicer.pause()): Promise<NsLoadReport> {
    this.loading ??= this.loadAll(pause);
    const r = await this.loading;
    r.sameRoot = r.found && this.packRoot === root;
    return r;
  }

  /** A wake that failed: nothing more goes into the cache (which is about to close). */
  stop(): void {
    this.stopped = true;
    this.pending.clear();
  }

  /**
   * Tree `hash`, verified, if its range is in memory and not cut out yet (it then goes into the cache now);
   * undefined otherwise. The pack's trees are cut a time slice at a time, so that the agent's first requests
   * are served meanwhile; a lookup that needs one of them must not wait for its turn, nor fetch it alone.
   */
  take(hash: string): Buffer | undefined {
    if (this.earlyHead) this.indexEarly(this.earlyHead);
    const p = this.pending.get(hash);
    if (!p || this.stopped) return undefined;
    this.pending.delete(hash);
    this.taken.add(hash);
    let out: Buffer | undefined;
    cutSlice(p.data, p.at, p.slice, {
      good: (_e, data) => {
        out = data;
        this.sink.tree(hash, data);
      },
      bad: () => this.sink.rejected(hash),
    });
    return out;
  }

  /**
   * Makes the trees of the early first range takeable (once, at the first `take`, so that a wake whose
   * lookups all hit its cache never decodes the index before `load`). A pack that does not decode is left
   * to `load`, which says so.
   */
  private indexEarly(head: Buffer): void {
    this.earlyHead = null;
    if (this.loading) return; // (load registers what arrives)
    try {
      const index = decodeNsPackIndex(head);
      const data = head.subarray(index.dataStart);
      const inHead = index.slices.filter((sl) => sl.offset + sl.entry.size <= data.length && !this.cache.has('meta', sl.entry.hash));
      this.sink.arrived?.(inHead, data, 0);
    } catch {
      // (load reports it)
    }
  }

  /** Where readNsPack's trees go (the cache); `report` is the current load's. */
  private readonly sink: NsPackSink & { tree(hash: string, data: Buffer): void } = {
    wants: (hash) => {
      if (this.stopped) return false;
      if (!this.cache.has('meta', hash)) return true;
      if (this.report) this.report.cached++;
      return false;
    },
    arrived: (slices, data, at) => {
      if (this.stopped) return;
      for (const slice of slices) if (!this.taken.has(slice.entry.hash)) this.pending.set(slice.entry.hash, { data, at, slice });
    },
    taken: (hash) => this.taken.has(hash),
    tree: (hash, data) => {
      this.pending.delete(hash);
      if (this.report) this.report.fromPack++;
      this.cache.putInMemory('meta', hash, data); // thousands of small trees: no disk file each
    },
    rejected: (hash, err) => {
      this.pending.delete(hash);
      if (this.report) this.report.rejected++;
      if (err !== undefined) this.log.debug({ op: 'nspack.load', hash, err: errorMessage(err) }, 'namespace pack range failed; the walk fetches its trees');
    },
  };

  private async loadAll(pause: () => Promise<void>): Promise<NsLoadReport> {
    const t0 = performance.now();
    const r: NsLoadReport = { done: false, found: false, sameRoot: false, trees: 0, cached: 0, fromPack: 0, rejected: 0, requests: 0, bytesFetched: 0, ms: 0 };
    this.report = r;
    try {
      await this.loadInto(r, pause);
    } catch (e) {
      if (!this.stopped) this.log.warn({ op: 'nspack.load', err: errorMessage(e) }, 'namespace pack not used; the wake fetches trees one by one');
    }
    r.ms = Math.round(performance.now() - t0);
    r.done = true;
    const { sameRoot: _decidedByLoad, ...logged } = r; // (not known yet: `load` compares the root)
    if (!this.stopped) this.log.info({ op: 'nspack.load', ...logged, root: this.packRoot }, 'namespace pack loaded');
    return r;
  }

  private async range(offset: number, length: number, r: NsLoadReport): Promise<Buffer> {
    r.requests++;
    const get = (): Promise<Buffer> => this.store.getRange(nsPackKey(this.org, this.home), offset, length);
    const early = offset === 0 && length === this.opts.rangeBytes ? this.early : null;
    this.early = null;
    // An early fetch that failed (but for a missing pack) is made again.
    const data = await (early ? early.catch((e: unknown) => (e instanceof NotFoundError ? Promise.reject(e) : get())) : get());
    r.bytesFetched += data.length;
    return data;
  }

  private async loadInto(r: NsLoadReport, pause: () => Promise<void>): Promise<void> {
    let index;
    try {
      // Cut with pauses; a lookup that needs a tree before its turn takes it (`take`).
      index = await readNsPack((offset, length) => this.range(offset, length, r), this.sink, { ...this.opts, pause }, `namespace pack of ${this.org}/${this.home}`);
    } catch (e) {
      if (!(e instanceof FormatError)) throw e;
      this.log.warn({ op: 'nspack.load', err: e.message }, 'namespace pack ignored');
      return;
    } finally {
      this.pending.clear(); // (a range that failed midway leaves its trees to the walk)
      this.taken.clear();
    }
    if (!index) return;
    r.found = true;
    r.trees = index.slices.length;
    this.packRoot = index.root;
    this.loadedRoot = index.root;
    if (r.rejected > 0) {
      this.loadedRoot = null; // the sleep writes a sound pack again
      this.log.warn({ op: 'nspack.load', rejected: r.rejected }, 'namespace pack trees missing or damaged; the walk fetches them');
    }
  }

  /** The root of the stored pack, from its header (one small ranged GET; null: none or unreadable). */
  private async storedRoot(): Promise<string | null> {
    try {
      const head = await this.store.getRange(nsPackKey(this.org, this.home), 0, NSPACK_HEADER);
      nsPackIndexLength(head);
      return head.toString('hex', NSPACK_ROOT, NSPACK_ROOT + 32);
    } catch {
      return null;
    }
  }

  /**
   * Writes the pack of `root` unless the pack read at wake already was of it. Trees come from the cache
   * (the wake's walk brought them all in; any missing one is fetched). Never throws.
   */
  async save(root: string): Promise<void> {
    try {
      if (this.report === null) this.loadedRoot = await this.storedRoot();
      if (root === this.loadedRoot) return;
      const bytes = await storeNsPack(this.store, this.org, this.home, root, (h) => this.cache.get('meta', h), this.opts);
      if (bytes > 0) this.loadedRoot = root;
      this.log.info({ op: 'nspack.save', root, bytes }, bytes > 0 ? 'namespace pack stored' : 'namespace too big for a pack');
    } catch (e) {
      this.log.warn({ op: 'nspack.save', err: errorMessage(e) }, 'cannot store the namespace pack; the next wake fetches trees one by one');
    }
  }
}
