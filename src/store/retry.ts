/**
 * `RetryingStore`: wraps any Store and retries transient failures (throttling, 5xx, network errors, see
 * transient.ts) with exponential backoff and full jitter: before attempt n+1 it sleeps a uniformly random
 * time in [0, min(maxMs, baseMs * 2^n)]. It never retries other errors (a 4xx, a missing key), never makes
 * more than `retries` extra attempts, and never sleeps or waits past `deadlineMs` from the call's start: an
 * attempt still running at the deadline is abandoned and the call fails with a TransientStoreError.
 *
 * `putIfAbsent` after an ambiguous failure (a transient error: the object may have been written and the
 * reply lost) may find the key present. It then reads the object and returns true if the stored bytes are
 * ours, because then this caller created it; anything else is a real `false`.
 *
 * `list` resumes after the last key it yielded when a page fails, so a retry never repeats or skips keys.
 *
 * Throttling (503 SlowDown, 429) is an answer about the whole store, not one request: it pauses every
 * request of this store (one wrapper per mount, so every request of the mount) for the backoff of the
 * current run of throttled answers, on top of the retried request's own backoff. Requests starting during
 * the pause wait for its end first; the run restarts at the first request that succeeds.
 */
import { defaults } from '../config.js';
import { backoffDelay } from '../util/backoff.js';
import type { ObjectInfo, Store, Uploads } from './store.js';
import { TransientStoreError, isThrottled, isTransient } from './transient.js';

export interface RetryOptions {
  retries: number;
  baseMs: number;
  maxMs: number;
  /** Total time a call may take, attempts and sleeps included. */
  deadlineMs: number;
  /** Injectable for tests. */
  sleep: (ms: number) => Promise<void>;
  random: () => number;
  now: () => number;
  /** Called before each retry (logging, tests). */
  onRetry?: (op: string, attempt: number, delayMs: number, error: unknown) => void;
}

export const defaultRetryOptions: RetryOptions = {
  retries: defaults.storeRetries,
  baseMs: defaults.storeRetryBaseMs,
  maxMs: defaults.storeRetryMaxMs,
  deadlineMs: defaults.storeRetryDeadlineMs,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: Math.random,
  now: Date.now,
};

/** Rejects with a TransientStoreError if `p` has not settled within `ms`; `p` itself is abandoned. */
function withTimeout<T>(p: Promise<T>, ms: number, url: string, op: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new TransientStoreError(url, `${op} did not answer within the retry deadline`)), Math.max(0, ms));
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

export class RetryingStore implements Store {
  readonly url: string;
  private readonly opts: RetryOptions;
  /** No attempt of any request starts before this time (the store asked to slow down). */
  private pausedUntil = 0;
  /** Throttled answers since the last success: the length of the shared pause grows with it. */
  private throttledRun = 0;

  constructor(readonly inner: Store, opts: Partial<RetryOptions> = {}) {
    this.url = inner.url;
    this.opts = { ...defaultRetryOptions, ...opts };
  }

  /** The backoff before retry number `attempt` (0-based): full jitter. */
  delay(attempt: number): number {
    return backoffDelay(attempt, this.opts);
  }

  /**
   * Runs `fn` until it succeeds, fails with a non-transient error, runs out of retries or of time.
   * `onTransient` sees every transient failure (putIfAbsent notes that a write may have happened).
   */
  private async attempt<T>(op: string, fn: () => Promise<T>, onTransient?: () => void): Promise<T> {
    const deadline = this.opts.now() + this.opts.deadlineMs;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.throttlePause(deadline);
        const r = await withTimeout(fn(), deadline - this.opts.now(), this.url, op);
        this.throttledRun = 0;
        return r;
      } catch (e) {
        if (isThrottled(e)) this.throttled();
        if (!isTransient(e)) throw e;
        onTransient?.();
        const wait = this.delay(attempt);
        if (attempt >= this.opts.retries || this.opts.now() + wait >= deadline) throw e;
        this.opts.onRetry?.(op, attempt + 1, wait, e);
        await this.opts.sleep(wait);
      }
    }
  }

  /** Waits out a pause the store asked for (never past the call's deadline). */
  private async throttlePause(deadline: number): Promise<void> {
    const now = this.opts.now();
    const until = Math.min(this.pausedUntil, deadline);
    if (until > now) await this.opts.sleep(until - now);
  }

  private throttled(): void {
    const pause = this.delay(this.throttledRun++);
    this.pausedUntil = Math.max(this.pausedUntil, this.opts.now() + pause);
  }

  /** When the shared pause ends (ms since the epoch; tests and diagnostics). */
  get pausedUntilMs(): number {
    return this.pausedUntil;
  }

  has(keys: readonly string[]): Promise<Set<string>> {
    return this.attempt('has', () => this.inner.has(keys));
  }

  get(key: string): Promise<Buffer> {
    return this.attempt('get', () => this.inner.get(key));
  }

  getRange(key: string, offset: number, length: number): Promise<Buffer> {
    return this.attempt('getRange', () => this.inner.getRange(key, offset, length));
  }

  put(key: string, data: Buffer): Promise<void> {
    return this.attempt('put', () => this.inner.put(key, data));
  }

  async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    let ambiguous = false;
    const created = await this.attempt('putIfAbsent', () => this.inner.putIfAbsent(key, data), () => {
      ambiguous = true;
    });
    if (created || !ambiguous) return created;
    const stored = await this.attempt('get', () => this.inner.get(key));
    return stored.equals(data);
  }

  async *list(prefix: string, limit = Infinity): AsyncIterable<ObjectInfo> {
    let last: string | undefined;
    let left = limit;
    const deadline = () => this.opts.now() + this.opts.deadlineMs;
    let end = deadline();
    let it: AsyncIterator<ObjectInfo> | undefined;
    try {
      for (let attempt = 0; left > 0; ) {
        try {
          it = this.inner.list(prefix, last === undefined ? left : Infinity)[Symbol.asyncIterator]();
          for (;;) {
            const next = await withTimeout(it.next(), end - this.opts.now(), this.url, 'list');
            if (next.done) return;
            const o = next.value;
            if (last !== undefined && o.key <= last) continue; // already yielded before the failure
            last = o.key;
            left--;
            attempt = 0;
            yield o;
            end = deadline(); // the deadline bounds each wait for the store, not the consumer's pace
            if (left <= 0) return;
          }
        } catch (e) {
          if (!isTransient(e)) throw e;
          const wait = this.delay(attempt);
          if (attempt >= this.opts.retries || this.opts.now() + wait >= end) throw e;
          this.opts.onRetry?.('list', attempt + 1, wait, e);
          attempt++;
          await this.opts.sleep(wait);
        }
      }
    } finally {
      // the consumer stopped early, or we did: let the inner listing release what it holds
      it?.return?.().catch(() => undefined);
    }
  }

  delete(key: string): Promise<void> {
    return this.attempt('delete', () => this.inner.delete(key));
  }

  /** The inner store's uploads, each call retried (a part is replaced by its retry; a start retried after a lost reply leaves an upload for gc to abort). */
  get uploads(): Uploads | undefined {
    const u = this.inner.uploads;
    if (!u) return undefined;
    return {
      minPartBytes: u.minPartBytes,
      start: (key) => this.attempt('uploadStart', () => u.start(key)),
      part: (key, id, n, data) => this.attempt('uploadPart', () => u.part(key, id, n, data)),
      complete: (key, id, etags) => this.attempt('uploadComplete', () => u.complete(key, id, etags)),
      abort: (key, id) => this.attempt('uploadAbort', () => u.abort(key, id)),
      list: (prefix) => this.attempt('uploadList', () => u.list(prefix)),
    };
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
