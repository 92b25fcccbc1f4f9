/**
 * Foreground first: whether the home is serving its users right now, so that background work (write-behind,
 * and seals nobody waits for: protection, absorb, idle) takes only a little of the machine meanwhile.
 *
 * Busy means more than `requestsPerSec` FUSE requests over the last window (a tool unpacking, installing or
 * creating files). The event loop's own utilization is no such signal: background work raises it, and
 * would then hold itself back when nobody is there.
 *
 * A window is at least `windowMs` long; the last complete window's reading holds until the next completes.
 */
import { performance } from 'node:perf_hooks';

export interface ForegroundOptions {
  windowMs: number;
  requestsPerSec: number;
}

export const defaultForegroundOptions: ForegroundOptions = { windowMs: 100, requestsPerSec: 200 };

export class Foreground {
  private markAt: number;
  private requests = 0;
  private rate = 0;

  constructor(readonly opts: ForegroundOptions = defaultForegroundOptions, private readonly now: () => number = () => performance.now()) {
    this.markAt = now();
  }

  /** A FUSE request arrived. */
  request(): void {
    this.requests++;
  }

  /** Whether the foreground is busy (see the module comment). */
  busy(): boolean {
    this.read();
    return this.rate > this.opts.requestsPerSec;
  }

  private read(): void {
    const t = this.now();
    const ms = t - this.markAt;
    if (ms < this.opts.windowMs) return;
    this.rate = (this.requests * 1000) / ms;
    this.markAt = t;
    this.requests = 0;
  }
}
