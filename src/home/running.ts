/**
 * The running home's services, the layer of MountedHome between its wake (home.ts) and its commits
 * (commits.ts): activity and parking (`tick`), the protection wiring (write-behind, the protection interval,
 * presealing), the control socket's requests and `status`, saving the hot set and the namespace pack, and
 * sleep.
 */
import type { Server } from 'node:net';
import { Excludes } from '../format/excludes.js';
import type { TreeWalk } from './treewalk.js';
import { LogFencedError, type SealResult } from '../seal/seal.js';
import { defaults } from '../config.js';
import { retrying } from '../util/backoff.js';
import { HeadConflictError, errorMessage } from '../util/errors.js';
import type { ControlReply, ControlRequest } from './control.js';
import { homeStatus } from './report.js';
import { Presealer, excludedIno } from '../seal/preseal.js';
import { Protection, type ProtectionReport } from './protect.js';
import { startWriteBehind } from './writebehind.js';
import type { PackReads } from './packreads.js';
import { HomeCommits } from './commits.js';
import type { HomeState } from './mountconfig.js';
import type { PassthroughOpens } from '../fs/passthrough.js';

export abstract class RunningHome extends HomeCommits {
  private lastActivity = Date.now();
  protected timer: NodeJS.Timeout | undefined;
  protected control: Server | undefined;
  private sleeping: Promise<SealResult | null> | undefined;
  protected walk: TreeWalk | undefined;
  /** Cold reads from the push pack (set by wake; null on a local store). */
  packReads: PackReads | null = null;
  private exitWith: (code: number) => void = () => undefined;
  /** FUSE passthrough: what the mount asked for, what it got (status), and its opens. */
  protected passthroughAsk: { ask: boolean; why: string } = { ask: false, why: 'not mounted' };
  protected passthroughState = 'off';
  protected passthroughOpens: PassthroughOpens | undefined;
  /** Small files put into the kernel's page cache at their first open for reading (fs/preload.ts). */
  protected preloaded: { files: number; bytes: number } | null = null;
  /**
   * Resolves with the daemon's exit status once the home is asleep for good: after `sleep()` (a signal,
   * `homefs sleep`) or an unmount from outside. The caller (cli/mount.ts) decides to end the process.
   */
  readonly finished: Promise<number> = new Promise((resolve) => {
    this.exitWith = resolve;
  });

  protected touch(): void {
    this.lastActivity = Date.now();
    if (this.state === 'parked') this.state = 'active';
  }

  protected tick(): void {
    this.cacheMetrics.sync();
    if (this.state !== 'active' && this.state !== 'parked') return;
    if (this.content.live.size > 0) {
      // Files open through passthrough change without requests: look at them (their writes are activity).
      const before = this.journal.mutations;
      this.content.refreshAll();
      if (this.journal.mutations !== before) this.touch();
    }
    this.protection?.tick(this.state === 'active');
    const idle = Date.now() - this.lastActivity;
    if (this.state === 'active' && idle >= this.cfg.parkAfterMs) this.state = 'parked';
    if (this.state === 'parked' && this.journal.changedCount > 0 && !this.sealer.busy && Date.now() - this.lastSealAt >= this.cfg.idleSealMs) {
      this.sealer.request('idle').catch(() => undefined);
    }
  }

  /** Write-behind (unless turned off) and the protection interval (unless 0). */
  protected startProtection(): void {
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
        busy: () => this.foreground.busy(),
        log: this.log,
      }, interval);
    }
  }

  protected startPreseal(): void {
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

  /** Stores the namespace pack of the final snapshot unless the stored one is of it; never throws. */
  private async saveNsPack(): Promise<void> {
    if (!this.nsPack || this.cfg.readOnly || this.lease?.lost || this.lastSnapshot === null) return;
    try {
      await this.nsPack.save((await this.objects.getSnapshot(this.lastSnapshot)).root);
    } catch (e) {
      this.log.warn({ op: 'nspack.save', err: errorMessage(e) }, 'cannot store the namespace pack; the next wake fetches trees one by one');
    }
  }

  /** Stores the session's hot set (never while another host holds the lease); a failure is only logged. */
  protected override async saveHotSet(withPack: boolean): Promise<void> {
    if (this.cfg.readOnly || this.lease?.lost) return;
    try {
      await this.hot.save(this.lastSnapshot, withPack);
    } catch (e) {
      this.log.warn({ op: 'hotset.save', err: errorMessage(e) }, 'cannot store the hot set; the next wake will be colder');
    }
  }

  protected async handle(req: ControlRequest): Promise<ControlReply> {
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
      trim: this.view.trimCounts,
      fuse: { passthrough: this.passthroughState, opens: this.passthroughOpens?.stats ?? null, liveFiles: this.content.live.size, preloaded: this.preloaded },
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
      runs: this.protection?.runs ?? 0, kernelFlushes: this.kernelFlushes,
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
