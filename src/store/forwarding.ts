/**
 * `ForwardingStore`: a Store that passes every call to `inner` unchanged. Wrappers that change a few calls
 * (a read overlay, metering, recording or holding requests in tests) extend it and override only those,
 * so a new Store method is forwarded everywhere by default.
 */
import type { ObjectInfo, Store, Uploads } from './store.js';

export class ForwardingStore implements Store {
  constructor(readonly inner: Store) {}
  get url(): string {
    return this.inner.url;
  }
  has(keys: readonly string[]): Promise<Set<string>> {
    return this.inner.has(keys);
  }
  get(key: string): Promise<Buffer> {
    return this.inner.get(key);
  }
  getRange(key: string, offset: number, length: number): Promise<Buffer> {
    return this.inner.getRange(key, offset, length);
  }
  readAtOnce(key: string, length: number): Buffer | undefined {
    return this.inner.readAtOnce?.(key, length);
  }
  put(key: string, data: Buffer): Promise<void> {
    return this.inner.put(key, data);
  }
  putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    return this.inner.putIfAbsent(key, data);
  }
  list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    return this.inner.list(prefix, limit);
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  get uploads(): Uploads | undefined {
    return this.inner.uploads;
  }
}
