/**
 * The lease of a home: which host's state directory may mount it read-write, until when. Stored as
 * `<org>/homes/<home>/LEASE` (JSON) and renewed every third of its TTL. A live lease held by another
 * state directory refuses the mount; the same state directory (identified by a token kept in it) reclaims
 * its own lease at once after a crash; `--takeover` claims a live lease, and the caller then fences the old
 * holder by advancing HEAD (its later seals fail the HEAD race and are kept as conflicts).
 *
 * The lease is advisory: safety against two writers comes from HEAD generations, never from the lease.
 */
import { hostname } from 'node:os';
import { leaseKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { NotFoundError, UserError } from '../util/errors.js';

export interface LeaseRecord {
  token: string;
  host: string;
  pid: number;
  mountpoint: string;
  expiresAt: number;
}

export class Lease {
  private timer: NodeJS.Timeout | undefined;
  /** Set when another holder took the lease over: this mount must stop advancing HEAD. */
  lost = false;
  /** Set by `acquire` when it found another holder's lease, live or expired (not released): that holder may still write. */
  foundOther = false;
  /** Monotonic time (ms) of the last read of the lease that showed it is still this holder's (or of acquiring it). */
  private confirmedAt = -Infinity;

  constructor(
    private readonly store: Store,
    private readonly org: string,
    private readonly home: string,
    readonly token: string,
    private readonly mountpoint: string,
    private readonly ttlMs: number,
    private readonly onLost: (by: LeaseRecord) => void,
  ) {}

  private get key(): string {
    return leaseKey(this.org, this.home);
  }

  async read(): Promise<LeaseRecord | null> {
    try {
      return JSON.parse((await this.store.get(this.key)).toString('utf8')) as LeaseRecord;
    } catch (e) {
      if (e instanceof NotFoundError) return null;
      if (e instanceof SyntaxError) return null; // garbage lease: treat as absent
      throw e;
    }
  }

  private record(): LeaseRecord {
    return { token: this.token, host: hostname(), pid: process.pid, mountpoint: this.mountpoint, expiresAt: Date.now() + this.ttlMs };
  }

  /**
   * Claims the lease. Returns whether a live lease of another holder was taken over. `onClear` is called once
   * the look at the current lease allows the claim, before this lease is written: a waking mount reads HEAD
   * from there on, in parallel with the write.
   */
  async acquire(takeover: boolean, onClear?: () => void): Promise<boolean> {
    const cur = await this.read();
    this.foundOther = cur !== null && cur.token !== this.token;
    const live = this.foundOther && cur !== null && cur.expiresAt > Date.now();
    if (live && !takeover) {
      const left = Math.ceil((cur.expiresAt - Date.now()) / 1000);
      throw new UserError(`${this.org}/${this.home} is mounted read-write on host ${cur.host} (pid ${cur.pid}, ${cur.mountpoint}); its lease expires in ${left}s unless renewed — unmount it there, or pass --takeover if that host is dead`);
    }
    onClear?.();
    const before = performance.now();
    await this.store.put(this.key, Buffer.from(JSON.stringify(this.record())));
    this.confirmedAt = before;
    this.timer = setInterval(() => void this.renew(), Math.max(1000, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
    return live;
  }

  private async renew(): Promise<void> {
    if (this.lost) return;
    try {
      const before = performance.now();
      const cur = await this.read();
      if (cur && cur.token !== this.token) {
        this.lost = true;
        this.stop();
        this.onLost(cur);
        return;
      }
      this.confirmedAt = before;
      await this.store.put(this.key, Buffer.from(JSON.stringify(this.record())));
    } catch {
      // store unreachable: try again at the next tick; the lease may lapse, HEAD generations keep us safe
    }
  }

  /**
   * Resolves once the lease was seen to be this holder's within its TTL (renewing first if the last look is
   * older: after a pause or a store outage); false if it was lost. A log segment is only written so, which
   * bounds how long a tombstone must stay to fence a paused holder (docs/format.md "Log segments").
   */
  async confirmed(): Promise<boolean> {
    if (!this.lost && performance.now() - this.confirmedAt > this.ttlMs) await this.renew();
    return !this.lost && performance.now() - this.confirmedAt <= this.ttlMs;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Gives the lease up (on sleep), if it is still ours. */
  async release(): Promise<void> {
    this.stop();
    try {
      const cur = await this.read();
      if (cur && cur.token === this.token) await this.store.delete(this.key);
    } catch {
      // the lease lapses by itself after its TTL
    }
  }
}
