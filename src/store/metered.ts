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
