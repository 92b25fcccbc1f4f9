/**
 * A mounted home and its lifecycle: waking → active ⇄ parked → securing → asleep.
 *
 * `wake` claims the lease, picks the base (local journal or HEAD), opens the block cache, mounts FUSE and
 * starts the control socket. Activity keeps the home active; after `parkAfterMs` without requests it is
 * parked, and a parked home with changes is sealed at most once per `idleSealMs`. `sleep` (also SIGTERM,
 * SIGINT and an external umount) seals, unmounts, seals what the unmount flushed, and releases the lease.
 *
 * This module is the wake and mount sequence. The running home it brings up is built in two layers below:
 * its services (activity and parking, protection wiring, control requests and status, saving the hot set
 * and the namespace pack, sleep: running.ts) over how its changes reach the store (seals and fsync log
 * segments, and the state they share: commits.ts). What a home is configured with: mountconfig.ts.
 */
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { BlockCache } from '../cache/blockcache.js';
import { FuseAdapter } from '../fs/adapter.js';
import type { Session } from '../fuse/types.js';
import { Content } from '../inodes/content.js';
import { UpperFiles } from '../inodes/upper.js';
import { HomeView } from '../inodes/view.js';
import { NeighbourPrefetch } from '../inodes/neighbours.js';
import { decodeTree } from '../format/codec.js';
import { Excludes } from '../format/excludes.js';
import { TreeWalk } from './treewalk.js';
import { ObjectStore } from '../format/objects.js';
import { GcFence } from '../format/gcfence.js';
import { seal } from '../seal/seal.js';
import { newChain } from './logchain.js';
import { MeteredStore } from '../store/metered.js';
import { defaults, storeTestOptions } from '../config.js';
import { headsPrefix, objectsPrefix } from '../store/keys.js';
import { withWriteDelays } from '../store/faulty.js';
import { overNetwork, type Store } from '../store/store.js';
import { HeadConflictError, UserError, errorMessage } from '../util/errors.js';
import { chooseBase, readOnlyStore } from './base.js';
import { serveControl } from './control.js';
import { startClaim, type Claim } from './claim.js';
import { GitIndexPrefetch } from './gitindex.js';
import { HotSet } from './hotset.js';
import { NsPack } from './nspack.js';
import { backgroundSlicer } from '../util/slicer.js';
import { wantsNsPack } from '../transfer/nspack.js';
import { PackReads } from './packreads.js';
import { WakePhases } from './phases.js';
import { RunningHome } from './running.js';
import { passthroughWanted, type HomeHooks, type MountConfig } from './mountconfig.js';
import { hasCaps } from '../util/caps.js';

export type { HomeHooks, HomeState, MountConfig } from './mountconfig.js';

type MountFn = (mountpoint: string, ops: ReturnType<FuseAdapter['ops']>, opts: Record<string, unknown>) => Session;

/** What the daemon started before the wake: the store being opened, and when it started and imported. */
export interface WakeStart {
  /** The store, opening (mount.ts): its retries logged from its first request, its writes gated by the probe. */
  store: Promise<Store>;
  /** performance.now() at the daemon's start of work (after Node's start and the CLI's imports) and after its imports. */
  marks?: { startup: number; imports: number };
  /** The pid lock and the lease, claimed while the daemon imported homefs (claim.ts); else wake starts it. */
  claim?: Claim;
}

/** How long the wake's background work waits for the kernel's INIT at most. */
const INIT_WAIT_MS = 1000;
/** Background work at wake takes a time slice per this long while the foreground is busy. */
const BUSY_PAUSE_MS = 50;

export class MountedHome extends RunningHome {
  /**
   * What background work at wake awaits between items: a turn of the loop once its time slice is used up
   * (util/slicer.ts), and a pause while the agent's requests flow (foreground.ts), so that it takes only a
   * little of the daemon's thread while they do.
   */
  private readonly backgroundPause = async (): Promise<void> => {
    await backgroundSlicer.pause();
    if (this.foreground.busy()) await new Promise((resolve) => setTimeout(resolve, BUSY_PAUSE_MS));
  };

  private answeredInit: () => void = () => undefined;
  private readonly initAnswered = new Promise<void>((resolve) => {
    this.answeredInit = resolve;
  });

  /**
   * Resolves once the kernel's INIT has been answered (the mount serves), or after `INIT_WAIT_MS` whatever
   * happened (a kernel that is slow to send it must not hold the background work back for ever).
   */
  initialized(): Promise<void> {
    return Promise.race([this.initAnswered, new Promise<void>((resolve) => setTimeout(resolve, INIT_WAIT_MS).unref())]);
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
      // index becomes a table in a few ms as soon as it arrives (docs/decisions/0082-cache-hops-and-pack-table.md),
      // so a move's prefetches of what the wake pack lacks read the pack's windows.
      const packReads = overNetwork(store.url) ? new PackReads(store, cfg.org, cfg.home, defaults.packReads, log) : null;
      void packReads?.load(); // in the background: fetches before it has loaded go to blocks/
      let nsPack: NsPack | null = null; // (made below, on the cache; the cache takes its trees not cut yet)
      const cache = new BlockCache({
        dir: paths.orgCache, store, org: cfg.org, maxBytes: cfg.cacheBytes, logger: log, ...(packReads ? { pack: packReads } : {}), trees: { take: (h) => nsPack?.take(h) },
      });
      const cacheReady = cache.init().then(() => void undo.push(() => cache.close()));
      const hot = new HotSet(store, cfg.org, cfg.home, cache, log, cfg.cacheBytes / 2);
      // A read-only mount reads the pack at wake like any other (inspection and review forks wake as fast), and never writes one.
      nsPack = wantsNsPack(store.url) ? new NsPack(store, cfg.org, cfg.home, cache, log) : null;
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
        readAtOnce: (h: string, size: number) => {
          const data = cache.readAtOnce(h, size);
          if (data) hot.record('block', h, undefined);
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
      const headRead = claim.headRead();
      const choice = await chooseBase(objects, cfg.org, cfg.home, paths, claimant, log, async (stale) => {
        const c = new Content(stale, upper, blocks, contentOpts);
        try {
          const staleFence = { gc: new GcFence(store, cfg.org), observed: null };
          await seal({ journal: stale, content: c, objects, excludes, home: cfg.home, host: hostname(), parallelism: defaults.sealParallelism, fence: staleFence }, 'conflict');
        } catch (e) {
          if (!(e instanceof HeadConflictError)) throw e;
          log.warn({ err: e.message }, 'local changes kept as a conflict snapshot');
        }
      }, lease?.token ?? null, headRead ? { head: headRead, logListing: (gen) => claim.takeLogListing(gen) } : undefined);
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
        budgetBytes: defaults.cache.neighbourBudgetBytes,
        subtreeBudgetBytes: remote ? defaults.cache.subtreeBudgetBytes : defaults.cache.localSubtreeBudgetBytes,
      });
      // A cold read of a small file goes to the neighbour prefetch and to the git-index prefetch (set below).
      let git: GitIndexPrefetch | undefined;
      const coldReads = { wants: (size: number) => neighbours.wants(size), coldRead: (ino: number) => { neighbours.coldRead(ino); git?.coldRead(ino); } };
      const content = new Content(journal, upper, blocks, { ...contentOpts, neighbours: coldReads });
      content.usedBytes = Content.seedUsedBytes(journal);
      const recovered = content.recoverLive();
      if (recovered > 0) log.info({ files: recovered }, 'files left open through passthrough by a killed daemon: sizes taken from their upper files');
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
      // The background work starts once the kernel's INIT is answered: until then the kernel holds every request
      // (the agent's first `cat`), and work started at once held the loop ahead of INIT for up to 250 ms. The
      // warm-up's bulk comes first. The namespace pack's trees are cut a slice at a time and only a little while
      // the agent's requests flow (`backgroundPause`): a lookup takes the tree it needs from the pack at once
      // (docs/decisions/0078-wake-background-order.md).
      const root = choice.rootTree;
      void h.initialized().then(() => {
        hot.serving(); // (the bulk's requests go out before the walk's, which starts a turn of the loop later)
        if (root && h.nsPack) setImmediate(() => h.walkNamespace(root, remote));
        void hot.warmUp();
      });
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
      maxRecords: this.cfg.maxRecords ?? defaults.maxRecords,
    }, this.log);
    const ops = adapter.ops();
    this.passthroughAsk = passthroughWanted(this.cfg, (c) => hasCaps(c), this.upper.dir);
    // At INIT the kernel has said whether it takes passthrough; the writeback cache is off where it does.
    ops.init = () => {
      const granted = this.session?.caps().passthrough ?? false;
      adapter.usePassthrough(granted);
      this.content.kernelOwnsTimes = !this.cfg.readOnly && !granted;
      this.passthroughState = granted ? 'on' : this.passthroughAsk.ask ? 'off: the kernel does not offer it' : `off: ${this.passthroughAsk.why}`;
      this.passthroughOpens = granted ? adapter.passthrough : undefined;
      this.preloaded = adapter.preloads.stats;
      setImmediate(this.answeredInit); // (after this returns, the binding sends INIT's reply)
    };
    try {
      this.session = mountFn(this.cfg.mountpoint, ops, {
        fsname: `homefs:${this.cfg.org}/${this.cfg.home}`, subtype: 'homefs', allowOther: this.cfg.allowOther,
        defaultPermissions: true, readOnly: this.cfg.readOnly, autoUnmount: true, writebackCache: !this.cfg.readOnly,
        spinUs: this.cfg.fuseSpinUs ?? defaults.fuseSpinUs, handleKillpriv: true, idlePollUs: this.cfg.fuseIdlePollUs ?? defaults.fuseIdlePollUs,
        passthrough: this.passthroughAsk.ask,
      });
    } catch (e) {
      throw new UserError(errorMessage(e)); // fuse/index.ts says what went wrong and what to do, in one line
    }
    adapter.session = this.session;
    this.kernelWrites = adapter;
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
   * skips it (its journal already holds the directories it loaded). A namespace pack of this snapshot
   * that gave every tree leaves nothing to walk for; on a store on local disk (not `remote`) the walk runs
   * only to complete a pack of an older snapshot: without one a round trip costs nothing, and the walk
   * would only compete with the first reads.
   */
  private walkNamespace(root: string, remote: boolean): void {
    const started = Date.now();
    const walk = new TreeWalk((h) => this.cache.getInBackground('meta', h), this.backgroundPause);
    this.walk = walk;
    // The namespace pack first (a few ranged GETs); the walk then finds its trees cached and fetches the rest.
    // A pack that takes too long (a hung store) does not hold the walk back; a pack of this root that gave
    // every tree leaves nothing to walk for.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, defaults.nsPack.waitMs);
    });
    Promise.race([this.nsPack?.load(root, this.backgroundPause), late]).finally(() => clearTimeout(timer)).then((pack) => {
      if (!remote && !pack?.found) return;
      if (pack?.sameRoot && pack.rejected === 0) return;
      return walk.run(root).then((r) => {
        this.log.info({ op: 'treewalk', ...r, ms: Date.now() - started }, 'namespace fetched');
      });
    }).catch(() => undefined);
  }

}
