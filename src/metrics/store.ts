/**
 * A Store wrapper that meters the traffic of the Store it wraps into a HomeMetrics: bytes fetched (get)
 * and uploaded (put, putIfAbsent), request latency by op, and failed requests as errors{kind="store"}
 * (a missing object is an answer, not an error). The daemon wraps its store once:
 * `new MeteredStore(store, defaultMetrics)`.
 */
import type { ObjectInfo, Store } from '../store/store.js';
import { NotFoundError } from '../util/errors.js';
import type { HomeMetrics } from './homefs.js';
import type { Histogram } from './registry.js';

function kindOf(key: string): string {
  const part = key.split('/')[1];
  return part === 'blocks' ? 'block' : part === 'meta' ? 'meta' : 'other';
}

export class MeteredStore implements Store {
  private readonly seconds: Histogram;

  constructor(readonly inner: Store, private readonly m: HomeMetrics) {
    this.seconds = m.registry.histogram('homefs_store_request_seconds', 'store request latency in seconds, by op');
  }

  get url(): string {
    return this.inner.url;
  }

  private async timed<T>(op: string, fn: () => Promise<T>): Promise<T> {
    const stop = this.seconds.startTimer({ op });
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof NotFoundError)) this.m.errors.inc({ kind: 'store' });
      throw e;
    } finally {
      stop();
    }
  }

  has(keys: readonly string[]): Promise<Set<string>> {
    return this.timed('has', () => this.inner.has(keys));
  }

  async get(key: string): Promise<Buffer> {
    const data = await this.timed('get', () => this.inner.get(key));
    this.m.bytesFetched.inc({ kind: kindOf(key) }, data.length);
    return data;
  }

  async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    const data = await this.timed('getRange', () => this.inner.getRange(key, offset, length));
    this.m.bytesFetched.inc({ kind: kindOf(key) }, data.length);
    return data;
  }

  async put(key: string, data: Buffer): Promise<void> {
    await this.timed('put', () => this.inner.put(key, data));
    this.m.bytesUploaded.inc({ kind: kindOf(key) }, data.length);
  }

  async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    const created = await this.timed('putIfAbsent', () => this.inner.putIfAbsent(key, data));
    if (created) this.m.bytesUploaded.inc({ kind: kindOf(key) }, data.length);
    return created;
  }

  list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    return this.inner.list(prefix, limit);
  }

  delete(key: string): Promise<void> {
    return this.timed('delete', () => this.inner.delete(key));
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
