/**
 * `MeteredStore`: wraps any Store and reports its traffic to a `StoreMeters`: bytes fetched (get) and
 * uploaded (put, a putIfAbsent that created the object) by key kind, the latency of every request by op,
 * and failed requests (a missing object is an answer, not a failure). The daemon wraps its store once,
 * outside the retrying store, so a request's latency includes its retries:
 * `new MeteredStore(store, metrics.storeMeters())` (metrics/homefs.ts).
 */
import { NotFoundError } from '../util/errors.js';
import { keyKind } from './keys.js';
import { ForwardingStore } from './forwarding.js';
import type { Store } from './store.js';

export interface StoreMeters {
  /** Counts one request of `op` on a key of `kind` and starts timing it; calling the result ends it. */
  startRequest(op: string, kind: string): () => void;
  fetched(kind: string, bytes: number): void;
  uploaded(kind: string, bytes: number): void;
  /** A request failed (for any reason but a missing object). */
  failed(op: string): void;
  /** Counts one request of `op` on a key of `kind` that already took `seconds` (LateMeters replays so). */
  ended(op: string, kind: string, seconds: number): void;
}

/**
 * Meters for requests made before the real ones exist (a daemon's first requests, while its metrics module
 * still loads: home/claim.ts): each is kept, with its latency, and handed over at `bind`; from then on
 * everything goes straight through.
 */
export class LateMeters implements StoreMeters {
  private real: StoreMeters | null = null;
  private readonly kept: Array<(m: StoreMeters) => void> = [];

  private when(fn: (m: StoreMeters) => void): void {
    if (this.real) fn(this.real);
    else this.kept.push(fn);
  }

  bind(real: StoreMeters): void {
    this.real = real;
    for (const fn of this.kept.splice(0)) fn(real);
  }

  startRequest(op: string, kind: string): () => void {
    if (this.real) return this.real.startRequest(op, kind);
    const t0 = performance.now();
    return () => this.when((m) => m.ended(op, kind, (performance.now() - t0) / 1000));
  }

  fetched(kind: string, bytes: number): void {
    this.when((m) => m.fetched(kind, bytes));
  }

  uploaded(kind: string, bytes: number): void {
    this.when((m) => m.uploaded(kind, bytes));
  }

  failed(op: string): void {
    this.when((m) => m.failed(op));
  }

  ended(op: string, kind: string, seconds: number): void {
    this.when((m) => m.ended(op, kind, seconds));
  }
}

export class MeteredStore extends ForwardingStore {
  constructor(inner: Store, private readonly m: StoreMeters) {
    super(inner);
  }

  private async timed<T>(op: string, kind: string, fn: () => Promise<T>): Promise<T> {
    const stop = this.m.startRequest(op, kind);
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof NotFoundError)) this.m.failed(op);
      throw e;
    } finally {
      stop();
    }
  }

  override has(keys: readonly string[]): Promise<Set<string>> {
    return this.timed('has', 'other', () => this.inner.has(keys));
  }

  override async get(key: string): Promise<Buffer> {
    const data = await this.timed('get', keyKind(key), () => this.inner.get(key));
    this.m.fetched(keyKind(key), data.length);
    return data;
  }

  override async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    const data = await this.timed('getRange', keyKind(key), () => this.inner.getRange(key, offset, length));
    this.m.fetched(keyKind(key), data.length);
    return data;
  }

  override async put(key: string, data: Buffer): Promise<void> {
    await this.timed('put', keyKind(key), () => this.inner.put(key, data));
    this.m.uploaded(keyKind(key), data.length);
  }

  override async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    const created = await this.timed('putIfAbsent', keyKind(key), () => this.inner.putIfAbsent(key, data));
    if (created) this.m.uploaded(keyKind(key), data.length);
    return created;
  }

  override delete(key: string): Promise<void> {
    return this.timed('delete', keyKind(key), () => this.inner.delete(key));
  }
}
