/**
 * A mounted home and its lifecycle: waking → active ⇄ parked → securing → asleep.
 *
 * `wake` claims the lease, picks the base (local journal or HEAD), opens the block cache, mounts FUSE and
 * starts the control socket. Activity keeps the home active; after `parkAfterMs` without requests it is
 * parked, and a parked home with changes is sealed at most once per `idleSealMs`. `sleep` (also SIGTERM,
 * SIGINT and an external umount) seals, unmounts, seals what the unmount flushed, and releases the lease.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Server } from 'node:net';
import type { Logger } from 'pino';
import { BlockCache } from '../cache/blockcache.js';
import { FuseAdapter } from '../fs/adapter.js';
import type { Session } from '../fuse/types.js';
import { Content } from '../inodes/content.js';
import type { Journal } from '../inodes/journal.js';
import { UpperFiles } from '../inodes/upper.js';
import { HomeView } from '../inodes/view.js';
import { NeighbourPrefetch } from '../inodes/neighbours.js';
import { decodeTree } from '../format/codec.js';
import { Excludes } from '../format/excludes.js';
import { TreeWalk } from './treewalk.js';
import { ObjectStore } from '../format/objects.js';
import { GcFence } from '../format/gcfence.js';
import { LogFencedError, LogFullError, LogUnsafeError, SegmentTrees, seal, sealToLog, type LogResult, type SealDeps, type SealResult } from '../seal/seal.js';
import type { ReuseLog } from '../format/objects.js';
import { dropOldLogs } from '../fsynclog/homelog.js';
import { chainFor, chainLanded, newChain, type LogState } from './logchain.js';
import type { HomeMetrics } from '../metrics/homefs.js';
import { MeteredStore } from '../store/metered.js';
import { pruneHistory } from '../ops/history.js';
import { defaults, storeTestOptions } from '../config.js';
import { headsPrefix, objectsPrefix } from '../store/keys.js';
import { withWriteDelays } from '../store/faulty.js';
import { overNetwork, type Store } from '../store/store.js';
import { retrying } from '../util/backoff.js';
import { HeadConflictError, UserError, errorMessage } from '../util/errors.js';
import { chooseBase, LOG_OK, LOG_SEQ, readOnlyStore } from './base.js';
import { serveControl, type ControlReply, type ControlRequest } from './control.js';
import type { Lease } from './lease.js';
import { startClaim, type Claim } from './claim.js';
import type { HomePaths } from './paths.js';
import { Sealer } from './sealer.js';
import { CacheMetricsMirror, Capacity, dirtyTotals, homeStatus } from './report.js';
import { HashPool } from '../hash/pool.js';
import { Presealer, excludedIno } from '../seal/preseal.js';
import { Omissions } from '../seal/omission.js';
import type { WriteBehind } from '../seal/writebehind.js';
import { Protection, type ProtectionReport } from './protect.js';
import { startWriteBehind } from './writebehind.js';
import { Foreground } from './foreground.js';
import { GitIndexPrefetch } from './gitindex.js';
import { HotSet } from './hotset.js';
import { NsPack } from './nspack.js';
import { wantsNsPack } from '../transfer/nspack.js';
import { PackReads } from './packreads.js';
import { WakePhases } from './phases.js';


export type HomeState = 'waking' | 'active' | 'parked' | 'securing' | 'asleep';

export interface MountConfig {
  org: string;
  home: string;
  mountpoint: string;
  storeUrl: string;
  stateDir?: string;
  cacheDir?: string;
  cacheBytes: number;
  fsync: 'store' | 'local';
  readOnly: boolean;
  allowOther: boolean;
  takeover: boolean;
  quotaBytes: number;
  idleSealMs: number;
  parkAfterMs: number;
  leaseTtlMs: number;
  /** The FUSE loop's awake wait for the next request, µs (config.ts defaults.fuseSpinUs); absent: that default. */
  fuseSpinUs?: number;
  /** The idle pollers' window, µs (config.ts defaults.fuseIdlePollUs); absent: that default. */
  fuseIdlePollUs?: number;
  excludes: string[];
  /** Continuous protection's interval (home/protect.ts), ms; 0: off; absent: config.ts defaults.protectIntervalMs. */
  protectIntervalMs?: number;
  /** Upload quiet files' blocks in the background (seal/writebehind.ts); absent: on. */
  writeBehind?: boolean;
  /** Uploads in flight for background work while the foreground is busy; absent: config.ts defaults.backgroundWrites. */
  backgroundWrites?: number;
}

type MountFn = (mountpoint: string, ops: ReturnType<FuseAdapter['ops']>, opts: Record<string, unknown>) => Session;

/** What the daemon hands a home besides its config: where it reports, and whom it tells it is securing. */
export interface HomeHooks {
  metrics: HomeMetrics;
  /** Called once when the final seal begins (sleep, SIGTERM, unmount): systemd's STOPPING=1. */
  onSecuring?: () => void;
  /** Where the metrics endpoint listens (--metrics-addr), for `homefs status`. */
  metricsUrl?: string | undefined;
}

/** What the daemon started before the wake: the store being opened, and when it started and imported. */
export interface WakeStart {
  /** The store, opening (mount.ts): its retries logged from its first request, its writes gated by the probe. */
  store: Promise<Store>;
  /** performance.now() at the daemon's start of work (after Node's start and the CLI's imports) and after its imports. */
  marks?: { startup: number; imports: number };
  /** The pid lock and the lease, claimed while the daemon imported homefs (claim.ts); else wake starts it. */
  claim?: Claim;
}

export class MountedHome {
  state: HomeState = 'waking';
  private lastActivity = Date.now();
  private lastSealAt = 0;
  private lastSnapshot: string | null = null;
  private lastError: string | null = null;
  private seals = 0;
  private lastPrune = 0;
  private bytesUploaded = 0;
  private timer: NodeJS.Timeout | undefined;
  private control: Server | undefined;
  private session: Session | undefined;
  private sleeping: Promise<SealResult | null> | undefined;
  private walk: TreeWalk | undefined;
  /** Cold reads from the push pack (set by wake; null on a local store). */
  packReads: PackReads | null = null;
  private readonly capacity: Capacity;
  private readonly cacheMetrics: CacheMetricsMirror;
  private readonly sealer: Sealer<SealResult | null>;
  private readonly host = hostname();
  /** Seals hash blocks on a worker thread so the FUSE loop keeps answering meanwhile. */
  private readonly hashPool = new HashPool({ threads: defaults.sealHashThreads });
  /** Hashes and uploads the blocks of large files while they are written (seal/preseal.ts); none when read-only. */
  private preseal: Presealer | undefined;
  /** Stores the blocks of quiet changed files in the background (seal/writebehind.ts); none when read-only. */
  private writeBehind: WriteBehind | undefined;
  /** Whether users' requests are flowing: background work yields to them (foreground.ts). */
  private readonly foreground = new Foreground();
  /** Segments waiting for the running seal's capture. */
  private tailWaiters = 0;
  /** The bounded loss window (home/protect.ts); none when read-only. */
  private protection: Protection | undefined;
  private exitWith: (code: number) => void = () => undefined;
  /**
   * Resolves with the daemon's exit status once the home is asleep for good: after `sleep()` (a signal,
   * `homefs sleep`) or an unmount from outside. The caller (cli/mount.ts) decides to end the process.
   */
  readonly finished: Promise<number> = new Promise((resolve) => {
    this.exitWith = resolve;
  });
  /** The org's gc fence and this mount's last look at it (format/gcfence.ts). */
  private readonly gcFence: SealDeps['fence'];
  /** Where fsyncs go (fsynclog/homelog.ts): the log of HEAD generation `gen`, next sequence number; null: seals. */
  private logState: LogState | null = null;
  private logSegments = 0;
  private logBytes = 0;
  /** Another host claimed this home's log: nothing more goes to the store from this mount. */
  private fenced = false;
  /** Logs of older generations may exist (from before this mount): the next seal deletes their segments. */
  private oldLogs = true;
  /**
   * The seal running now (docs/decisions.md "fsync during a seal"): no ordinary segment starts meanwhile.
   * With `tail`, fsyncs go to its log tail: segments of its base generation `gen` from `seq` on; `walked`
   * resolves with the seal's dedupe record once it has captured every file (null if it ended before).
   * `done` resolves when it has ended.
   */
  private sealing: { gen: number; seq: number; tail: boolean; walked: Promise<ReuseLog | null>; done: Promise<void> } | null = null;
  /**
   * Group commit of fsyncs into log segments, one segment at a time: fsyncs that arrive while one is in
   * flight form the next ('whole' or 'partial': the fsync is in the log; 'seal': it needs a seal).
   */
  private readonly segmenter: Sealer<SegmentOutcome>;
  /** Inodes fsync'd since the segment in flight captured (the next one must hold them: seal/omission.ts). */
  private fsynced = new Set<number>();
  /** Fresh names a segment may leave out, and what landed segments and seals held. */
  private readonly omissions: Omissions;
  /** The last segment started: settled when it landed or failed (with its error), and when its content was captured. */
  private logWrite: Promise<unknown> = Promise.resolve(null);
  /** Trees log segments computed, reused by the next segment while unchanged (seal.ts). */
  private readonly segmentTrees = new SegmentTrees();
  private logCaptured: Promise<void> = Promise.resolve();

  private constructor(
    readonly cfg: MountConfig,
    readonly paths: HomePaths,
    private readonly log: Logger,
    private readonly store: Store,
    private readonly objects: ObjectStore,
    private readonly cache: BlockCache,
    private readonly hot: HotSet,
    /** The namespace pack (null where the store wants none: transfer/nspack.ts `wantsNsPack`). */
    private readonly nsPack: NsPack | null,
    private readonly journal: Journal,
    private readonly upper: UpperFiles,
    private readonly content: Content,
    private readonly view: HomeView,
    private readonly lease: Lease | undefined,
    private readonly unlock: () => void,
    private readonly hooks: HomeHooks,
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
   * Brings the home up to a live mount. If anything fails on the way, everything taken so far is given
   * back before the error is rethrown (the lease released, the cache, journal, hash worker and store
   * closed, the pid lock dropped), so that the process can exit at once and a retry is not refused.
   */
  static async wake(cfg: MountConfig, log: Logger, mountFn: MountFn, hooks: HomeHooks, start: WakeStart): Promise<MountedHome> {
    const phases = new WakePhases(start.marks);
    phases.mark('services');
    let claim: Claim;
    try {
      claim = start.claim ?? startClaim(cfg, start.store, log);
    } catch (e) {
      await start.store.then((s) => s.close(), () => undefined);
      throw e;
    }
    claim.meters.bind(hooks.metrics.storeMeters());
    const { paths, unlock } = claim;
    const undo: Array<() => Promise<void> | void> = [unlock];
    let failed = false; // the wake gave everything back: nothing may start on what it closed
    try {
      const opened = await start.store;
      phases.mark('store');
      const { headDelayMs, blockDelayMs } = storeTestOptions();
      const readable = cfg.readOnly ? await readOnlyStore(opened, cfg.org, cfg.home, log).catch(async (e: unknown) => {
        await opened.close();
        throw e;
      }) : opened;
      const store = new MeteredStore(withWriteDelays(readable, { heads: headsPrefix(cfg.org, cfg.home), headMs: headDelayMs, blocks: objectsPrefix(cfg.org, 'blocks'), blockMs: blockDelayMs }), hooks.metrics.storeMeters());
      undo.push(() => store.close());
      // (before the store closes: undo runs in reverse) A lease the claim took is given back, whatever failed.
      undo.push(() => claim.lease.then((l) => l?.release(), () => undefined));
      const objects = new ObjectStore(store, cfg.org);
      // Cold reads cut out of the push pack, where the store is remote (a local one costs no round trips). Its
      // index is decoded at the first cold read: not inside the wake's chain of round trips.
      const packReads = overNetwork(store.url) ? new PackReads(store, cfg.org, cfg.home, defaults.packReads, log) : null;
      void packReads?.load({ lazy: true }); // in the background: fetches before it has loaded go to blocks/
      const cache = new BlockCache({ dir: paths.orgCache, store, org: cfg.org, maxBytes: cfg.cacheBytes, logger: log, ...(packReads ? { pack: packReads } : {}) });
      const cacheReady = cache.init().then(() => void undo.push(() => cache.close()));
      const hot = new HotSet(store, cfg.org, cfg.home, cache, log, cfg.cacheBytes / 2);
      // A read-only mount reads the pack at wake like any other (inspection and review forks wake as fast), and never writes one.
      const nsPack = wantsNsPack(store.url) ? new NsPack(store, cfg.org, cfg.home, cache, log) : null;
      // The hot set and (for a fresh state directory, the only kind that walks the namespace) the namespace
      // pack come in while the lease and the base take their round trips: both are verified object by object,
      // so they need not wait to know the snapshot. A wake that fails stops them before the cache closes.
      const freshState = !existsSync(paths.journal);
      void cacheReady.then(() => {
        if (failed) return;
        undo.push(() => { // (after the cache's close: undo runs in reverse)
          hot.stop();
          nsPack?.stop();
        });
        void hot.warmUp(); // the hot set first: its entries queue ahead of all but the walk's first levels (the bulk once the mount serves)
        if (freshState) void nsPack?.start();
      }, () => undefined);
      const blocks = {
        read: async (h: string, off: number, len: number) => {
          const data = await cache.read(h, off, len);
          hot.record('block', h, undefined);
          return data;
        },
        get: async (h: string) => {
          const data = await cache.get('block', h);
          hot.record('block', h, data.length);
          return data;
        },
        prefetch: (hs: string[]) => cache.prefetch('block', hs),
        size: (h: string) => cache.size('block', h),
        known: (h: string) => cache.known('block', h),
        pin: (hs: readonly string[]) => hs.forEach((h) => cache.pin('block', h)),
        unpin: (hs: readonly string[]) => hs.forEach((h) => cache.unpin('block', h)),
      };
      const upper = new UpperFiles(paths.upper);
      const excludes = new Excludes(cfg.excludes);
      const contentOpts = { readaheadBlocks: defaults.readaheadBlocks, quotaBytes: cfg.quotaBytes, kernelOwnsTimes: !cfg.readOnly };
      // The lease is claimed (claim.ts) while the block cache opens. chooseBase writes nothing before both.
      const [cacheDone, claimed] = await Promise.allSettled([cacheReady, claim.lease]);
      if (cacheDone.status === 'rejected') throw cacheDone.reason;
      if (claimed.status === 'rejected') throw claimed.reason;
      const lease = claimed.value;
      phases.mark('lease');
      // A claimant fences the previous holder first (base.ts): it may still be writing.
      const claimant = lease !== undefined && (cfg.takeover || lease.foundOther);
      const choice = await chooseBase(objects, cfg.org, cfg.home, paths, claimant, log, async (stale) => {
        const c = new Content(stale, upper, blocks, contentOpts);
        try {
          const staleFence = { gc: new GcFence(store, cfg.org), observed: null };
          await seal({ journal: stale, content: c, objects, excludes, home: cfg.home, host: hostname(), parallelism: defaults.sealParallelism, fence: staleFence }, 'conflict');
        } catch (e) {
          if (!(e instanceof HeadConflictError)) throw e;
          log.warn({ err: e.message }, 'local changes kept as a conflict snapshot');
        }
      }, lease?.token ?? null, claim.headRead());
      phases.mark('base');
      const journal = choice.journal;
      undo.push(async () => {
        await upper.closeAll();
        await journal.close();
      });
      // Prefetch only hides store round trips: on a store on this host's disk it would just pull bytes early.
      const remote = overNetwork(store.url);
      const trees = {
        getTree: async (h: string) => {
          const data = await cache.get('meta', h);
          hot.record('meta', h, data.length);
          return decodeTree(data, h);
        },
        prefetchTrees: (hs: string[]) => cache.prefetch('meta', hs),
      };
      const backgroundTrees = { getTree: async (h: string) => decodeTree(await cache.getInBackground('meta', h), h) };
      const neighbours = new NeighbourPrefetch(journal, blocks, backgroundTrees, {
        maxFileBytes: defaults.cache.neighbourFileBytes,
        budgetBytes: remote ? defaults.cache.neighbourBudgetBytes : 0,
        subtreeBudgetBytes: remote ? defaults.cache.subtreeBudgetBytes : 0,
      });
      // A cold read of a small file goes to the neighbour prefetch and to the git-index prefetch (set below).
      let git: GitIndexPrefetch | undefined;
      const coldReads = { wants: (size: number) => neighbours.wants(size), coldRead: (ino: number) => { neighbours.coldRead(ino); git?.coldRead(ino); } };
      const content = new Content(journal, upper, blocks, { ...contentOpts, neighbours: coldReads });
      content.usedBytes = Content.seedUsedBytes(journal);
      const view = new HomeView(journal, trees);
      if (remote) {
        const g = new GitIndexPrefetch(view, {
          get: (h) => cache.get('block', h), has: (h) => cache.has('block', h), prefetch: (hs) => cache.prefetch('block', hs),
        }, { maxFileBytes: defaults.cache.neighbourFileBytes, budgetBytes: defaults.cache.subtreeBudgetBytes });
        view.onLookup = (parent, name, node) => g.lookedUp(parent, name, node);
        git = g;
      }
      view.onReclaim = (node) => void content.reclaim(node).catch((e: unknown) => log.warn({ op: 'reclaim', ino: node.ino, err: errorMessage(e) }, 'cannot remove the upper file of a deleted file'));
      const ra = choice.rootAttrs;
      view.initRoot(choice.rootTree, ra ? { mode: ra.mode, uid: ra.uid, gid: ra.gid, mtimeNs: ra.mtimeNs, ctimeNs: ra.mtimeNs, atimeNs: ra.mtimeNs } : {}, process.getuid?.() ?? 0, process.getgid?.() ?? 0);
      const h = new MountedHome(cfg, paths, log, store, objects, cache, hot, nsPack, journal, upper, content, view, lease, unlock, hooks);
      h.packReads = packReads;
      h.logState = cfg.fsync === 'store' && choice.log ? { ...choice.log, chain: newChain(choice.log.nextSeq) } : null;
      if (!cfg.readOnly && defaults.presealBlocks) h.startPreseal();
      if (!cfg.readOnly) h.startProtection();
      undo.push(() => h.hashPool.close());
      undo.push(() => {
        h.control?.close();
        h.session?.unmount(); // mounted, but what follows the mount failed
      });
      h.mount(mountFn);
      phases.mark('fuse');
      log.info({ op: 'wake.phases', ms: phases.report() }, 'wake phases (ms)');
      hot.serving();
      // The warm-up's requests for the bulk of the wake pack go out first, then (a turn of the loop later, once
      // they are written) the namespace pack's trees are cut: not before the mount either, inside its round trips.
      const root = choice.rootTree;
      if (root && h.nsPack) void hot.issued().then(() => setImmediate(() => h.walkNamespace(root, remote)));
      return h;
    } catch (e) {
      failed = true;
      for (const step of undo.reverse()) await Promise.resolve().then(step).catch((u: unknown) => log.warn({ err: errorMessage(u) }, 'cleanup after a failed mount'));
      throw e;
    }
  }

  private mount(mountFn: MountFn): void {
    const adapter = new FuseAdapter(this.view, this.content, this.upper, {
      activity: (op) => {
        this.touch();
        this.foreground.request();
        this.hooks.metrics.ops.inc(op);
      },
      observe: (op, ms) => this.hooks.metrics.ops.observe(op, ms / 1000),
      failed: (kind) => this.hooks.metrics.errors.inc({ kind }),
      fsync: (ino) => this.fsync(ino),
      statfs: () => this.capacity.statfs(),
      readOnly: this.cfg.readOnly,
    }, this.log);
    try {
      this.session = mountFn(this.cfg.mountpoint, adapter.ops(), {
        fsname: `homefs:${this.cfg.org}/${this.cfg.home}`, subtype: 'homefs', allowOther: this.cfg.allowOther,
        defaultPermissions: true, readOnly: this.cfg.readOnly, autoUnmount: true, writebackCache: !this.cfg.readOnly,
        spinUs: this.cfg.fuseSpinUs ?? defaults.fuseSpinUs, handleKillpriv: true, idlePollUs: this.cfg.fuseIdlePollUs ?? defaults.fuseIdlePollUs,
      });
    } catch (e) {
      throw new UserError(errorMessage(e)); // fuse/index.ts says what went wrong and what to do, in one line
    }
    adapter.session = this.session;
    this.session.onUnmounted((reason) => {
      this.log.info({ reason }, 'unmounted from outside');
      this.session = undefined;
      this.sleep('unmount').catch(() => undefined);
    });
    this.control = serveControl(this.cfg.mountpoint, (req) => this.handle(req));
    this.timer = setInterval(() => this.tick(), 1000);
    this.timer.unref();
    this.state = 'active';
    this.log.info({ org: this.cfg.org, home: this.cfg.home, mountpoint: this.cfg.mountpoint, head: this.lastSnapshot }, 'mounted');
  }

  /**
   * Fetches every tree of the base snapshot in the background, breadth-first (home/treewalk.ts), so
   * that the namespace of a fresh host costs O(depth) store round trips. A continuing state directory
   * skips it (its journal already holds the directories it loaded). On a store on local disk (not
   * `remote`) the walk runs only when the namespace pack was found: then it finds every tree in memory,
   * and without a pack a round trip costs nothing and the walk would only compete with the first reads.
   */
  private walkNamespace(root: string, remote: boolean): void {
    const started = Date.now();
    const walk = new TreeWalk((h) => this.cache.getInBackground('meta', h));
    this.walk = walk;
    // The namespace pack first (a few ranged GETs); the walk then finds its trees cached and fetches the rest.
    // A pack that takes too long (a hung store) does not hold the walk back.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, defaults.nsPack.waitMs);
    });
    Promise.race([this.nsPack?.load(root), late]).finally(() => clearTimeout(timer)).then((pack) => {
      if (!remote && !pack?.found) return;
      return walk.run(root).then((r) => {
        this.log.info({ op: 'treewalk', ...r, ms: Date.now() - started }, 'namespace fetched');
      });
    }).catch(() => undefined);
  }

  private touch(): void {
    this.lastActivity = Date.now();
    if (this.state === 'parked') this.state = 'active';
  }

  private tick(): void {
    this.cacheMetrics.sync();
    if (this.state !== 'active' && this.state !== 'parked') return;
    this.protection?.tick(this.state === 'active');
    const idle = Date.now() - this.lastActivity;
    if (this.state === 'active' && idle >= this.cfg.parkAfterMs) this.state = 'parked';
    if (this.state === 'parked' && this.journal.changedCount > 0 && !this.sealer.busy && Date.now() - this.lastSealAt >= this.cfg.idleSealMs) {
      this.sealer.request('idle').catch(() => undefined);
    }
  }

  /**
   * Asks the kernel to write back what its writeback cache holds (data, and the mtimes it keeps locally)
   * by running `sync -f` on the mountpoint in a child process: never from this process, which must stay
   * free to serve the requests that flush produces.
   */
  private flushKernel(): Promise<void> {
    if (!this.session) return Promise.resolve();
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
      hash: (data) => this.hashPool.hash(data), fence: this.gcFence,
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
  private async backgroundSeal(reason: 'protect' | 'absorb'): Promise<SealResult | null> {
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

  private get busyWrites(): number {
    return this.cfg.backgroundWrites ?? defaults.backgroundWrites;
  }

  /** Write-behind (unless turned off) and the protection interval (unless 0). */
  private startProtection(): void {
    if (this.cfg.writeBehind !== false) {
      this.writeBehind = startWriteBehind({
        journal: this.journal, content: this.content, view: this.view, objects: this.objects, cache: this.cache,
        excludes: new Excludes(this.cfg.excludes), fence: this.gcFence, hash: (data) => this.hashPool.hash(data),
        presealing: (hash) => this.preseal?.uploading(hash), foreground: this.foreground, log: this.log,
        options: { busyFiles: this.busyWrites },
      });
    }
    this.hooks.metrics.bindProtection(() => this.protectionReport() ?? undefined);
    const interval = this.cfg.protectIntervalMs ?? defaults.protectIntervalMs;
    if (interval > 0) {
      this.protection = new Protection({
        mutations: () => this.journal.mutations,
        flushKernel: () => this.flushKernel(),
        segment: async () => (await this.segmenter.request('protect')) === 'whole',
        seal: () => this.backgroundSeal('protect'),
        log: this.log,
      }, interval);
    }
  }

  private startPreseal(): void {
    const excludes = new Excludes(this.cfg.excludes);
    const p = new Presealer({
      excluded: (ino) => excludedIno(this.journal, excludes, ino),
      hashEarly: (ino, index, into) => this.content.hashEarly(ino, index, (data) => this.hashPool.hash(data), into),
      upload: async (hash, data) => {
        if ((await this.objects.missingBlocks([hash])).size === 0) return false;
        await this.objects.putBlock(hash, data);
        return true;
      },
      onError: (e) => this.log.debug({ op: 'preseal', err: errorMessage(e) }, 'early hash or upload failed; the seal does it'),
    });
    this.preseal = p;
    this.content.onWritten = (ino, offset, end, size) => p.written(ino, offset, end, size);
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

  private async runSeal(reason: string, sealing: MountedHome['sealing'], walked: (r: ReuseLog | null) => void, beforeHead: () => Promise<void>): Promise<SealResult | null> {
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

  /** Stores the namespace pack of the final snapshot unless the stored one is of it; never throws. */
  private async saveNsPack(): Promise<void> {
    if (!this.nsPack || this.cfg.readOnly || this.lease?.lost || this.lastSnapshot === null) return;
    try {
      await this.nsPack.save((await this.objects.getSnapshot(this.lastSnapshot)).root);
    } catch (e) {
      this.log.warn({ op: 'nspack.save', err: errorMessage(e) }, 'cannot store the namespace pack; the next wake fetches trees one by one');
    }
  }

  /**
   * An fsync during a seal: a segment of the seal's base generation after those it absorbs, captured after
   * the seal captured everything, so newer than the seal's snapshot whichever of the two lands first. False
   * when it cannot be written (the seal ended first, the segment would rely on a block the seal deduplicated,
   * or it is too large): the caller then waits for the seal.
   */
  private async tailNow(s: NonNullable<MountedHome['sealing']>, lease: Lease, omit: SegmentOmit): Promise<SegmentOutcome> {
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

  /** Stores the session's hot set (never while another host holds the lease); a failure is only logged. */
  private async saveHotSet(withPack: boolean): Promise<void> {
    if (this.cfg.readOnly || this.lease?.lost) return;
    try {
      await this.hot.save(this.lastSnapshot, withPack);
    } catch (e) {
      this.log.warn({ op: 'hotset.save', err: errorMessage(e) }, 'cannot store the hot set; the next wake will be colder');
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

  private async fsync(ino: number): Promise<void> {
    const t0 = Date.now();
    await this.content.sync(ino);
    if (this.cfg.fsync !== 'store') return this.journal.sync();
    const t1 = Date.now();
    let how = 'log';
    this.fsynced.add(ino);
    if ((await this.segmenter.request('fsync')) === 'seal') {
      how = 'seal';
      await this.sealer.request('fsync');
    }
    this.log.debug({ op: 'fsync', ino, how, syncMs: t1 - t0, ms: Date.now() - t0 }, 'fsync done');
  }

  private async handle(req: ControlRequest): Promise<ControlReply> {
    switch (req.op) {
      case 'status':
        return { ok: true, ...this.status() };
      case 'metrics':
        return { ok: true, text: await this.hooks.metrics.render() };
      case 'sync': {
        const r = await this.sealer.request('sync');
        return { ok: true, snapshot: r?.snapshot ?? this.lastSnapshot, changed: r !== null };
      }
      case 'sleep': {
        const r = await this.sleep('sleep');
        return { ok: true, snapshot: r?.snapshot ?? this.lastSnapshot };
      }
      default:
        return { ok: false, error: 'unknown request' };
    }
  }

  status(): Record<string, unknown> {
    return homeStatus({
      state: this.state, cfg: this.cfg, journal: this.journal, cache: this.cache, storeUrl: this.store.url,
      lastSealAt: this.lastSealAt, lastSnapshot: this.lastSnapshot, lastError: this.lastError, seals: this.seals,
      bytesUploaded: this.bytesUploaded, hotset: { entries: this.hot.entries, touchedBytes: this.hot.touchedBytes, warm: this.hot.warm }, nspack: this.nsPack?.report ?? null, pushpack: this.packReads?.report ?? null,
      preseal: this.preseal ? { hashed: this.preseal.hashed, uploaded: this.preseal.uploaded } : null,
      protection: this.protectionReport(),
      metricsUrl: this.hooks.metricsUrl,
    });
  }

  /** Write-behind's backlog and throughput, and the age of the oldest change not in the store (status, metrics). */
  protectionReport(): ProtectionReport | null {
    const wb = this.writeBehind;
    if (!wb && !this.protection) return null;
    const b = wb?.backlog();
    return {
      intervalMs: this.protection?.intervalMs ?? 0,
      oldestUnprotectedMs: this.protection?.oldestMs() ?? 0,
      backlogFiles: b?.files ?? 0, backlogBytes: b?.bytes ?? 0, backlogOldestMs: b?.oldest != null ? Date.now() - b.oldest : 0,
      filesStored: wb?.filesStored ?? 0, blocksUploaded: wb?.blocksUploaded ?? 0, bytesUploaded: wb?.bytesUploaded ?? 0, blocksFound: wb?.blocksFound ?? 0,
      runs: this.protection?.runs ?? 0,
    };
  }

  /** For /healthz: serving (active or parked, lease held), or why not. */
  health(): { ok: boolean; state: HomeState; reason?: string } {
    if (this.lease?.lost) return { ok: false, state: this.state, reason: 'lease taken over by another host' };
    return { ok: this.state === 'active' || this.state === 'parked', state: this.state };
  }

  /** Final seal and unmount; resolves once the last snapshot is committed, then `finished`. Idempotent. */
  sleep(why: string): Promise<SealResult | null> {
    if (!this.sleeping) {
      this.sleeping = this.doSleep(why);
      this.sleeping.then(() => this.exitWith(0), () => this.exitWith(1));
    }
    return this.sleeping;
  }

  private async doSleep(why: string): Promise<SealResult | null> {
    this.state = 'securing';
    this.log.info({ why }, 'securing');
    this.hooks.onSecuring?.();
    if (this.timer) clearInterval(this.timer);
    // What write-behind has stored the seal takes as it is; what it has not reached, the seal uploads itself.
    await this.protection?.idle();
    await this.writeBehind?.close();
    let last: SealResult | null = null;
    const sealWithRetry = async (): Promise<void> => {
      last = (await retrying(() => this.sealer.request('sleep'), {
        retries: defaults.sleepSealRetries, baseMs: defaults.sleepSealRetryBaseMs, maxMs: defaults.sleepSealRetryMaxMs,
        retryable: (e) => !(e instanceof HeadConflictError) && !(e instanceof LogFencedError) && !this.lease?.lost,
      })) ?? last;
    };
    let failure: unknown;
    try {
      await sealWithRetry();
    } catch (e) {
      failure = e;
    }
    if (this.session) {
      const s = this.session;
      this.session = undefined;
      s.unmount();
    }
    if (!failure) {
      try {
        await sealWithRetry();
      } catch (e) {
        failure = e;
      }
    }
    this.control?.close();
    await this.sealer.idle();
    await this.segmenter.idle(); // a segment whose PUT overlapped the last seal lands before the store closes
    if (!failure) await this.saveHotSet(defaults.hotset.pack);
    if (!failure) await this.saveNsPack();
    if (!failure) await this.lease?.release();
    else this.lease?.stop();
    this.walk?.stop();
    await this.cache.close().catch(() => undefined);
    await this.preseal?.close();
    await this.upper.closeAll();
    await this.hashPool.close();
    await this.journal.close();
    await this.store.close();
    this.unlock();
    this.state = 'asleep';
    if (failure) {
      this.lastError = errorMessage(failure);
      this.log.error({ err: this.lastError }, 'final seal failed: local changes are kept in the state directory and will be sealed by the next mount');
      throw failure;
    }
    this.log.info({ snapshot: this.lastSnapshot }, 'asleep');
    return last;
  }
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
