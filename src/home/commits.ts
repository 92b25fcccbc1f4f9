/**
 * How a mounted home's changes reach the store: seals, one at a time (`sealer`: for an fsync, idle, sync,
 * sleep, protection, or to absorb the log), and with `--fsync store` the group commit of fsyncs into log
 * segments of the home's fsync log (`segmenter`), including a running seal's log tail.
 *
 * The bottom layer of MountedHome (home.ts): it holds the running home's state, which the layers above
 * (running.ts, and the wake in home.ts) read and set up.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { BlockCache } from '../cache/blockcache.js';
import type { Session } from '../fuse/types.js';
import type { Content } from '../inodes/content.js';
import type { Journal } from '../inodes/journal.js';
import type { UpperFiles } from '../inodes/upper.js';
import type { HomeView } from '../inodes/view.js';
import { Excludes } from '../format/excludes.js';
import type { ObjectStore, ReuseLog } from '../format/objects.js';
import { GcFence } from '../format/gcfence.js';
import { LogFencedError, LogFullError, LogUnsafeError, SegmentTrees, seal, sealToLog, type LogResult, type SealDeps, type SealResult } from '../seal/seal.js';
import { dropOldLogs } from '../fsynclog/homelog.js';
import { chainFor, chainLanded, newChain, type LogState } from './logchain.js';
import { pruneHistory } from '../ops/history.js';
import { defaults } from '../config.js';
import { overNetwork, type Store } from '../store/store.js';
import { HeadConflictError, UserError, errorMessage } from '../util/errors.js';
import { LOG_OK, LOG_SEQ } from './base.js';
import type { Lease } from './lease.js';
import type { HomePaths } from './paths.js';
import { Sealer } from './sealer.js';
import { CacheMetricsMirror, Capacity, dirtyTotals } from './report.js';
import { HashPool } from '../hash/pool.js';
import { sealSlabs } from '../seal/blockread.js';
import type { Presealer } from '../seal/preseal.js';
import { Omissions } from '../seal/omission.js';
import type { WriteBehind } from '../seal/writebehind.js';
import type { Protection } from './protect.js';
import { Foreground } from './foreground.js';
import type { HotSet } from './hotset.js';
import type { NsPack } from './nspack.js';
import type { HomeHooks, HomeState, MountConfig } from './mountconfig.js';

export abstract class HomeCommits {
  state: HomeState = 'waking';
  protected lastSealAt = 0;
  protected lastSnapshot: string | null = null;
  protected lastError: string | null = null;
  protected seals = 0;
  private lastPrune = 0;
  protected bytesUploaded = 0;
  protected session: Session | undefined;
  /** Whether the kernel may hold writes not sent yet (the FUSE adapter; unset: assume it may). */
  protected kernelWrites: { kernelMayHoldWrites(): boolean; flushingKernel(): void } | undefined;
  /** `sync -f` runs so far (status). */
  protected kernelFlushes = 0;
  protected readonly capacity: Capacity;
  protected readonly cacheMetrics: CacheMetricsMirror;
  protected readonly sealer: Sealer<SealResult | null>;
  private readonly host = hostname();
  /** Seals hash blocks on a worker thread so the FUSE loop keeps answering meanwhile. */
  protected readonly hashPool = new HashPool({ threads: defaults.sealHashThreads });
  /** The buffers seals read large blocks into, reused (seal/blockread.ts); write-behind has its own. */
  private readonly sealSlabs = sealSlabs();
  /** Hashes and uploads the blocks of large files while they are written (seal/preseal.ts); none when read-only. */
  protected preseal: Presealer | undefined;
  /** Stores the blocks of quiet changed files in the background (seal/writebehind.ts); none when read-only. */
  protected writeBehind: WriteBehind | undefined;
  /** Whether users' requests are flowing: background work yields to them (foreground.ts). */
  protected readonly foreground = new Foreground();
  /** Segments waiting for the running seal's capture. */
  private tailWaiters = 0;
  /** The bounded loss window (home/protect.ts); none when read-only. */
  protected protection: Protection | undefined;
  /** The org's gc fence and this mount's last look at it (format/gcfence.ts). */
  protected readonly gcFence: SealDeps['fence'];
  /** Where fsyncs go (fsynclog/homelog.ts): the log of HEAD generation `gen`, next sequence number; null: seals. */
  protected logState: LogState | null = null;
  private logSegments = 0;
  private logBytes = 0;
  /** Another host claimed this home's log: nothing more goes to the store from this mount. */
  private fenced = false;
  /** Logs of older generations may exist (from before this mount): the next seal deletes their segments. */
  private oldLogs = true;
  /**
   * The seal running now (docs/decisions/0032-log-tail.md): no ordinary segment starts meanwhile.
   * With `tail`, fsyncs go to its log tail: segments of its base generation `gen` from `seq` on; `walked`
   * resolves with the seal's dedupe record once it has captured every file (null if it ended before).
   * `done` resolves when it has ended.
   */
  private sealing: { gen: number; seq: number; tail: boolean; walked: Promise<ReuseLog | null>; done: Promise<void> } | null = null;
  /**
   * Group commit of fsyncs into log segments, one segment at a time: fsyncs that arrive while one is in
   * flight form the next ('whole' or 'partial': the fsync is in the log; 'seal': it needs a seal).
   */
  protected readonly segmenter: Sealer<SegmentOutcome>;
  /** Inodes fsync'd since the segment in flight captured (the next one must hold them: seal/omission.ts). */
  private fsynced = new Set<number>();
  /** Fresh names a segment may leave out, and what landed segments and seals held. */
  private readonly omissions: Omissions;
  /** The last segment started: settled when it landed or failed (with its error), and when its content was captured. */
  private logWrite: Promise<unknown> = Promise.resolve(null);
  /** Trees log segments computed, reused by the next segment while unchanged (seal.ts). */
  private readonly segmentTrees = new SegmentTrees();
  private logCaptured: Promise<void> = Promise.resolve();

  protected constructor(
    readonly cfg: MountConfig,
    readonly paths: HomePaths,
    protected readonly log: Logger,
    protected readonly store: Store,
    protected readonly objects: ObjectStore,
    protected readonly cache: BlockCache,
    protected readonly hot: HotSet,
    /** The namespace pack (null where the store wants none: transfer/nspack.ts `wantsNsPack`). */
    protected readonly nsPack: NsPack | null,
    protected readonly journal: Journal,
    protected readonly upper: UpperFiles,
    protected readonly content: Content,
    protected readonly view: HomeView,
    protected readonly lease: Lease | undefined,
    protected readonly unlock: () => void,
    protected readonly hooks: HomeHooks,
  ) {
    this.sealer = new Sealer((reason) => this.sealNow(reason));
    this.segmenter = new Sealer((reason) => this.segmentNow(reason));
    this.omissions = new Omissions((ino) => journal.get(ino)?.parents ?? []);
    view.onCreated = (ino) => this.omissions.created(ino);
    view.onNamed = (ino, dirs, link) => this.omissions.named(ino, dirs, link);
    this.capacity = new Capacity(paths.stateDir, cfg.quotaBytes, () => content.usedBytes);
    this.cacheMetrics = new CacheMetricsMirror(cache, hooks.metrics);
    hooks.metrics.bindDirtyBytes(() => dirtyTotals(journal).bytes);
    this.lastSnapshot = journal.base().snapshot;
    this.gcFence = { gc: new GcFence(store, cfg.org), observed: null };
    // Trees a seal writes go to the cache too, so the sleep's namespace pack need not fetch them back (from
    // a store on this host's disk it reads them as cheaply as the cache would).
    if (this.nsPack && !cfg.readOnly && overNetwork(store.url)) objects.memo = { add: (hash, data) => void cache.put('meta', hash, data).catch(() => undefined) };
  }

  /**
   * Asks the kernel to write back what its writeback cache holds (data, and the mtimes it keeps locally)
   * by running `sync -f` on the mountpoint in a child process: never from this process, which must stay
   * free to serve the requests that flush produces.
   */
  protected flushKernel(): Promise<void> {
    if (!this.session) return Promise.resolve();
    const writes = this.kernelWrites;
    if (writes && !writes.kernelMayHoldWrites()) return Promise.resolve();
    writes?.flushingKernel();
    this.kernelFlushes++;
    return new Promise((resolve) => {
      const child = spawn('sync', ['-f', this.cfg.mountpoint], { stdio: 'ignore', timeout: 10_000 });
      child.on('error', () => resolve());
      child.on('exit', () => resolve());
    });
  }

  private sealDeps(): SealDeps {
    return {
      journal: this.journal, content: this.content, objects: this.objects,
      excludes: new Excludes(this.cfg.excludes), home: this.cfg.home, host: this.host, parallelism: defaults.sealParallelism,
      hash: (data) => this.hashPool.hash(data), slabs: this.sealSlabs, fence: this.gcFence,
      uploading: (hash) => this.preseal?.uploading(hash) ?? this.writeBehind?.inFlight(hash),
      storedUnder: (hash, epoch) => this.writeBehind?.has(hash, epoch) ?? false,
      segmentTrees: this.segmentTrees, omissions: this.omissions,
    };
  }

  /**
   * Block writes a seal nobody waits for may have in flight now: few while the foreground is busy, unless
   * someone has come to wait for a seal after all (an fsync or a sleep queued behind it).
   */
  private backgroundWrites(): number {
    return this.foreground.busy() && !this.sealer.queued && this.tailWaiters === 0 ? this.busyWrites : Infinity;
  }

  /**
   * A seal nobody waits for (protection's, or absorbing the log). It starts once the foreground is not busy
   * and write-behind has stored what it queued (it goes at full speed meanwhile), so that its capture finds
   * the blocks in the store and is short: an fsync that comes while it captures waits for that capture
   * (a tail segment). It starts anyway, paced, after `BACKGROUND_DEFER` protection intervals (the loss
   * window stays bounded under a long burst), or when the log is close to full (fsyncs would soon have to
   * seal themselves).
   */
  protected async backgroundSeal(reason: 'protect' | 'absorb'): Promise<SealResult | null> {
    const until = Date.now() + BACKGROUND_DEFER * (this.cfg.protectIntervalMs || defaults.protectIntervalMs);
    while ((this.state === 'active' || this.state === 'parked') && !this.logNearlyFull() && Date.now() < until) {
      if (!this.foreground.busy() && (this.writeBehind?.queued ?? 0) === 0) break;
      await delay(BACKGROUND_WAIT_MS);
    }
    // Securing: the seal at sleep takes everything, and more cheaply (it keeps no local copies).
    if (this.state !== 'active' && this.state !== 'parked') return null;
    return this.sealer.request(reason);
  }

  private logNearlyFull(): boolean {
    return this.logSegments * 2 >= defaults.logMaxSegments || this.logBytes * 2 >= defaults.logMaxBytes;
  }

  protected get busyWrites(): number {
    return this.cfg.backgroundWrites ?? defaults.backgroundWrites;
  }

  /** Whether an fsync can go to the log now (else it seals: no log yet, a seal pending, or the log is full). */
  private logReady(): LogState | null {
    const l = this.logState;
    if (!l || this.journal.base().gen !== l.gen || this.journal.getMeta<number>(LOG_OK) !== l.gen) return null;
    return this.logSegments < defaults.logMaxSegments && this.logBytes < defaults.logMaxBytes ? l : null;
  }

  /**
   * One run of the fsync group commit: a segment of the log, else ('seal') the fsyncs need a seal. While a
   * seal runs, its log tail, once it has captured everything; when it cannot take one, after the seal.
   */
  private async segmentNow(reason: string): Promise<SegmentOutcome> {
    // The fsyncs this run answers (those that come later go to the next run): it must hold them.
    const fsynced = this.fsynced;
    this.fsynced = new Set();
    // A run for protection alone is answered by nobody waiting: it may carry more fresh bytes, and so stay whole.
    const omit = omitting(fsynced, reason === 'protect' && fsynced.size === 0 ? defaults.logProtectFreshBytes : defaults.logFreshBytes);
    for (;;) {
      if (!this.lease || this.fenced) return 'seal'; // the seal says why
      const s = this.sealing;
      if (s) {
        const tail = s.tail ? await this.tailNow(s, this.lease, omit) : 'seal';
        if (tail !== 'seal') return tail;
        const waited = Date.now();
        await s.done;
        this.log.debug({ op: 'log.wait', ms: Date.now() - waited }, 'segment waited for a seal to end');
        continue;
      }
      const l = this.logReady();
      if (!l) return 'seal';
      // Taken in the same tick as the look at `sealing`: a seal that starts later numbers its tail after it.
      const seq = l.nextSeq++;
      const outcome = await this.logNow(l, seq, this.lease, omit);
      if (outcome === 'seal') return outcome;
      // Absorb the log in the background before it is full; fsyncs meanwhile go to its tail.
      // (Or once many inodes changed since the last seal: every segment walks them, and so does the seal at sleep.)
      const absorb = this.logNearlyFull() || this.journal.changedCount >= defaults.logAbsorbChanged;
      if (absorb && !this.sealer.busy) setImmediate(() => this.backgroundSeal('absorb').catch(() => undefined));
      return outcome;
    }
  }

  /**
   * An fsync's one round trip: a log segment `seq` with everything changed since the last seal but fresh
   * names beyond its budget that nobody fsync'd (seal/omission.ts). 'seal' when what it must hold is too
   * much for a segment (the caller seals instead).
   */
  private async logNow(l: LogState, seq: number, lease: Lease, omit: SegmentOmit): Promise<SegmentOutcome> {
    const started = Date.now();
    const mark = this.journal.mutations;
    const chain = chainFor(l, seq);
    const write = this.tracked(async (captured) => {
      if (!(await lease.confirmed())) throw new UserError('this mount cannot confirm its lease (lost to another host, or the store is unreachable): its fsync is not in the store');
      return sealToLog(this.sealDeps(), { gen: l.gen, seq, writer: lease.token, chain, ...omit }, 'fsync', defaults.logMaxBytes, undefined, captured);
    });
    try {
      const r = await write;
      if (r) {
        chainLanded(l, chain, seq, r.keys);
        this.logged(r, started, 'log');
      }
      return this.segmentLanded(r, mark, started);
    } catch (e) {
      if (e instanceof LogFullError) {
        this.logBytes = Infinity; // until the seal that follows
        return 'seal';
      }
      if (e instanceof LogUnsafeError) return 'seal'; // a gc was announced since write-behind's tags: the seal's fence handles it
      this.logFailed(e, l.gen, seq);
      throw e;
    }
  }

  /** A segment captured from change count `mark` landed (null: nothing had changed): only a whole one covers the home. */
  private segmentLanded(r: LogResult | null, mark: number, started: number): SegmentOutcome {
    if (r && r.omitted > 0) {
      this.log.debug({ op: 'log', omitted: r.omitted }, 'segment left fresh names out');
      return 'partial';
    }
    this.protection?.covered(mark, started);
    return 'whole';
  }

  /** Starts a segment's write now and makes it the one a seal waits for before it captures. */
  private tracked<T>(write: (captured: () => void) => Promise<T>): Promise<T> {
    let captured: () => void = () => undefined;
    this.logCaptured = new Promise<void>((r) => (captured = r));
    const p = write(captured);
    this.logWrite = p.then(
      () => (captured(), null),
      (e: unknown) => (captured(), e),
    );
    return p;
  }

  /** A segment landed: recorded in the journal (the wake's `mine`), counted, measured. */
  private logged(r: { gen: number; seq: number; bytes: number; durationMs: number; putMs: number }, started: number, kind: 'log' | 'log-tail'): void {
    // Segments land in order, but for one whose PUT overlapped the capture of a seal that committed first.
    const last = this.journal.getMeta<{ gen: number; seq: number }>(LOG_SEQ);
    if (!last || r.gen > last.gen || (r.gen === last.gen && r.seq > last.seq)) this.journal.setMeta(LOG_SEQ, { gen: r.gen, seq: r.seq });
    this.logSegments++;
    this.logBytes = r.bytes;
    this.lastError = null;
    this.hooks.metrics.seals.inc({ reason: kind, result: 'ok' });
    this.hooks.metrics.sealSeconds.observe({ reason: kind }, (Date.now() - started) / 1000);
    this.log.debug({ op: kind, gen: r.gen, seq: r.seq, bytes: r.bytes, ms: r.durationMs, putMs: r.putMs, totalMs: Date.now() - started }, 'logged');
  }

  private logFailed(e: unknown, gen: number, seq: number): void {
    if (e instanceof LogFencedError) this.fenced = true;
    this.lastError = errorMessage(e);
    this.hooks.metrics.seals.inc({ reason: 'log', result: 'error' });
    this.hooks.metrics.errors.inc({ kind: 'seal' });
    this.log.error({ op: 'log', gen, seq, err: this.lastError }, 'fsync to the log failed');
  }

  private async sealNow(reason: string): Promise<SealResult | null> {
    if (this.cfg.readOnly) return null;
    if (this.fenced) throw new LogFencedError(`${this.cfg.org}/${this.cfg.home}`);
    // Before the seal takes its place in the log: fsyncs meanwhile still go to ordinary segments.
    if (reason !== 'fsync') await this.flushKernel();
    // From here on no ordinary segment starts; fsyncs go to this seal's log tail (once it has captured), or wait for it.
    const l = this.lease && this.cfg.fsync === 'store' ? this.logReady() : null;
    const base = this.journal.base().gen;
    let walked: (r: ReuseLog | null) => void = () => undefined;
    let done: () => void = () => undefined;
    const sealing = {
      gen: base ?? -1, seq: l?.nextSeq ?? 0, tail: l !== null && base === l.gen,
      walked: new Promise<ReuseLog | null>((r) => (walked = r)), done: new Promise<void>((r) => (done = r)),
    };
    this.sealing = sealing;
    // Its tail's segments rely on none below it (those are absorbed, and deleted once it commits).
    if (l && sealing.tail) l.chain = newChain(sealing.seq);
    try {
      // The segment in flight (numbered before the tail) is captured before anything this seal captures. With a
      // tail, its PUT may still run meanwhile (the seal holds all it holds).
      const inFlight = this.logWrite;
      await (sealing.tail ? this.logCaptured : inFlight);
      return await this.runSeal(reason, sealing.tail ? sealing : null, walked, () => this.notFenced(inFlight));
    } finally {
      walked(null);
      if (this.sealing === sealing) this.sealing = null;
      done();
    }
  }

  /**
   * Before a seal writes HEAD: the segment that was in flight when it started and the one in flight now have
   * settled, and no segment of this mount was fenced. Else another host has claimed the log, and this seal,
   * if it won HEAD before that host's replay did, would publish what a failed fsync held.
   */
  private async notFenced(inFlight: Promise<unknown>): Promise<void> {
    for (const w of [inFlight, this.logWrite]) {
      const e = await w;
      if (e instanceof LogFencedError) throw e;
    }
    if (this.fenced) throw new LogFencedError(`${this.cfg.org}/${this.cfg.home}`);
  }

  private async runSeal(reason: string, sealing: HomeCommits['sealing'], walked: (r: ReuseLog | null) => void, beforeHead: () => Promise<void>): Promise<SealResult | null> {
    if (this.lease?.lost) throw new UserError('this mount lost its lease to another host; its changes stay local and are not sealed');
    const started = Date.now();
    const mark = this.journal.mutations;
    // Until this seal commits, blocks it records as sealed may be referenced by no HEAD: no log segment may rely on them
    // (but for its tail: segments written once it has captured everything, while none relies on a deduplicated block).
    const base = this.journal.base();
    this.journal.setMeta(LOG_OK, null);
    try {
      const sealStart = Date.now();
      const walkedAt = (x: ReuseLog | null): void => {
        this.log.debug({ op: 'seal.phase', reason, captureMs: Date.now() - sealStart }, 'seal captured');
        walked(x);
      };
      const pace = BACKGROUND_SEALS.has(reason) ? { pace: () => this.backgroundWrites() } : {};
      const r = await seal({ ...this.sealDeps(), beforeHead, ...pace, ...(sealing ? { tail: { seq: sealing.seq, walked: walkedAt } } : {}) }, reason);
      this.log.debug({ op: 'seal.phase', reason, commitMs: Date.now() - sealStart }, 'seal committed');
      this.journal.setMeta(LOG_OK, r ? r.gen : base.gen);
      this.protection?.covered(mark, started);
      // Its snapshot requires readers to know logs: from now on fsyncs may go to the log of its generation.
      if (r && this.lease && this.cfg.fsync === 'store') this.absorbed(r.gen, sealing);
      this.lastSealAt = Date.now();
      this.lastError = null;
      this.hooks.metrics.seals.inc({ reason, result: r ? 'ok' : 'clean' });
      this.hooks.metrics.sealSeconds.observe({ reason }, (Date.now() - started) / 1000);
      if (r) {
        this.seals++;
        if (Date.now() - this.lastPrune > defaults.pruneIntervalMs) {
          this.lastPrune = Date.now();
          pruneHistory(this.store, this.cfg.org, this.cfg.home, defaults.historyKeep).catch((e: unknown) => this.log.warn({ err: errorMessage(e) }, 'pruning history failed'));
        }
        this.bytesUploaded += r.bytesUploaded;
        this.lastSnapshot = r.snapshot;
        if (reason !== 'sleep' && this.hot.due()) this.saveHotSet(false).catch(() => undefined);
        this.log.info({ op: 'seal', reason, snapshot: r.snapshot, gen: r.gen, files: r.filesHashed, bytes: r.bytesUploaded, ms: Date.now() - started }, 'sealed');
      }
      return r;
    } catch (e) {
      this.lastSealAt = Date.now();
      this.lastError = errorMessage(e);
      this.hooks.metrics.seals.inc({ reason, result: e instanceof HeadConflictError ? 'conflict' : 'error' });
      this.hooks.metrics.errors.inc({ kind: 'seal' });
      this.log.error({ op: 'seal', reason, err: this.lastError }, 'seal failed');
      throw e;
    }
  }

  /**
   * An fsync during a seal: a segment of the seal's base generation after those it absorbs, captured after
   * the seal captured everything, so newer than the seal's snapshot whichever of the two lands first. False
   * when it cannot be written (the seal ended first, the segment would rely on a block the seal deduplicated,
   * or it is too large): the caller then waits for the seal.
   */
  private async tailNow(s: NonNullable<HomeCommits['sealing']>, lease: Lease, omit: SegmentOmit): Promise<SegmentOutcome> {
    const l = this.logState;
    if (!l || l.gen !== s.gen || lease.lost) return 'seal';
    const waited = Date.now();
    this.tailWaiters++; // (a paced seal goes at full speed while someone waits for its capture)
    const reuse = await s.walked.finally(() => this.tailWaiters--);
    if (reuse === null) return 'seal';
    const started = Date.now();
    this.log.debug({ op: 'log-tail.wait', ms: started - waited }, "tail segment waited for the seal's capture");
    if (!(await lease.confirmed()) || this.logState !== l || this.sealing !== s) return 'seal'; // (the seal may have ended meanwhile)
    const seq = l.nextSeq++;
    const chain = chainFor(l, seq);
    const mark = this.journal.mutations;
    try {
      const target = { gen: l.gen, seq, writer: lease.token, chain, ...omit };
      // Of the seal's dedupe hits, the tail may rely only on write-behind's tagged blocks, and then confirms their epoch.
      const onlyTagged = (): boolean => [...reuse.blocks].every((h) => reuse.tagged.has(h));
      const r = await this.tracked((captured) => sealToLog(this.sealDeps(), target, 'fsync', defaults.logMaxBytes, onlyTagged, captured, () => reuse.tagged.size > 0));
      if (r) {
        chainLanded(l, chain, seq, r.keys);
        this.logged(r, started, 'log-tail');
      }
      return this.segmentLanded(r, mark, started);
    } catch (e) {
      if (e instanceof LogUnsafeError || e instanceof LogFullError) return 'seal';
      this.logFailed(e, l.gen, seq);
      throw e;
    }
  }

  /** After a seal committed generation `gen`: fsyncs go to its (empty) log; older logs are deleted, but for its tail. */
  private absorbed(gen: number, tail: { gen: number; seq: number } | null): void {
    if (this.oldLogs || this.logSegments > 0) {
      const keep = tail ? { gen: tail.gen, seq: tail.seq } : null;
      dropOldLogs(this.store, this.cfg.org, this.cfg.home, gen, keep).catch((e: unknown) => this.log.warn({ err: errorMessage(e) }, 'deleting absorbed log segments failed (they are ignored; the next seal tries again)'));
    }
    this.oldLogs = tail !== null; // the tail's segments go with the next seal
    this.logState = { gen, nextSeq: 0, chained: true, chain: newChain(0) };
    this.segmentTrees.clear();
    this.logSegments = 0;
    this.logBytes = 0;
  }

  protected async fsync(ino: number): Promise<void> {
    const t0 = Date.now();
    if (this.cfg.fsync !== 'store') {
      await this.content.sync(ino);
      return this.journal.sync();
    }
    // The local flush and the store's copy overlap: the disk and the hashing and uploads run together.
    let syncMs = -1;
    const local = this.content.sync(ino).then(() => {
      syncMs = Date.now() - t0;
    });
    local.catch(() => undefined); // (awaited below, after the store's part)
    let how = 'log';
    this.fsynced.add(ino);
    try {
      if ((await this.segmenter.request('fsync')) === 'seal') {
        how = 'seal';
        await this.sealer.request('fsync');
      }
    } finally {
      await local.catch(() => undefined);
    }
    await local;
    this.log.debug({ op: 'fsync', ino, how, syncMs, ms: Date.now() - t0 }, 'fsync done');
  }

  /** Stores the session's hot set (running.ts). */
  protected abstract saveHotSet(withPack: boolean): Promise<void>;
}

/** Seals that no user waits for: they yield to the foreground (`backgroundWrites`). */
const BACKGROUND_SEALS: ReadonlySet<string> = new Set(['protect', 'absorb', 'idle']);

/** A background seal waiting for the foreground and write-behind looks again this often… */
const BACKGROUND_WAIT_MS = 200;
/** …for at most this many protection intervals. */
const BACKGROUND_DEFER = 3;

/** What a log segment's run gave: every change ('whole'), all but fresh names nobody fsync'd ('partial'), or nothing: a seal must follow. */
type SegmentOutcome = 'whole' | 'partial' | 'seal';

/** The omission rules of a segment (seal/omission.ts): what it must hold, and its budget for fresh bytes. */
type SegmentOmit = { fsynced: { inodes: ReadonlySet<number>; freshBytes: number } };

function omitting(fsynced: ReadonlySet<number>, freshBytes: number): SegmentOmit {
  return { fsynced: { inodes: fsynced, freshBytes } };
}
