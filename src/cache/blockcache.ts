/**
 * The block cache of one org on one host: every read of sealed content and every tree/snapshot fetch of a
 * mount goes through it. Objects are content-addressed, so a cached object never goes stale; the only
 * questions are where it is (memory, disk, store) and when to drop it.
 *
 * - Memory: an LRU (lru-cache) bounded by bytes, holding whole objects.
 * - Disk: `<dir>/<kind>s/<h[0:2]>/<hash>` (diskfiles.ts), capped at `maxBytes` with LRU eviction driven by an
 *   in-memory index (diskindex.ts) that `init()` rebuilds asynchronously from file sizes and mtimes (the
 *   persisted, approximate last use). Several daemons of one org may share the directory: files appearing
 *   or vanishing underneath are expected, a vanished file is a miss, a found one is adopted.
 * - Store: a miss fetches the whole object once (single-flight: concurrent readers share one GET), within
 *   `fetchTimeoutMs` (then `StoreUnavailableError`), verifies it against its BLAKE3 hash (a mismatch is a
 *   `CorruptObjectError` and nothing is cached, so the next read tries the store again), and caches it.
 *
 * Whole-object reads from disk are re-verified (hashing is ~1 ms per 4 MiB); `read()` ranges of a file that
 * is only on disk are served at once when the kernel has its name and bytes cached, else by one pread on a
 * kept file handle (fdcache.ts), without re-hashing the whole block once this process trusts the file: it
 * wrote it (atomically, from verified bytes) or hashed it whole since it started. Writes are not synced;
 * diskfiles.ts explains why trust per process keeps torn files of a host crash from ever being served.
 *
 * Prefetch (`prefetch`, `getInBackground`) runs in a FIFO queue (prefetchqueue.ts) on at most
 * `prefetchParallelism` fetch slots; a reader's fetch never queues behind it (fetchslots.ts) and joins a
 * prefetch already in flight for its object. Blocks of open files can be pinned: eviction skips them, and an insert that cannot fit
 * under the cap otherwise is dropped from disk at once (it stays in memory), so the cap always holds.
 *
 * Buffers returned by `get()` and `read()` may be views of cached memory: callers must not modify them.
 */
import type { Logger } from 'pino';
import { MemoryTiers } from './memorytiers.js';
import { defaults } from '../config.js';
import { hashBuffer } from '../hash/blake3.js';
import { assertHash, blockKey, metaKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { verifyObject, type HashFn } from '../store/verify.js';
import { StoreUnavailableError, errorMessage } from '../util/errors.js';
import { validateName } from '../util/names.js';
import { filesAddon } from '../util/files-addon.js';
import { DiskFiles, preadRange, type ObjectKind } from './diskfiles.js';
import { FdCache } from './fdcache.js';
import { DiskIndex, type IndexEntry } from './diskindex.js';
import { FetchSlots, type Release } from './fetchslots.js';
import { PrefetchQueue } from './prefetchqueue.js';

export type { ObjectKind } from './diskfiles.js';

/** Blocks of a store on this host's disk at least this large are copied into the cache directory (see `load`). */
const LOCAL_COPY_MIN = 1024 * 1024;
/** Reads of a disk file up to this size are tried at once from the kernel's caches (`readNow`). */
const CACHED_READ_MAX = 256 * 1024;

export interface CacheStats {
  /** Bytes and objects in the on-disk cache (as this daemon's index sees it). */
  bytes: number;
  entries: number;
  /** Reads answered without the store (memoryHits + diskHits), and reads that needed a store fetch. */
  hits: number;
  misses: number;
  /** Objects evicted from disk to stay under maxBytes. */
  evictions: number;
  /** Bytes fetched from the store, and the number of store GETs started. */
  bytesFetched: number;
  fetches: number;
  /** Failed fetches: store errors, timeouts, corrupt objects. */
  errors: number;
  memoryBytes: number;
  memoryEntries: number;
  memoryHits: number;
  diskHits: number;
}

export interface BlockCacheOptions {
  /** This org's cache root, e.g. <cacheDir>/<org>; created 0700. */
  dir: string;
  store: Store;
  org: string;
  /** Cap of the on-disk cache in bytes. */
  maxBytes: number;
  /** Cap of each in-memory LRU in bytes (0 disables them). Default: config.ts `defaults.cache`. */
  memoryBytes?: number;
  /** Cap of the blocks' LRU when the store is on this host's disk. Default: config.ts `defaults.cache.localBlockMemoryBytes`. */
  localBlockMemoryBytes?: number;
  /** Cap of the blocks' LRU when the store is remote. Default: config.ts `defaults.cache.remoteBlockMemoryBytes`. */
  remoteBlockMemoryBytes?: number;
  /** Store GETs in flight at most. Default: config.ts. */
  fetchParallelism?: number;
  /** Of those, prefetch uses at most this many (capped at fetchParallelism). Default: config.ts. */
  prefetchParallelism?: number;
  /** A fetch (waiting for a slot + the GET) that takes longer rejects with StoreUnavailableError. Default: config.ts. */
  fetchTimeoutMs?: number;
  logger?: Logger;
  /** BLAKE3 of a buffer as 64 hex digits; default hashes on the calling thread (pass a worker pool's). */
  hash?: HashFn;
  /** Prefetch requests queued beyond this are dropped. Default: config.ts. */
  maxPrefetchQueue?: number;
  /** Open file handles kept for disk range reads. Default: config.ts. */
  openFiles?: number;
  /**
   * Asked first for every block the cache fetches (home/packreads.ts: the push pack); undefined sends the
   * fetch to the store's `blocks/`. What it returns it has verified by hash (the pack hashes every block it
   * cuts out of a window): the cache does not hash it again.
   */
  pack?: { fetch(hash: string): Promise<Buffer | undefined> };
  /**
   * Asked first for every tree the cache fetches (home/nspack.ts: a namespace pack range in memory, not cut
   * yet); undefined sends the fetch to the store's `meta/`. What it returns is verified like any fetched object.
   */
  trees?: { take(hash: string): Buffer | undefined };
}

type Source = 'disk' | 'store';
interface Loaded {
  data: Buffer;
  source: Source;
}
type State = 'new' | 'open' | 'closed';

export class BlockCache {
  private readonly files: DiskFiles;
  private readonly index = new DiskIndex();
  private readonly fds: FdCache;
  private readonly memory: MemoryTiers | undefined;
  /** Objects whose disk write is in progress: still readable while neither memory nor disk has them. */
  private readonly writing = new Map<string, { data: Buffer; done: Promise<void> }>();
  /** Objects put with `putInMemory` and not written to disk yet: written when the memory LRU evicts them. */
  private readonly memoryOnly = new Set<string>();
  private readonly inflight = new Map<string, Promise<Loaded>>();
  private readonly background = new Set<Promise<unknown>>();
  private readonly slots: FetchSlots;
  /** A reader is waiting for a store fetch slot (background work should start nothing new). */
  get foregroundWaiting(): boolean {
    return this.slots.waiting > 0;
  }
  private readonly queue: PrefetchQueue;
  private readonly hash: HashFn;
  private readonly timeoutMs: number;
  private readonly maxPrefetchQueue: number;
  private readonly log: Logger | undefined;
  private state: State = 'new';
  private counters = { hits: 0, misses: 0, evictions: 0, bytesFetched: 0, fetches: 0, errors: 0, memoryHits: 0, diskHits: 0 };

  /** The store is a directory on this host (file://): trees are not copied into the cache directory. */
  private readonly localStore: boolean;

  constructor(private readonly opts: BlockCacheOptions) {
    validateName('org', opts.org);
    this.localStore = opts.store.url.startsWith('file:');
    if (!(opts.maxBytes >= 0)) throw new Error(`cache maxBytes must be >= 0, got ${opts.maxBytes}`);
    this.files = new DiskFiles(opts.dir);
    this.fds = new FdCache(Math.max(1, opts.openFiles ?? defaults.cache.openFiles));
    const memoryBytes = opts.memoryBytes ?? defaults.cache.memoryBytes;
    const blockCap = this.localStore ? (opts.localBlockMemoryBytes ?? defaults.cache.localBlockMemoryBytes) : (opts.remoteBlockMemoryBytes ?? defaults.cache.remoteBlockMemoryBytes);
    const blockBytes = Math.min(memoryBytes, blockCap);
    this.memory = memoryBytes > 0 ? new MemoryTiers(memoryBytes, (data, k, reason) => this.leftMemory(k, data, reason), blockBytes) : undefined;
    const parallelism = Math.max(1, opts.fetchParallelism ?? defaults.cache.fetchParallelism);
    const background = Math.min(parallelism, Math.max(1, opts.prefetchParallelism ?? defaults.cache.prefetchParallelism));
    this.queue = new PrefetchQueue({
      open: () => this.state === 'open',
      present: (kind, hash) => this.has(kind, hash) || this.inflight.has(cacheKey(kind, hash)),
      trySlot: () => this.slots.tryAcquireBackground(),
      // Only what the index lacks is prefetched, and the index holds every file of the scan at init: a file
      // another daemon wrote since then is fetched once more rather than every prefetch trying the disk first
      // (a failed open per object, a second of the thread's time for a move's 17,000 prefetches).
      start: (kind, hash, slot) => this.flight(kind, hash, true, slot).then((l) => l.data),
      join: (kind, hash) => this.get(kind, hash),
      failed: (kind, hash, e) => this.log?.debug({ op: 'cache.prefetch', kind, hash, err: errorMessage(e) }, 'prefetch failed'),
    });
    this.slots = new FetchSlots(parallelism, background, () => this.queue.pump());
    this.hash = opts.hash ?? hashBuffer;
    this.timeoutMs = opts.fetchTimeoutMs ?? defaults.cache.fetchTimeoutMs;
    this.maxPrefetchQueue = opts.maxPrefetchQueue ?? defaults.cache.maxPrefetchQueue;
    this.log = opts.logger;
  }

  /** Creates the directory (0700), builds the on-disk index (sizes + last use), removes stale temp files. */
  async init(): Promise<void> {
    if (this.state !== 'new') throw new Error(`BlockCache.init() called twice`);
    await this.files.ensureDirs();
    const scanned = await this.files.scan(Date.now());
    scanned.sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const f of scanned) this.index.add(cacheKey(f.kind, f.hash), f.size, f.mtimeMs, false);
    this.state = 'open';
    this.evict();
    this.log?.debug({ op: 'cache.init', dir: this.opts.dir, entries: this.index.count, bytes: this.index.bytes }, 'block cache ready');
  }

  /** The whole object, BLAKE3-verified before it is returned or cached. */
  async get(kind: ObjectKind, hash: string): Promise<Buffer> {
    this.assertOpen();
    assertHash(hash);
    const k = cacheKey(kind, hash);
    const mem = this.fromMemory(k);
    if (mem) return mem;
    return this.count(await this.flight(kind, hash, false));
  }

  /** `length` bytes at `offset` of block `hash` (fewer at its end, empty past it). */
  async read(hash: string, offset: number, length: number): Promise<Buffer> {
    this.assertOpen();
    assertHash(hash);
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0) {
      throw new Error(`bad range ${offset}+${length} of block ${hash}`);
    }
    const k = cacheKey('block', hash);
    const mem = this.fromMemory(k);
    if (mem) return mem.subarray(offset, offset + length);
    const pending = this.inflight.get(k);
    if (pending) return this.count(await pending).subarray(offset, offset + length);
    // Not trusted yet by this process: hashed whole at once when the kernel has it cached (verifyNow), else
    // the whole-object path (also for a file not indexed, which another daemon may have written) probes,
    // hashes and adopts it; later ranges of it are then single preads.
    const entry = this.index.get(k);
    const adopted = entry && !entry.verified ? this.verifyNow(hash, entry.size) : undefined;
    if (adopted) return adopted.subarray(offset, offset + length);
    if (!entry?.verified) return this.count(await this.flight('block', hash, false)).subarray(offset, offset + length);
    const now = this.readNow(hash, entry.size, offset, length);
    if (now) return now;
    try {
      const lease = await this.fds.acquire(k, this.files.path('block', hash));
      if (lease) {
        try {
          const data = await preadRange(lease.fh, lease.size, offset, length);
          this.counters.hits++;
          this.counters.diskHits++;
          this.touchOrAdopt('block', hash, lease.size, true);
          return data;
        } finally {
          lease.release();
        }
      }
      this.forget('block', hash); // vanished underneath (another daemon evicted it)
    } catch (e) {
      this.fds.invalidate(k);
      this.log?.warn({ op: 'cache.read', hash, err: errorMessage(e) }, 'cannot read cached block; fetching it again');
    }
    return this.count(await this.flight('block', hash, true)).subarray(offset, offset + length);
  }

  /**
   * The whole block `hash`, verified, when that needs no wait: in memory, its disk file in the kernel's caches
   * (verified at once if this process has not yet), or (a store on this host's disk) the store's file of it,
   * in the kernel's caches and exactly `size` bytes long. Otherwise undefined, and nothing is fetched.
   */
  readAtOnce(hash: string, size: number): Buffer | undefined {
    if (this.state !== 'open') return undefined;
    const k = cacheKey('block', hash);
    const mem = this.fromMemory(k);
    if (mem) return mem;
    if (this.inflight.has(k)) return undefined;
    const entry = this.index.get(k);
    if (!entry) return this.localStore ? this.fromLocalStore(hash, size) : undefined;
    if (!entry.verified) return this.verifyNow(hash, entry.size);
    return this.readNow(hash, entry.size, 0, entry.size);
  }

  /**
   * A block of a store on this host's disk that is `size` bytes long and in the kernel's caches, verified
   * here, kept in memory as `load` keeps what it reads from there; else undefined.
   */
  private fromLocalStore(hash: string, size: number): Buffer | undefined {
    if (size <= 0 || size > CACHED_READ_MAX) return undefined;
    const data = this.opts.store.readAtOnce?.(blockKey(this.opts.org, hash), size);
    if (!data || hashBuffer(data) !== hash) return undefined;
    this.memory?.set(cacheKey('block', hash), data);
    return data;
  }

  /**
   * `read` of a trusted disk file at once, on this thread, when its name and the bytes asked for are in the
   * kernel's caches (util/files-addon.ts): a file the warm-up or a prefetch wrote moments ago. Otherwise
   * undefined, and the read goes through the thread pool (a kept handle), as a file that vanished does.
   */
  private readNow(hash: string, size: number, offset: number, length: number): Buffer | undefined {
    const n = Math.max(0, Math.min(length, size - offset));
    if (n === 0 || n > CACHED_READ_MAX) return undefined;
    const buf = Buffer.allocUnsafe(n);
    if (filesAddon().readFileCached(this.files.path('block', hash), buf, offset) !== n) return undefined;
    this.counters.hits++;
    this.counters.diskHits++;
    this.touchOrAdopt('block', hash, size, true);
    return buf;
  }

  /**
   * A disk file this process has not verified yet (another daemon wrote it, or this one before a restart),
   * read whole at once and hashed on this thread when it is small and in the kernel's caches: the first
   * `grep -r` of a remount then waits for no thread-pool hops. Otherwise undefined, as when its bytes do not
   * match: the whole-object path then reports it, removes it and fetches it again.
   */
  private verifyNow(hash: string, size: number): Buffer | undefined {
    if (size === 0 || size > CACHED_READ_MAX) return undefined;
    const buf = Buffer.allocUnsafe(size);
    if (filesAddon().readFileCached(this.files.path('block', hash), buf, 0) !== size || hashBuffer(buf) !== hash) return undefined;
    this.counters.hits++;
    this.counters.diskHits++;
    this.touchOrAdopt('block', hash, size, true);
    return buf;
  }

  /** Fetches objects in the background with bounded concurrency; never throws, errors are counted and logged. */
  prefetch(kind: ObjectKind, hashes: readonly string[]): void {
    if (this.state !== 'open') return;
    for (const hash of hashes) {
      try {
        assertHash(hash);
      } catch (e) {
        this.counters.errors++;
        this.log?.warn({ op: 'cache.prefetch', hash, err: errorMessage(e) }, 'prefetch of an invalid hash ignored');
        continue;
      }
      const k = cacheKey(kind, hash);
      if (this.has(kind, hash) || this.inflight.has(k) || this.queue.has(k)) continue;
      if (this.queue.length >= this.maxPrefetchQueue) {
        this.log?.debug({ op: 'cache.prefetch', hash }, 'prefetch queue full; request dropped');
        continue;
      }
      this.queue.add(k, kind, hash);
    }
    this.queue.pump();
  }

  /**
   * The whole verified object, fetched at prefetch priority: behind every reader and after the prefetches
   * queued before it (the namespace walk uses it to read trees it then descends into). Never dropped for a
   * full queue; rejects when the fetch fails or the cache closes first.
   */
  getInBackground(kind: ObjectKind, hash: string): Promise<Buffer> {
    this.assertOpen();
    assertHash(hash);
    const k = cacheKey(kind, hash);
    const mem = this.memory?.get(k);
    if (mem) return Promise.resolve(mem);
    if (this.has(kind, hash) || this.inflight.has(k)) return this.get(kind, hash);
    return this.queue.wait(k, kind, hash);
  }

  /** Keeps the object's disk file from eviction (counted; until as many `unpin`s). */
  pin(kind: ObjectKind, hash: string): void {
    this.index.pin(cacheKey(kind, hash));
  }

  unpin(kind: ObjectKind, hash: string): void {
    this.index.unpin(cacheKey(kind, hash));
  }

  /** Prefetches queued and not started yet (tests and diagnostics). */
  get prefetchQueueLength(): number {
    return this.queue.length;
  }

  /** The object's length if it is in memory or on disk as far as this daemon knows (no I/O). */
  size(kind: ObjectKind, hash: string): number | undefined {
    const k = cacheKey(kind, hash);
    return this.memory?.get(k)?.length ?? this.writing.get(k)?.data.length ?? this.index.get(k)?.size;
  }

  /** Cached, being fetched or queued for prefetch: a read of it will not start a fetch of its own. */
  known(kind: ObjectKind, hash: string): boolean {
    const k = cacheKey(kind, hash);
    return this.has(kind, hash) || this.inflight.has(k) || this.queue.has(k);
  }

  /** In memory or on disk as far as this daemon knows, without any I/O. */
  has(kind: ObjectKind, hash: string): boolean {
    const k = cacheKey(kind, hash);
    return (this.memory?.has(k) ?? false) || this.writing.has(k) || this.index.has(k);
  }

  /** Inserts content the caller already verified (e.g. a block it just sealed); resolves once it is on disk. */
  async put(kind: ObjectKind, hash: string, data: Buffer): Promise<void> {
    this.assertOpen();
    assertHash(hash);
    this.memory?.set(cacheKey(kind, hash), data);
    await this.writeToDisk(kind, hash, data);
  }

  /**
   * Inserts verified content into memory only; it goes to disk if the memory LRU evicts it, so it is never
   * lost while the daemon runs. For objects that arrive by the thousand at wake (the namespace and wake
   * packs, which the next wake fetches again): one disk file each would cost the event loop more than the
   * store requests they replace. Without a memory cache this is `put`.
   */
  putInMemory(kind: ObjectKind, hash: string, data: Buffer): void {
    this.assertOpen();
    const k = cacheKey(kind, hash);
    if (!this.memory) {
      void this.writeToDisk(kind, hash, data).catch(() => undefined);
      return;
    }
    if (this.index.has(k) || this.writing.has(k) || this.memory.has(k)) return;
    this.memoryOnly.add(k);
    this.memory.set(k, data);
    if (this.memory.has(k)) return;
    this.memoryOnly.delete(k); // larger than the whole memory cache: the LRU did not take it
    void this.writeToDisk(kind, hash, data).catch(() => undefined);
  }

  private leftMemory(k: string, data: Buffer, reason: string): void {
    if (!this.memoryOnly.delete(k) || reason !== 'evict' || this.state !== 'open') return;
    const [kind, hash] = splitCacheKey(k);
    void this.writeToDisk(kind, hash, data).catch(() => undefined);
  }

  /** Resolves once every disk write, eviction and last-use update started so far has finished. */
  async flush(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }

  stats(): CacheStats {
    return {
      bytes: this.index.bytes,
      entries: this.index.count,
      ...this.counters,
      memoryBytes: this.memory?.calculatedSize ?? 0,
      memoryEntries: this.memory?.size ?? 0,
    };
  }

  /** Drops queued prefetches, waits for fetches and disk writes in progress, releases memory. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.queue.clear(new Error('BlockCache is closed'));
    await Promise.allSettled([...this.inflight.values()]);
    await this.flush();
    await this.fds.closeAll();
    this.memory?.clear();
  }

  /** Disk keys from least to most recently used (tests and diagnostics). */
  diskOrder(): string[] {
    return this.index.keys();
  }

  // ---- internals ----

  private assertOpen(): void {
    if (this.state !== 'open') throw new Error(this.state === 'new' ? 'BlockCache.init() was not called' : 'BlockCache is closed');
  }

  private fromMemory(k: string): Buffer | undefined {
    const data = this.memory?.get(k) ?? this.writing.get(k)?.data;
    if (!data) return undefined;
    this.counters.hits++;
    this.counters.memoryHits++;
    const e = this.index.touch(k, Date.now());
    if (e) this.persistLastUse(e);
    return data;
  }

  /** Counts one answered read by where its object came from. */
  private count(r: Loaded): Buffer {
    if (r.source === 'disk') {
      this.counters.hits++;
      this.counters.diskHits++;
    } else {
      this.counters.misses++;
    }
    return r.data;
  }

  /** Single-flight load of one object; `release` is a background slot already held (prefetch). */
  private flight(kind: ObjectKind, hash: string, skipDisk: boolean, release?: Release): Promise<Loaded> {
    const k = cacheKey(kind, hash);
    const existing = this.inflight.get(k);
    if (existing) {
      release?.();
      return existing;
    }
    const p = this.load(kind, hash, skipDisk, release).finally(() => this.inflight.delete(k));
    this.inflight.set(k, p);
    return p;
  }

  private async load(kind: ObjectKind, hash: string, skipDisk: boolean, release?: Release): Promise<Loaded> {
    // An object of a store on this host's disk is read from there again when needed: the store is as near
    // as the cache directory, so the cache neither looks there for an object its index does not list (one
    // failed open per cold read) nor copies one there (an open, a write and a rename: 0.4 ms each, a third
    // of a cold `find`'s CPU over a 26,000-directory home when trees were copied). Only blocks of at least
    // LOCAL_COPY_MIN are still copied: reads of a few bytes of one are then served from the copy's file,
    // not by reading the whole object.
    const local = this.localStore && !this.index.has(cacheKey(kind, hash));
    try {
      if (!skipDisk && !local) {
        const data = await this.loadFromDisk(kind, hash);
        if (data) return { data, source: 'disk' };
      }
      const data = await this.fetch(kind, hash, release);
      this.memory?.set(cacheKey(kind, hash), data);
      if (!this.localStore || (kind === 'block' && data.length >= LOCAL_COPY_MIN)) void this.writeToDisk(kind, hash, data).catch(() => undefined);
      return { data, source: 'store' };
    } finally {
      release?.();
    }
  }

  /** The verified whole file, or undefined (absent, unreadable or corrupt: then removed). */
  private async loadFromDisk(kind: ObjectKind, hash: string): Promise<Buffer | undefined> {
    let data: Buffer | undefined;
    try {
      data = await this.files.readWhole(kind, hash);
    } catch (e) {
      this.log?.warn({ op: 'cache.get', kind, hash, err: errorMessage(e) }, 'cannot read cached object; fetching it again');
      return undefined;
    }
    if (!data) {
      this.forget(kind, hash);
      return undefined;
    }
    if ((await this.hash(data)) !== hash) {
      this.log?.warn({ op: 'cache.get', kind, hash, path: this.files.path(kind, hash) }, 'cached object is corrupt; removed, fetching it again');
      this.forget(kind, hash);
      this.track(this.files.remove(kind, hash), 'cache.remove');
      return undefined;
    }
    this.touchOrAdopt(kind, hash, data.length, true);
    this.memory?.set(cacheKey(kind, hash), data);
    return data;
  }

  /** One store GET within the timeout (slot wait included), verified. */
  private async fetch(kind: ObjectKind, hash: string, held?: Release): Promise<Buffer> {
    const key = kind === 'block' ? blockKey(this.opts.org, hash) : metaKey(this.opts.org, hash);
    const store = this.opts.store;
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let fromPack = false;
    let release = held;
    const work = (async () => {
      release ??= await this.slots.acquire();
      if (timedOut) {
        release();
        throw new StoreUnavailableError(store.url, 'timed out waiting for a fetch slot');
      }
      try {
        const packed = kind === 'block' ? await this.opts.pack?.fetch(hash) : this.opts.trees?.take(hash);
        fromPack = kind === 'block' && packed !== undefined;
        if (packed) return packed; // (its bytes are counted by the pack's own report)
        this.counters.fetches++;
        const data = await store.get(key);
        this.counters.bytesFetched += data.length;
        return data;
      } finally {
        release();
      }
    })();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        release?.(); // a hung GET must not hold its slot forever
        reject(new StoreUnavailableError(store.url, `GET ${key} did not complete within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
    });
    work.catch(() => undefined); // its rejection is reported through the race, or nobody waits for it anymore
    try {
      const data = await Promise.race([work, timeout]);
      return fromPack ? data : await verifyObject(key, hash, data, this.hash);
    } catch (e) {
      this.counters.errors++;
      this.log?.warn({ op: 'cache.fetch', key, err: errorMessage(e) }, 'fetch failed');
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  private writeToDisk(kind: ObjectKind, hash: string, data: Buffer): Promise<void> {
    const k = cacheKey(kind, hash);
    const current = this.writing.get(k);
    if (current) return current.done;
    if (data.length > this.opts.maxBytes) return Promise.resolve(); // could never stay
    if (this.index.has(k)) {
      this.touchOrAdopt(kind, hash, data.length, false);
      return Promise.resolve();
    }
    const done = this.files.write(kind, hash, data).then(
      () => {
        this.index.add(k, data.length, Date.now(), true); // written by us from verified bytes
        this.evict(k);
      },
      (e: unknown) => {
        this.log?.warn({ op: 'cache.write', kind, hash, err: errorMessage(e) }, 'cannot write to the block cache');
        throw e;
      },
    ).finally(() => this.writing.delete(k));
    this.writing.set(k, { data, done });
    this.track(done, 'cache.write');
    return done;
  }

  /**
   * Evicts least recently used unpinned files down to the cap; if that is not enough, `keep` (the
   * newcomer) goes too, pinned or not: the blocks of open files already on disk stay, the cap holds.
   */
  private evict(keep?: string): void {
    const victims = this.index.evictTo(this.opts.maxBytes, keep);
    if (keep !== undefined && this.index.bytes > this.opts.maxBytes) {
      const e = this.index.remove(keep);
      if (e) victims.push(e);
    }
    for (const e of victims) {
      this.counters.evictions++;
      this.fds.invalidate(e.key);
      const { kind, hash } = parseKey(e.key);
      this.track(this.files.remove(kind, hash), 'cache.evict');
    }
  }

  /**
   * Marks a disk object as used (adding it if another daemon wrote it) and persists its last use now and
   * then; `verified`: this process has just hashed the file's bytes (or wrote them), so it trusts them.
   */
  private touchOrAdopt(kind: ObjectKind, hash: string, size: number, verified: boolean): void {
    const k = cacheKey(kind, hash);
    const now = Date.now();
    const e = this.index.touch(k, now);
    if (e) {
      if (verified) e.verified = true;
      this.persistLastUse(e);
    } else if (size <= this.opts.maxBytes) {
      this.index.add(k, size, now, verified);
      this.evict(k);
    }
  }

  /** Refreshes the file's mtime (its last use across restarts), at most once per persistLastUseMs. */
  private persistLastUse(e: IndexEntry): void {
    if (e.lastUse - e.persistedAt < defaults.cache.persistLastUseMs) return;
    e.persistedAt = e.lastUse;
    const { kind, hash } = parseKey(e.key);
    this.track(this.files.setLastUse(kind, hash, e.lastUse), 'cache.touch');
  }

  private forget(kind: ObjectKind, hash: string): void {
    const k = cacheKey(kind, hash);
    this.index.remove(k);
    this.fds.invalidate(k);
  }

  /** Keeps a background promise for flush()/close(); its failure is logged, never unhandled. */
  private track(p: Promise<unknown>, op: string): void {
    const t = p.catch((e: unknown) => this.log?.debug({ op, err: errorMessage(e) }, 'background cache operation failed'));
    this.background.add(t);
    void t.finally(() => this.background.delete(t));
  }
}

function cacheKey(kind: ObjectKind, hash: string): string {
  return `${kind}/${hash}`;
}

function splitCacheKey(k: string): [ObjectKind, string] {
  const at = k.indexOf('/');
  return [k.slice(0, at) as ObjectKind, k.slice(at + 1)];
}

function parseKey(key: string): { kind: ObjectKind; hash: string } {
  const slash = key.indexOf('/');
  return { kind: key.slice(0, slash) === 'meta' ? 'meta' : 'block', hash: key.slice(slash + 1) };
}
