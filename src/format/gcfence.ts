/**
 * The gc fence: the protocol that keeps gc from deleting an object that a commit (seal, push, fork,
 * rollback, and any later writer of HEAD-like records) relies on, without locks and without a round trip
 * per object. Its only primitives are create-if-absent and a strongly consistent LIST.
 *
 * gc side, per org (one run at a time): create epoch record `<org>/gc/<n>` (the announcement), wait
 * `waitMs`, then mark, scan and delete, then create `<org>/gc/<n>.done`. Epochs are a descending counter
 * (keys.ts), so LIST of two keys tells the newest epoch and whether it is done.
 *
 * Committer side: observe the epoch before relying on any existing object (C1), and again right before
 * writing HEAD (C3). Committing is safe when
 *  - at C1 no gc was running (the newest epoch was done, or there was none), and
 *  - at C3 the epoch is unchanged, or the span C1→C3 plus `commitDeadlineMs` plus `storeDeadlineMs` is
 *    shorter than `waitMs`: a gc announced after C1 marks no earlier than C1 + waitMs, by which time this
 *    commit's HEAD has landed, so its mark sees the commit and keeps everything it references.
 * Otherwise a gc may have deleted, after C1, an object this commit checked before: the committer waits
 * until that gc is done, re-verifies what it relies on (`reverify`, which re-uploads or fails), and
 * observes again. gc runs are serialized by the epoch records themselves, and a run that outlives
 * `maxRunMs` stops deleting, so a crashed gc holds committers up for at most `maxRunMs + staleMarginMs`.
 * docs/operations.md ("gc and concurrent seals") gives the proof and the costs.
 */
import { hostname } from 'node:os';
import { defaults } from '../config.js';
import { gcDoneKey, gcEpochKey, gcPrefix, decodeGen } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { NotFoundError, UserError } from '../util/errors.js';
import type { ObjectStore } from './objects.js';

/** What one LIST of `<org>/gc/` says. */
export interface EpochState {
  /** Newest epoch number, or null when this org never ran a gc with the fence. */
  epoch: number | null;
  /** The newest epoch has its `.done` record (true when there is no epoch). */
  done: boolean;
  /** Wall-clock start of the newest epoch (from its record), for staleness; 0 when unknown. */
  startedMs: number;
  /** That gc's wait before marking (from its record); 0 when unknown, which makes no commit skip waiting. */
  waitMs: number;
  /** Committer's monotonic time (ms) when the LIST answered. */
  atMs: number;
}

export interface FenceOptions {
  /** gc's wait between announcing an epoch and marking (gc side; committers read it from the record). */
  waitMs: number;
  /** Longest a committer may take from its C3 observation to starting the HEAD write. */
  commitDeadlineMs: number;
  /** Longest a store write may take to land once started (the retry deadline). */
  storeDeadlineMs: number;
  /** A gc stops deleting this long after it started; committers treat older running epochs as dead after a margin. */
  maxRunMs: number;
  staleMarginMs: number;
  /** How often a committer waiting for a gc looks again. */
  pollMs: number;
  /** Monotonic clock (ms) and wall clock (ms since the epoch); sleep. Injected by tests. */
  monotonic: () => number;
  wallClock: () => number;
  sleep: (ms: number) => Promise<void>;
}

export const defaultFenceOptions: FenceOptions = {
  waitMs: defaults.gcFenceWaitMs,
  commitDeadlineMs: defaults.gcCommitDeadlineMs,
  storeDeadlineMs: defaults.storeRetryDeadlineMs,
  maxRunMs: defaults.gcMaxRunMs,
  staleMarginMs: defaults.gcStaleMarginMs,
  pollMs: 2_000,
  monotonic: () => performance.now(),
  wallClock: Date.now,
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

interface EpochRecord {
  v: 1;
  epoch: number;
  host: string;
  pid: number;
  startedMs: number;
  waitMs: number;
}

function parseRecord(data: Buffer): EpochRecord | null {
  try {
    const r = JSON.parse(data.toString('utf8')) as Partial<EpochRecord>;
    return r.v === 1 && typeof r.startedMs === 'number' && typeof r.epoch === 'number' && typeof r.waitMs === 'number' ? (r as EpochRecord) : null;
  } catch {
    return null;
  }
}

export class GcFence {
  readonly opts: FenceOptions;
  /** Epoch records are immutable: each is read once. */
  private readonly records = new Map<number, EpochRecord | null>();

  constructor(readonly store: Store, readonly org: string, opts: Partial<FenceOptions> = {}) {
    this.opts = { ...defaultFenceOptions, ...opts };
  }

  /** One LIST: the newest epoch and whether it is done. */
  async observe(): Promise<EpochState> {
    const prefix = gcPrefix(this.org);
    const keys: string[] = [];
    for await (const o of this.store.list(prefix, 2)) keys.push(o.key.slice(prefix.length));
    const atMs = this.opts.monotonic();
    const newest = keys[0];
    if (newest === undefined || !/^[0-9]{13}$/.test(newest)) return { epoch: null, done: true, startedMs: 0, waitMs: 0, atMs };
    const epoch = decodeGen(newest);
    const done = keys[1] === `${newest}.done`;
    const rec = await this.record(epoch);
    return { epoch, done, startedMs: rec?.startedMs ?? 0, waitMs: rec?.waitMs ?? 0, atMs };
  }

  /**
   * A new look, as `observe` would answer it, with one existence check instead of a LIST when `since` saw
   * no gc running: epochs are created one after another (`beginEpoch` creates n+1 only after seeing n), so
   * while epoch `since.epoch + 1` does not exist, the newest epoch is still `since.epoch`, and done stays
   * done. When it exists, this is `observe`.
   */
  async recheck(since: EpochState): Promise<EpochState> {
    if (!since.done) return this.observe();
    const next = gcEpochKey(this.org, since.epoch === null ? 0 : since.epoch + 1);
    if ((await this.store.has([next])).has(next)) return this.observe();
    return { ...since, atMs: this.opts.monotonic() };
  }

  private async record(epoch: number): Promise<EpochRecord | null> {
    if (!this.records.has(epoch)) {
      // A missing or unreadable record counts as unknown (never stale, no wait to rely on); store errors propagate.
      const data = await this.store.get(gcEpochKey(this.org, epoch)).catch((e: unknown) => {
        if (e instanceof NotFoundError) return Buffer.alloc(0);
        throw e;
      });
      this.records.set(epoch, parseRecord(data));
    }
    return this.records.get(epoch) ?? null;
  }

  /** A running epoch whose gc has outlived maxRunMs (by the margin) deletes nothing more. */
  isStale(s: EpochState): boolean {
    return !s.done && s.startedMs > 0 && this.opts.wallClock() - s.startedMs > this.opts.maxRunMs + this.opts.staleMarginMs;
  }

  /** Whether a commit that observed `since` before relying on objects may write HEAD now that it sees `now`. */
  safe(since: EpochState, now: EpochState): boolean {
    const settled = (s: EpochState): boolean => s.done || this.isStale(s);
    if (!settled(since)) return false;
    if (now.epoch === since.epoch) return true;
    // Exactly one gc announced since C1: it marks no earlier than its announcement + its wait.
    if (now.epoch !== (since.epoch === null ? 0 : since.epoch + 1)) return false;
    const span = now.atMs - since.atMs + this.opts.commitDeadlineMs + this.opts.storeDeadlineMs;
    return span < now.waitMs;
  }

  /** Waits until no gc is running (or the running one is stale); returns that observation. */
  async settled(): Promise<EpochState> {
    const giveUp = this.opts.monotonic() + this.opts.maxRunMs + this.opts.staleMarginMs;
    for (;;) {
      const s = await this.observe();
      if (s.done || this.isStale(s)) return s;
      if (this.opts.monotonic() > giveUp) {
        throw new UserError(`gc epoch ${s.epoch} of org ${this.org} has not ended for hours and its record is unreadable; run 'homefs gc --org ${this.org}' to close it`);
      }
      await this.opts.sleep(this.opts.pollMs);
    }
  }

  /**
   * Runs `write` (the HEAD write) once it is safe. `since` was observed before the commit relied on any
   * existing object. When a gc may have overlapped, waits for it, runs `reverify` (which must make every
   * object the commit references present again, or throw), and looks again. Returns write's result and the
   * observation made right before it (a safe `since` for the next commit of the same process).
   *
   * `first`, when given, is the C3 look already made by the caller (concurrently with writing the objects
   * the commit references, which must all have landed before this is called): it is used when it is at most
   * `commitDeadlineMs` old, so a commit's last round trip before HEAD is only HEAD itself.
   */
  async commit<T>(since: EpochState, reverify: () => Promise<void>, write: () => Promise<T>, first?: EpochState): Promise<{ result: T; observed: EpochState }> {
    let base = since;
    let now = first ?? (await this.observe());
    for (;;) {
      if (this.safe(base, now) && this.opts.monotonic() - now.atMs <= this.opts.commitDeadlineMs) {
        return { result: await write(), observed: now };
      }
      if (this.safe(base, now)) {
        now = await this.observe(); // only too old: look again
        continue;
      }
      base = now.done || this.isStale(now) ? now : await this.settled();
      await reverify();
      now = await this.observe();
    }
  }

  /** gc: announce epoch n+1 (one run at a time per org). Returns its number. */
  async beginEpoch(): Promise<number> {
    const s = await this.observe();
    // A running epoch whose record is unreadable has no owner to wait for: the next gc abandons it.
    if (!s.done && !this.isStale(s) && s.startedMs > 0) {
      throw new UserError(
        `another gc of org ${this.org} is running (epoch ${s.epoch}, started ${new Date(s.startedMs).toISOString()}); wait for it, or if it crashed, run gc again after ${Math.round((this.opts.maxRunMs + this.opts.staleMarginMs) / 60_000)} minutes`,
      );
    }
    if (s.epoch !== null && !s.done) await this.store.putIfAbsent(gcDoneKey(this.org, s.epoch), Buffer.from(JSON.stringify({ v: 1, abandoned: true, endedMs: this.opts.wallClock() })));
    const epoch = s.epoch === null ? 0 : s.epoch + 1;
    const rec: EpochRecord = { v: 1, epoch, host: hostname(), pid: process.pid, startedMs: this.opts.wallClock(), waitMs: this.opts.waitMs };
    if (!(await this.store.putIfAbsent(gcEpochKey(this.org, epoch), Buffer.from(JSON.stringify(rec))))) {
      throw new UserError(`another gc of org ${this.org} started at the same moment (epoch ${epoch}); run gc again later`);
    }
    return epoch;
  }

  /** gc: ends the epoch; committers waiting on it go on. */
  async endEpoch(epoch: number, summary: Record<string, number>): Promise<void> {
    await this.store.putIfAbsent(gcDoneKey(this.org, epoch), Buffer.from(JSON.stringify({ v: 1, endedMs: this.opts.wallClock(), ...summary })));
  }
}

/**
 * The re-verification of a commit that deduplicated through `objects` (an ObjectStore.tracking view used
 * since its first look): reused meta objects that are gone are written again, and `reupload` gets the
 * reused blocks that are gone (it uploads them from its own bytes, or throws to give up with HEAD unchanged).
 */
export function reverifyReused(objects: ObjectStore, reupload: (hashes: string[]) => Promise<void>): () => Promise<void> {
  return async () => {
    const gone = await objects.restoreReused();
    if (gone.length > 0) await reupload(gone);
  };
}
